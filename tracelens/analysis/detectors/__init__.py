"""Detectors: each turns analysis frames into findings a user can act on. One function per concern;
`DETECTORS` lists them all, so adding a check is adding a function to that tuple."""

from __future__ import annotations

from collections.abc import Callable

from tracelens.analysis.detectors.capture_sites import embed_capture, layer_ids, missing_sites, truncated
from tracelens.analysis.detectors.context import Context
from tracelens.analysis.detectors.debug_pass import DebugPass, debug_pass
from tracelens.analysis.detectors.health import failures, faults, startup
from tracelens.analysis.detectors.hidden_states import aux_counts, fc_width, norms, shapes
from tracelens.analysis.detectors.pd_queues import pd_bootstrap_stuck, pd_decode_stuck
from tracelens.analysis.detectors.performance import (
    acceptance,
    all_accepted,
    change_points,
    metrics_acceptance,
    slower_than_baseline,
    slower_than_plain_decode,
)
from tracelens.analysis.detectors.positions import position_regressed, spec_curves, spec_depth_wasted
from tracelens.analysis.findings import Finding

__all__ = ["DETECTORS", "Context", "detect"]

DETECTORS: tuple[Callable[[Context], list[Finding]], ...] = (
    aux_counts,
    fc_width,
    shapes,
    embed_capture,
    missing_sites,
    layer_ids,
    norms,
    truncated,
    acceptance,
    metrics_acceptance,
    all_accepted,
    slower_than_baseline,
    slower_than_plain_decode,
    change_points,
    startup,
    faults,
    failures,
    pd_bootstrap_stuck,
    pd_decode_stuck,
    spec_curves,
    spec_depth_wasted,
    position_regressed,
)


def detect(ctx: Context) -> tuple[list[Finding], DebugPass]:
    """The findings of every detector, in `DETECTORS` order, and the pass over the debug lines (which
    makes the capture sites and embedding statistics too): the detectors that read each run's debug
    lines on one read of it (`debug_pass`), then the others."""
    passed = debug_pass(ctx)
    others = [d for d in DETECTORS if d not in passed.findings]
    # one after the other: together they cost little, and on threads their whole-table scans of the
    # debug lines (layer ids, truncation) ran at once, which raised the peak by about 60 MiB
    found = {d: d(passed.context) for d in others}
    return [f for d in DETECTORS for f in (passed.findings[d] if d in passed.findings else found[d])], passed
