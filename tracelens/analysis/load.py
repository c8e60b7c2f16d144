"""Load changes: a step in accept len or throughput that follows a change in how busy the server is.

Throughput per request falls as the batch grows, and accept len moves with the request mix, so a step
that coincides with a shift in running requests, batch size or KV token usage is the traffic changing,
not a fault. Each change point is compared with the `WINDOW` decode rounds on either side of it.
"""

from __future__ import annotations

from typing import cast

import polars as pl

from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.schema import A, C

WINDOW = 60
# Relative shift in a load figure (against the larger side) that explains a step.
MIN_SHIFT = 0.2
LOADS = ((C.RUNNING_REQ, "running requests", ".1f"), (C.TOKEN_USAGE, "token usage", ".3f"))


def _shift(before: float | None, after: float | None) -> float:
    if before is None or after is None:
        return 0.0
    top = max(abs(before), abs(after))
    return abs(after - before) / top if top else 0.0


def explain_steps(changes: pl.DataFrame, series: pl.DataFrame) -> pl.DataFrame:
    """``changes`` with `load_change`: in words, the load shift around each step, or null when the load
    stayed the same (then the step is unexplained)."""
    notes: list[str | None] = []
    for source, run, line_no in changes.select(*RUN_KEY, C.LINE_NO).iter_rows():
        rows = series.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run)).sort(C.LINE_NO)
        before = rows.filter(pl.col(C.LINE_NO) < line_no).tail(WINDOW)
        after = rows.filter(pl.col(C.LINE_NO) >= line_no).head(WINDOW)
        note = None
        for column, words, fmt in LOADS:
            # means of numeric columns: floats, or None for an empty window
            a = cast("float | None", before.get_column(column).mean())
            b = cast("float | None", after.get_column(column).mean())
            if _shift(a, b) >= MIN_SHIFT:
                note = f"{words} went from {a:{fmt}} to {b:{fmt}} on average"
                break
        notes.append(note)
    return changes.with_columns(pl.Series(A.LOAD_CHANGE, notes, dtype=pl.String))
