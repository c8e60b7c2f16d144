"""Log files before their lines are read: which names look like logs, the files under a folder and those
a user's paths name, a file's compression (by its magic bytes, the suffix can lie), a stream that
decompresses it, and which errors mean a broken stream.

The standard library only (zstandard is imported when a `.zst` is opened): finding the inputs of a
parse, and seeing that none of them changed, loads neither numpy nor polars nor pyarrow (`files`, which
cuts the lines into blocks and frames, does).
"""

from __future__ import annotations

import bz2
import errno
import gzip
import io
import lzma
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, BinaryIO

from tracelens.errors import InputError

# Names that look like logs when a directory is given (rotated `.log.1` and compressed variants too).
# `.jsonl`: responses a client saved; `.prom`: a saved `/metrics` page (docs/acceptance.md).
_LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".jsonl", ".prom")
_COMPRESSED_SUFFIXES = (".gz", ".zst", ".bz2", ".xz")

_MAGIC: list[tuple[bytes, str]] = [
    (b"\x1f\x8b", "gz"),
    (b"\x28\xb5\x2f\xfd", "zst"),
    (b"BZh", "bz2"),
    (b"\xfd7zXZ\x00", "xz"),
]


def compression_of(path: Path) -> str | None:
    """The compression of a file, by its magic bytes (the suffix can lie)."""
    with path.open("rb") as fh:
        head = fh.read(6)
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return None


def open_source(path: Path) -> BinaryIO:
    """Open a file for streaming reads, decompressing on the fly."""
    kind = compression_of(path)
    if kind == "gz":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if kind == "bz2":
        return bz2.open(path, "rb")  # type: ignore[return-value]
    if kind == "xz":
        return lzma.open(path, "rb")  # type: ignore[return-value]
    if kind == "zst":
        return ZstdStream(path.open("rb"))  # type: ignore[return-value]
    return path.open("rb")


def decompressing(fh: IO[bytes]) -> BinaryIO:
    """A stream that cannot seek (an archive member), decompressed when its first bytes say so."""
    head = fh.peek(6)[:6] if hasattr(fh, "peek") else b""
    kind = next((name for magic, name in _MAGIC if head.startswith(magic)), None)
    if kind == "gz":
        return gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[return-value]
    if kind == "bz2":
        return bz2.BZ2File(fh)  # type: ignore[return-value]
    if kind == "xz":
        return lzma.LZMAFile(fh)  # type: ignore[return-value]
    if kind == "zst":
        return ZstdStream(fh)  # type: ignore[return-value]
    return fh  # type: ignore[return-value]


class ZstdStream(io.RawIOBase):
    """Zstandard frames decompressed as a stream that, unlike zstandard's `stream_reader`, raises
    `ZstdError` when the input ends inside a frame: a truncated `.zst` is reported, not read as a
    shorter (or empty) log. Frames written one after another (`cat a.zst b.zst`) are read in turn."""

    _CHUNK = 1 << 16

    def __init__(self, raw: IO[bytes]) -> None:
        import zstandard

        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._dobj = self._dctx.decompressobj()
        self._in_frame = False
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        import zstandard

        want = size if size is not None and size >= 0 else 1 << 62
        out = [self._pending]
        got = len(self._pending)
        while got < want and not self._done:
            chunk = self._raw.read(self._CHUNK)
            if not chunk:
                self._done = True
                if self._in_frame:
                    raise zstandard.ZstdError("truncated zstd stream: the input ends inside a frame")
                break
            while chunk:
                self._in_frame = True
                data = self._dobj.decompress(chunk)
                out.append(data)
                got += len(data)
                if not self._dobj.eof:
                    break
                chunk = self._dobj.unused_data  # the next frame, if any
                self._dobj = self._dctx.decompressobj()
                self._in_frame = False
        data = b"".join(out)
        self._pending = data[want:]
        return data[:want]

    def close(self) -> None:
        self._raw.close()
        super().close()


def looks_like_log(path: Path) -> bool:
    """A file name a log has (`.log`, `.txt`, `.out`, `.err`, or a rotated `x.log.1`), compressed or not."""
    name = path.name.lower()
    for suffix in _COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return name.endswith(_LOG_SUFFIXES) or ".log." in name


def _link_problem(path: Path) -> str:
    try:
        path.resolve(strict=True)
    except RuntimeError:  # Python before 3.13 on a loop
        return "a loop of links"
    except OSError as exc:
        return "a loop of links" if exc.errno == errno.ELOOP else "its target does not exist"
    return "its target does not exist"


def files_under(folder: Path, wanted: Callable[[Path], bool], unread: list[str]) -> list[Path]:
    """Files under ``folder`` (recursively, sorted) that ``wanted`` picks. A subfolder that cannot be
    listed and a wanted file that cannot be read are named in ``unread`` and left out, so that one bad
    entry does not stop the rest (the caller exits 1)."""
    found: list[Path] = []

    def cannot_list(exc: OSError) -> None:
        unread.append(f"cannot list folder {exc.filename}: {exc.strerror or exc}")

    for top, dirs, names in os.walk(folder, onerror=cannot_list):
        dirs.sort()
        for name in names:
            path = Path(top) / name
            if not path.is_file() or not wanted(path):
                if path.is_symlink() and wanted(path) and not path.exists():  # dangling, or a loop
                    unread.append(f"cannot follow the link {path}: {_link_problem(path)}")
                continue
            if os.access(path, os.R_OK):
                found.append(path)
            else:
                unread.append(f"permission denied: {path}")
    return sorted(found)


def expand_paths(paths: Iterable[str | os.PathLike[str]], unread: list[str] | None = None) -> list[Path]:
    """Resolve user paths to log files; raise InputError with one clear line when one is unusable. A
    file or subfolder found inside a given folder that cannot be read is named in ``unread`` and left
    out (without ``unread``, it is an error)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(f"no such file or directory: {path}")
        if path.is_dir():
            problems: list[str] = []
            logs = files_under(path, looks_like_log, problems)
            if problems and (unread is None or not logs):
                raise InputError(
                    problems[0] + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
                )
            if not logs:
                raise InputError(f"no log files (*.log, *.txt, *.out, *.err, compressed too) under {path}")
            if unread is not None:
                unread.extend(problems)
            found.extend(logs)
        else:
            if not os.access(path, os.R_OK):
                raise InputError(f"permission denied: {path}")
            found.append(path)
    return found


def is_read_error(exc: Exception) -> bool:
    """Whether an exception from reading a stream means broken input rather than a bug."""
    import tarfile
    import zipfile
    import zlib

    kinds: tuple[type[BaseException], ...] = (
        EOFError,
        OSError,
        zlib.error,
        lzma.LZMAError,
        tarfile.TarError,
        zipfile.BadZipFile,
    )
    try:
        import zstandard

        kinds += (zstandard.ZstdError,)
    except ImportError:  # pragma: no cover - zstandard is a dependency
        pass
    return isinstance(exc, kinds)
