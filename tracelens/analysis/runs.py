"""Run identity: every frame of the analysis names a run by (source, run) and shows it as a label."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from tracelens.analysis.speculation import DECODE_LINES, METRICS_LINES, SERVER_ARGS
from tracelens.sources.naming import run_label
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, T, W

RUN_KEY = [C.SOURCE, C.RUN]


def with_run_labels(runs: pl.DataFrame, names: Mapping[str, str]) -> pl.DataFrame:
    """``runs`` with each run's label, `<short name>#<run>` (`sources.naming`): unique among the sources
    ``names`` holds (source -> short name), which are all those of the command, not only these runs."""
    labels = [run_label(names.get(s, s), int(r)) for s, r in runs.select(RUN_KEY).iter_rows()]
    return runs.with_columns(pl.Series(A.LABEL, labels, dtype=pl.String))


def with_labels(frame: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Add the run label to any frame keyed by (source, run)."""
    return frame.join(runs.select(*RUN_KEY, A.LABEL), on=RUN_KEY, how="left")


def interesting_runs(runs: pl.DataFrame, lines: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Runs worth showing: a server start, or a run 0 that holds more than preamble (batch, fault, debug,
    vLLM metrics, request or endpoint lines).
    A run 0 of a few lines before the first `server_args=` is only noise in a report."""
    busy = collect(
        lines.lazy()
        .filter(
            pl.col(C.KIND).is_in(["batch", "fault", "debug", "spec_metrics", "request", "endpoint_metric"])
        )
        .select(RUN_KEY)
        .unique()
    ).with_columns(pl.lit(True).alias(W.BUSY))
    out = runs.join(busy, on=RUN_KEY, how="left")
    # A source without a server start is one run, whatever it holds: it gets a verdict like the others.
    alone = pl.col(C.RUN).max().over(C.SOURCE) == 0
    return out.filter((pl.col(C.RUN) > 0) | pl.col(W.BUSY).fill_null(False) | alone).drop(W.BUSY)


# Kinds that say nothing about what a file is: a file of only these is no server log.
UNKNOWN_KINDS = ("unparsed", "blank")


# A line that opens with a date and time is a log line of some program, known or not (a router's, a
# launcher's), and so is a frame of a Python traceback (`  File "...", line N, in f`: an excerpt pasted
# from the middle of a crash; sought anywhere, as an unparsed line keeps its wrapper and colour codes):
# a file holding one is a log, never refused as prose or a config file.
PROGRAM_LINE = r'^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}|File "[^"]+", line \d+, in \S'


def unknown_sources(lines: pl.DataFrame | pl.LazyFrame, unparsed: pl.LazyFrame) -> tuple[list[str], int]:
    """The sources with no line of any known kind and no timestamped line (a config file, prose: no
    log at all), and how many sources there are."""
    known = pl.col(C.KIND).is_in(UNKNOWN_KINDS).not_().any()
    found = collect(lines.lazy().group_by(C.SOURCE).agg(known.alias(W.BUSY)))
    unknown = found.filter(~pl.col(W.BUSY)).get_column(C.SOURCE).to_list()
    if unknown:
        stamped = collect(
            unparsed.filter(pl.col(C.SOURCE).is_in(unknown) & pl.col(C.TEXT).str.contains(PROGRAM_LINE))
            .select(C.SOURCE)
            .unique()
        )
        unknown = [s for s in unknown if s not in set(stamped.get_column(C.SOURCE).to_list())]
    return sorted(unknown), found.height


def with_speculation(runs: pl.DataFrame, tables: Tables) -> pl.DataFrame:
    """``runs`` with whether each decodes speculatively and what says so, decided here once for every
    view: its server args name an algorithm; else its decode lines print an accept len (SGLang prints
    one only when it drafts) or vLLM's spec-decoding metrics lines an acceptance length or drafted
    tokens (a log that starts after the server args, or a server whose args line was cut, still drafts)."""
    decode = collect(
        tables.scan(T.BATCHES).filter(pl.col(C.ACCEPT_LEN).is_not_null()).select(RUN_KEY).unique()
    ).with_columns(pl.lit(DECODE_LINES).alias(W.SPEC_SEEN))
    length = pl.col(C.MEAN_ACCEPTANCE_LENGTH)
    metrics = collect(
        tables.scan(T.SPEC_METRICS)
        # a length, or tokens drafted (V1's first layouts print no length; a server that does not
        # draft prints `nan%` over 0 drafted tokens)
        .filter((length.is_not_null() & length.is_not_nan()) | (pl.col(C.DRAFTED) > 0))
        .select(RUN_KEY)
        .unique()
    ).with_columns(pl.lit(METRICS_LINES).alias(W.SPEC_SEEN))
    seen = pl.concat([decode, metrics]).unique(RUN_KEY, keep="first", maintain_order=True)
    out = runs.join(seen, on=RUN_KEY, how="left")
    source = (
        pl.when(pl.col(C.SPEC_ALGORITHM).is_not_null())
        .then(pl.lit(SERVER_ARGS))
        .otherwise(pl.col(W.SPEC_SEEN))
    )
    return out.with_columns(source.alias(A.SPECULATIVE_FROM), source.is_not_null().alias(A.SPECULATIVE)).drop(
        W.SPEC_SEEN
    )
