"""Where lines come from: files (plain or compressed) read in line-aligned blocks. Finding them and
opening them decompressed is `logfiles`.

A block is raw bytes that start at a line start and end after a newline (or at end of input). Turning a
block into a line frame (`block_lines`) is zero-copy: newline positions come from numpy (from the scan
that cut the block), the text column is Arrow string views over the block's own buffer, which polars
takes as they are, and only lines that are not valid UTF-8 are decoded one by one (with replacement
characters, so a binary file is accounted for instead of crashing the parser).
"""

from __future__ import annotations

import _compression
import io
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

import numpy as np
import polars as pl
import pyarrow as pa

from tracelens.errors import InputError, SourceReadError
from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.logfiles import is_read_error, open_source
from tracelens.sources.long_lines import cut_line, max_line_bytes, too_long
from tracelens.sources.protocol import Block, BlockBytes
from tracelens.tables.schema import C


def iter_blocks(
    path: Path, block_bytes: int = DEFAULT_BLOCK_BYTES, source: str | None = None
) -> Iterator[Block]:
    """Read ``path`` as line-aligned blocks of about ``block_bytes`` (a longer line makes a longer block)."""
    name = source if source is not None else str(path)
    try:
        fh = open_source(path)
    except PermissionError as exc:
        raise InputError(f"permission denied: {path}") from exc
    with fh:
        yield from blocks_from_stream(fh, name, block_bytes)


def blocks_from_stream(
    fh: BinaryIO,
    source: str,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    start_offset: int = 0,
    first_line_no: int = 1,
    limit: int | None = None,
) -> Iterator[Block]:
    """Cut a byte stream into line-aligned blocks, carrying the partial last line forward. The stream is
    positioned at ``start_offset`` of its source, whose line there is number ``first_line_no``; at most
    ``limit`` bytes are read. A stream that breaks (truncated or corrupt compressed data) raises
    `SourceReadError` after the blocks read before the break.

    Each block is found by one newline scan, which also numbers its lines and is handed on with it
    (`SplitBlock`), so that `block_lines` does not scan it again. A plain file is not carried: the
    stream steps back to the start of the partial last line, and the next read takes its bytes again
    with the next piece, instead of copying every block once more to put the carry in front of it. The
    blocks are the same either way (the `evidence` rows depend on where blocks end)."""
    carry: BlockBytes = b""
    offset = start_offset
    line_no = first_line_no
    left = limit
    rewind = _seekable_file(fh)
    again = 0  # bytes stepped back over, read again in front of the next piece
    broken: Exception | None = None
    longest = max_line_bytes()
    cr_lines: bool | None = None  # its lines end by lone CRs (no LF in its first read): known at once
    while broken is None:
        want = block_bytes + again if left is None else min(block_bytes + again, left)
        chunk, broken = _read_up_to(fh, want)
        if not chunk:
            break
        if cr_lines is None:
            cr_lines = b"\n" not in chunk and b"\r" in chunk
        if cr_lines:  # a byte for a byte: every offset stays that of the source
            chunk = chunk.translate(_CR_AS_LF)
        if left is not None:
            left -= len(chunk)
        data = carry + chunk if carry else chunk
        # The cut is found before any view of ``data`` is taken, and ``data`` is cut in place (below)
        # before its newline scan views it: a bytearray cannot be resized while a view of it lives, and a
        # view can outlive its function (a sampling profiler, as Dask's workers run, holds the frames it
        # saw and their locals: `BufferError: Existing exports of data`, one run in six on Dask).
        cut = data.rfind(b"\n") + 1
        if not cut and len(data) > longest:  # a line over the limit: keep its head, skip on
            total, rest, ended, broken, read = _skip_line(fh, len(data), block_bytes, left, broken)
            if left is not None:
                left -= read
            yield Block(source, line_no, offset, cut_line(data, total, longest, ended))
            offset += total + ended
            line_no += 1
            carry, again = rest, 0
            continue
        if not cut:  # no newline yet: one very long line, keep reading
            carry, again = data, 0
            continue
        again = len(data) - cut if rewind and broken is None else 0
        if again:
            fh.seek(-again, io.SEEK_CUR)
            if left is not None:
                left += again
            carry = b""
        else:
            carry = data[cut:]
        # The block is ``data`` up to its last newline: ``data`` itself when it ends there (the last
        # block of a range or file); a plain file's read (a bytearray, stepped back over) cut in place;
        # else a slice. Slicing a plain file's read copied each block into a fresh mapping whose pages
        # fault in: 3-4 ms per 6 MiB block, as much as the read (and a bytearray's slice always copies).
        block: BlockBytes
        if cut == len(data):
            block = data
        elif again and isinstance(data, bytearray):
            del data[cut:]
            block = data
        else:
            block = data[:cut]
        newlines = _newlines(block)
        if too_long(newlines, longest):
            yield from _cut_long_lines(SplitBlock(source, line_no, offset, block, newlines), longest)
        else:
            yield SplitBlock(source, line_no, offset, block, newlines)
        offset += len(block)
        line_no += len(newlines)
    if len(carry) > longest:
        carry = cut_line(carry, len(carry), longest, False)
    if carry:  # the last line, also when a break cut it short: partial input is kept
        yield Block(source, line_no, offset, carry)
    if broken is not None:
        raise SourceReadError(source, offset + len(carry), _describe(broken)) from broken


