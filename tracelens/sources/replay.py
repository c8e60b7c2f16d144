"""Replay a recorded log at its original pace times N (`replay:FILE?speed=N`), for demos and tests.

The pace comes from the lines' own timestamps, read by the same parser as everything else
(`tracelens.live.pace`); lines without one go out with the timed line before them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from tracelens.sources.events import LinesAppended, SourceConnected, SourceEnded
from tracelens.sources.protocol import Emit

Schedule = list[tuple[float, int, int]]  # (seconds after the first timestamp, start byte, end byte)
# Reads a log and returns its bytes and its chunks: the parser lives above the sources, so the live
# session hands its pacing function in (`tracelens.live.pace.replay_schedule`).
Scheduler = Callable[[Path], tuple[bytes, Schedule]]


class ReplayFollower:
    def __init__(
        self, path: str | Path, schedule: Scheduler, speed: float = 1.0, label: str | None = None
    ) -> None:
        self.path = Path(path)
        self.schedule = schedule
        self.speed = speed
        self.label = label or f"replay:{path}"

    def close(self) -> None:
        """Nothing to end: `run` returns when its stop event is set."""

    def run(self, emit: Emit, stop: threading.Event) -> None:
        data, chunks = self.schedule(self.path)
        emit(SourceConnected(self.label, f"replaying at {self.speed:g}x"))
        began = time.monotonic()
        for at, start, end in chunks:
            wait = began + at / self.speed - time.monotonic()
            if wait > 0 and stop.wait(wait):
                return
            emit(LinesAppended(self.label, data[start:end]))
        if not stop.is_set():
            emit(SourceEnded(self.label, "replay finished"))
