"""Sizes: the bytes the readers and the parsers take at a time, all in this one place, and how a size a
user types (`4M`, `65536`) is read. It imports only `errors`, so every layer may use it."""

from __future__ import annotations

import re

from tracelens.errors import InputError

# The parsers' block, in the batch engine and the in-memory parse (`tracelens.analyze` of tables,
# `engine.ingest`). Every block pays the parsers' fixed cost (about a hundred polars calls), so bigger
# blocks cost less CPU, and a worker's peak grows by some 12 MiB per MiB of block. 6 MiB keeps two
# workers and the parent at 405-432 MiB on 1 and 4 GiB logs, with 6-10% less CPU than 3 MiB; 8 MiB
# reached 485 MiB, too near the 512 MiB bound (bench/throughput.py; the parent holds no table library
# while the workers run). The workers' mmap threshold follows this size (`engine.executors.WORKER_ENV`):
# with a block from the heap and jemalloc's 500 ms, 417-445 MiB. `parse --block-size` overrides it.
DEFAULT_BLOCK_BYTES = 6 << 20
# The engine's byte range of a plain file, one task's work (`parse --range-size`); a live session reads
# a local file larger than one range through the engine first (`live.seed.LOAD_BYTES`).
DEFAULT_RANGE_BYTES = 32 << 20
# The planner's read when it counts a range's newlines (`engine.ranges.scan_range`): a chunk of 4 MiB
# stays in the caches (16 MiB cost a 32 MiB range 28-30 ms against 18-21; 1 MiB 36-40).
SCAN_CHUNK_BYTES = 4 << 20
# A followed source's read at a time (`sources.tail`, `sources.recorded`): smaller than a parse block,
# so that a live view shows a file's existing lines a piece at a time and new lines as they come.
FOLLOW_READ_BYTES = 4 << 20
# What the live session hands its worker at once (blocks queued by the followers, `live.session`), and
# what the log view's search reads back of the text at once (`live.index`).
LIVE_BATCH_BYTES = 16 << 20

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, option: str) -> int:
    """`4M` -> 4194304; a clear error (naming ``option``) for anything else."""
    match = _SIZE.match(text)
    if match is None:
        raise InputError(f"{option} wants a size such as 4M or 65536, got {text!r}")
    scale = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2).upper()]
    size = int(float(match.group(1)) * scale)
    if size < 1024:
        raise InputError(f"{option} must be at least 1K, got {text!r}")
    return size
