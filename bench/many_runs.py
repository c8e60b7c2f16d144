"""`check` on logs of many server starts beside one run of the same bytes (issue 35, row 5):

    python bench/many_runs.py [--runs 1] [--no-write]

Two sizes, each as one log of short runs (a server start, a load line, two decode lines: a test
harness or a crash loop restarting the server every few seconds) and as one log of a single run of the
same bytes: 2,400 runs in 1 MB and 20,000 runs in 8.7 MB. `tracelens check --no-cache` of each (parse
and analysis), with wall seconds, CPU-seconds of the process tree and its peak PSS
(bench/throughput.py's `run_measured`). The target: many runs within 5x of one run's CPU-seconds. The
table goes into bench/RESULTS.md between the `many-runs` markers (`--no-write`: printed only).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import _measure  # noqa: E402
from throughput import machine, write_results  # noqa: E402

SIZES = (2_400, 20_000)  # server starts; the one-run log of each has the same bytes
START = dt.datetime(2026, 11, 20)


def _stamp(seconds: int) -> str:
    return (START + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def _decode(stamp: str, i: int) -> str:
    return (
        f"[{stamp} TP0] Decode batch, #running-req: {1 + i % 3}, #token: {i}, token usage: 0.02, "
        f"gen throughput (token/s): {91 + i % 7}.09, #queue-req: 0, "
    )


def many_runs(path: Path, runs: int) -> None:
    with path.open("w") as out:
        for i in range(runs):
            stamp = _stamp(4 * i)
            out.write(
                f"[{stamp}] server_args=ServerArgs(model_path='/models/m{i % 3}', tp_size=1, port=30000)\n"
            )
            out.write(f"[{stamp} TP0] Load weight begin. avail mem=78.94 GB\n")
            out.write(f"{_decode(stamp, i)}\n{_decode(stamp, i + 1)}\n")


def one_run(path: Path, size: int) -> None:
    with path.open("w") as out:
        out.write(f"[{_stamp(0)}] server_args=ServerArgs(model_path='/models/m0', tp_size=1, port=30000)\n")
        i = 0
        while out.tell() < size:
            out.write(_decode(_stamp(i), i) + "\n")
            i += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="measurements of each (medians)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    load = __import__("os").getloadavg()[0]
    work = Path(tempfile.gettempdir()) / "tracelens-bench"
    work.mkdir(exist_ok=True)
    rows = []
    for runs in SIZES:
        many, one = work / f"starts-{runs}.log", work / f"one-run-as-{runs}-starts.log"
        many_runs(many, runs)
        one_run(one, many.stat().st_size)
        figures = []
        for name, path in ((f"{runs:,} runs", many), ("1 run", one)):
            cmd = [sys.executable, "-m", "tracelens.cli", "check", "--no-cache", str(path)]
            wall, cpu, peak = _measure(cmd, args.runs)
            figures.append(cpu)
            rows.append((f"{name}, {path.stat().st_size / 1e6:.1f} MB", wall, cpu, peak))
            print(f"  {rows[-1][0]}: {wall:.2f} s, {cpu:.2f} CPU-s, {peak / 2**20:.0f} MiB", flush=True)
        rows.append((f"ratio, {runs:,} runs to 1", None, figures[0] / figures[1], None))
    table = (
        f"`python bench/many_runs.py --runs {args.runs}`, {time.strftime('%Y-%m-%d')}. Machine: {machine()}; "
        f"load average {load:.1f} when the run began. `check --no-cache` (parse and analysis); the "
        "target is many runs within 5x of one run's CPU-seconds.\n\n"
        "| log | wall s | CPU-s | peak tree PSS MiB |\n|---|---:|---:|---:|\n"
        + "".join(
            f"| {n} | {'' if w is None else f'{w:.2f}'} | {c:.2f}{'x' if w is None else ''} | "
            f"{'' if p is None else f'{p / 2**20:.0f}'} |\n"
            for n, w, c, p in rows
        )
    )
    print()
    print(table)
    if not args.no_write:
        write_results(table, marker="many-runs")


if __name__ == "__main__":
    main()
