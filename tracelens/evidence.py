"""The text of cited log lines: from the dataset's `evidence` table when it kept them, else from the
source by byte offset, with one pass per source.

A source is a log file (plain or compressed) or an archive member (`archive.tar.gz:path/in/it.log`).
A compressed source or a member is streamed once for all its cited lines, in offset order, never once
per line; a plain file is read with a seek per line. A source that is gone gives no text, except for
the lines the dataset kept.
"""

from __future__ import annotations

import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import polars as pl

from tracelens.schema import C
from tracelens.sources import compression_of, decompressing, is_read_error, open_source

Key = tuple[str, int]  # (source, line_no)
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


def texts(keys: set[Key], lines: pl.DataFrame | pl.LazyFrame, kept: pl.LazyFrame) -> dict[Key, str]:
    """The text of each cited (source, line_no): ``kept`` (a scan of the `evidence` table, filtered
    before it is loaded) first, the rest read from the sources by the offsets in ``lines``."""
    if not keys:
        return {}
    wanted = pl.DataFrame(list(keys), schema={C.SOURCE: pl.String, C.LINE_NO: pl.Int64}, orient="row")
    out: dict[Key, str] = {}
    near = kept.filter(pl.col(C.LINE_NO).is_in(wanted.get_column(C.LINE_NO).unique().implode()))
    hits = near.collect().join(wanted, on=[C.SOURCE, C.LINE_NO]).unique([C.SOURCE, C.LINE_NO])
    out.update(((s, n), t) for s, n, t in hits.select(C.SOURCE, C.LINE_NO, C.TEXT).iter_rows())
    found = pl.DataFrame(list(out), schema=wanted.schema, orient="row")
    missing = wanted.join(found, on=[C.SOURCE, C.LINE_NO], how="anti")
    where = (
        lines.lazy()
        # the line numbers alone first: a scan of a dataset skips every row group that holds none of them
        .filter(pl.col(C.LINE_NO).is_in(missing.get_column(C.LINE_NO).unique().implode()))
        .select(C.SOURCE, C.LINE_NO, C.BYTE_OFFSET, C.BYTE_LEN)
        .join(missing.lazy(), on=[C.SOURCE, C.LINE_NO])
        .collect()
    )
    for (source,), group in where.group_by(C.SOURCE):
        spans = [(n, o, length) for _, n, o, length in group.iter_rows()]
        for line_no, text in read_source_lines(str(source), spans).items():
            out[(str(source), line_no)] = text
    return out