# A log whose lines end by lone CRs (an old Mac's, some serial consoles') was one line: its CRs are read
# as LFs. Only when its first read holds no LF, so that tqdm's CRs inside LF lines stay as they are.
_CR_AS_LF = bytes.maketrans(b"\r", b"\n")


def _skip_line(
    fh: BinaryIO, seen: int, block_bytes: int, left: int | None, broken: Exception | None
) -> tuple[int, bytes, bool, Exception | None, int]:
    """Read on to the end of a line of which ``seen`` bytes were read, holding one piece at a time:
    the line's length (without its newline), what follows its newline in the last piece, whether a
    newline ended it, the read error that stopped the reading, and the bytes read."""
    total = seen
    read = 0
    while broken is None and (left is None or left > read):
        want = block_bytes if left is None else min(block_bytes, left - read)
        chunk, broken = _read_up_to(fh, want)
        if not chunk:
            break
        read += len(chunk)
        at = chunk.find(b"\n")
        if at >= 0:
            return total + at, bytes(chunk[at + 1 :]), True, broken, read
        total += len(chunk)
    return total, b"", False, broken, read


def _cut_long_lines(block: SplitBlock, limit: int) -> Iterator[Block]:
    """``block`` again with its lines over ``limit`` cut: each a block of its own, the runs of lines
    between them blocks as they were (with their own newline positions)."""
    newlines = block.newlines
    starts = np.concatenate(([0], newlines[:-1] + 1))
    lengths = newlines - starts
    first, offset, data = block.first_line_no, block.start_offset, block.data
    at = 0
    for i in (int(i) for i in np.flatnonzero(lengths > limit)):
        if i > at:
            s, e = int(starts[at]), int(newlines[i - 1]) + 1
            yield SplitBlock(block.source, first + at, offset + s, data[s:e], newlines[at:i] - s)
        s = int(starts[i])
        yield Block(
            block.source, first + i, offset + s, cut_line(data[s : s + limit], int(lengths[i]), limit, True)
        )
        at = i + 1
    if at < len(newlines):
        s = int(starts[at])
        yield SplitBlock(block.source, first + at, offset + s, data[s:], newlines[at:] - s)


@dataclass(frozen=True)
class SplitBlock(Block):
    """A block with the positions of its newlines, from the scan that cut it."""

    newlines: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64), compare=False, repr=False)


def _seekable_file(fh: BinaryIO) -> bool:
    """Whether ``fh`` is a plain file that can step back (not a pipe, not a decompressing stream)."""
    try:
        return isinstance(getattr(fh, "raw", None), io.FileIO) and fh.seekable()
    except (OSError, ValueError):
        return False


# The newline scan goes a piece at a time, so that its mask stays in the cache: on a whole 3 MiB block
# it took 2.1 ms in a worker, 1.2 in pieces of 256 KiB (1 MiB pieces 1.4, 64 KiB 1.3).
_SCAN_PIECE = 256 << 10


