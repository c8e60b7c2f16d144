"""HTTP access lines: uvicorn's `client - "METHOD path HTTP/x" status` and the common log format.

Uvicorn's form, the bulk of a server's access lines, is read without capture groups: one anchored match
without captures tests the line, then its fields are cut at spaces and sliced. Other lines (the common
log format, no client) are read by the capture pattern. Both give the same rows
(tests/test_literal_paths.py compares them).
"""

from __future__ import annotations

import polars as pl

from tracelens.parsers.distinct import groups_expr
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform, project

ACCESS_PATTERN = (
    r"^(?:(?P<client>\S+) )?(?:- |\[[^\]]*\] )"
    r"\"(?P<method>[A-Z]+) (?P<path>\S+) (?P<protocol>HTTP/[\d.]+)\" (?P<status>\d{3})"
)


# `client - "METHOD path HTTP/x" status`: the lines ACCESS_PATTERN reads with a client and a `- `.
UVICORN_PATTERN = r"^\S+ - \"[A-Z]+ \S+ HTTP/[\d.]+\" \d{3}"
_FIELDS = (C.CLIENT, C.METHOD, C.PATH, C.PROTOCOL, C.STATUS)


def parse_http(df: pl.DataFrame, literal: bool = True) -> pl.DataFrame:
    """Rows routed to `http` -> the `http` table (lines of another shape are dropped). ``literal=False``
    reads every line by the capture pattern (tests compare the two)."""
    parts = []
    # Only the columns the table takes: filtering the router's frame whole copied its every column.
    df = project(df, *COMMON_COLUMNS, W.BODY).with_row_index(W.ROW)
    if literal:
        uvicorn = df.get_column(W.BODY).str.contains(UVICORN_PATTERN)
        if uvicorn.all():  # the usual block: no filter
            parts.append(_uvicorn(df))
            df = df.clear()
        else:
            parts.append(_uvicorn(df.filter(uvicorn)))
            df = df.filter(~uvicorn)
    if df.height or not parts:
        out = df.with_columns(groups_expr(W.BODY, ACCESS_PATTERN).alias(W.GROUPS)).unnest(W.GROUPS)
        parts.append(out.filter(pl.col(C.STATUS).is_not_null()).select(W.ROW, *COMMON_COLUMNS, *_FIELDS))
    out = parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical_relaxed").sort(W.ROW)
    return conform(T.HTTP, out)


def _uvicorn(df: pl.DataFrame) -> pl.DataFrame:
    """Lines of UVICORN_PATTERN: `client`, `-`, `"METHOD`, `path`, `HTTP/x"`, `status...`, cut at spaces
    (none of the first five holds one)."""
    names = [f"{W.FIELDS}{i}" for i in range(6)]
    cut = df.with_columns(
        pl.col(W.BODY).str.splitn(" ", 6).struct.rename_fields(names).alias(W.FIELDS)
    ).unnest(W.FIELDS)
    return cut.select(
        W.ROW,
        *COMMON_COLUMNS,
        pl.col(names[0]).alias(C.CLIENT),
        pl.col(names[2]).str.slice(1).alias(C.METHOD),
        pl.col(names[3]).alias(C.PATH),
        pl.col(names[4]).str.strip_suffix('"').alias(C.PROTOCOL),
        pl.col(names[5]).str.slice(0, 3).alias(C.STATUS),
    )
