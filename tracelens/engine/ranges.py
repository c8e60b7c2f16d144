"""Where a big plain file is cut into byte ranges (`plan_ranges`), and what each range needs to know of
the bytes before it (`scan_range`, `server_args_heads`). Only a run with new bytes to read plans ranges:
the engine imports this module (and with it polars, numpy and the parsers) when it does.

A byte range may only start at a line that nothing before it can change: a line with SGLang's own
prefix. Such a line never continues a traceback or a hard-wrapped `server_args`, closes whatever
record was open, and makes blank lines before it plain blank lines. So every range parses exactly as
it would inside the whole file, given three numbers from before it: its byte offset, its first line
number, and its run number. The first two come from counting newlines; the run number is the count of
`server_args=` heads before the range, predicted from the few lines that contain `server_args=` and
checked against what the workers really counted (a wrong guess re-reads the file in one piece).
Day roll-over of time-only prefixes needs the clock of every line before, so files with such prefixes
are read in one piece too (the workers tell).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from tracelens.engine.plan import ScanResult
from tracelens.parsers.pipeline import add_kinds, run_start_expr
from tracelens.parsers.prefix import add_prefix_columns
from tracelens.parsers.spec_metrics import VLLM_STARTS
from tracelens.sizes import SCAN_CHUNK_BYTES
from tracelens.sources.files import block_lines
from tracelens.sources.inputs import Input
from tracelens.sources.protocol import Block
from tracelens.tables.schema import C, W

_WINDOW = 16 << 10  # most lines carry the prefix: the first few usually hold one
_MAX_WINDOW = 8 << 20
_ARGS = b"server_args="
_NEEDLES = (_ARGS, *(start.encode() for start in VLLM_STARTS))
# The scan looks for the needles in windows of this size first (polars' SIMD substring search over an
# Arrow view of the chunk: no copy); `bytes.find` runs only on a chunk that holds one.
_SEARCH_WINDOW = 1 << 20


def _read(path: str, start: int, size: int) -> bytes:
    with open(path, "rb") as fh:
        fh.seek(start)
        return fh.read(size)


def split_point(path: str, file_size: int, target: int) -> int | None:
    """The byte offset of the first line at or after ``target`` that carries SGLang's prefix (None when
    there is none within a few MiB: the range then goes on)."""
    window = _WINDOW
    while True:
        start = max(target - 1, 0)
        data = _read(path, start, window)
        first = data.find(b"\n") + 1 if start > 0 else 0
        if start > 0 and first == 0:
            first = len(data)  # no line starts in this window
        end = data.rfind(b"\n") + 1
        if end > first:
            lines = block_lines(Block("", 1, start + first, data[first:end]))
            prefixed = add_prefix_columns(lines, None).get_column(W.PREFIXED)
            hits = prefixed.arg_true()
            if len(hits):
                return int(lines.item(int(hits[0]), C.BYTE_OFFSET))
        if start + len(data) >= file_size or window >= _MAX_WINDOW:
            return None
        window *= 2


def plan_ranges(item: Input, range_bytes: int, start: int = 0) -> list[tuple[int, int | None]]:
    """Byte ranges of a splittable input from ``start`` on, each after the first starting at a prefixed
    line; the last one runs to the end (None)."""
    cuts = [start]
    target = start + range_bytes
    while target < item.size:
        cut = split_point(item.path, item.size, target)
        if cut is None or cut >= item.size:
            break
        if cut > cuts[-1]:
            cuts.append(cut)
        target = max(cut, target) + range_bytes
    bounds: list[tuple[int, int | None]] = []
    for i, start in enumerate(cuts):
        bounds.append((start, cuts[i + 1] if i + 1 < len(cuts) else None))
    return bounds


def scan_range(path: str, start: int, end: int, chunk: int = SCAN_CHUNK_BYTES) -> ScanResult:
    """Count newlines in [start, end) and collect the lines that may start a run (`server_args=`, vLLM's
    `vLLM API server version`). The range is read into one buffer a chunk at a time, after the partial
    line the chunk before left (`readinto`: no new chunk-sized object per chunk), and each chunk is
    searched in place, never sliced (a slice is a copy). A chunk of 4 MiB stays in the caches: one of
    16 MiB cost a 32 MiB range 28-30 ms against 18-21 (1 MiB: 36-40, the polars calls of each chunk)."""
    result = ScanResult(0)
    buf = bytearray(chunk)
    with open(path, "rb") as fh:
        fh.seek(start)
        pos = start
        held = 0  # bytes of a partial line at the start of ``buf``
        while pos < end:
            want = min(chunk, end - pos)
            if len(buf) < held + want:  # a partial line and a chunk: a bigger buffer, the line moved over
                # A new one, never this one resized: a view of it (the newline count's, the needle
                # search's Arrow array) can outlive its function, in the frames a sampling profiler
                # holds (Dask's workers run one), and a bytearray with a live view cannot be resized.
                grown = bytearray(held + want)
                grown[:held] = buf[:held]
                buf = grown
            got = fh.readinto(memoryview(buf)[held : held + want])
            if not got:
                break
            pos += got
            size = held + got
            cut = buf.rfind(b"\n", 0, size) + 1 if pos < end else size
            result.newlines += _newlines(buf, cut)
            if _holds_needle(buf, cut):
                result.candidates.extend(_needle_lines(buf, cut))
            held = size - cut
            buf[:held] = buf[cut:size]
    return result


def _needle_lines(data: bytearray, end: int) -> list[bytes]:
    """The lines of ``data[:end]`` that hold one of `_NEEDLES`, in order, each once."""
    found: dict[int, bytes] = {}  # by line start
    for needle in _NEEDLES:
        at = data.find(needle, 0, end)
        while at != -1:
            line_start = data.rfind(b"\n", 0, at) + 1
            line_end = data.find(b"\n", at, end)
            line_end = end if line_end == -1 else line_end
            found[line_start] = bytes(data[line_start:line_end])
            at = data.find(needle, line_end, end)
    return [found[k] for k in sorted(found)]


def _holds_needle(data: bytearray, end: int) -> bool:
    """Whether ``data[:end]`` holds any of `_NEEDLES`. Nearly no chunk of a log does (one `server_args=`
    per server start), and `bytes.find` of each needle ran at about 1 GB/s, the scan's largest cost:
    polars' substring search (memchr's SIMD `memmem`) over an Arrow view of ``data`` in windows runs
    about ten times as fast, and a needle that straddles two windows is found by `bytes.find` around
    each boundary."""
    starts = np.arange(0, end, _SEARCH_WINDOW, dtype=np.int64)
    offsets = np.append(starts, np.int64(end))
    windows = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    series = pl.Series(windows)  # a view of ``data``, not a copy
    if any(series.bin.contains(needle).any() for needle in _NEEDLES):
        return True
    return any(
        data.find(needle, max(cut - len(needle) + 1, 0), min(cut + len(needle) - 1, end)) != -1
        for cut in starts[1:].tolist()
        for needle in _NEEDLES
    )


def _newlines(data: bytes | bytearray, end: int, step: int = 1 << 20) -> int:
    """Newlines in ``data[:end]``. numpy's comparison is SIMD, three times faster than `bytes.count` of
    one byte; a MiB at a time, its mask stays in the cache and is never paged in anew (a mask of a
    whole 16 MiB chunk cost five times as much)."""
    arr = np.frombuffer(data, dtype=np.uint8, count=end)
    return sum(int(np.count_nonzero(arr[i : i + step] == 0x0A)) for i in range(0, end, step))


def server_args_heads(groups: list[list[bytes]]) -> list[int]:
    """For each group of lines, how many of its lines, each read alone, start a run (`run_start_expr`).
    All groups are read in one frame: a parse per range cost the parent about 12 ms each."""
    lines = [line for group in groups for line in group]
    if not lines:
        return [0] * len(groups)
    frame = block_lines(Block("", 1, 0, b"\n".join(lines) + b"\n"))
    starts = add_kinds(add_prefix_columns(frame, None)).select(run_start_expr()).to_series().to_list()
    counts, at = [], 0
    for group in groups:
        counts.append(sum(bool(x) for x in starts[at : at + len(group)]))
        at += len(group)
    return counts
