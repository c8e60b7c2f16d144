"""Which Parquet writer and compression the engine uses, by measurement: the CPU seconds and bytes of
writing the tables of the first ``--mb`` MiB of a log, in one process set up as an engine worker.

    python bench/writers.py LOG [--mb 64]

Variants: pyarrow's `ParquetWriter` (row group by row group into one file, as `engine.store` wrote
before issue 11: every column, statistics on every column) against the lean layout (all-null columns
left out, statistics only on the columns readers prune with, `lines` as stored), with zstd(1), lz4 or
snappy, with or without delta encoding of the ascending integer columns (line numbers, byte offsets,
times), and polars' own `write_parquet` of each flush. Prints one line per variant: CPU seconds, MB/s of log per core, MiB
written.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from tracelens.engine.executors import WORKER_ENV
from tracelens.engine.stream import parse_blocks
from tracelens.parsers import ParseOptions
from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.files import iter_blocks
from tracelens.tables.schema import RANK_COLUMNS, TABLES, C, T

_AS_WORKER = "TRACELENS_WRITERS_AS_WORKER"
FLUSH_ROWS = 16_384
PRUNED = ["source", "run", "line_no", "ts"]


def stored_lines(lines: pl.DataFrame) -> pl.DataFrame:
    """`lines` as dataset format 1 stored it: no rank columns, `record` null where it equals `line_no`
    (format 2 keeps every column: a reader opens the files with no options)."""
    own = pl.col(C.RECORD) == pl.col(C.LINE_NO)
    return lines.select(
        pl.when(~own).then(pl.col(C.RECORD)).alias(C.RECORD) if c == C.RECORD else pl.col(c)
        for c in lines.columns
        if c not in RANK_COLUMNS
    )


def _flushes(parsed: list[dict[str, pl.DataFrame]]) -> dict[str, list[pl.DataFrame]]:
    """Per table, the frames the engine writes: blocks gathered up to FLUSH_ROWS rows."""
    out: dict[str, list[pl.DataFrame]] = {}
    pending: dict[str, list[pl.DataFrame]] = {}
    for frames in parsed:
        for table, frame in frames.items():
            if table not in TABLES or not frame.height:
                continue
            pending.setdefault(table, []).append(frame)
            if sum(f.height for f in pending[table]) >= FLUSH_ROWS:
                out.setdefault(table, []).append(pl.concat(pending.pop(table), how="vertical_relaxed"))
    for table, frames in pending.items():
        out.setdefault(table, []).append(pl.concat(frames, how="vertical_relaxed"))
    return out


def _lean(frame: pl.DataFrame) -> pl.DataFrame:
    nulls = frame.null_count().row(0)
    return frame.select(c for c, n in zip(frame.columns, nulls, strict=True) if n < frame.height)


DELTA = ("line_no", "byte_offset", "ts")


def _pyarrow(folder: Path, flushes, compression: str, lean: bool, delta: tuple[str, ...] = ()) -> None:
    for table, frames in flushes.items():
        writer = None
        for frame in frames:
            arrow = (_lean(frame) if lean else frame).to_arrow()
            if writer is None or (lean and arrow.schema != writer.schema):
                if writer is not None:
                    writer.close()
                writer = pq.ParquetWriter(
                    str(folder / f"{table}-{len(os.listdir(folder))}.parquet"),
                    arrow.schema,
                    compression=compression,
                    compression_level=1 if compression == "zstd" else None,
                    use_dictionary=[c for c in ("source", "kind") if c in arrow.schema.names],
                    write_statistics=[c for c in PRUNED if c in arrow.schema.names] if lean else True,
                    column_encoding={c: "DELTA_BINARY_PACKED" for c in delta if c in arrow.schema.names}
                    or None,
                )
            writer.write_table(arrow)
        writer.close()


def _polars(folder: Path, flushes, compression: str) -> None:
    for table, frames in flushes.items():
        for i, frame in enumerate(frames):
            _lean(frame).write_parquet(
                folder / f"{table}-{i}.parquet",
                compression=compression,
                compression_level=1 if compression == "zstd" else None,
                statistics=False,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--mb", type=int, default=64)
    args = parser.parse_args()
    if _AS_WORKER not in os.environ:
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **WORKER_ENV, _AS_WORKER: "1"})
    with args.log.open("rb") as fh:
        data = fh.read(args.mb << 20)
    work = Path(tempfile.mkdtemp(prefix="tracelens-writers-"))
    try:
        head = work / "head.log"
        head.write_bytes(data[: data.rfind(b"\n") + 1])
        parsed = [
            p.tables.frames for p in parse_blocks(iter_blocks(head, DEFAULT_BLOCK_BYTES), ParseOptions())
        ]
        flushes = _flushes(parsed)
        lean_flushes = {t: [stored_lines(f) for f in fs] if t == T.LINES else fs for t, fs in flushes.items()}
        variants = {
            "pyarrow, zstd(1), every column, statistics on all (before)": lambda f: _pyarrow(
                f, flushes, "zstd", False
            ),
            "pyarrow, zstd(1), lean": lambda f: _pyarrow(f, lean_flushes, "zstd", True),
            "pyarrow, zstd(1), lean, delta": lambda f: _pyarrow(f, lean_flushes, "zstd", True, DELTA),
            "pyarrow, lz4, lean, delta": lambda f: _pyarrow(f, lean_flushes, "lz4", True, DELTA),
            "pyarrow, snappy, lean, delta": lambda f: _pyarrow(f, lean_flushes, "snappy", True, DELTA),
            "polars write_parquet, zstd(1), lean": lambda f: _polars(f, lean_flushes, "zstd"),
            "polars write_parquet, lz4, lean": lambda f: _polars(f, lean_flushes, "lz4"),
        }
        size = head.stat().st_size
        for name, run in variants.items():
            best = None
            for _ in range(3):
                out = work / "out"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir()
                started = time.process_time()
                run(out)
                cpu = time.process_time() - started
                best = cpu if best is None else min(best, cpu)
            written = sum(p.stat().st_size for p in out.iterdir())
            print(
                f"{name}: {best:.2f} CPU-s, {size / best / 1e6:.0f} MB/s per core, {written / 2**20:.1f} MiB"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
