"""Per-position acceptance (analysis/positions.py): a position that falls off a cliff, and a position that
drops against the run's baseline (the CI gate of `check --baseline RUN`)."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracelens.analysis.detectors.context import Context
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.positions import BASIS_COUNTERS, BASIS_LINES
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.schema import A, C, T

# A cliff: a position accepted more than this often whose next position is accepted less than half as
# often. Acceptance decays along the chain (each position needs the ones before it), by a roughly steady
# factor; a halving from one position to the next means drafting past it is mostly wasted.
CLIFF_FROM = 0.2
CLIFF_RATIO = 0.5
# A wasted tail: at least two last positions each accepted less often than this. Every drafted token
# costs a draft forward and a verify slot; one accepted 1 time in 20 no longer pays for them.
WASTED_RATE = 0.05
WASTED_TAIL = 2


def _first(ctx: Context, source: str, run: int) -> tuple[Any, list[int]]:
    """A time and the evidence line of a run's curve: its first vLLM metrics line when it has one (the
    histograms and counters are cited by their figures, their rows may come from another source)."""
    metrics = ctx.tables[T.SPEC_METRICS].filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
    if metrics.height:
        row = metrics.row(0, named=True)
        return row[C.TS], [row[C.LINE_NO]]
    start = ctx.runs.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
    return (start.item(0, C.START_TS) if start.height else None), []


def spec_curves(ctx: Context) -> list[Finding]:
    """Per-position acceptance that falls off a cliff (either engine, any basis)."""
    out = []
    for (source, run), curve in ctx.curves.group_by(RUN_KEY, maintain_order=True):
        ordered = curve.sort(A.POSITION)
        rates = ordered.get_column(A.RATE).to_list()
        basis = ordered.item(0, A.BASIS)
        for i in range(len(rates) - 1):
            if rates[i] > CLIFF_FROM and rates[i + 1] < CLIFF_RATIO * rates[i]:
                ts, lines = _first(ctx, source, run)
                out.append(
                    ctx.finding(
                        Severity.WARNING,
                        "spec-position-cliff",
                        source,
                        run,
                        ts,
                        f"per-position acceptance falls from {rates[i]:.2f} at position {i} to {rates[i + 1]:.2f} at "
                        f"position {i + 1} ({basis}): drafting past position {i} is mostly wasted",
                        lines,
                    )
                )
                break
    return out


def spec_depth_wasted(ctx: Context) -> list[Finding]:
    """A run that drafts deeper than its tokens are accepted: its last positions (two at least) are
    accepted under `WASTED_RATE`. The fix is the depth the accepted positions reach, in the flags of
    the engine whose figures show it."""
    out = []
    for (source, run), curve in ctx.curves.group_by(RUN_KEY, maintain_order=True):
        ordered = curve.sort(A.POSITION)
        rates = ordered.get_column(A.RATE).to_list()
        paid = len(rates)
        while paid and rates[paid - 1] is not None and rates[paid - 1] < WASTED_RATE:
            paid -= 1
        depth = len(rates)
        if depth - paid < WASTED_TAIL or paid == 0:
            continue
        basis = ordered.item(0, A.BASIS)
        ts, lines = _first(ctx, source, run)
        finding = ctx.finding(
            Severity.WARNING,
            "spec-depth-wasted",
            source,
            run,
            ts,
            f"drafted tokens {paid + 1}-{depth} of {depth} are accepted less than {WASTED_RATE:.0%} of the time "
            f"({basis}): each step drafts {depth} tokens where {paid} pay for themselves",
            lines,
        )
        finding.fix = _depth_fix(basis, paid)
        out.append(finding)
    return out


def _depth_fix(basis: str, depth: int) -> str:
    """How to draft ``depth`` tokens a step: vLLM's figures (its lines and counters) say a vLLM server."""
    if basis in (BASIS_LINES, BASIS_COUNTERS):
        return f'draft {depth} tokens a step: set "num_speculative_tokens": {depth} in --speculative-config'
    return (
        f"draft {depth} tokens a step: --speculative-num-steps {depth} "
        f"(and --speculative-num-draft-tokens {depth + 1} with topk 1)"
    )


def position_regressed(ctx: Context) -> list[Finding]:
    """A run whose acceptance at some position is below its baseline's by more than the margin: an
    error, so `check` exits 1. Only runs whose baseline has a curve (a speculative run named by
    `--baseline`; the default baseline, a run without speculation, has none)."""
    if not ctx.baselines.height or not ctx.curves.height:
        return []
    curves = ctx.curves.filter(pl.col(A.LABEL).is_not_null())
    base = curves.select(
        pl.col(A.LABEL).alias(A.BASELINE),
        A.POSITION,
        pl.col(A.RATE).alias(A.BEFORE),
        pl.col(A.BASIS).alias(C.LAYOUT),
    )
    pairs = (
        curves.join(ctx.baselines.select(*RUN_KEY, A.BASELINE), on=RUN_KEY)
        .join(base, on=[A.BASELINE, A.POSITION])
        .with_columns((pl.col(A.BEFORE) - pl.col(A.RATE)).alias(A.DROP))
    )
    out = []
    margin = ctx.position_margin
    for (source, run), rows in pairs.group_by(RUN_KEY, maintain_order=True):
        worst = rows.sort(A.DROP, descending=True).row(0, named=True)
        if worst[A.DROP] <= margin + 1e-9:  # a drop of exactly the margin passes, whatever the rounding
            continue
        ts, lines = _first(ctx, source, run)
        out.append(
            ctx.finding(
                Severity.ERROR,
                "spec-position-regressed",
                source,
                run,
                ts,
                f"acceptance at draft position {worst[A.POSITION]} is {worst[A.RATE]:.2f} against "
                f"{worst[A.BEFORE]:.2f} in {worst[A.BASELINE]} ({worst[A.BASIS]} against {worst[C.LAYOUT]}): "
                f"down {worst[A.DROP]:.2f}, more than the margin {margin:.2f}",
                lines,
            )
        )
    return out