def _newlines(data: BlockBytes) -> np.ndarray:
    """Positions of the newlines in ``data`` (int64)."""
    arr = np.frombuffer(data, dtype=np.uint8)
    if len(arr) <= _SCAN_PIECE:
        return np.flatnonzero(arr == 0x0A)
    return np.concatenate(
        [np.flatnonzero(arr[at : at + _SCAN_PIECE] == 0x0A) + at for at in range(0, len(arr), _SCAN_PIECE)]
    )


# Compressed streams are read in pieces: a break loses at most the piece it happened in.
_PIECE = 64 << 10


def _read_up_to(fh: BinaryIO, size: int) -> tuple[BlockBytes, Exception | None]:
    """Up to ``size`` bytes, and the read error that stopped it early (gzip, zlib, bz2, lzma, zstd, tar
    and zip each raise their own kind)."""
    if isinstance(getattr(fh, "raw", None), io.FileIO):  # a plain file: one read, no copy
        # Zero-filled first: from the heap (the workers' mmap threshold sits above a block) that fill is a
        # memset whose pages fault in when the heap's top was given back, 16% of a worker's page faults.
        # So no bigger than what is left of a regular file, and a byte more to see it grew: a 14 KB log
        # read into a 6 MiB buffer took 3.4 ms, into one of its size 0.006.
        left = _left_in(fh)
        if left is not None:
            size = min(size, left + 1)
        buf = bytearray(size)
        try:
            got = cast(io.BufferedIOBase, fh).readinto(buf)
        except OSError as exc:
            return b"", exc
        del buf[got:]
        return buf, None
    pieces: list[bytes] = []
    got = 0
    read = _decoder_of(fh)
    while got < size:
        try:
            piece = read(min(_PIECE, size - got))
        except Exception as exc:
            if not is_read_error(exc):
                raise
            return b"".join(pieces), exc
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return b"".join(pieces), None


def _decoder_of(fh: BinaryIO) -> Callable[[int], bytes]:
    """How to read ``fh`` so that a break loses nothing decoded before it. gzip, bz2 and lzma files put
    a BufferedReader over their decoder, which gathers a read from several decodes and drops them all
    when one fails: a truncated .gz or .xz lost up to 64 KiB of lines before the break, one whose
    checksum is wrong its last read's lines. Their decoder itself returns what each decode gives and
    raises only on a read that gives nothing."""
    buffer: Any = getattr(fh, "_buffer", None)
    raw = getattr(buffer, "raw", None)
    # the buffer holds nothing read ahead (its position is its decoder's)
    if isinstance(raw, _compression.DecompressReader) and buffer.tell() == raw.tell():
        return cast(Callable[[int], bytes], raw.read)
    return fh.read


def _left_in(fh: BinaryIO) -> int | None:
    """Bytes between the position of ``fh`` and the end of its file; None when it is not a regular file
    (a pipe, a terminal or a device, whose size says nothing of what is left)."""
    try:
        status = os.fstat(fh.fileno())
        if not stat.S_ISREG(status.st_mode):
            return None
        return max(status.st_size - fh.tell(), 0)
    except (OSError, ValueError):
        return None


