"""Parse whole sources: read blocks in order, carry the parse state between them, finalize once."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from tracelens.errors import InputError
from tracelens.parsers import ParseOptions, ParseState, parse_lines
from tracelens.parsers.explain import Explanation, explain
from tracelens.parsers.finalize import finalize
from tracelens.schema import C, T
from tracelens.sources import (
    DEFAULT_BLOCK_BYTES,
    expand_paths,
    iter_blocks,
    lines_of_text,
    read_line_at,
)
from tracelens.stream import parse_blocks
from tracelens.tables import Tables

# Called with (source, bytes just read) after each block, for progress bars.
Progress = Callable[[str, int], None]


def _options_for(path: Path, options: ParseOptions | None) -> ParseOptions:
    """Time-only prefixes need a date; unless the user gave one, the file's modification date is used."""
    if options is not None and options.base_date is not None:
        return options
    mtime = dt.datetime.fromtimestamp(path.stat().st_mtime).date()
    return ParseOptions(base_date=mtime, base_date_is_end=True)


def parse_source(
    path: Path,
    options: ParseOptions | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    progress: Progress | None = None,
) -> Tables:
    """All tables of one file (not yet finalized)."""
    opts = _options_for(path, options)
    parts = []
    for parsed in parse_blocks(iter_blocks(path, block_bytes), opts):
        parts.append(parsed.tables)
        if progress is not None:
            progress(str(path), parsed.bytes_read)
    return Tables.concat(parts)


def parse_paths(
    paths: Iterable[str | Path],
    options: ParseOptions | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    progress: Progress | None = None,
) -> Tables:
    """Finalized tables of every log file under ``paths``."""
    files = expand_paths(paths)
    return finalize(Tables.concat(parse_source(f, options, block_bytes, progress) for f in files))


def parse_text(text: str, source: str = "<text>", options: ParseOptions | None = None) -> Tables:
    """Finalized tables of an in-memory log (for `explain --line`, tests and notebooks)."""
    tables, _ = parse_lines(lines_of_text(text, source), ParseState(), options or ParseOptions())
    return finalize(tables)


def explain_text(text: str, options: ParseOptions | None = None) -> Explanation:
    """How a single line of text is read."""
    line = text.splitlines()[0] if text.strip() else text
    tables = parse_text(line, "<line>", options)
    return explain(tables, "<line>", 1, line, (options or ParseOptions()).base_date)


def explain_file_line(path: Path, line_no: int, options: ParseOptions | None = None) -> Explanation:
    """How line ``line_no`` of ``path`` is read, in the context of the whole file (a traceback line
    belongs to the fault above it)."""
    files = expand_paths([path])
    tables = finalize(parse_source(files[0], options))
    rows = tables[T.LINES].filter(pl.col(C.LINE_NO) == line_no)
    if not rows.height:
        raise InputError(f"{path} has {tables[T.LINES].height} lines; there is no line {line_no}")
    row = rows.row(0, named=True)
    text = read_line_at(files[0], row[C.BYTE_OFFSET], row[C.BYTE_LEN])
    return explain(tables, str(files[0]), line_no, text, _options_for(files[0], options).base_date)
