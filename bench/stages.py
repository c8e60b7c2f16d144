"""Where `tracelens parse` spends its time, stage by stage, on one core: the ceiling each fixed stage puts
on the end-to-end rate, whatever the parsers cost.

    python bench/stages.py LOG [--mb 128]

On the first ``--mb`` MiB of LOG (cut at a line end), in one process set up as an engine worker (one
polars thread, the same allocator settings), the CPU
seconds of each stage of the engine's own code path:

- read: the file in line-aligned blocks of the engine's size (`sources.iter_blocks`);
- split: each block into an Arrow array of lines (`sources.block_lines`);
- parse: the lines into typed tables (`stream.parse_blocks`, which also splits: split is subtracted);
- write: those tables into Parquet as an engine task writes them (`engine.task.SourceCollector`: the
  direct tables, the faults and server args finished from their parts, the run spans).

It prints JSON: per stage, CPU seconds and MB/s of input per core. `bench/throughput.py` runs it and puts
the figures in bench/RESULTS.md, so the gap between the targets and what Arrow and Parquet alone allow is
measured, not argued.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tracelens.engine.executors import WORKER_ENV
from tracelens.engine.plan import SourceResult
from tracelens.engine.store import Store
from tracelens.engine.stream import parse_blocks
from tracelens.engine.task import PartWriter, SourceCollector
from tracelens.parsers import ParseOptions
from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.files import block_lines, iter_blocks

_AS_WORKER = "TRACELENS_STAGES_AS_WORKER"  # set once the process runs with the workers' environment


def head_of(log: Path, nbytes: int, folder: Path) -> Path:
    """The first ``nbytes`` of ``log``, cut after a newline, as a file of its own in ``folder``."""
    out = folder / f"{log.stem}-head{log.suffix}"
    with log.open("rb") as src:
        data = src.read(nbytes)
    out.write_bytes(data[: data.rfind(b"\n") + 1] if b"\n" in data else data)
    return out


class _Spec:
    """What `PartWriter` needs to know of a task: where its part files go."""

    staging = "staging"
    task_id = "stages"


def measure(log: Path) -> dict[str, float]:
    """CPU seconds of each stage over the whole of ``log``."""
    clock = time.process_time
    started = clock()
    blocks = list(iter_blocks(log, DEFAULT_BLOCK_BYTES))  # the engine's blocks
    read = clock() - started

    started = clock()
    for block in blocks:
        block_lines(block)
    split = clock() - started

    started = clock()
    # Dated as an engine task dates a file's lines: by the file's modification time (the day roll-over
    # of time-only stamps runs only with a date)
    options = ParseOptions(base_date=dt.date.fromtimestamp(log.stat().st_mtime), base_date_is_end=True)
    parsed = list(parse_blocks(blocks, options))
    parse = clock() - started - split

    folder = Path(tempfile.mkdtemp(prefix="tracelens-stages-"))
    try:
        writer = PartWriter(Store(str(folder)), _Spec())  # type: ignore[arg-type]
        collector = SourceCollector(writer, SourceResult(str(log), str(log), 0, 0, 1, 0))
        started = clock()
        for result in parsed:
            collector.add(result)
        collector.finish(log.stat().st_size)
        writer.close()
        write = clock() - started
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {"read": read, "split": split, "parse": parse, "write": write}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--mb", type=int, default=128, help="MiB from the start of LOG to measure on")
    args = parser.parse_args()
    if _AS_WORKER not in os.environ:
        # One polars thread and the allocator settings of an engine worker; allocators read their
        # settings when they load, so the process starts again with them.
        env = {**os.environ, **WORKER_ENV, _AS_WORKER: "1"}
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    folder = Path(tempfile.mkdtemp(prefix="tracelens-stages-"))
    try:
        head = head_of(args.log, args.mb << 20, folder)
        size = head.stat().st_size
        seconds = measure(head)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    stages = {name: {"cpu_s": s, "mb_per_s_per_core": size / s / 1e6} for name, s in seconds.items()}
    json.dump({"bytes": size, "stages": stages}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
