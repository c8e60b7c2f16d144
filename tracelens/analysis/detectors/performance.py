"""Detectors of speculative decoding's payoff: acceptance, speedup, steps, per-position curves."""

from __future__ import annotations

import math

import polars as pl

from tracelens.analysis import vllm_metrics
from tracelens.analysis.detectors.context import Context
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect as collect_lazy
from tracelens.tables.schema import A, C, T

USELESS_ACCEPT_LEN = 1.1
LOW_ACCEPTANCE_RATE = 0.3
REGRESSION_FACTOR = 0.7
# 1 in 20 drafted tokens accepted: what an accept len of 1.1 means for a two-token draft, and far below any
# draft that pays for itself
USELESS_ACCEPTANCE_RATE = 0.05
MIN_MATCHED_LINES = 5  # decode lines of each kind at one batch size before their speeds are compared


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
        # vLLM's metrics lines say k and the rate: a Medusa of 16 heads at 0% is said so
        k = run.get(A.SPEC_TOKENS)
        vllm = f" (acceptance {rate:.1%} over {k} speculative tokens)" if k and rate is not None else ""
        if mean < USELESS_ACCEPT_LEN:
            out.append(
                ctx.finding(
                    Severity.ERROR,
                    "acceptance-useless",
                    run[C.SOURCE],
                    run[C.RUN],
                    ts,
                    f"mean accept len {mean:.2f}{vllm}: the target rejects almost every drafted token",
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


def metrics_acceptance(ctx: Context) -> list[Finding]:
    """Runs whose server args name no speculative algorithm (vLLM) but whose metrics lines show
    drafting with no acceptance length (V1's first layouts; a run with one is `acceptance`'s): the draft
    is useless when almost none of its tokens are accepted, whatever the debug lines say."""
    judged = pl.col(C.SPEC_ALGORITHM).is_not_null() | pl.col(A.MEAN_ACCEPT_LEN).is_not_null()
    spec = set(ctx.runs.filter(judged).select(RUN_KEY).iter_rows())
    rate = pl.col(C.ACCEPTANCE_RATE)
    drafting = vllm_metrics.intervals(ctx.tables.scan(T.SPEC_METRICS)).filter(
        (pl.col(C.DRAFTED).fill_null(1) > 0) & rate.is_not_null() & rate.is_not_nan()
    )
    per_run = collect_lazy(
        drafting.group_by(RUN_KEY).agg(
            rate.mean().alias(A.MEAN_ACCEPTANCE_RATE),
            pl.len().alias(A.COUNT),
            pl.col(C.LINE_NO).sort().head(3).alias(C.LINE_NO),
            pl.col(C.TS).min().alias(C.TS),
            pl.col(C.NUM_SPEC_TOKENS).max().alias(C.NUM_SPEC_TOKENS),
        )
    )
    out = []
    for row in per_run.to_dicts():
        if (row[C.SOURCE], row[C.RUN]) in spec or row[A.MEAN_ACCEPTANCE_RATE] >= USELESS_ACCEPTANCE_RATE:
            continue
        tokens = f" over {row[C.NUM_SPEC_TOKENS]} speculative tokens" if row[C.NUM_SPEC_TOKENS] else ""
        out.append(
            ctx.finding(
                Severity.ERROR,
                "acceptance-useless",
                row[C.SOURCE],
                row[C.RUN],
                row[C.TS],
                f"draft acceptance rate {row[A.MEAN_ACCEPTANCE_RATE]:.3f}{tokens} in {row[A.COUNT]} metrics "
                "lines: the target rejects almost every drafted token",
                row[C.LINE_NO],
            )
        )
    return out


# Every drafted token accepted, by vLLM's own counts, over this many drafted tokens and metrics lines: no
# real draft guesses that well for long.
ALL_ACCEPTED_DRAFTED = 100
ALL_ACCEPTED_LINES = 2


def all_accepted(ctx: Context) -> list[Finding]:
    """Runs whose metrics lines count every drafted token accepted (`Accepted: N tokens` equal to
    `Drafted: N tokens`) in every interval: the output repeats itself (a generation loop, which a draft
    predicts perfectly), or the draft model is the target itself."""
    drafted, accepted = pl.col(C.DRAFTED), pl.col(C.ACCEPTED)
    per_run = collect_lazy(
        vllm_metrics.intervals(ctx.tables.scan(T.SPEC_METRICS))
        .filter(drafted.is_not_null() & (drafted > 0) & accepted.is_not_null())
        .group_by(RUN_KEY)
        .agg(
            (accepted == drafted).all().alias("_all"),
            drafted.sum().alias(C.DRAFTED),
            pl.len().alias(A.COUNT),
            pl.col(C.LINE_NO).sort().head(3).alias(C.LINE_NO),
            pl.col(C.TS).min().alias(C.TS),
        )
        .filter(
            pl.col("_all")
            & (pl.col(C.DRAFTED) >= ALL_ACCEPTED_DRAFTED)
            & (pl.col(A.COUNT) >= ALL_ACCEPTED_LINES)
        )
    )
    return [
        ctx.finding(
            Severity.WARNING,
            "acceptance-total",
            row[C.SOURCE],
            row[C.RUN],
            row[C.TS],
            f"all {row[C.DRAFTED]} drafted tokens accepted: the output loops, or the draft is the target",
            row[C.LINE_NO],
        )
        for row in per_run.to_dicts()
    ]


def slower_than_plain_decode(ctx: Context) -> list[Finding]:
    """A run whose decode lines hold both speculative (with an accept len) and plain ones (a log that
    joins a baseline and a speculative block without a start line between them): speculative decoding
    that is slower than the plain decode at the same number of running requests does not pay."""
    decode = (
        ctx.tables.scan(T.BATCHES)
        .filter((pl.col(C.PHASE) == "decode") & pl.col(C.GEN_THROUGHPUT).is_not_null())
        .select(
            *RUN_KEY,
            C.LINE_NO,
            C.RUNNING_REQ,
            C.GEN_THROUGHPUT,
            pl.col(C.ACCEPT_LEN).is_not_null().alias("_spec"),
        )
    )
    by = [*RUN_KEY, C.RUNNING_REQ]
    counted = collect_lazy(
        decode.group_by(*by, "_spec").agg(pl.len().alias(A.COUNT), pl.col(C.LINE_NO).min())
    ).filter(pl.col(A.COUNT) >= MIN_MATCHED_LINES)
    # A median holds every value of its group: only the batch sizes a run decoded at both ways are
    # read again for theirs (few runs have any: a log that joins a baseline and a speculative block).
    mixed = counted.group_by(by).agg(pl.len().alias("_kinds")).filter(pl.col("_kinds") == 2).drop("_kinds")
    medians = collect_lazy(
        decode.join(mixed.lazy(), on=by, how="semi")
        .group_by(*by, "_spec")
        .agg(pl.col(C.GEN_THROUGHPUT).median().alias(A.MEAN_GEN_THROUGHPUT))
    )
    groups = counted.join(mixed, on=by, how="semi").join(medians, on=[*by, "_spec"], how="left")
    spec = groups.filter(pl.col("_spec")).drop("_spec")
    plain = groups.filter(~pl.col("_spec")).drop("_spec")
    both = spec.join(plain, on=[*RUN_KEY, C.RUNNING_REQ], suffix="_plain")
    out = []
    for (source, run), rows in both.group_by(RUN_KEY, maintain_order=True):
        row = rows.sort(pl.col(A.COUNT) + pl.col(f"{A.COUNT}_plain"), descending=True).row(0, named=True)
        fast, slow = row[f"{A.MEAN_GEN_THROUGHPUT}_plain"], row[A.MEAN_GEN_THROUGHPUT]
        if slow >= fast:
            continue
        out.append(
            ctx.finding(
                Severity.WARNING,
                "slower-than-baseline",
                str(source),
                int(run),
                None,
                f"speculation is slower than plain decode here: {slow:.0f} vs {fast:.0f} tok/s "
                f"({slow / fast:.2f}x). Compared at {row[C.RUNNING_REQ]} running request(s).",
                [row[C.LINE_NO], row[f"{C.LINE_NO}_plain"]],
            )
        )
    return out
