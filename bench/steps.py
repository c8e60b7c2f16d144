"""CPU per block (the engine's size, 6 MiB) of each step of the parse, on one core: where a block's time goes.

    python bench/steps.py LOG [--mb 24]
    python bench/steps.py LOG --model [--mb 24] [--rounds 3]

Splits the first ``--mb`` MiB of LOG into the engine's blocks, then parses them in order as a worker does
(`parsers.pipeline.parse_block`, one polars thread) with a timer around each step of the pipeline and
each kind's parser. Prints milliseconds per block, largest first. To compare with another checkout, run
it with ``PYTHONPATH=<that checkout>`` in alternate rounds (CPU time grows with the machine's load).

``--model`` splits a block's cost into a fixed part and a part that grows with its size: it parses the same
``--mb`` MiB in blocks of 1, 3 and 8 MiB, in alternate rounds (the least CPU of ``--rounds`` per size, the
figure least disturbed by other work), and fits CPU per block = F + v x MiB. F is what every block pays
whatever its size (about a hundred polars calls, each with its own set-up); v is the work per byte. The
block size trades F against memory (a worker holds many times its block at its peak).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["POLARS_MAX_THREADS"] = "1"  # before polars is imported: a worker runs one thread

import polars as pl

from tracelens.parsers import pipeline
from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.files import block_lines, iter_blocks

STEPS = (
    "add_prefix_columns",
    "add_kinds",
    "vllm_timestamps",
    "_roll_days",
    "_join_tracebacks",
    "_join_wrapped_args",
    "_number_runs",
    "_fill_tables",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--mb", type=int, default=24)
    parser.add_argument("--model", action="store_true", help="fit fixed and per-MiB cost per block")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.model:
        block_cost_model(args.log, args.mb, args.rounds)
        return
    spent: dict[str, float] = {}

    def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **k: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - start

        return run

    for name in STEPS:
        setattr(pipeline, name, timed(name, getattr(pipeline, name)))
    for kind, parse in list(pipeline._PARSERS.items()):
        pipeline._PARSERS[kind] = timed(f"  parse {kind} (in _fill_tables)", parse)
    frames, _ = first_frames(args.log, DEFAULT_BLOCK_BYTES, args.mb)
    total = parse_cpu(frames)
    n = len(frames)
    print(
        f"{n} blocks of {sum(f.height for f in frames) / n:,.0f} lines: {total / n * 1000:.1f} ms per block"
    )
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:36s} {seconds / n * 1000:6.1f} ms")


def first_frames(log: Path, block_bytes: int, mb: int) -> tuple[list[pl.DataFrame], int]:
    """The line frames of the first blocks of ``log`` (``block_bytes`` each) that hold ``mb`` MiB, and
    their bytes."""
    frames, read = [], 0
    for block in iter_blocks(log, block_bytes):
        frames.append(block_lines(block))
        read += len(block.data)
        if read >= mb << 20:
            break
    return frames, read


# Lines dated as an engine task dates them: with a date (the file's), so that the day roll-over's test
# runs as it does there.
ENGINE_OPTIONS = pipeline.ParseOptions(base_date=dt.date.today(), base_date_is_end=True)


def parse_cpu(frames: list[pl.DataFrame]) -> float:
    """CPU seconds of parsing ``frames`` in order, as a worker parses a source's blocks."""
    start = time.process_time()
    state = None
    for frame in frames:
        _, state, _ = pipeline.parse_block(frame, state, ENGINE_OPTIONS, final=False)
    return time.process_time() - start


MODEL_BLOCKS_MIB = (1, 3, 8)


def block_cost_model(log: Path, mb: int, rounds: int) -> None:
    """Print F (ms per block) and v (ms per MiB) of `parse_block`, fitted over several block sizes."""
    frames: dict[int, list[pl.DataFrame]] = {}
    mibs: dict[int, float] = {}
    for size in MODEL_BLOCKS_MIB:
        frames[size], read = first_frames(log, size << 20, mb)
        mibs[size] = read / (1 << 20)
    best = dict.fromkeys(MODEL_BLOCKS_MIB, float("inf"))
    for _ in range(rounds):
        for size in MODEL_BLOCKS_MIB:
            best[size] = min(best[size], parse_cpu(frames[size]))
    # cost of the whole input = blocks x F + MiB x v, one equation per block size: least squares
    xs = [(len(frames[size]), mibs[size]) for size in MODEL_BLOCKS_MIB]
    ys = [best[size] * 1000 for size in MODEL_BLOCKS_MIB]
    f, v = _least_squares(xs, ys)
    print(f"{mb} MiB of {log.name}, least CPU of {rounds} alternate rounds per block size:")
    for size in MODEL_BLOCKS_MIB:
        print(f"  {size} MiB blocks: {best[size] * 1000 / mibs[size]:6.1f} ms per MiB")
    print(f"fit: F = {f:.1f} ms per block (fixed), v = {v:.1f} ms per MiB")
    for size in (*MODEL_BLOCKS_MIB, 32):
        print(f"  at {size:2d} MiB blocks the parse would cost {(f / size + v) * 1.024:5.1f} CPU-s per GiB")


def _least_squares(xs: list[tuple[float, float]], ys: list[float]) -> tuple[float, float]:
    """(a, b) minimising the sum of (a * x0 + b * x1 - y)^2 (the 2x2 normal equations)."""
    s00 = sum(x0 * x0 for x0, _ in xs)
    s01 = sum(x0 * x1 for x0, x1 in xs)
    s11 = sum(x1 * x1 for _, x1 in xs)
    t0 = sum(x0 * y for (x0, _), y in zip(xs, ys, strict=True))
    t1 = sum(x1 * y for (_, x1), y in zip(xs, ys, strict=True))
    det = s00 * s11 - s01 * s01
    return (t0 * s11 - t1 * s01) / det, (s00 * t1 - s01 * t0) / det


if __name__ == "__main__":
    main()
