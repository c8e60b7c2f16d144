"""HTTP access lines: uvicorn's `client - "METHOD path HTTP/x" status` and the common log format."""

from __future__ import annotations

import polars as pl

from tracelens.parsers.distinct import groups_expr
from tracelens.schema import COMMON_COLUMNS, C, T, W, conform

ACCESS_PATTERN = (
    r"^(?:(?P<client>\S+) )?(?:- |\[[^\]]*\] )"
    r"\"(?P<method>[A-Z]+) (?P<path>\S+) (?P<protocol>HTTP/[\d.]+)\" (?P<status>\d{3})"
)


def parse_http(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `http` -> the `http` table (lines of another shape are dropped)."""
    out = df.with_columns(groups_expr(W.BODY, ACCESS_PATTERN).alias("_a")).unnest("_a")
    out = out.filter(pl.col(C.STATUS).is_not_null())
    return conform(T.HTTP, out.select(*COMMON_COLUMNS, C.CLIENT, C.METHOD, C.PATH, C.PROTOCOL, C.STATUS))
