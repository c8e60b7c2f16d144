"""Replay a recorded log at its original pace times N (`replay:FILE?speed=N`), for demos and tests.

The pace comes from the lines' own timestamps (read by the same parser as everything else); lines
without one go out with the timed line before them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from tracelens.ingest import parse_source
from tracelens.live.events import LinesAppended, SourceConnected, SourceEnded, SourceEvent
from tracelens.schema import C, T
from tracelens.sources import open_source

Emit = Callable[[SourceEvent], None]


def replay_schedule(path: Path) -> tuple[bytes, list[tuple[float, int, int]]]:
    """The file's bytes and its chunks: (seconds after the first timestamp, start byte, end byte); each
    chunk is the lines that share one timestamp."""
    with open_source(path) as fh:
        data = fh.read()
    lines = parse_source(path)[T.LINES].sort(C.LINE_NO)
    if not lines.height:
        return data, []
    ts = lines.get_column(C.TS).forward_fill().backward_fill()
    first = ts.drop_nulls().first() if ts.null_count() < len(ts) else None
    seconds = (
        ((ts - first).dt.total_microseconds() / 1e6).fill_null(0.0)
        if first is not None
        else pl.zeros(len(ts), eager=True)
    )
    frame = pl.DataFrame({"t": seconds, "start": lines.get_column(C.BYTE_OFFSET)}).with_columns(
        (pl.col("t") != pl.col("t").shift(1)).fill_null(True).cum_sum().alias("chunk")
    )
    chunks = frame.group_by("chunk", maintain_order=True).agg(pl.col("t").first(), pl.col("start").first())
    starts = chunks.get_column("start").to_list()
    ends = [*starts[1:], len(data)]
    return data, list(zip(chunks.get_column("t").to_list(), starts, ends, strict=True))


class ReplayFollower:
    def __init__(self, path: str | Path, speed: float = 1.0, label: str | None = None) -> None:
        self.path = Path(path)
        self.speed = speed
        self.label = label or f"replay:{path}"

    def close(self) -> None:
        """Nothing to end: `run` returns when its stop event is set."""

    def run(self, emit: Emit, stop: threading.Event) -> None:
        data, chunks = replay_schedule(self.path)
        emit(SourceConnected(self.label, f"replaying at {self.speed:g}x"))
        began = time.monotonic()
        for at, start, end in chunks:
            wait = began + at / self.speed - time.monotonic()
            if wait > 0 and stop.wait(wait):
                return
            emit(LinesAppended(self.label, data[start:end]))
        if not stop.is_set():
            emit(SourceEnded(self.label, "replay finished"))
