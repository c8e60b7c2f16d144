"""Detectors of speculative decoding's payoff: acceptance, speedup, steps, per-position curves."""

from __future__ import annotations

import math

import polars as pl

from tracelens.analysis.detectors.context import Context
from tracelens.analysis.findings import Finding, Severity
from tracelens.tables.schema import A, C

USELESS_ACCEPT_LEN = 1.1
LOW_ACCEPTANCE_RATE = 0.3
REGRESSION_FACTOR = 0.7


def acceptance(ctx: Context) -> list[Finding]:
    """Acceptance stuck near 1 (the draft is useless), low, or far below the same draft's earlier runs."""
    out = []
    best: dict[str, float] = {}
    for run in ctx.runs.filter(pl.col(A.SPECULATIVE)).sort(C.START_TS, nulls_last=True).to_dicts():
        mean = run[A.MEAN_ACCEPT_LEN]
        if mean is None or math.isnan(mean):
            continue
        rate = run[A.MEAN_ACCEPTANCE_RATE]
        series = ctx.series.filter((pl.col(C.SOURCE) == run[C.SOURCE]) & (pl.col(C.RUN) == run[C.RUN]))
        lines = series.get_column(C.LINE_NO).to_list()[:3]
        ts = series.item(0, C.TS) if series.height else None
        if mean < USELESS_ACCEPT_LEN:
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "acceptance-useless",
                    run[C.SOURCE],
                    run[C.RUN],
                    ts,
                    f"mean accept len {mean:.2f}: the target rejects almost every drafted token",
                    lines,
                )
            )
        elif rate is not None and rate < LOW_ACCEPTANCE_RATE:
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "acceptance-low",
                    run[C.SOURCE],
                    run[C.RUN],
                    ts,
                    f"low acceptance: {rate:.0%} of drafted tokens accepted (mean accept len {mean:.2f}"
                    + (f" with {run[C.SPEC_NUM_STEPS]} steps)" if run[C.SPEC_NUM_STEPS] is not None else ")"),
                    lines,
                )
            )
        draft = run[C.SPEC_DRAFT_MODEL] or ""
        if draft in best and mean < REGRESSION_FACTOR * best[draft]:
            out.append(
                ctx.finding(
                    Severity.WARNING,
                    "acceptance-regressed",
                    run[C.SOURCE],
                    run[C.RUN],
                    ts,
                    f"mean accept len {mean:.2f} is far below {best[draft]:.2f} reached by an earlier run "
                    f"of the same draft",
                    lines,
                )
            )
        best[draft] = max(best.get(draft, 0.0), mean)
    return out


def slower_than_baseline(ctx: Context) -> list[Finding]:
    out = []
    for row in ctx.speedups.filter(pl.col(A.SPEEDUP_HIGH) < 1).to_dicts():
        out.append(
            ctx.finding(
                Severity.WARNING,
                "slower-than-baseline",
                row[C.SOURCE],
                row[C.RUN],
                None,
                f"speculative decoding is slower than {row[A.BASELINE]}: {row[A.SPEEDUP]:.2f}x "
                f"(95% interval {row[A.SPEEDUP_LOW]:.2f}-{row[A.SPEEDUP_HIGH]:.2f}) at matched batch sizes",
            )
        )
    return out


def change_points(ctx: Context) -> list[Finding]:
    out = []
    for row in ctx.changes.to_dicts():
        load = row.get(A.LOAD_CHANGE)
        # A step that follows a change in load is the traffic changing: info, not a warning.
        why = f" while {load}: a change in load, not a fault" if load else ""
        out.append(
            ctx.finding(
                Severity.INFO if load else Severity.WARNING,
                f"{row[A.METRIC].replace('_', '-')}-step",
                row[C.SOURCE],
                row[C.RUN],
                row[C.TS],
                f"{row[A.METRIC]} stepped from {row[A.BEFORE]:.3g} to {row[A.AFTER]:.3g}{why}",
                [row[C.LINE_NO]],
            )
        )
    return out
