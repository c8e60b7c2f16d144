"""Findings a live session keeps although the rows they were found in have left the analysed window.

An update analyses each source's newest lines only (`window.LiveTables`), so a finding made on rows
that have since left the window would not be made again. Kept findings are keyed by their folding
signature (`folding.signature`: run, code and message but for numbers), so a repeat found again
replaces the one kept; one not found again is dropped (withdrawn, as before) only while its evidence
is still inside the window. A run that has ended (a later server start of its source was parsed) is
judged once: its findings from the first update after it ended are frozen.
"""

from __future__ import annotations

from collections.abc import Callable

from tracelens.analysis import Finding
from tracelens.analysis.findings import sort_findings
from tracelens.analysis.folding import signature
from tracelens.analysis.verdicts import causal_rank

RunKey = tuple[str, int]  # source label, run


class KeptFindings:
    def __init__(self) -> None:
        self._kept: dict[tuple[str, int, str, str], Finding] = {}
        self._frozen: set[RunKey] = set()

    def is_frozen(self, run: RunKey) -> bool:
        return run in self._frozen

    def update(
        self, found: list[Finding], ended: set[RunKey], window_start: Callable[[str], int]
    ) -> list[Finding]:
        """The findings to show after an update that found ``found``; ``ended`` are the runs a later
        start has ended (frozen after this update)."""
        fresh = {signature(f): f for f in found if (f.source, f.run) not in self._frozen}
        for key, old in self._kept.items():
            if key in fresh:
                continue
            if (old.source, old.run) in self._frozen or _left_window(old, window_start):
                fresh[key] = old
        self._kept = fresh
        self._frozen |= ended
        return sort_findings(list(fresh.values()), causal_rank)


def _left_window(finding: Finding, window_start: Callable[[str], int]) -> bool:
    """Some of the finding's evidence is before its source's window: an update cannot see it again."""
    return any(e.line_no < window_start(e.source) for e in finding.evidence)
