"""The detectors that read each run's debug lines, the capture sites and the embedding statistics, on
one read of each run.

Each run's debug lines become its digest once (`debug_digest.digests`: a few rows, however long the
run, read a piece at a time), and every detector of `REPLACED` reads that: `aux_counts`, `shapes` and
`embed_capture` of the speculative runs, `norms` and `missing_sites` of every run with debug lines.
The findings come out in the order each detector gives them alone, the sites as `capture.sites` makes
them, the statistics as `capture.embed_stats` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import polars as pl

from tracelens.analysis import capture
from tracelens.analysis.debug_digest import digests, empty_digest
from tracelens.analysis.detectors.capture_sites import (
    embed_capture,
    missing_sites,
    missing_sites_of,
    site_names,
)
from tracelens.analysis.detectors.context import Context
from tracelens.analysis.detectors.hidden_states import aux_counts, norms, shapes
from tracelens.analysis.findings import Finding
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import T

Detector = Callable[[Context], list[Finding]]
# What this pass makes of the detectors.
REPLACED: tuple[Detector, ...] = (aux_counts, shapes, embed_capture, norms, missing_sites)


@dataclass
class DebugPass:
    findings: dict[Detector, list[Finding]]  # of each detector of `REPLACED`, as it gives them alone
    sites: pl.DataFrame  # capture.sites
    embed_stats: pl.DataFrame  # capture.embed_stats
    context: Context  # the context with every run's digest, for the detectors that come after


def debug_pass(ctx: Context) -> DebugPass:
    """`REPLACED`'s findings and the capture sites, each run's debug lines read once."""
    # Every run with debug lines, in the order runs first appear among them (the order of the sites).
    keys = [
        (source, run)
        for source, run in collect(
            ctx.tables.scan(T.DEBUG).select(RUN_KEY).unique(maintain_order=True)
        ).iter_rows()
    ]
    made = dict(digests(ctx.tables, keys))
    read = replace(ctx, digests={**ctx.digests, **made})
    findings: dict[Detector, list[Finding]] = {
        detect: detect(read) for detect in (aux_counts, shapes, embed_capture, norms)
    }
    findings[missing_sites] = missing_sites_of(read, {key: site_names(d.groups) for key, d in made.items()})
    groups = pl.concat([empty_digest(), *(made[key].groups for key in keys)])
    return DebugPass(findings, capture.sites(groups), capture.embed_stats(groups), read)
