"""What `tracelens follow` prints: the current answer as a stream. Findings as they are found, sent again
(`update`, same id) when their count, ranks or time range change and retracted when withdrawn; source
state changes; each run's stats (phase, acceptance, throughput) and verdict when they change, ended runs
keeping their last. Every event about a run carries the run's verdict (status, headline, fix). As text
lines wrapped to the terminal's width, or as JSON lines (`--json`, laid out in docs/follow.md).
Headless and Textual-free; the CLI only wires it to a session and stdout."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import textwrap
import time
from collections.abc import Callable
from typing import Any

from tracelens.analysis import Finding
from tracelens.formatting import number, severity_tag, speedup, terminal_text
from tracelens.live import events as ev
from tracelens.live.kept import finding_id
from tracelens.live.status import RunKey, RunStatus, Snapshot

STATS_EVERY = 5.0
TIME_WIDTH = 9  # "HH:MM:SS " before every text line; continuation lines are indented as far
EVIDENCE_SHOWN = 3


def stats_words(run: RunStatus) -> str:
    parts = [run.label or run.source, run.phase_words]
    if run.status and run.headline:
        parts.append(f"{run.status.upper()}: {run.headline}")
    if run.fix:
        parts.append(f"fix: {run.fix}")
    if run.phase_detail:
        parts.append(run.phase_detail)
    if run.speculative:
        parts.append(run.speculative)
    # The run means are the ones `summary` and `compare` print; "now" is the newest decode line.
    # A run longer than the live window whose means could not be kept whole says so (`live/running.py`).
    mean = "window mean" if "mean_accept_len" in run.window_figures else "run mean"
    if run.accept_len is not None:
        parts.append(f"accept len {number(run.mean_accept_len)} {mean} (now {number(run.accept_len)})")
    if run.gen_throughput is not None:
        parts.append(
            f"{number(run.mean_gen_throughput, 1)} tok/s {mean} (now {number(run.gen_throughput, 1)})"
        )
    if run.speedup is not None and run.baseline:
        parts.append(f"{speedup(run.speedup)} {run.baseline}")
    if run.embed_words:
        parts.append(run.embed_words)
    # per position, the depth in force, the requests' rate: a metrics source has no other figure that moves
    if run.acceptance:
        parts.append(run.acceptance)
    return " · ".join(parts)


class FollowPrinter:
    """A session listener that writes lines through ``write`` (called on the session's threads).
    ``width``: the columns text lines wrap to (default: the terminal's, 80 when it is not one)."""

    def __init__(
        self,
        write: Callable[[str], None],
        as_json: bool = False,
        stats_every: float = STATS_EVERY,
        clock: Callable[[], float] = time.monotonic,
        width: int | None = None,
    ) -> None:
        self.write = write
        self.as_json = as_json
        self.stats_every = stats_every
        self.clock = clock
        self.width = width or shutil.get_terminal_size((80, 24)).columns
        self._last_stats: dict[RunKey | str, tuple[str, float]] = {}  # run -> (phase, printed at)
        self._last_words: dict[RunKey | str, str] = {}
        self._verdicts: dict[RunKey | str, dict[str, Any]] = {}  # run -> the verdict last sent
        self._snapshot = Snapshot()

    def __call__(self, event: Any) -> None:
        if isinstance(event, ev.SourceStateChanged):
            self._out(
                {"event": "source", "source": event.source, "state": event.state, "detail": event.detail},
                f"{event.source}: {event.state}" + (f" ({event.detail})" if event.detail else ""),
            )
        elif isinstance(event, ev.AnalysisUpdated):
            self._snapshot = event.snapshot
            for finding in event.withdrawn:
                # A finding the newer analysis no longer makes (e.g. it saw half of a decode step).
                self._finding("retract", finding, "WITHDRAWN")
            for finding in event.updated:
                self._finding("update", finding, f"UPDATED {severity_tag(finding.severity)}")
            for finding in event.new_findings:
                self._finding("finding", finding, severity_tag(finding.severity))
            for run in event.snapshot.every_run:
                self._stats(run)
        elif isinstance(event, ev.SessionFailed):
            self._out({"event": "error", "message": event.message}, f"error: {event.message}")

    def flush_stats(self, runs: tuple[RunStatus, ...]) -> None:
        """Print every run's latest stats (at the end), unless they were just printed."""
        for run in runs:
            self._stats(run, force=True)

    def _finding(self, kind: str, finding: Finding, tag: str) -> None:
        run = self._snapshot.by_key().get((finding.source, finding.run))
        verdict = run.verdict_json() if run is not None else {"run": finding.label}
        text = f"{tag} {finding.code} {finding.label}: {finding.message}"
        if kind != "retract":
            evidence = [f"{e.where}: {e.text[:200]}" for e in finding.evidence[:EVIDENCE_SHOWN]]
            text += "".join(f"\n{line}" for line in evidence)
        self._out({"event": kind, "id": finding_id(finding), **finding.to_json(), "verdict": verdict}, text)

    def _stats(self, run: RunStatus, force: bool = False) -> None:
        key: RunKey | str = run.key or run.source
        words = stats_words(run)
        if words == self._last_words.get(key):
            return
        now = self.clock()
        phase, at = self._last_stats.get(key, ("", -1e18))
        verdict = run.verdict_json()
        # A new verdict is said at once; figures that move under the same verdict every `stats_every` s.
        changed = verdict != self._verdicts.get(key)
        if not force and not changed and phase == run.phase and now - at < self.stats_every:
            return
        self._last_stats[key] = (run.phase, now)
        self._last_words[key] = words
        self._verdicts[key] = verdict
        self._out({"event": "stats", **run.to_json()}, words)

    def _out(self, payload: dict[str, Any], text: str) -> None:
        now = dt.datetime.now()
        if self.as_json:
            # Every event says when it was emitted (`at`), beside the log's own `ts` where it has one.
            self.write(
                json.dumps(
                    {"at": now.isoformat(sep=" ", timespec="seconds"), **payload}, default=_json_default
                )
                + "\n"
            )
        else:
            # Findings, evidence and labels are log text: no escape sequence reaches the terminal
            # (JSON escapes control characters itself).
            self.write(wrapped(f"{now:%H:%M:%S} ", terminal_text(text), self.width))


def wrapped(lead: str, text: str, width: int) -> str:
    """``text`` after ``lead``, each of its lines wrapped at word boundaries to ``width`` columns, the
    continuation lines indented past the lead (a word longer than the width is cut)."""
    indent = " " * len(lead)
    out: list[str] = []
    for i, line in enumerate(text.split("\n")):
        first = lead if i == 0 else indent + "  "
        out += textwrap.wrap(
            line,
            max(width, len(first) + 20),
            initial_indent=first,
            subsequent_indent=indent + ("    " if i else "  "),
            break_on_hyphens=False,
        ) or [first]
    return "\n".join(out) + "\n"


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)
