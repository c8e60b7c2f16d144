"""CPU per 3 MiB block of each step of the parse, on one core: where a block's time goes.

    python bench/steps.py LOG [--mb 24]

Splits the first ``--mb`` MiB of LOG into the engine's blocks, then parses them in order as a worker does
(`parsers.pipeline.parse_block`, one polars thread) with a timer around each step of the pipeline and
each kind's parser. Prints milliseconds per block, largest first. To compare with another checkout, run
it with ``PYTHONPATH=<that checkout>`` in alternate rounds (CPU time grows with the machine's load).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["POLARS_MAX_THREADS"] = "1"  # before polars is imported: a worker runs one thread

from tracelens.engine.plan import DEFAULT_BLOCK_BYTES
from tracelens.parsers import pipeline
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
    args = parser.parse_args()
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
    frames = []
    read = 0
    for block in iter_blocks(args.log, DEFAULT_BLOCK_BYTES):
        frames.append(block_lines(block))
        read += len(block.data)
        if read >= args.mb << 20:
            break
    start = time.process_time()
    state = None
    for frame in frames:
        _, state, _ = pipeline.parse_block(frame, state, None, final=False)
    total = time.process_time() - start
    n = len(frames)
    print(
        f"{n} blocks of {sum(f.height for f in frames) / n:,.0f} lines: {total / n * 1000:.1f} ms per block"
    )
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:36s} {seconds / n * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
