"""File operations on a dataset root, a local folder or an fsspec URL (`s3://...`, `memory://...`).

Every file is written under a temporary name and then renamed, so a reader never sees half a file.

A plain path (no `:` in it) is a local folder, worked on with os and shutil (`LocalFiles`); anything
else goes through fsspec, imported only then: importing it (25 ms, asyncio with it) was a tenth of a
second look, which on a local folder only takes its lock, reads its manifest and checks it is writable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import posixpath
import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Final

if TYPE_CHECKING:  # the frames come from the caller: a Store that reads and writes no table needs none
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

FAULTS_PRE = "_faults_pre"  # faults before crash groups share their exception (see task.py)
META = ".tracelens"  # hidden from Spark, DuckDB and polars globs of `<table>/*.parquet`
# zstd(1): lz4 writes about 20% faster but twice the bytes (bench/writers.py, ARCHITECTURE.md).
PARQUET_COMPRESSION: Final = "zstd"
PARQUET_LEVEL = 1  # fast to write; the logs' repetitive columns compress well anyway
DICTIONARY_COLUMNS = ("source", "kind")
# Min/max statistics only on the columns a reader filters by (DuckDB, Spark, polars push `source`,
# `run`, `line_no` and `ts` filters down to row groups); on the others they only cost write time.
STATISTICS_COLUMNS = ("source", "run", "line_no", "ts")
# Delta encoding for the integer columns that ascend along a file (line numbers, byte offsets, times,
# `lines`' record, which is its own line number on all but continuation lines):
# each value costs the bits of its step, not eight bytes for zstd to find again. A tenth less write
# CPU and a sixth fewer bytes than plain (bench/writers.py); every Parquet reader decodes it.
DELTA_COLUMNS = ("line_no", "byte_offset", "ts", "record")

# A part file's content hash (`Store.digest`, the manifest's `digests`): blake2b of 16 bytes, about
# 1 GB/s on one core; a worker hashes its files as it closes them, while they are in the page cache.
DIGEST_BYTES = 16


# polars reports a failed write (a full disk) as a ComputeError naming the OS error: "... (os error 28)".
_OS_ERROR = re.compile(r"os error (\d+)")


def os_error_of(exc: Exception) -> OSError | None:
    """The OSError a writer's exception stands for (polars' ComputeError on a full disk), if any."""
    if isinstance(exc, OSError):
        return exc
    found = _OS_ERROR.search(str(exc))
    if found is None:
        return None
    code = int(found.group(1))
    return OSError(code, os.strerror(code) if code else str(exc))


class LocalFiles:
    """The file operations a `Store` makes, on local paths, as fsspec's local file system makes them."""

    def open(self, path: str, mode: str = "rb") -> IO[Any]:
        return open(path, mode)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        os.makedirs(path, exist_ok=exist_ok)

    def mv(self, src: str, dst: str) -> None:
        shutil.move(src, dst)

    def rm(self, path: str, recursive: bool = False) -> None:
        if recursive and os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)

    def ls(self, path: str, detail: bool = False) -> list[str]:
        """The paths in folder ``path``, names only (fsspec's ``detail``, which the Store sets False)."""
        try:
            with os.scandir(path) as entries:
                return [entry.path for entry in entries]
        except NotADirectoryError:
            return [path]