def _describe(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def line_spans(data: BlockBytes, newlines: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Start offset (int64) and byte length (int32, the newline left out) of each line of ``data``, in
    numpy alone: the live pump indexes lines with it and must never wait for polars' thread pool.
    ``newlines``: the newline positions of ``data`` when they are known already."""
    if newlines is None:
        newlines = _newlines(data)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.append(newlines, len(data))
    if not data or data.endswith(b"\n"):  # nothing follows the last newline
        starts, ends = starts[:-1], ends[:-1]
    return starts.astype(np.int64), (ends - starts).astype(np.int32)


def block_lines(block: Block) -> pl.DataFrame:
    """The lines of a block: source, line_no, byte_offset, byte_len and text (line ends stripped)."""
    buf = block.data
    arr = np.frombuffer(buf, dtype=np.uint8)
    starts, lengths = line_spans(buf, block.newlines if isinstance(block, SplitBlock) else None)
    ends = starts + lengths
    # A CRLF line keeps its text without the CR; offsets still point at the real bytes.
    has_cr = (ends > starts) & (arr[np.maximum(ends - 1, 0)] == 0x0D) if len(arr) else ends > starts
    n = len(starts)
    text = _text(buf, starts, lengths - has_cr) if n else pl.Series(C.TEXT, [], dtype=pl.String)
    return pl.DataFrame(
        {
            C.SOURCE: pl.Series([block.source], dtype=pl.String).new_from_index(0, n),
            C.LINE_NO: pl.int_range(block.first_line_no, block.first_line_no + n, eager=True, dtype=pl.Int64),
            C.BYTE_OFFSET: pl.Series(starts + block.start_offset, dtype=pl.Int64),
            C.BYTE_LEN: pl.Series(lengths, dtype=pl.Int32),
            C.TEXT: text,
        }
    )


# A string view holds its offset in 32 bits: a longer block (a line of 2 GiB) takes the copying path.
_VIEWS_UP_TO = (1 << 31) - 1


def _text(buf: BlockBytes, starts: np.ndarray, lengths: np.ndarray) -> pl.Series:
    """The text of the lines at ``starts`` (``lengths`` bytes each); lines that are not valid UTF-8 get
    replacement characters instead of failing."""
    whole = pa.LargeStringArray.from_buffers(
        1, pa.py_buffer(np.array([0, len(buf)], dtype=np.int64)), pa.py_buffer(buf)
    )
    try:
        # Arrow validates the whole block without building a str: as strict as Python's decoder
        # (surrogates, overlong forms), and one non-ASCII character does not make it ten times slower.
        # A line of a valid block is valid: it is cut at newlines, which no multi-byte character holds.
        whole.validate(full=True)
        valid = True
    except pa.ArrowInvalid:
        valid = False
    if valid and len(buf) <= _VIEWS_UP_TO:
        return pl.Series(C.TEXT, _string_views(buf, starts, lengths))
    # Arrow wants contiguous offsets; take [start, end) slices via a large binary array of pairs.
    n = len(starts)
    offsets = np.empty(2 * n, dtype=np.int64)
    offsets[0::2], offsets[1::2] = starts, starts + lengths
    pairs = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), 2 * n - 1, [None, pa.py_buffer(offsets), pa.py_buffer(buf)]
    )
    if valid:
        return pl.Series(C.TEXT, pairs.view(pa.large_string())).gather_every(2)
    # Rare path (binary junk, a truncated multi-byte character): decode line by line.
    fixed = [b.decode("utf-8", "replace") for b in pairs.to_pylist()]
    return pl.Series(C.TEXT, fixed, dtype=pl.String).gather_every(2)


def _string_views(buf: BlockBytes, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """Arrow string views of the lines, over ``buf`` itself: polars' own layout for text, which it
    takes without a copy, where it copied a `large_string` array string by string (2.9 of the 5.4 ms a
    3 MiB block took to split in a worker). A view is four little-endian int32: the length, then a
    string of up to 12 bytes inline (zero-padded), or its first 4 bytes, the buffer (0), the offset."""
    n = len(starts)
    views = np.zeros((n, 4), dtype="<i4")
    views[:, 0] = lengths
    # The 4 bytes at every offset of ``buf``, a strided view: nothing is copied.
    words = np.ndarray((max(len(buf) - 3, 0),), dtype="<i4", buffer=buf, strides=(1,))
    long = np.flatnonzero(lengths > 12)
    views[long, 1] = words[starts[long]]  # a long string has 12 bytes more: its prefix is in ``buf``
    views[long, 3] = starts[long]
    short = np.flatnonzero(lengths <= 12)
    if len(short):
        # Indices past the end of ``buf`` are clipped; they are past the string's end too, so zeroed.
        inline = np.frombuffer(buf, dtype=np.uint8).take(starts[short, None] + np.arange(12), mode="clip")
        inline[np.arange(12) >= lengths[short, None]] = 0
        views[short, 1:] = inline.view("<i4")
    return pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(views), pa.py_buffer(buf)])


def lines_of_text(text: str, source: str = "<text>") -> pl.DataFrame:
    """Line frame of an in-memory string (for `explain --line`, tests and the live tail)."""
    return block_lines(Block(source, 1, 0, text.encode("utf-8")))
