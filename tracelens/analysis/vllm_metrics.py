"""vLLM's spec-decoding metrics lines, each read as the interval it counts.

V1 prints what it drafted and accepted since its previous line; V0 (`Speculative metrics: ... System
efficiency ...`) prints the counters of its rejection sampler, which count from the server's start
(vllm/spec_decode/metrics.py copies `num_accepted_tokens`, `num_emitted_tokens` and `num_draft_tokens`
as they stand). Every figure of a run (its mean acceptance length and rate, the detectors' sums) is made
of intervals, so a V0 line becomes the difference from the run's line before it: the first line keeps
its counts (what the server did before it), and a counter that goes back starts over (a restart the log
does not show). The interval's rate is accepted / drafted, its acceptance length emitted / (drafted / k),
k drafted tokens a step, as the parser derives each line's (`parsers/spec_metrics.py`).
"""

from __future__ import annotations

from typing import TypeVar

import polars as pl

from tracelens.tables.names import VLLM_V0_METRICS
from tracelens.tables.schema import C

Frame = TypeVar("Frame", pl.DataFrame, pl.LazyFrame)

_COUNTS = (C.ACCEPTED, C.DRAFTED, C.EMITTED)


def intervals(metrics: Frame) -> Frame:
    """``metrics`` (the `spec_metrics` table, or its scan) with each V0 line's counts, rate and acceptance
    length those of its interval; V1 lines as they are."""
    v0 = pl.col(C.LAYOUT) == VLLM_V0_METRICS
    # a V0 line and the line before it in its run: one server's counters, in the order it printed them
    within = [C.SOURCE, C.RUN, v0]
    ordered = metrics.sort(C.SOURCE, C.RUN, C.LINE_NO)
    drafted = pl.col(C.DRAFTED)
    # the run's first line, or one whose drafted tokens went back (the server started over): its own counts
    anew = drafted.shift(1).over(within).is_null() | (drafted < drafted.shift(1).over(within))

    def delta(name: str) -> pl.Expr:
        since = pl.when(anew).then(pl.col(name)).otherwise(pl.col(name) - pl.col(name).shift(1).over(within))
        return pl.when(v0).then(since).otherwise(pl.col(name)).alias(name)

    out = ordered.with_columns(*(delta(name) for name in _COUNTS))
    steps = drafted / pl.col(C.NUM_SPEC_TOKENS)
    return out.with_columns(
        pl.when(v0)
        .then(pl.when(drafted > 0).then(pl.col(C.ACCEPTED) / drafted).otherwise(float("nan")))
        .otherwise(pl.col(C.ACCEPTANCE_RATE))
        .alias(C.ACCEPTANCE_RATE),
        pl.when(v0)
        .then(pl.when(steps > 0).then(pl.col(C.EMITTED) / steps).otherwise(float("nan")))
        .otherwise(pl.col(C.MEAN_ACCEPTANCE_LENGTH))
        .alias(C.MEAN_ACCEPTANCE_LENGTH),
    )
