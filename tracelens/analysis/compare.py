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
    """source, run, baseline label (null when no baseline applies) for every run. ``rounds``: source,
    run, _n, the number of decode rounds of each run (`per_run.decode_rounds`)."""
    counts = rounds.select(*RUN_KEY, W.N)
    info = runs.select(*RUN_KEY, A.LABEL, C.MODEL, C.SPEC_ALGORITHM).join(counts, on=RUN_KEY, how="left")
    if named is not None:
        if named not in info.get_column(A.LABEL).to_list():
            known = ", ".join(info.get_column(A.LABEL).to_list())
            raise InputError(f"--baseline {named!r} is not a run here (runs: {known})")
        return info.select(*RUN_KEY, pl.when(pl.col(A.LABEL) != named).then(pl.lit(named)).alias(A.BASELINE))
    plain = (
        info.filter(pl.col(C.SPEC_ALGORITHM).is_null() & (pl.col(W.N).fill_null(0) > 0))
        .sort(W.N, descending=True)
        .group_by(C.MODEL, maintain_order=True)
        .first()
        .select(C.MODEL, pl.col(A.LABEL).alias(A.BASELINE))
    )
    out = info.join(plain, on=C.MODEL, how="left")
    return out.select(
        *RUN_KEY, pl.when(pl.col(C.SPEC_ALGORITHM).is_not_null()).then(pl.col(A.BASELINE)).alias(A.BASELINE)
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
    for source, run, baseline in baselines.filter(pl.col(A.BASELINE).is_not_null()).iter_rows():
        label = runs.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run)).item(0, A.LABEL)
        result = _speedup(by_label.get(label), by_label.get(baseline))
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
