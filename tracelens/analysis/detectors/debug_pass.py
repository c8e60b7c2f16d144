"""The detectors that read each run's debug lines, the capture sites and the embedding statistics, on
one read of each run.

Each of them used to read the debug lines itself: on a dataset, five reads of every run (a few columns
each, the nested shapes twice) and two scans of the whole table, which cost `check` more than any
detector's own work. Here each run's debug lines are read once with every column they need (two runs at
a time, `parallel.in_order`); `aux_counts`, `shapes` and `embed_capture` run on that frame through a
`Context` narrowed to the run, `norms` and `missing_sites` on their per-run parts. The findings come out
in the order each detector gives them alone, the sites as `capture.sites_of` makes them, the
statistics as `capture.embed_stats` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import polars as pl

from tracelens.analysis import capture
from tracelens.analysis.detectors.capture_sites import (
    embed_capture,
    missing_sites,
    missing_sites_of,
    site_names,
)
from tracelens.analysis.detectors.context import Context, _spec_runs
from tracelens.analysis.detectors.hidden_states import (
    HAS_NORM,
    NORM_COLUMNS,
    aux_counts,
    norm_runs,
    norms,
    norms_of,
    shapes,
)
from tracelens.analysis.findings import Finding
from tracelens.analysis.parallel import in_order
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import C, T, empty

Detector = Callable[[Context], list[Finding]]
# Detectors that read only the speculative runs' debug lines, one run at a time, through `debug_of`.
PER_SPEC_RUN: tuple[Detector, ...] = (aux_counts, shapes, embed_capture)
# What this pass makes of the detectors: those of `PER_SPEC_RUN`, `norms` and `missing_sites`.
REPLACED: tuple[Detector, ...] = (*PER_SPEC_RUN, norms, missing_sites)
SITE_COLUMNS = [*capture.SITE_KEY, C.NUM_AUX, C.NUM_ITEMS, C.SHAPES, C.NORM, C.TS]
DEBUG_COLUMNS = list(dict.fromkeys([*RUN_KEY, C.LINE_NO, C.TS, *SITE_COLUMNS, *NORM_COLUMNS, C.LAYER_ID]))


@dataclass
class DebugPass:
    findings: dict[Detector, list[Finding]]  # of each detector of `REPLACED`, as it gives them alone
    sites: pl.DataFrame  # capture.sites_of
    embed_stats: pl.DataFrame  # capture.embed_stats


@dataclass
class _RunResult:
    sites: pl.DataFrame
    per_detector: list[list[Finding]]  # of `PER_SPEC_RUN`, empty for a run that is not speculative
    norms: list[Finding]
    site_names: set[str]
    embed_stats: pl.DataFrame


def debug_pass(ctx: Context) -> DebugPass:
    """`REPLACED`'s findings and the capture sites, each run's debug lines read once."""
    # Every run with debug lines, in the order runs first appear among them (the order of the sites).
    keys = [
        (source, run)
        for source, run in collect(
            ctx.tables.scan(T.DEBUG).select(RUN_KEY).unique(maintain_order=True)
        ).iter_rows()
    ]
    spec = {(run[C.SOURCE], run[C.RUN]) for run in _spec_runs(ctx)}

    def one(item: tuple[tuple[str, int], pl.DataFrame]) -> _RunResult:
        (source, run), rows = item
        found: list[list[Finding]] = [[] for _ in PER_SPEC_RUN]
        if (source, run) in spec:
            alone = ctx.runs.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
            narrowed = replace(ctx, runs=alone, debug=rows)
            found = [detect(narrowed) for detect in PER_SPEC_RUN]
        with_norm = rows.filter(HAS_NORM).select(NORM_COLUMNS)
        return _RunResult(
            capture.sites(rows.select(SITE_COLUMNS)),
            found,
            norms_of(ctx, source, run, with_norm),
            site_names(rows),
            rows.group_by(RUN_KEY).agg(*capture.EMBED_STATS),
        )

    results = dict(zip(keys, in_order(one, ctx.tables.per_run(T.DEBUG, keys, DEBUG_COLUMNS)), strict=True))
    findings: dict[Detector, list[Finding]] = {}
    spec_order = [(run[C.SOURCE], run[C.RUN]) for run in _spec_runs(ctx)]
    for i, detect in enumerate(PER_SPEC_RUN):
        findings[detect] = [f for key in spec_order if key in results for f in results[key].per_detector[i]]
    findings[norms] = [f for key in norm_runs(ctx) for f in results[key].norms]
    findings[missing_sites] = missing_sites_of(
        ctx, {key: result.site_names for key, result in results.items()}
    )
    parts = [results[key].sites for key in keys]
    nothing = empty(T.DEBUG)
    return DebugPass(
        findings,
        pl.concat(parts) if parts else capture.sites(nothing),
        pl.concat([r.embed_stats for r in results.values()]) if results else capture.embed_stats(nothing),
    )
