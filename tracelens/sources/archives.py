"""Sources inside archives, and lines read back by byte offset.

A source is a log file (plain or compressed) or an archive member (`archive.tar.gz:path/in/it.log`).
A compressed source or a member is streamed once for all the lines asked of it, in offset order, never
once per line; a plain file is read with a seek per line.
"""

from __future__ import annotations

import datetime as dt
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from tracelens.sources.logfiles import (
    compression_of,
    decompressing,
    is_read_error,
    looks_like_log,
    open_source,
)

_SKIP = 1 << 20


def split_source(source: str) -> tuple[Path, str | None]:
    """(file, archive member or None) of a source name; the file is the longest prefix that exists."""
    path = Path(source)
    if path.is_file():
        return path, None
    at = source.find(":")
    while at != -1:
        head = Path(source[:at])
        if head.is_file():
            return head, source[at + 1 :]
        at = source.find(":", at + 1)
    return path, None


@contextmanager
def open_member(archive: Path, member: str) -> Iterator[BinaryIO]:
    """A member of a tar (plain or compressed) or zip archive, decompressed when it is compressed."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf, zf.open(member) as raw, decompressing(raw) as fh:
            yield fh
        return
    with open_source(archive) as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
        for info in tar:
            if info.name == member and info.isfile():
                extracted = tar.extractfile(info)
                assert extracted is not None
                with decompressing(extracted) as fh:
                    yield fh
                return
    raise FileNotFoundError(f"{member} is not in {archive}")


def log_members(archive: Path) -> tuple[list[tuple[str, float]], Exception | None]:
    """(name, modification time) of the members of a tar or zip archive that the engine reads as logs
    (files named like logs, as `engine.task` picks them), in archive order; and the read error that
    ended the listing early (a truncated or corrupt archive), the members listed before it kept."""
    found: list[tuple[str, float]] = []
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                for entry in zf.infolist():
                    if not entry.is_dir() and looks_like_log(Path(entry.filename)):
                        found.append((entry.filename, dt.datetime(*entry.date_time).timestamp()))
            return found, None
        with open_source(archive) as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
            for info in tar:
                if info.isfile() and looks_like_log(Path(info.name)):
                    found.append((info.name, float(info.mtime)))
    except Exception as exc:
        if isinstance(exc, KeyError) or is_read_error(exc):
            return found, exc
        raise
    return found, None


def _forward(fh: BinaryIO, spans: list[tuple[int, int, int]]) -> dict[int, str]:
    """Read (line_no, offset, length) spans, sorted by offset, from a stream that only goes forward."""
    out: dict[int, str] = {}
    pos = 0
    for line_no, offset, length in spans:
        while pos < offset:
            chunk = fh.read(min(_SKIP, offset - pos))
            if not chunk:
                return out
            pos += len(chunk)
        if pos != offset:  # two cited spans overlap: cannot happen with lines, but never read backwards
            continue
        data = fh.read(length)
        pos += len(data)
        out[line_no] = data.decode("utf-8", "replace").rstrip("\r")
    return out


def _seeking(path: Path, spans: list[tuple[int, int, int]]) -> dict[int, str]:
    out = {}
    with path.open("rb") as fh:
        for line_no, offset, length in spans:
            fh.seek(offset)
            out[line_no] = fh.read(length).decode("utf-8", "replace").rstrip("\r")
    return out


def read_source_lines(source: str, spans: list[tuple[int, int, int]]) -> dict[int, str]:
    """Text by line number of the (line_no, offset, length) spans of one source; {} when it is gone or
    unreadable (a view then shows the line without its text)."""
    spans = sorted(spans, key=lambda s: s[1])
    path, member = split_source(source)
    try:
        if member is not None:
            with open_member(path, member) as fh:
                return _forward(fh, spans)
        if not path.is_file():
            return {}
        if compression_of(path) is None:
            return _seeking(path, spans)
        with open_source(path) as fh:
            return _forward(fh, spans)
    except Exception as exc:
        if isinstance(exc, OSError | KeyError | tarfile.TarError | zipfile.BadZipFile) or is_read_error(exc):
            return {}  # gone, moved, or broken where the line was: no text rather than a failure
        raise
