"""A live session opened on one long run (issue 33, deliver 1): `tracelens follow LOG --json` and
`tracelens tui LOG` (under `script`, which gives it a terminal) on a log whose dataset is already made
(`--dataset D`: the engine's second look), sampled for a fixed time.

The figure is the peak PSS of the whole process tree (the command, its live worker), sampled every
0.5 s, beside each process's own peak resident set (VmHWM, read before the tree is stopped) and the
CPU seconds of the tree. The target is 512 MiB at 1 and 4 GiB. Make the logs and datasets with
`bench/analysis.py --one-run` (or `bench/logmix.py` and `tracelens parse -o D`).

    python bench/live_one_run.py --log L --dataset D [--commands follow,tui] [--seconds 90] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

TRACELENS = str(Path(sys.executable).with_name("tracelens"))


def _command(kind: str, log: str, dataset: str) -> list[str]:
    if kind == "follow":
        return [TRACELENS, "follow", log, "--json", "--dataset", dataset]
    line = shlex.join([TRACELENS, "tui", log, "--dataset", dataset])
    return ["script", "-qfc", f"TERM=xterm-256color {line}", os.devnull]


def _hwm(process: psutil.Process) -> int:
    with open(f"/proc/{process.pid}/status") as status:
        return next(int(line.split()[1]) >> 10 for line in status if line.startswith("VmHWM"))


def measure(kind: str, log: str, dataset: str, seconds: float) -> dict:
    child = subprocess.Popen(
        _command(kind, log, dataset),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    root = psutil.Process(child.pid)
    peak, cpu = 0, 0.0
    hwm: dict[str, int] = {}  # MiB by process name
    started = time.monotonic()
    try:
        while time.monotonic() - started < seconds and child.poll() is None:
            total = 0
            for process in [root, *root.children(recursive=True)]:
                try:
                    total += process.memory_full_info().pss
                    name = "live worker" if "tracelens.live.worker" in process.cmdline() else process.name()
                    hwm[name] = max(hwm.get(name, 0), _hwm(process))
                except (psutil.NoSuchProcess, FileNotFoundError, StopIteration):
                    continue
            peak = max(peak, total)
            time.sleep(0.5)
        for process in [root, *root.children(recursive=True)]:  # the tree's CPU, before it is stopped
            try:
                times = process.cpu_times()
                cpu += times.user + times.system
            except psutil.NoSuchProcess:
                continue
    finally:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(30)
    return {"command": kind, "peak_tree_pss_mib": peak >> 20, "vmhwm_mib": hwm, "cpu_s": round(cpu, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", required=True)
    parser.add_argument("--dataset", required=True, help="the log's dataset, made before (the second look)")
    parser.add_argument("--commands", default="follow,tui")
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"| log | command | peak tree PSS | VmHWM by process | CPU s ({args.seconds:.0f} s) |")
    print("|---|---|---:|---|---:|")
    for kind in args.commands.split(","):
        for _ in range(args.repeat):
            got = measure(kind, args.log, args.dataset, args.seconds)
            by = ", ".join(f"{name} {mib}" for name, mib in got["vmhwm_mib"].items() if name != "script")
            print(
                f"| {Path(args.log).name} | {kind} | {got['peak_tree_pss_mib']} MiB | {by} | {got['cpu_s']} |"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
