"""What `tracelens follow` prints: new findings as they are found, source state changes, and each run's
stats (phase, acceptance, throughput) when they change; as text lines or as JSON lines (`--json`).
Headless and Textual-free; the CLI only wires it to a session and stdout."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from typing import Any

from tracelens.formatting import number, severity_tag, speedup, terminal_text
from tracelens.live import events as ev
from tracelens.live.status import RunStatus

STATS_EVERY = 5.0


def stats_words(run: RunStatus) -> str:
    parts = [run.label or run.source, run.phase]
    if run.status and run.headline:
        parts.append(f"{run.status.upper()}: {run.headline}")
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
    return " · ".join(parts)


class FollowPrinter:
    """A session listener that writes lines through ``write`` (called on the session's threads)."""

    def __init__(
        self,
        write: Callable[[str], None],
        as_json: bool = False,
        stats_every: float = STATS_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write = write
        self.as_json = as_json
        self.stats_every = stats_every
        self.clock = clock
        self._last_stats: dict[str, tuple[str, float]] = {}  # source -> (phase, printed at)
        self._last_words: dict[str, str] = {}

    def __call__(self, event: Any) -> None:
        if isinstance(event, ev.SourceStateChanged):
            self._out(
                {"event": "source", "source": event.source, "state": event.state, "detail": event.detail},
                f"{event.source}: {event.state}" + (f" ({event.detail})" if event.detail else ""),
            )
        elif isinstance(event, ev.AnalysisUpdated):
            for finding in event.withdrawn:
                # A finding the newer analysis no longer makes (e.g. it saw half of a decode step).
                self._out(
                    {"event": "retract", **finding.to_json()},
                    f"WITHDRAWN {finding.code} {finding.label}: {finding.message}",
                )
            for finding in event.new_findings:
                text = f"{severity_tag(finding.severity)} {finding.code} {finding.label}: {finding.message}"
                for e in finding.evidence[:3]:
                    text += f"\n    {e.where}: {e.text[:200]}"
                self._out({"event": "finding", **finding.to_json()}, text)
            for run in event.snapshot.runs:
                self._stats(run)
        elif isinstance(event, ev.SessionFailed):
            self._out({"event": "error", "message": event.message}, f"error: {event.message}")

    def flush_stats(self, runs: tuple[RunStatus, ...]) -> None:
        """Print every run's latest stats (at the end), unless they were just printed."""
        for run in runs:
            self._stats(run, force=True)

    def _stats(self, run: RunStatus, force: bool = False) -> None:
        words = stats_words(run)
        if words == self._last_words.get(run.source):
            return
        now = self.clock()
        phase, at = self._last_stats.get(run.source, ("", -1e18))
        if not force and phase == run.phase and now - at < self.stats_every:
            return
        self._last_stats[run.source] = (run.phase, now)
        self._last_words[run.source] = words
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
            self.write(f"{now:%H:%M:%S} {terminal_text(text)}\n")


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    return str(value)
