"""Detectors: each turns analysis frames into findings a user can act on. One function per concern;
`DETECTORS` lists them all, so adding a check is adding a function to that tuple."""

from __future__ import annotations

from collections.abc import Callable

from tracelens.analysis.detectors.capture_sites import embed_capture, layer_ids, missing_sites, truncated
from tracelens.analysis.detectors.context import Context
from tracelens.analysis.detectors.health import faults, startup
from tracelens.analysis.detectors.hidden_states import aux_counts, fc_width, norms, shapes
from tracelens.analysis.detectors.performance import (
    acceptance,
    change_points,
    slower_than_baseline,
    spec_curves,
)
from tracelens.analysis.findings import Finding

__all__ = ["DETECTORS", "Context"]

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
    slower_than_baseline,
    change_points,
    startup,
    faults,
    spec_curves,
)
