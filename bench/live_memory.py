"""`python bench/live.py memory`: the memory of a long live session, in compressed time.

A whole session (the file follower, the pump, the log index, the worker process; no screen) follows a
file that a writer thread appends a replayed log to at 1,000 lines/s sped up ``--speedup`` times, until
``--hours`` of session time at 1,000 lines/s have been parsed (or ``--seconds`` of wall time pass).

The replayed log is the issue-11 mix (`logmix.generate_mix`): one server start, then the mix's body in
a loop (a crash from every rank once a pass). Its timestamps are rewritten to the simulated clock (one
second per 1,000 lines), so the session sees a 24-hour log, not one hour replayed 24 times. The file is
rotated by rename every ``--rotate-lines`` lines (the renamed file removed at the next rotation), as a
server's log would be; the disk holds two files at most.

Every few seconds the PSS of the bench's process (the session: follower, pump, log index) and of the
worker process are sampled; at the end a table by simulated hour, and the slope per simulated hour
after the first hour (by then the log index holds its scroll-back and the worker's window is full).
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from logmix import _START, generate_mix

from tracelens.live import LiveSession, parse_spec

_TS = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")
LINES_PER_SECOND = 1000  # the session simulated


def mix_file(lines: int) -> Path:
    """A generated issue-11 mix of at least ``lines`` lines (about 130 bytes a line)."""
    path = Path(tempfile.mkdtemp(prefix="tracelens-bench-")) / "mix.log"
    size = lines * 140
    while True:
        generate_mix(path, size)
        with path.open("rb") as fh:
            count = sum(block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b""))
        if count >= lines:
            return path
        size = int(size * 1.2 * lines / max(count, 1))


def _body_start(path: Path) -> int:
    """Byte offset of the first line after the server start the mix opens with (the loop starts there)."""
    offset = 0
    with path.open("rb") as fh:
        for line in fh:
            offset += len(line)
            if b"Decode batch" in line:
                return offset
    return 0


class Replay:
    """Writes the replayed log at ``rate`` lines/s, its timestamps on the simulated clock."""

    def __init__(
        self, source: Path, path: Path, rate: int, rotate_lines: int, indexed: Callable[[], int]
    ) -> None:
        self.source, self.path, self.rate, self.rotate_lines = source, path, rate, rotate_lines
        self.indexed = indexed  # lines the session has taken in: the writer keeps at most 1 s ahead
        self.waited = 0.0  # seconds the writer waited for the session (the machine did not keep up)
        self.written = 0
        self.rotations = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="replay writer", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        self.thread.join()

    def _blocks(self):
        """Blocks of 1,000 lines (one simulated second), the body looping after the first pass."""
        body = _body_start(self.source)
        with self.source.open("rb") as fh:
            while True:
                block = list(itertools.islice(fh, LINES_PER_SECOND))
                if not block:
                    fh.seek(body)
                    continue
                yield block

    def _run(self) -> None:
        began = time.perf_counter()
        out = self.path.open("ab")
        since_rotation = 0
        try:
            for block in self._blocks():
                if self.done.is_set():
                    break
                second = self.written // LINES_PER_SECOND
                ts = (_START + dt.timedelta(seconds=second)).strftime("%Y-%m-%d %H:%M:%S").encode()
                out.write(_TS.sub(ts, b"".join(block)))
                out.flush()
                self.written += len(block)
                since_rotation += len(block)
                if since_rotation >= self.rotate_lines:
                    out.close()
                    os.replace(self.path, self.path.with_name(self.path.name + ".1"))  # the older .1 goes
                    out = self.path.open("ab")
                    since_rotation = 0
                    self.rotations += 1
                pause = began + self.written / self.rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
                if self.written - self.indexed() > self.rate:
                    # behind by more than a second: wait, then go on at the rate from here (a
                    # rotation must never overtake the follower, or a whole file would be skipped)
                    waited = time.perf_counter()
                    while self.written - self.indexed() > self.rate // 4 and not self.done.is_set():
                        time.sleep(0.05)
                    self.waited += time.perf_counter() - waited
                    began += time.perf_counter() - waited
        finally:
            out.close()


def _pss(process) -> tuple[int, int, float]:
    """(PSS of this process, PSS of its children, CPU seconds of all)."""
    import psutil

    own = process.memory_full_info().pss
    kids, cpu = 0, sum(process.cpu_times()[:2])
    for child in process.children(recursive=True):
        try:
            kids += child.memory_full_info().pss
            cpu += sum(child.cpu_times()[:2])
        except psutil.Error:
            continue
    return own, kids, cpu


def memory(speedup: float, hours: float, seconds: float, sample_every: float, rotate_lines: int) -> None:
    import psutil

    rate = int(LINES_PER_SECOND * speedup)
    source = mix_file(700_000)  # under the mix's second server start (every 40,000 of its seconds)
    folder = Path(tempfile.mkdtemp(prefix="tracelens-bench-"))
    path = folder / "server.log"
    path.write_text("")
    session = LiveSession([parse_spec(str(path))])
    session.start()
    me = psutil.Process()
    replay = Replay(source, path, rate, rotate_lines, session.index.count)
    target = int(hours * 3600 * LINES_PER_SECOND)
    print(
        f"replaying the mix at {rate:,} lines/s (1,000 lines/s sped up {speedup:g}x) until {hours:g} "
        f"simulated hours ({target:,} lines) are parsed or {seconds:.0f} s pass; scroll-back "
        f"{session.index.limit:,} lines"
    )
    print(
        "wall s | session time | lines written | lines parsed | held | session PSS MiB | worker PSS MiB | CPU-s"
    )
    samples: list[tuple[int, int, int]] = []  # (lines parsed, session PSS, worker PSS)
    began = time.perf_counter()
    replay.start()
    try:
        while time.perf_counter() - began < seconds:
            time.sleep(sample_every)
            own, kids, cpu = _pss(me)
            parsed = session.snapshot.lines
            samples.append((parsed, own, kids))
            print(
                f"{time.perf_counter() - began:6.0f} | {_hours(parsed)} | {replay.written:>12,} | {parsed:>12,} | "
                f"{session.index.held():>9,} | {own / 2**20:8.0f} | {kids / 2**20:8.0f} | {cpu:6.0f}",
                flush=True,
            )
            if parsed >= target:
                break
    finally:
        replay.stop()
        session.stop()
    wall = time.perf_counter() - began
    _summary(samples, wall, replay)
    for leftover in (path, path.with_name(path.name + ".1"), source):
        leftover.unlink(missing_ok=True)
    folder.rmdir()
    source.parent.rmdir()


def _hours(lines: int) -> str:
    seconds = lines / LINES_PER_SECOND
    return f"{int(seconds // 3600):3d} h {int(seconds % 3600 // 60):02d} min"


def _summary(samples: list[tuple[int, int, int]], wall: float, replay: Replay) -> None:
    if len(samples) < 4:
        print("too few samples for a slope")
        return
    data = np.array(samples, dtype=np.float64)
    hours = data[:, 0] / LINES_PER_SECOND / 3600
    own, kids = data[:, 1] / 2**20, data[:, 2] / 2**20
    print(
        f"\n{wall:.0f} s wall, {replay.written:,} lines written ({replay.rotations} rotations), "
        f"{int(data[-1, 0]):,} parsed: {hours[-1]:.1f} simulated hours; the writer waited "
        f"{replay.waited:.0f} s for the session ({replay.written / max(wall, 1e-9):,.0f} lines/s on average)"
    )
    print("\n| session time at 1,000 lines/s | lines parsed | session process PSS | worker PSS |")
    print("|---|---:|---:|---:|")
    marks = sorted({h for h in (0.25, 0.5, 1, 2, 4, 6, 8, 12, 16, 20, 24) if h <= hours[-1]} | {hours[-1]})
    for mark in marks:
        i = int(np.searchsorted(hours, mark, side="right")) - 1
        if i >= 0:
            print(
                f"| {_hours(int(data[i, 0])).strip()} | {int(data[i, 0]):,} | {own[i]:.0f} MiB | {kids[i]:.0f} MiB |"
            )
    late = hours >= 1.0
    if late.sum() > 3 and hours[-1] - hours[late][0] > 0.5:
        slopes = [np.polyfit(hours[late], series[late], 1)[0] for series in (own, kids, own + kids)]
        print(
            f"\nslope after the first simulated hour ({hours[late][0]:.1f}-{hours[-1]:.1f} h): session "
            f"{slopes[0]:+.1f} MiB/h, worker {slopes[1]:+.1f} MiB/h, tree {slopes[2]:+.1f} MiB/h; "
            f"peak tree PSS {(own + kids).max():.0f} MiB"
        )
    else:
        print(f"\nfewer than 1.5 simulated hours: no slope; peak tree PSS {(own + kids).max():.0f} MiB")
    sys.stdout.flush()
