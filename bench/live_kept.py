"""`python bench/live_kept.py`: what the live worker keeps as a session goes on, on hostile logs.

The worker's own parse and analysis (`live.worker._Worker`, in this process so its structures can be
sized) is fed a generated log in batches of ``--batch`` lines with an update after each, as a session
at 5,000 lines/s would feed it, as fast as it goes. Every ``--every`` lines it prints this process's
RSS and the size (pickled) of what the worker keeps across updates: the window, the running figures
of every run, the kept findings and the ended runs' statuses.

    python bench/live_kept.py [--log restarts|errors|PATH] [--lines 600000]

``restarts``: a server start every 500 lines (a crash loop, or a test harness restarting the server);
``errors``: one run whose errors each have words of their own (an id in every exception).
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

import psutil

from tracelens.live.messages import ParseRequested, WorkerConfig
from tracelens.live.worker import _Worker
from tracelens.parsers import ParseOptions

START = "[2026-11-20 {t}] server_args=ServerArgs(model_path='/m', speculative_algorithm='EAGLE3', speculative_num_steps=3, tp_size=1)\n"
READY = "[2026-11-20 {t}] The server is fired up and ready to roll!\n"
DECODE = "[2026-11-20 {t} TP0] Decode batch, #running-req: {n}, #token: 1538, token usage: 0.20, accept len: 2.{a:02d}, gen throughput (token/s): 5{a:02d}.00, #queue-req: 0, \n"
ERROR = "[2026-11-20 {t} TP0] Scheduler hit an exception: ValueError: token id {word} out of range\n"


def _clock(i: int) -> str:
    s = 9 * 3600 + i // 1000 % (14 * 3600)
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def _word(n: int) -> str:
    word = ""
    while True:
        n, digit = divmod(n, 26)
        word += "abcdefghijklmnopqrstuvwxyz"[digit]
        if not n:
            return word


def generate(kind: str, lines: int) -> Path:
    path = Path(tempfile.mkdtemp(prefix="tracelens-bench-")) / f"{kind}.log"
    with path.open("w") as out:
        for i in range(lines):
            t = _clock(i)
            if (kind == "restarts" and i % 500 == 0) or (kind == "errors" and i == 0):
                out.write(START.format(t=t) + READY.format(t=t))
            elif kind == "errors" and i % 50 == 0:
                out.write(ERROR.format(t=t, word=_word(i)))
            else:
                out.write(DECODE.format(t=t, n=1 + i % 8, a=i % 100))
    return path


def _size(obj: object) -> float:
    return len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", default="restarts", help="restarts, errors, or a log's path")
    parser.add_argument("--lines", type=int, default=600_000)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--every", type=int, default=100_000)
    args = parser.parse_args()
    made = args.log in ("restarts", "errors")
    path = generate(args.log, args.lines) if made else Path(args.log)
    sink = open(os.devnull, "wb")  # noqa: SIM115 (the worker's replies, for as long as it runs)
    worker = _Worker(WorkerConfig([path.name], [ParseOptions()], None, None, 900.0, 1.0), sink)
    me = psutil.Process()
    print(
        f"{path.name}: batches of {args.batch:,} lines, an update after each; load {os.getloadavg()[0]:.1f}"
    )
    print("lines | RSS MiB | runs | running KiB | kept findings | ended runs | their statuses KiB | CPU-s")
    began = time.process_time()
    seq, first, offset, done = 0, 1, 0, 0
    with path.open("rb") as fh:
        while done < args.lines:
            block = [line for line in (fh.readline() for _ in range(args.batch)) if line]
            if not block:
                break
            data = b"".join(block)
            seq += 1
            worker._parse_batch([ParseRequested(seq, 0, first, offset, data, False)])
            worker._analyse_once(seq, time.monotonic())
            first, offset, done = first + len(block), offset + len(data), done + len(block)
            if done % args.every < args.batch:
                running = worker._tables.running
                print(
                    f"{done:>9,} | {me.memory_info().rss / 2**20:5.0f} | {len(running._decode):5,} | "
                    f"{_size(running):8.0f} | {len(worker._kept._kept):5,} | {len(worker._runs.kept):5,} | "
                    f"{_size(dict(worker._runs.kept)):8.0f} | {time.process_time() - began:5.0f}",
                    flush=True,
                )
    worker._tables.close()
    sink.close()
    if made:
        path.unlink()
        path.parent.rmdir()


if __name__ == "__main__":
    main()
