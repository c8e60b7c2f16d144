"""Findings and run statuses a live session keeps although the rows they were made from have left the
analysed window.

An update analyses each source's newest lines only (`window.LiveTables`), so a finding made on rows
that have since left the window would not be made again. Kept findings are keyed by their folding
signature (`folding.signature`: run, code and message but for numbers), so a repeat found again
replaces the one kept; one not found again is dropped (withdrawn, as before) only while its evidence
is still inside the window. A run that has ended (a later server start of its source was parsed) is
judged once: its findings from the first update after it ended are frozen, and so is its status (its
verdict, fix and figures, `KeptRuns`): a run that ended keeps the last verdict it had, whatever later
windows hold of it.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace

import polars as pl

from tracelens.analysis import Finding
from tracelens.analysis.findings import sort_findings
from tracelens.analysis.folding import signature
from tracelens.analysis.verdicts import causal_rank
from tracelens.live.status import ENDED_POINTS, RunKey, RunStatus, Snapshot, thin

KEPT_PER_CODE = 20  # findings of one run and code kept once their rows left the window (the newest)
ENDED_SERIES = 50  # ended runs whose plots' series are kept (the newest)


def finding_id(finding: Finding) -> str:
    """A finding's identity across updates, as `follow` names it: its run, code and a digest of its
    folding signature (the message but for numbers and rank lists), so that a finding whose count,
    ranks or time range changes keeps its id."""
    digest = hashlib.blake2s(repr(signature(finding)).encode(), digest_size=4).hexdigest()
    return f"{finding.label}/{finding.code}/{digest}"


def finding_changed(before: Finding, after: Finding) -> bool:
    """The same finding (`finding_id`) says something else: its severity, words, count, time range or
    evidence lines."""
    lines = lambda f: [(e.source, e.line_no) for e in f.evidence]  # noqa: E731
    return (before.severity, before.message, before.count, before.ts, before.last_ts, lines(before)) != (
        after.severity,
        after.message,
        after.count,
        after.ts,
        after.last_ts,
        lines(after),
    )


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
        held: dict[tuple[str, int, str], list[tuple[tuple[str, int, str, str], Finding]]] = {}
        for key, old in self._kept.items():
            if key in fresh:
                continue
            if (old.source, old.run) in self._frozen or _left_window(old, window_start):
                held.setdefault((old.source, old.run, old.code), []).append((key, old))
        for kept in held.values():
            # the newest few of a run's code: a log whose every error has words of its own (an id, a
            # path) would otherwise add one kept finding per window cut for as long as it is followed
            for key, old in sorted(kept, key=_newest_line)[-KEPT_PER_CODE:]:
                fresh[key] = old
        self._kept = fresh
        self._frozen |= ended
        return sort_findings(list(fresh.values()), causal_rank)


def _newest_line(item: tuple[object, Finding]) -> int:
    return max((e.line_no for e in item[1].evidence), default=0)


def _left_window(finding: Finding, window_start: Callable[[str], int]) -> bool:
    """Some of the finding's evidence is before its source's window: an update cannot see it again."""
    return any(e.line_no < window_start(e.source) for e in finding.evidence)


class KeptRuns:
    """The status of every run that has ended, as the first update after its end made it; the plots'
    series only of the newest `ENDED_SERIES` ended runs (a server restarting for hours would otherwise
    add a series per start to every snapshot)."""

    def __init__(self) -> None:
        self._kept: dict[RunKey, RunStatus] = {}
        self._with_series: deque[RunKey] = deque()

    @property
    def kept(self) -> Mapping[RunKey, RunStatus]:
        return self._kept

    def update(self, snap: Snapshot, ended: set[RunKey]) -> Snapshot:
        """``snap`` (made with `kept`'s statuses) after the runs of ``ended`` are frozen as it shows them."""
        for run in snap.every_run:
            if run.key is not None and run.key in ended and run.key not in self._kept:
                # it is sent with every snapshot from now on: its plots' series thinned further
                self._kept[run.key] = replace(run, ended=True, series=thin(run.series, ENDED_POINTS))
                self._with_series.append(run.key)
        while len(self._with_series) > ENDED_SERIES:
            key = self._with_series.popleft()
            self._kept[key] = replace(self._kept[key], series=pl.DataFrame())
        return replace(
            snap, every_run=tuple(self._kept.get(r.key, r) if r.key else r for r in snap.every_run)
        )
