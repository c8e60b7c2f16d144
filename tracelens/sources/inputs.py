"""What the user named on the command line, resolved to inputs: log files (plain or compressed) and
archives (tar, optionally compressed, and zip) whose members are each a source of their own.

Paths may be files, directories (searched recursively) or glob patterns. Only metadata is read here;
archives are listed lazily by the task that reads them, so a 10 GB tarball is read once.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass
from pathlib import Path

from tracelens.errors import InputError
from tracelens.sources.logfiles import compression_of, files_under, looks_like_log, open_source
from tracelens.sources.streams import is_stream, spool

FILE = "file"
TAR = "tar"
ZIP = "zip"
ARCHIVE_SUFFIXES = (".tar", ".tgz", ".tbz2", ".txz", ".tar.gz", ".tar.bz2", ".tar.xz", ".tar.zst", ".zip")
_GLOB_CHARS = "*?["


@dataclass(frozen=True)
class Input:
    """One file to read: a log (``container`` FILE) or an archive (TAR, ZIP)."""

    path: str
    container: str
    compression: str | None
    size: int
    mtime: float
    # The path the user gave, when ``path`` is the spool copy of a stream (`streams`): the lines' source.
    name: str | None = None

    @property
    def splittable(self) -> bool:
        """Whether byte ranges of it can be read independently (plain, uncompressed files only)."""
        return self.container == FILE and self.compression is None

    def source_name(self, member: str | None = None) -> str:
        """The `source` column of its lines: the path, or `archive:member` for an archive member."""
        shown = self.name or self.path
        return shown if member is None else f"{shown}:{member}"


def container_of(path: Path) -> str:
    """FILE, TAR or ZIP, by the first bytes (after decompression for a compressed tar)."""
    with path.open("rb") as fh:
        head = fh.read(4)
    if head == b"PK\x03\x04" or (head == b"PK\x05\x06" and path.suffix.lower() == ".zip"):
        return ZIP
    try:
        with open_source(path) as fh:
            block = fh.read(512)
    except Exception:  # an unreadable compressed file is reported when it is read, as a log
        return FILE
    return TAR if block[257:262] == b"ustar" else FILE


def _wanted_in_directory(path: Path) -> bool:
    name = path.name.lower()
    return looks_like_log(path) or name.endswith(ARCHIVE_SUFFIXES)


def _expand_one(raw: str, unread: list[str]) -> list[Path]:
    path = Path(raw)
    if path.exists():
        if path.is_dir():
            problems: list[str] = []
            found = files_under(path, _wanted_in_directory, problems)
            if problems and not found:
                raise InputError(problems[0])
            unread.extend(problems)
            if not found:
                raise InputError(
                    f"no log files (*.log, *.txt, *.out, *.err, compressed or archived too) under {path}"
                )
            return found
        return [path]
    if any(ch in raw for ch in _GLOB_CHARS):
        matches = sorted(Path(m) for m in glob.glob(raw, recursive=True))
        if not matches:
            raise InputError(f"no files match {raw}")
        out: list[Path] = []
        for match in matches:
            out.extend(_expand_one(str(match), unread) if match.is_dir() else [match])
        return out
    raise InputError(f"no such file or directory: {path}")


def discover(paths: list[str | os.PathLike[str]], unread: list[str] | None = None) -> list[Input]:
    """Inputs under ``paths``, each once, in the order given (directories sorted). A file or subfolder
    inside a given folder that cannot be read is named in ``unread`` and left out (without ``unread``,
    it is an error); a named file that cannot be read is always an error."""
    problems: list[str] = []
    seen: dict[str, Input] = {}
    for raw in paths:
        for path in _expand_one(str(raw), problems):
            key = str(path)
            if key in seen:
                continue
            if not os.access(path, os.R_OK):
                raise InputError(f"permission denied: {path}")
            stat = path.stat()
            name = None
            if is_stream(stat.st_mode):  # a pipe: read once, to a copy that every later read opens
                name, path = key, spool(path)
                stat = path.stat()
            container = container_of(path)
            compression = compression_of(path)
            seen[key] = Input(str(path), container, compression, stat.st_size, stat.st_mtime, name)
    if problems and unread is None:
        raise InputError(problems[0])
    if unread is not None:
        unread.extend(problems)
    return list(seen.values())
