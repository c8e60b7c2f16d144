"""One request's failure inside a server that goes on: the traceback a request handler logs under its
own head line (uvicorn's `Exception in ASGI application`, vLLM's API server `Error in chat completion
stream generator.`) is that request's, so an exception of it that no catalog entry names is the head's
event (an error), not a crash of the server."""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from tracelens.analysis.crash_text import TRACEBACK_HEAD
from tracelens.tables.schema import C

# Codes of the head lines a request handler logs above the traceback of the request that failed.
REQUEST_HEADS = ("asgi-error", "request-error")
# The lines that join two tracebacks of one exception chain (`The above exception was the direct cause
# of the following exception:`, `During handling of the above exception, another exception occurred:`).
_CHAINED = "above exception"


def as_requests(
    rows: pl.DataFrame, coded: pl.DataFrame, code: str, text: str, in_traceback: str, unnamed: Collection[str]
) -> pl.DataFrame:
    """``coded`` with each event of a request's traceback that names nothing (``unnamed``: an unknown
    exception, a traceback cut before its exception line) given its head's code.

    A request's traceback follows its head: a traceback record on the next line (SGLang's and uvicorn's,
    printed whole), or the stretch of consecutive traceback lines that starts on the head or the next
    line (vLLM's, one ERROR line a line, its head one of them). A stretch ends where the lines stop, at
    another head, or at a traceback that starts anew (not the next link of one exception chain): another
    process's crash right after a request's traceback stays a crash."""
    heads = coded.filter(pl.col(code).is_in(REQUEST_HEADS)).select(
        C.SOURCE, pl.col(C.LINE_NO).alias("_at"), pl.col(code).alias("_head")
    )
    if not heads.height:
        return coded
    heads = heads.unique([C.SOURCE, "_at"], keep="first")
    lines = stretches(rows, text, in_traceback, heads.select(C.SOURCE, pl.col("_at").alias(C.LINE_NO)))
    starts = lines.group_by("_stretch").agg(pl.col(C.SOURCE).first(), pl.col(C.LINE_NO).min().alias("_at"))
    # a stretch owned by the head it starts on, or by the head on the line before it
    owners = pl.concat(
        [
            starts.join(heads.with_columns(pl.col("_at").alias("_owner")), on=[C.SOURCE, "_at"]),
            starts.join(
                heads.with_columns(pl.col("_at").alias("_owner"), pl.col("_at") + 1), on=[C.SOURCE, "_at"]
            ),
        ]
    ).unique("_stretch", keep="first")
    by_stretch = lines.join(owners.select("_stretch", "_head", "_owner"), on="_stretch")
    by_record = lines.join(
        heads.select(C.SOURCE, (pl.col("_at") + 1).alias(C.RECORD), "_head", pl.col("_at").alias("_owner")),
        on=[C.SOURCE, C.RECORD],
    )
    owned = pl.concat(
        [f.select(C.SOURCE, C.LINE_NO, "_head", "_owner") for f in (by_stretch, by_record)]
    ).unique([C.SOURCE, C.LINE_NO], keep="first")
    coded = coded.join(owned, on=[C.SOURCE, C.LINE_NO], how="left").with_columns(
        pl.when(pl.col("_head").is_not_null() & pl.col(code).is_in(list(unnamed)))
        .then(pl.col("_head"))
        .otherwise(pl.col(code))
        .alias(code)
    )
    # A head whose traceback holds an event is told by it: the request's exception (one failure, not
    # two), or what the request met (the engine's death is the engine's, not one request's).
    told = (
        coded.filter(pl.col("_owner").is_not_null() & (pl.col("_owner") != pl.col(C.LINE_NO)))
        .select(C.SOURCE, pl.col("_owner").alias(C.LINE_NO))
        .unique()
    )
    return coded.join(told, on=[C.SOURCE, C.LINE_NO], how="anti").drop("_head", "_owner")


def stretches(
    rows: pl.DataFrame, text: str, in_traceback: str, breaks: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The traceback lines of ``rows`` (source, line_no, record, ``text``), each with its `_stretch`: a run
    of consecutive traceback lines of one source. A stretch also ends before a line of ``breaks`` (source,
    line_no) and at a traceback that starts anew, not as the next link of one exception chain (two
    processes' tracebacks printed one after the other are two stretches)."""
    lines = (
        rows.filter(pl.col(in_traceback))
        .select(C.SOURCE, C.LINE_NO, C.RECORD, text)
        .unique([C.SOURCE, C.LINE_NO], keep="first")
        .sort(C.SOURCE, C.LINE_NO)
    )
    marked = breaks.select(C.SOURCE, C.LINE_NO, pl.lit(True).alias("_break")) if breaks is not None else None
    lines = (
        lines.join(marked, on=[C.SOURCE, C.LINE_NO], how="left")
        if marked is not None
        else lines.with_columns(pl.lit(None, pl.Boolean).alias("_break"))
    )
    chained = pl.any_horizontal(
        pl.col(text).shift(k).over(C.SOURCE).str.contains(_CHAINED, literal=True).fill_null(False)
        for k in (1, 2, 3)
    )
    anew = pl.col(text).str.contains(TRACEBACK_HEAD, literal=True) & ~chained
    broken = pl.col("_break").fill_null(False)
    apart = (
        (pl.col(C.LINE_NO).diff() != 1)
        | (pl.col(C.SOURCE) != pl.col(C.SOURCE).shift())
        | broken
        | (anew & ~broken.shift(1).fill_null(False))
    )
    return lines.with_columns(apart.fill_null(True).cum_sum().alias("_stretch")).drop("_break")