class Store:
    def __init__(self, root: str) -> None:
        self.url = root
        self.fs: Any  # LocalFiles, or an fsspec file system
        if ":" not in root:
            # Absolute as fsspec makes it (`~` expanded, `..` left to the file system), no trailing `/`.
            self.fs, self.root, self.local = LocalFiles(), str(Path(root).expanduser().absolute()), True
            return
        from fsspec.core import url_to_fs

        self.fs, self.root = url_to_fs(root)
        protocol = self.fs.protocol
        self.local = "file" in (protocol if isinstance(protocol, tuple) else (protocol,))

    @property
    def via_fsspec(self) -> bool:
        """Whether the files go through fsspec (a URL, `file://` too), not os and shutil."""
        return not isinstance(self.fs, LocalFiles)

    def check_writable(self) -> None:
        """Create the root and write and remove a file in it: an output that cannot be written raises
        its OSError here, before any worker starts."""
        probe = f"{META}/.probe.{uuid.uuid4().hex[:8]}"
        self._parent(probe)
        with self.fs.open(self.path(probe), "w") as fh:
            fh.write("ok")
        self.fs.rm(self.path(probe))

    def path(self, rel: str) -> str:
        return posixpath.join(self.root, rel) if rel else self.root

    def exists(self, rel: str) -> bool:
        return bool(self.fs.exists(self.path(rel)))

    def size(self, rel: str) -> int:
        """The file's bytes (one stat); FileNotFoundError when it is not there."""
        return os.stat(self.path(rel)).st_size if self.local else int(self.fs.size(self.path(rel)))

    def digest(self, rel: str) -> str:
        """The file's content hash as a manifest records it (`DIGEST`); FileNotFoundError when it is
        not there. One read of the file, 1 MiB at a time."""
        digest = hashlib.blake2b(digest_size=DIGEST_BYTES)
        with self.fs.open(self.path(rel), "rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        return digest.hexdigest()

    def _parent(self, rel: str) -> None:
        self.fs.makedirs(posixpath.dirname(self.path(rel)), exist_ok=True)

    def _tmp(self, rel: str) -> str:
        head, tail = posixpath.split(rel)
        return posixpath.join(head, f".{tail}.{uuid.uuid4().hex[:8]}.tmp")

    @contextlib.contextmanager
    def _writing(self, tmp: str) -> Iterator[None]:
        """A write to ``tmp`` that fails (a full disk) leaves no ``tmp`` behind and raises an OSError
        (polars raises a ComputeError that names the OS error)."""
        try:
            yield
        except Exception as exc:
            with contextlib.suppress(OSError):
                self.delete(tmp)
            failure = os_error_of(exc)
            if failure is None or failure is exc:
                raise
            raise failure from exc

    def write_parquet(self, rel: str, frame: pl.DataFrame) -> None:
        self._parent(rel)
        tmp = self._tmp(rel)
        with self._writing(tmp):
            if self.local:
                frame.write_parquet(
                    self.path(tmp), compression=PARQUET_COMPRESSION, compression_level=PARQUET_LEVEL
                )
            else:
                with self.fs.open(self.path(tmp), "wb") as fh:
                    frame.write_parquet(fh, compression=PARQUET_COMPRESSION, compression_level=PARQUET_LEVEL)
        self.fs.mv(self.path(tmp), self.path(rel))

    def parquet_writer(self, rel: str, table: str) -> ParquetPart:
        """A part file of ``table`` (its schema's name) written row group by row group; it appears under
        ``rel`` only once closed."""
        self._parent(rel)
        return ParquetPart(self, rel, self._tmp(rel), table)

    def read_parquet(self, rel: str, columns: list[str] | None = None) -> pl.DataFrame:
        import polars as pl

        if self.local:
            return pl.read_parquet(self.path(rel), columns=columns)
        with self.fs.open(self.path(rel), "rb") as fh:
            return pl.read_parquet(fh, columns=columns)

    def write_json(self, rel: str, data: Any) -> None:
        self._parent(rel)
        tmp = self._tmp(rel)
        with self._writing(tmp), self.fs.open(self.path(tmp), "w") as fh:
            fh.write(json.dumps(data, indent=1, sort_keys=True))
        self.fs.mv(self.path(tmp), self.path(rel))

    def read_json(self, rel: str) -> Any | None:
        if not self.exists(rel):
            return None
        with self.fs.open(self.path(rel), "r") as fh:
            return json.loads(fh.read())

    def move(self, src: str, dst: str) -> None:
        """Rename ``src`` to ``dst``; done already (src gone, dst there) is fine, so a journal can replay."""
        if not self.exists(src):
            return
        self._parent(dst)
        self.fs.mv(self.path(src), self.path(dst))

    def delete(self, rel: str) -> None:
        if self.exists(rel):
            self.fs.rm(self.path(rel), recursive=True)

    def listdir(self, rel: str) -> list[str]:
        if not self.exists(rel):
            return []
        base = self.path(rel)
        return sorted(posixpath.relpath(p, self.root) for p in self.fs.ls(base, detail=False))


class ParquetPart:
    """A table's part file of one task, filled in row groups, so a worker holds one block's rows, not a
    whole part. Every file holds the table's whole schema, all-null columns too (Parquet stores such a
    column chunk in a few bytes): any reader opens a table's files with no options."""

    def __init__(self, store: Store, rel: str, tmp: str, table: str) -> None:
        self.store = store
        self.rel = rel
        self.tmp = tmp
        self.table = table
        self.rels: list[str] = []  # the file, once closed
        self.digests: dict[str, str] = {}  # the file's content hash, once closed
        self.writer: pq.ParquetWriter | None = None
        self.sink: str | BinaryIO | None = None

    def write(self, frame: pl.DataFrame) -> None:
        # a worker's import: the second look needs no schema
        from tracelens.tables.schema import arrow_schema, conform

        schema = arrow_schema(self.table)
        table = conform(self.table, frame).to_arrow()
        if not table.schema.equals(schema):  # a column of another Arrow type (string views, a Null column)
            table = table.cast(schema)
        if self.writer is None:
            self.writer = self._open(schema)
        self.writer.write_table(table)

    def _open(self, schema: pa.Schema) -> pq.ParquetWriter:
        import pyarrow.parquet as pq  # only where a part file is written: it takes a while to import

        path = self.store.path(self.tmp)
        self.sink = path if self.store.local else self.store.fs.open(path, "wb")
        # Dictionary pages only for the columns that repeat one value (source, kind): for the
        # rest they cost a third of the write time and zstd compresses better without them.
        return pq.ParquetWriter(
            self.sink,
            schema,
            compression=PARQUET_COMPRESSION,
            compression_level=PARQUET_LEVEL,
            use_dictionary=[c for c in DICTIONARY_COLUMNS if c in schema.names],
            write_statistics=[c for c in STATISTICS_COLUMNS if c in schema.names],
            column_encoding={c: "DELTA_BINARY_PACKED" for c in DELTA_COLUMNS if c in schema.names} or None,
        )

    def close(self) -> None:
        if self.writer is None:
            return
        self.writer.close()
        if self.sink is not None and not isinstance(self.sink, str):
            self.sink.close()
        self.store.fs.mv(self.store.path(self.tmp), self.store.path(self.rel))
        self.rels.append(self.rel)
        self.digests[self.rel] = self.store.digest(self.rel)
        self.writer = None
        self.sink = None

    def discard(self) -> None:
        """After a failed write (a full disk): close the open file quietly and remove it. pyarrow's
        writer would otherwise try to close it again when collected, and print the traceback of that."""
        writer, self.writer = self.writer, None
        if writer is not None:
            with contextlib.suppress(Exception):
                writer.close()
            writer.is_open = False  # close() raised before it said so
        if self.sink is not None and not isinstance(self.sink, str):
            with contextlib.suppress(Exception):
                self.sink.close()
        self.sink = None
        with contextlib.suppress(OSError):
            self.store.delete(self.tmp)
