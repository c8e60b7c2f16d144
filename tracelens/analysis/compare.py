"""Run against run: speedup over a baseline at matched batch sizes, and what changed in server args.

The baseline of a speculative run is, unless the user names one, the run of the same model without
speculative decoding that has the most decode lines. Speedup compares steady-state throughput at each
batch size both runs saw, weighted by how often the candidate ran at that size, so a run that happened
to serve bigger batches is not credited for it. The 95% interval is a percentile bootstrap over the
decode-line samples (resampled within each batch size, fixed seed, so reports are reproducible).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracelens.analysis.acceptance import steady_rows
from tracelens.analysis.runs import RUN_KEY
from tracelens.errors import InputError
from tracelens.tables.schema import A, C, W

BOOTSTRAP_ROUNDS = 500
# Server args that differ between any two starts and say nothing about the configuration.
NOISY_ARGS = frozenset({"random_seed", "port", "nccl_port", "dist_init_addr", "host"})


def pick_baselines(runs: pl.DataFrame, rounds: pl.DataFrame, named: str | None) -> pl.DataFrame:
    """source, run, baseline label (null when no baseline applies) and speedup_note (why not, in words)
    for every run. ``rounds``: source, run, _n, the number of decode rounds of each run
    (`per_run.decode_rounds`). A named baseline is the baseline of every run of its model; one whose
    model no other run serves is refused (a speedup over another model measures the model)."""
    counts = rounds.select(*RUN_KEY, W.N)
    info = runs.select(*RUN_KEY, A.LABEL, C.MODEL, A.SPECULATIVE).join(counts, on=RUN_KEY, how="left")
    if named is not None:
        return _named_baseline(info, named)
    plain = (
        info.filter(~pl.col(A.SPECULATIVE) & (pl.col(W.N).fill_null(0) > 0))
        .sort(W.N, descending=True)
        .group_by(C.MODEL, maintain_order=True)
        .first()
        .select(C.MODEL, pl.col(A.LABEL).alias(A.BASELINE))
    )
    out = info.join(plain, on=C.MODEL, how="left")  # a model not logged is compared with none
    wanted = pl.col(A.SPECULATIVE)
    why = (
        pl.when(pl.col(C.MODEL).is_null())
        .then(pl.lit("no baseline: the log does not name the model"))
        .otherwise(pl.format("no baseline: no run of {} without speculative decoding", pl.col(C.MODEL)))
    )
    return out.select(
        *RUN_KEY,
        pl.when(wanted).then(pl.col(A.BASELINE)).alias(A.BASELINE),
        pl.when(wanted & pl.col(A.BASELINE).is_null()).then(why).alias(A.SPEEDUP_NOTE),
    )


def _named_baseline(info: pl.DataFrame, named: str) -> pl.DataFrame:
    labels = info.get_column(A.LABEL).to_list()
    if named not in labels:
        raise InputError(f"--baseline {named!r} is not a run here (runs: {', '.join(labels)})")
    model = info.filter(pl.col(A.LABEL) == named).item(0, C.MODEL)
    # a model not logged (no server args) is taken to be any: nothing tells it is another
    same = pl.col(C.MODEL).is_null() | pl.lit(model is None) | (pl.col(C.MODEL) == pl.lit(model))
    others = info.filter(pl.col(A.LABEL) != named)
    if others.height and not others.filter(same).height:
        served = ", ".join(f"{label}: {m}" for label, m in others.select(A.LABEL, C.MODEL).iter_rows())
        raise InputError(
            f"--baseline {named} serves {model} and no other run does ({served}); "
            "a speedup compares runs of one model"
        )
    compared = (pl.col(A.LABEL) != named) & same
    return info.select(
        *RUN_KEY,
        pl.when(compared).then(pl.lit(named)).alias(A.BASELINE),
        pl.when((pl.col(A.LABEL) != named) & ~same)
        .then(pl.lit(f"a different model from {named} ({model})"))
        .alias(A.SPEEDUP_NOTE),
    )


def speedup_notes(runs: pl.DataFrame, baselines: pl.DataFrame, speedups: pl.DataFrame) -> pl.DataFrame:
    """source, run, speedup_note: why a run shows no speedup (`compare` prints it for the `-`): no
    baseline, a different model, no batch size shared, or it is the baseline."""
    used = baselines.get_column(A.BASELINE).drop_nulls().unique().implode()
    measured = speedups.select(*RUN_KEY, pl.col(A.SPEEDUP_NOTE).alias(W.MEASURED))
    return (
        runs.select(*RUN_KEY, A.LABEL)
        .join(baselines.select(*RUN_KEY, A.SPEEDUP_NOTE), on=RUN_KEY, how="left")
        .join(measured, on=RUN_KEY, how="left")
        .select(
            *RUN_KEY,
            pl.coalesce(
                W.MEASURED,
                A.SPEEDUP_NOTE,
                pl.when(pl.col(A.LABEL).is_in(used)).then(pl.lit("the baseline")),
            ).alias(A.SPEEDUP_NOTE),
        )
    )


# Of one run: its steady rounds' throughput per batch size, in round order (`throughput_groups`).
Groups = dict[int, np.ndarray]


def speedups(
    groups: dict[tuple[str, int], Groups], runs: pl.DataFrame, baselines: pl.DataFrame
) -> pl.DataFrame:
    """source, run, baseline, speedup, ci low/high, matched batch sizes, samples. ``groups``: the
    `throughput_groups` of each run a speedup compares, made in the run's own pass."""
    by_label: dict[str, Groups] = {}
    labels = {(source, run): label for source, run, label in runs.select(*RUN_KEY, A.LABEL).iter_rows()}
    for key, sizes in groups.items():
        if key not in labels:
            continue
        merged = by_label.setdefault(labels[key], {})
        for size, values in sizes.items():  # two runs of one label (rare) are compared as one
            merged[size] = np.concatenate([merged[size], values]) if size in merged else values
    rows = []
    assigned = baselines.filter(pl.col(A.BASELINE).is_not_null()).select(*RUN_KEY, A.BASELINE)
    for source, run, baseline in assigned.iter_rows():
        label = labels[(source, run)]
        result = _speedup(by_label.get(label), by_label.get(baseline))
        if result[A.SPEEDUP] is None:
            lacking = [name for name in (label, baseline) if not by_label.get(name)]
            result[A.SPEEDUP_NOTE] = (
                f"no steady decode rounds in {' and '.join(lacking)}"
                if lacking
                else f"no batch size shared with {baseline}"
            )
        rows.append({C.SOURCE: source, C.RUN: run, A.BASELINE: baseline, **result})
    schema = pl.Schema(
        {
            C.SOURCE: pl.String(),
            C.RUN: pl.Int32(),
            A.BASELINE: pl.String(),
            A.SPEEDUP: pl.Float64(),
            A.SPEEDUP_LOW: pl.Float64(),
            A.SPEEDUP_HIGH: pl.Float64(),
            A.MATCHED_BATCH_SIZES: pl.List(pl.Int64()),
            A.SAMPLES: pl.Int64(),
            A.SPEEDUP_NOTE: pl.String(),
        }
    )
    return pl.DataFrame(rows, schema=schema)


