"""How big and how slow is the HTML report of a large log?

    python bench/report_size.py [--gib 1.0] [--runs 4] [--keep DIR]

Writes a synthetic SGLang EAGLE-3 log of about ``--gib`` GiB (``--runs`` server starts, each with decode
lines every 50 ms, an access line and debug capture lines between them, and a crash at the end of the
last run), then times `tracelens report` on it and prints the report's size and points per trace. bench/RESULTS.md
records its numbers (measured by hand: a CI run would take too long).
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

START = dt.datetime(2026, 11, 20, 8, 0, 0)


def server_args(steps: int) -> str:
    return (
        "server_args=ServerArgs(model_path='/models/DeepSeek-V3', tp_size=8, dp_size=1, "
        "speculative_algorithm='EAGLE3', speculative_draft_model_path='/models/DeepSeek-V3-EAGLE3', "
        f"speculative_num_steps={steps}, speculative_eagle_topk=1, speculative_num_draft_tokens={steps + 1}, "
        "disable_cuda_graph=False)"
    )


def write_log(path: Path, target_bytes: int, runs: int) -> int:
    """Write the log; returns its line count."""
    rng = np.random.default_rng(0)
    per_run = target_bytes // runs
    lines_written = 0
    clock = START
    with path.open("w") as out:
        for run in range(runs):
            steps = 3 + run % 3
            out.write(f"[{clock:%Y-%m-%d %H:%M:%S}] {server_args(steps)}\n")
            clock += dt.timedelta(minutes=10)
            out.write(f"[{clock:%Y-%m-%d %H:%M:%S}] The server is fired up and ready to roll!\n")
            written = 0
            while written < per_run:
                n = 20_000
                accept = np.round(1.5 + 0.25 * steps + 0.3 * rng.standard_normal(n), 2)
                speed = np.round(85 + 8 * rng.standard_normal(n), 2)
                batch = rng.integers(1, 17, n)
                chunk = []
                for i in range(n):
                    stamp = f"{clock + dt.timedelta(milliseconds=50 * i):%Y-%m-%d %H:%M:%S}"
                    chunk.append(
                        f"[{stamp} TP0] Decode batch, #running-req: {batch[i]}, #token: 4096, token usage: 0.05, "
                        f"accept len: {accept[i]:.2f}, accept rate: 0.50, cuda graph: True, gen throughput "
                        f"(token/s): {speed[i]:.2f}, #queue-req: 0, \n"
                        f'[{stamp}] INFO:     10.0.0.7:51511 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                        f"[{stamp} TP0] EAGLE3_DEBUG[dsv2] aux capture: layer_id=2 shape=torch.Size([{batch[i]}, 7168]) "
                        f"norm={40 + accept[i]:.4f}\n"
                    )
                text = "".join(chunk)
                out.write(text)
                written += len(text)
                lines_written += 3 * n
                clock += dt.timedelta(milliseconds=50 * n)
            clock += dt.timedelta(minutes=5)
        out.write(
            f"[{clock:%Y-%m-%d %H:%M:%S} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        )
        out.write(
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2100, in run\n'
        )
        out.write("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB.\n")
    return lines_written + 2 * runs + 3


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--keep", type=Path, help="write the log and report here and keep them")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="tracelens-report-size-"))
    folder.mkdir(parents=True, exist_ok=True)
    log, report = folder / "big.log", folder / "report.html"
    started = time.perf_counter()
    lines = write_log(log, int(args.gib * 2**30), args.runs)
    print(
        f"log: {log.stat().st_size / 2**30:.2f} GiB, {lines:,} lines, written in {time.perf_counter() - started:.0f} s"
    )
    started = time.perf_counter()
    command = [sys.executable, "-m", "tracelens.cli", "report", str(log), "-o", str(report), "-q"]
    subprocess.run(command, check=True)
    seconds = time.perf_counter() - started
    page = report.read_text()
    block = re.search(r'<script type="application/json" id="tl-data">(.*?)</script>', page, re.S)
    assert block is not None
    biggest = 0
    for plot in json.loads(block.group(1))["plots"]:
        for trace in plot["figure"]["data"]:
            for axis in ("x", "y"):
                values = trace.get(axis)
                if isinstance(values, dict) and "bdata" in values:
                    width = int(re.sub(r"\D", "", values["dtype"]) or 1)
                    biggest = max(biggest, len(base64.b64decode(values["bdata"])) // width)
                elif isinstance(values, list):
                    biggest = max(biggest, len(values))
    print(f"report: {report.stat().st_size / 1e6:.2f} MB in {seconds:.0f} s (parse, analysis and page)")
    print(f"most points in one trace: {biggest:,}")
    if args.keep is None:
        log.unlink()
        print(f"report kept at {report}")


if __name__ == "__main__":
    main()
