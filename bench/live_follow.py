"""`python bench/live_follow.py`: the memory and CPU of `tracelens follow FILE` at a steady rate.

The real command (`tracelens follow FILE --json`, a process of its own, its output counted and thrown
away) follows a file a writer appends the issue-11 mix to at ``--rate`` lines a second (5,000 by
default, its timestamps on the writer's clock), rotated by rename every ``--rotate-lines`` lines, for
``--minutes``. Every ``--sample-every`` seconds the PSS and the CPU seconds of the follow process (the
followers, the pump, the log index) and of its live worker are read; at the end, per process, the
slope of its PSS in MiB a minute after ``--settle`` minutes (by then the log index holds its
scroll-back and the worker's window is full) and the cores it used at that rate.

    python bench/live_follow.py [--rate 5000] [--minutes 12] [--settle 4]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_memory import Replay, mix_file

ROOT = Path(__file__).resolve().parent.parent


def _sample(follow: psutil.Process) -> tuple[float, float, float, float]:
    """(follow PSS MiB, worker PSS MiB, follow CPU s, worker CPU s); a worker not there yet is 0."""
    pss = follow.memory_full_info().pss / 2**20
    cpu = sum(follow.cpu_times()[:2])
    worker_pss = worker_cpu = 0.0
    for child in follow.children(recursive=True):
        try:
            if "tracelens.live.worker" in " ".join(child.cmdline()):
                worker_pss += child.memory_full_info().pss / 2**20
                worker_cpu += sum(child.cpu_times()[:2])
        except psutil.Error:
            continue
    return pss, worker_pss, cpu, worker_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=5000, help="lines a second")
    parser.add_argument("--minutes", type=float, default=12.0)
    parser.add_argument("--settle", type=float, default=4.0, help="minutes left out of the slope")
    parser.add_argument("--sample-every", type=float, default=10.0)
    parser.add_argument("--rotate-lines", type=int, default=2_000_000)
    args = parser.parse_args()

    source = mix_file(700_000)
    folder = Path(tempfile.mkdtemp(prefix="tracelens-bench-"))
    path = folder / "server.log"
    path.write_text("")
    printed = [0]

    def count(stream) -> None:  # follow's output read as it comes, so its pipe never fills
        for _line in stream:
            printed[0] += 1

    follow = subprocess.Popen(
        [sys.executable, "-m", "tracelens.cli", "follow", str(path), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    reader = threading.Thread(target=count, args=(follow.stdout,), daemon=True)
    reader.start()
    me = psutil.Process(follow.pid)
    replay = Replay(source, path, args.rate, args.rotate_lines, lambda: replay.written)  # never waits
    load = os.getloadavg()[0]
    print(
        f"`tracelens follow FILE --json` at {args.rate:,} lines/s for {args.minutes:g} min (the issue-11 "
        f"mix, rotated by rename every {args.rotate_lines:,} lines); load average before: {load:.1f}"
    )
    print("wall s | lines written | follow PSS MiB | worker PSS MiB | follow CPU-s | worker CPU-s")
    samples: list[tuple[float, float, float, float, float]] = []
    began = time.perf_counter()
    replay.start()
    try:
        while time.perf_counter() - began < args.minutes * 60:
            time.sleep(args.sample_every)
            pss, worker_pss, cpu, worker_cpu = _sample(me)
            wall = time.perf_counter() - began
            samples.append((wall, pss, worker_pss, cpu, worker_cpu))
            print(
                f"{wall:6.0f} | {replay.written:>13,} | {pss:8.0f} | {worker_pss:8.0f} | {cpu:7.0f} | "
                f"{worker_cpu:7.0f}",
                flush=True,
            )
        read = me.io_counters().read_chars  # what follow read of the file (it keeps up if near all)
    finally:
        replay.stop()
        follow.terminate()
        follow.wait(timeout=30)
    data = np.array(samples)
    late = data[:, 0] >= args.settle * 60
    with source.open("rb") as fh:
        per_line = source.stat().st_size / sum(
            block.count(b"\n") for block in iter(lambda: fh.read(1 << 24), b"")
        )
    print(
        f"\n{replay.written:,} lines written in {data[-1, 0]:.0f} s ({replay.rotations} rotations), about "
        f"{replay.written * per_line / 1e6:,.0f} MB; follow read {read / 1e6:,.0f} MB and printed "
        f"{printed[0]:,} lines; load average after: {os.getloadavg()[0]:.1f}"
    )
    if late.sum() > 3:
        minutes = data[late, 0] / 60
        span = data[late, 0][-1] - data[late, 0][0]
        for name, pss, cpu in (("follow", 1, 3), ("worker", 2, 4)):
            slope = np.polyfit(minutes, data[late, pss], 1)[0]
            cores = (data[late, cpu][-1] - data[late, cpu][0]) / span
            print(
                f"{name}: PSS {data[late, pss][0]:.0f} -> {data[late, pss][-1]:.0f} MiB from minute "
                f"{args.settle:g} on, slope {slope:+.2f} MiB a minute; CPU {cores:.2f} cores"
            )
    for leftover in (path, path.with_name(path.name + ".1"), source):
        leftover.unlink(missing_ok=True)
    folder.rmdir()
    source.parent.rmdir()


if __name__ == "__main__":
    main()