def throughput_groups(series: pl.DataFrame) -> Groups:
    """Of one run's series: the throughput of its steady rounds per batch size (what `speedups`
    compares), a few numbers per round instead of the rounds' every column."""
    steady = steady_rows(series).filter(pl.col(C.GEN_THROUGHPUT).is_not_null())
    return {
        int(size): part.get_column(C.GEN_THROUGHPUT).to_numpy()
        for (size,), part in steady.filter(pl.col(A.BATCH_SIZE).is_not_null()).group_by(A.BATCH_SIZE)
    }


def _speedup(cand: Groups | None, base: Groups | None) -> dict[str, object]:
    empty: dict[str, object] = {
        A.SPEEDUP: None,
        A.SPEEDUP_LOW: None,
        A.SPEEDUP_HIGH: None,
        A.MATCHED_BATCH_SIZES: [],
        A.SAMPLES: 0,
        A.SPEEDUP_NOTE: None,
    }
    if cand is None or base is None:
        return empty
    sizes = sorted(set(cand) & set(base))
    if not sizes:
        return empty
    weights = np.array([len(cand[s]) for s in sizes], dtype=float)

    def ratio(c: list[np.ndarray], b: list[np.ndarray]) -> float:
        return weighted_ratio([ci.mean() for ci in c], [bi.mean() for bi in b], weights)

    point = ratio([cand[s] for s in sizes], [base[s] for s in sizes])
    rng = np.random.default_rng(0)
    draws = [
        ratio(
            [rng.choice(cand[s], len(cand[s])) for s in sizes],
            [rng.choice(base[s], len(base[s])) for s in sizes],
        )
        for _ in range(BOOTSTRAP_ROUNDS)
    ]
    low, high = np.percentile(draws, [2.5, 97.5])
    return {
        A.SPEEDUP: point,
        A.SPEEDUP_LOW: float(low),
        A.SPEEDUP_HIGH: float(high),
        A.MATCHED_BATCH_SIZES: sizes,
        A.SAMPLES: int(weights.sum()),
        A.SPEEDUP_NOTE: None,
    }


def weighted_ratio(candidate: list[float], baseline: list[float], weights: np.ndarray) -> float:
    """The speedup's point: per matched batch size the candidate's mean throughput over the baseline's,
    weighted by how often the candidate ran at that size (``weights``). The live worker computes it
    from running sums per batch size (`live/running.py`)."""
    per_size = np.array([c / b for c, b in zip(candidate, baseline, strict=True)])
    return float((per_size * weights).sum() / weights.sum())


def args_diff(server_args: pl.DataFrame, runs: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
    """run_a, run_b, key, value_a, value_b for every server arg whose value differs between runs a and b
    (labels); an arg only one run has shows null on the other side."""
    labelled = server_args.join(runs.select(*RUN_KEY, A.LABEL), on=RUN_KEY)

    def side(label: str, name: str) -> pl.DataFrame:
        return (
            labelled.filter(pl.col(A.LABEL) == label).select(C.KEY, pl.col(C.VALUE).alias(name)).unique(C.KEY)
        )

    joined = side(a, A.VALUE_A).join(side(b, A.VALUE_B), on=C.KEY, how="full", coalesce=True)
    differ = pl.col(A.VALUE_A).ne_missing(pl.col(A.VALUE_B)) & ~pl.col(C.KEY).is_in(list(NOISY_ARGS))
    return (
        joined.filter(differ)
        .sort(C.KEY)
        .select(pl.lit(a).alias(A.RUN_A), pl.lit(b).alias(A.RUN_B), C.KEY, A.VALUE_A, A.VALUE_B)
    )
