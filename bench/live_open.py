"""Opening a large log live (issue 10, part 1: the initial load of `tui` and `follow`), headless: the
session the screen would run, without the screen.

Each open runs in a child process (so its CPU seconds, with those of the engine's workers and the live
worker, are the child's and its children's) and is timed in phases:

- `engine`: `live.seed.load_files`, the batch engine bringing the cache dataset up to date (a first
  open parses the file; a second finds it unchanged: its second look) and the cut read from the manifest;
- `shown`: from the session's start until the log view indexes every line of the file;
- `idle`: until the worker has parsed the engine's last range and an analysis covers it (the findings
  and figures are on the screen).

CPU seconds are counted by the parent of the child, made a subreaper: the engine's workers are children
of its fork server, which the child leaves behind; they are waited for here, so their CPU counts.

Modes: `first` (an empty cache: the engine parses the file), `second` (the same cache again), `live`
(no engine: the session reads the whole file itself, as before issue 10's part 1). Peak memory is the
largest resident set of the process and of its largest child (`ru_maxrss`), not the tree's sum.

    python bench/live_open.py [--log PATH] [--modes first,second,live] [--cache DIR]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_LOG = "/work/wt/benchdata/eagle3-session-1G.log"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def child(log: str, dataset: str | None) -> dict:
    """One open, in this process: phases in wall seconds."""
    from tracelens.live import LiveSession, parse_spec
    from tracelens.live.seed import load_files

    lines = int(subprocess.run(["wc", "-l", log], capture_output=True, text=True).stdout.split()[0])
    started = time.perf_counter()
    cuts = {}
    read = None
    if dataset is not None:
        report, cuts = load_files({log: log}, dataset)
        read = {"bytes_read": report.bytes_read, "unchanged": report.unchanged, "read": report.read}
    engine = time.perf_counter()
    session = LiveSession([parse_spec(log)], cuts=cuts)
    session.start()
    while session.index.count() < lines:
        time.sleep(0.05)
    shown = time.perf_counter()
    while not session.wait_idle(timeout=600):
        pass
    idle = time.perf_counter()
    findings = len(session.findings)
    session.stop()
    return {
        "engine_s": round(engine - started, 1),
        "shown_s": round(shown - engine, 1),
        "idle_s": round(idle - shown, 1),
        "total_s": round(idle - started, 1),
        "lines": lines,
        "cut_line": next(iter(cuts.values())).first_line if cuts else None,
        "findings": findings,
        "engine": read,
    }


def _adopt_orphans() -> None:
    """Become the subreaper of the tree (Linux): processes the child leaves behind come back here."""
    PR_SET_CHILD_SUBREAPER = 36
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _wait_orphans() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--log", default=DEFAULT_LOG)
    parser.add_argument("--modes", default="first,second,live")
    parser.add_argument("--cache", default=None, help="the dataset folder (default: a temporary one)")
    parser.add_argument("--child", choices=["engine", "live"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = child(args.log, args.cache if args.child == "engine" else None)
        result["peak_self_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(json.dumps(result))
        return
    _adopt_orphans()
    cache = args.cache or tempfile.mkdtemp(prefix="tracelens-open-")
    try:
        for mode in args.modes.split(","):
            if mode == "first":
                shutil.rmtree(cache, ignore_errors=True)
            load = os.getloadavg()[0]
            cpu = _cpu(resource.RUSAGE_CHILDREN)
            out = subprocess.run(
                [sys.executable, __file__, "--log", args.log, "--cache", cache, "--child",
                 "live" if mode == "live" else "engine"],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            _wait_orphans()
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result["cpu_s"] = round(_cpu(resource.RUSAGE_CHILDREN) - cpu, 1)
            result["peak_any_process_mib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
            print(json.dumps({"mode": mode, "load": round(load, 1), **result}), flush=True)
    finally:
        if args.cache is None:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
