"""Where the text of live lines is kept: the index holds offsets, the text stays in a file.

A source's lines form one logical byte stream (across rotations and reconnections). Bytes that are also
in a local file are read back from that file (an `os.dup` of the descriptor the follower read them
with, so a rename rotation does not lose them); bytes from ssh, a command or stdin go to an unlinked
spool file. Reads use `os.pread` and never move a shared cursor, so the UI thread reads while the
session thread appends.
"""

from __future__ import annotations

import bisect
import os
import tempfile
import threading
from dataclasses import dataclass, field

from tracelens.sources.generation import FileGeneration

GONE = "[text no longer available: the file was truncated]"


@dataclass
class _Extent:
    start: int  # logical offset
    length: int
    generation: FileGeneration | None  # None: in the spool
    at: int  # offset in the generation's file, or in the spool


@dataclass
class TextStore:
    """The bytes of one source's logical stream, readable by (offset, length)."""

    _extents: list[_Extent] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)
    _spool_fd: int = -1
    _spool_size: int = 0
    _size: int = 0
    _generations: list[FileGeneration] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def size(self) -> int:
        return self._size

    def append(self, data: bytes, generation: FileGeneration | None = None, at: int = 0) -> int:
        """Add bytes at the end of the stream; returns their logical offset."""
        start = self._size
        if not data:
            return start
        with self._lock:
            if generation is None:
                if self._spool_fd < 0:
                    self._spool_fd, _ = _spool()
                at = self._spool_size
                os.pwrite(self._spool_fd, data, at)
                self._spool_size += len(data)
            elif not any(g is generation for g in self._generations):
                self._generations.append(generation)
            last = self._extents[-1] if self._extents else None
            if last is not None and last.generation is generation and last.at + last.length == at:
                last.length += len(data)
            else:
                self._extents.append(_Extent(start, len(data), generation, at))
                self._starts.append(start)
            self._size += len(data)
        return start

    def read(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset+length) of the stream (from the file or the spool)."""
        out = []
        end = offset + length
        with self._lock:
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
            if ext.generation is None:
                out.append(os.pread(self._spool_fd, hi - lo, ext.at + lo - ext.start))
            elif ext.generation.gone or ext.generation.fd < 0:
                out.append(GONE.encode())
            else:
                out.append(os.pread(ext.generation.fd, hi - lo, ext.at + lo - ext.start))
        return b"".join(out)

    def line(self, offset: int, length: int) -> str:
        data = self.read(offset, length)
        return data.decode("utf-8", "replace").rstrip("\r\n")

    def close(self, close_generations: bool = True) -> None:
        with self._lock:
            for generation in self._generations if close_generations else ():
                generation.close()
            self._generations.clear()
            if self._spool_fd >= 0:
                os.close(self._spool_fd)
                self._spool_fd = -1


def _spool() -> tuple[int, str]:
    fd, path = tempfile.mkstemp(prefix="tracelens-spool-")
    os.unlink(path)  # gone when closed, even after a crash
    return fd, path
