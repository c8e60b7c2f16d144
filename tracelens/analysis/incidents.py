"""Fault incidents: tracebacks from many ranks folded into one incident.

Ranks that crash together print near-identical tracebacks within seconds of each other. Faults of the
same run, component, fault kind and exception type whose times lie within `WINDOW_S` of the previous
one are one incident, with the ranks affected, first and last time and one representative traceback.
"""

from __future__ import annotations

import polars as pl

from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.schema import A, C, W

WINDOW_S = 60.0
_FRAME = r'File "([^"]+)", line (\d+), in (\S+)'


def fold(faults: pl.DataFrame) -> pl.DataFrame:
    """source, run, incident, component, fault_kind, exception_type, message, ranks, count, first_ts,
    last_ts, first_line, last_frames, traceback."""
    if not faults.height:
        return pl.DataFrame(
            schema={
                C.SOURCE: pl.String,
                C.RUN: pl.Int32,
                A.INCIDENT: pl.Int64,
                C.COMPONENT: pl.String,
                C.FAULT_KIND: pl.String,
                C.EXCEPTION_TYPE: pl.String,
                C.MESSAGE: pl.String,
                A.RANKS: pl.List(pl.Int32),
                A.COUNT: pl.UInt32,
                A.FIRST_TS: pl.Datetime("us"),
                A.LAST_TS: pl.Datetime("us"),
                C.FIRST_LINE: pl.Int64,
                C.LAST_LINE: pl.Int64,
                A.LAST_FRAMES: pl.String,
                C.TRACEBACK: pl.String,
            }
        )
    key = [*RUN_KEY, C.COMPONENT, C.FAULT_KIND, C.EXCEPTION_TYPE]
    ordered = faults.sort(*RUN_KEY, C.FIRST_LINE)
    gap = (pl.col(C.TS) - pl.col(C.TS).shift(1)).over(key).dt.total_microseconds() / 1e6
    new = gap.is_null() | (gap > WINDOW_S)
    ordered = ordered.with_columns(new.cum_sum().over(key).alias(W.GROUP))
    folded = ordered.group_by(*key, W.GROUP, maintain_order=True).agg(
        pl.col(C.MESSAGE).first(),
        pl.coalesce(C.TP, C.DP).drop_nulls().unique().sort().alias(A.RANKS),
        pl.len().alias(A.COUNT),
        pl.col(C.TS).min().alias(A.FIRST_TS),
        pl.col(C.TS).max().alias(A.LAST_TS),
        pl.col(C.FIRST_LINE).min(),
        pl.col(C.LAST_LINE).max(),
        # the representative: the longest traceback (interleaved frames all joined the last head)
        pl.col(C.TRACEBACK).sort_by(pl.col(C.TRACEBACK).str.len_chars()).last(),
    )
    frames = pl.col(C.TRACEBACK).str.extract_all(_FRAME).list.tail(3).list.join(" <- ")
    return (
        folded.sort(*RUN_KEY, C.FIRST_LINE)
        .with_columns(
            pl.int_range(pl.len()).over(RUN_KEY).cast(pl.Int64).alias(A.INCIDENT), frames.alias(A.LAST_FRAMES)
        )
        .drop(W.GROUP)
    )
