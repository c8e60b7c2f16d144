"""Where the text of live lines is kept: the index holds offsets, the text stays in a file.

A source's lines form one logical byte stream (across rotations and reconnections). Bytes that are also
in a local file are read back from that file (an `os.dup` of the descriptor the follower read them
with, so a rename rotation does not lose them); bytes from ssh, a command or stdin go to an unlinked
spool file. Reads use `os.pread` and never move a shared cursor, so the UI thread reads while the
session thread appends.

The log view keeps only each source's newest lines (`index.SourceLines.trim`); `release` then drops
the extents below the oldest line held, closing the descriptors of rotated files and the spool
segments that no held line needs any more (the spool is written in segments for that: an unlinked
file's pages go back when it is closed).
"""

from __future__ import annotations

import bisect
import collections
import os
import tempfile
import threading
from dataclasses import dataclass, field

from tracelens.sources.generation import FileGeneration

GONE = "[text no longer available: the file was truncated]"
# The lines of each source the log view keeps by default (`--scrollback`; their text is kept here): about
# 57 bytes a line held in the index, 56 MiB (docs/live.md: "Scroll-back"). Here rather than in `index`, which
# needs numpy and polars: the live commands' options show it, and every command defines them.
SCROLLBACK_LINES = 1_000_000
SPOOL_SEGMENT = 64 << 20  # a new spool file after this many bytes, so that old ones can be closed
# The newest bytes appended are also kept in memory and read from there: a copytruncate may empty the
# file (and the writer fill it again) before the follower sees it and hands over the copy, and in that
# window the file holds other bytes at the offsets of the lines just read, the ones the views and the
# session's subscribers read at once. The newest append is kept whole even when it is larger.
RECENT_BYTES = 1 << 20


@dataclass
class _Extent:
    start: int  # logical offset
    length: int
    generation: FileGeneration | None  # None: in the spool
    at: int  # offset in the generation's file, or in the spool segment
    spool: _Segment | None = None  # the spool segment (when generation is None)


@dataclass(eq=False)
class _Segment:
    """One unlinked spool file."""

    fd: int
    size: int = 0

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class TextStore:
    """The bytes of one source's logical stream, readable by (offset, length)."""

    _extents: list[_Extent] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)
    _spools: list[_Segment] = field(default_factory=list)
    _size: int = 0
    _released: int = 0  # logical offset below which the text was released
    _generations: list[FileGeneration] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # (logical offset, bytes) of the newest appends, contiguous up to `_size` (`RECENT_BYTES`)
    _recent: collections.deque[tuple[int, bytes]] = field(default_factory=collections.deque)
    _recent_bytes: int = 0

    @property
    def size(self) -> int:
        return self._size

    def append(
        self, data: bytes, generation: FileGeneration | None = None, at: int = 0, *, keep: bool = True
    ) -> int:
        """Add bytes at the end of the stream; returns their logical offset. ``keep=False``: ``data``
        only gives the length (a map of the file that is closed next), nothing is kept in memory."""
        start = self._size
        if not data:
            return start
        with self._lock:
            segment = None
            if generation is None:
                if not self._spools or self._spools[-1].size >= SPOOL_SEGMENT:
                    self._spools.append(_Segment(_spool()))
                segment = self._spools[-1]
                at = segment.size
                os.pwrite(segment.fd, data, at)
                segment.size += len(data)
            elif not any(g is generation for g in self._generations):
                self._generations.append(generation)
            last = self._extents[-1] if self._extents else None
            if (
                last is not None
                and last.generation is generation
                and last.spool is segment
                and last.at + last.length == at
            ):
                last.length += len(data)
            else:
                self._extents.append(_Extent(start, len(data), generation, at, segment))
                self._starts.append(start)
            self._size += len(data)
            if not keep:  # what is kept must run to the end of the stream
                self._recent.clear()
                self._recent_bytes = 0
                return start
            self._recent.append((start, data))
            self._recent_bytes += len(data)
            while self._recent_bytes - len(self._recent[0][1]) >= RECENT_BYTES:
                self._recent_bytes -= len(self._recent.popleft()[1])
        return start

    def read(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset+length) of the stream (from the file or the spool)."""
        out = []
        end = offset + length
        with self._lock:
            if self._recent and self._recent[0][0] <= offset:
                return self._read_recent(offset, end)
            i = max(bisect.bisect_right(self._starts, offset) - 1, 0)
            pieces = []
            while i < len(self._extents) and offset < end:
                ext = self._extents[i]
                lo, hi = max(offset, ext.start), min(end, ext.start + ext.length)
                if lo < hi:
                    pieces.append((ext, lo, hi))
                    offset = hi
                i += 1
        for ext, lo, hi in pieces:
            if ext.spool is not None:
                out.append(os.pread(ext.spool.fd, hi - lo, ext.at + lo - ext.start))
            elif ext.generation is None or ext.generation.gone or ext.generation.fd < 0:
                out.append(GONE.encode())
            else:
                out.append(os.pread(ext.generation.fd, hi - lo, ext.at + lo - ext.start))
        return b"".join(out)

    def _read_recent(self, offset: int, end: int) -> bytes:
        """Bytes [offset, end) from the newest appends (the caller holds the lock)."""
        out = []
        for start, data in self._recent:
            lo, hi = max(offset, start), min(end, start + len(data))
            if lo < hi:
                out.append(data[lo - start : hi - start])
        return b"".join(out)

    def line(self, offset: int, length: int) -> str:
        data = self.read(offset, length)
        return data.decode("utf-8", "replace").rstrip("\r\n")

    @property
    def released(self) -> int:
        return self._released

    def release(self, offset: int) -> None:
        """Forget the bytes below ``offset`` (no line before it is read any more): drop the extents
        that end at or below it, and close the spool segments and rotated files none of the rest
        needs. The newest of each stays open: the followers append to it."""
        with self._lock:
            if offset <= self._released:
                return
            self._released = offset
            drop = bisect.bisect_right(self._starts, offset) - 1  # the extent holding offset stays
            if drop <= 0:
                return
            del self._extents[:drop], self._starts[:drop]
            used_spools = {id(e.spool) for e in self._extents}
            used_files = {id(e.generation) for e in self._extents}
            for segment in self._spools[:-1]:
                if id(segment) not in used_spools:
                    segment.close()
            self._spools = [s for s in self._spools[:-1] if s.fd >= 0] + self._spools[-1:]
            keep = []
            for i, generation in enumerate(self._generations):
                if id(generation) in used_files or i == len(self._generations) - 1:
                    keep.append(generation)
                else:
                    generation.close()
            self._generations = keep

    def held_in_memory(self) -> int:
        """Bytes of the newest appends kept in memory, for tests and benches."""
        with self._lock:
            return self._recent_bytes

    def open_files(self) -> int:
        """Descriptors held (spool segments and files), for tests and benches."""
        with self._lock:
            return sum(s.fd >= 0 for s in self._spools) + sum(g.fd >= 0 for g in self._generations)

    def close(self, close_generations: bool = True) -> None:
        with self._lock:
            for generation in self._generations if close_generations else ():
                generation.close()
            self._generations.clear()
            for segment in self._spools:
                segment.close()
            self._spools.clear()
            self._recent.clear()
            self._recent_bytes = 0


def _spool() -> int:
    fd, path = tempfile.mkstemp(prefix="tracelens-spool-")
    os.unlink(path)  # gone when closed, even after a crash
    return fd
