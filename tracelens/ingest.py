"""Parse whole sources: read blocks in order, carry the parse state between them, finalize once."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from pathlib import Path

from tracelens.parsers import ParseOptions, ParseState, parse_lines
from tracelens.sources import DEFAULT_BLOCK_BYTES, block_lines, expand_paths, iter_blocks, lines_of_text
from tracelens.tables import Tables

# Called with (source, bytes just read) after each block, for progress bars.
Progress = Callable[[str, int], None]


def _options_for(path: Path, options: ParseOptions | None) -> ParseOptions:
    """Time-only prefixes need a date; unless the user gave one, the file's modification date is used."""
    if options is not None and options.base_date is not None:
        return options
    mtime = dt.datetime.fromtimestamp(path.stat().st_mtime).date()
    return ParseOptions(base_date=mtime)


def parse_source(
    path: Path,
    options: ParseOptions | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    progress: Progress | None = None,
) -> Tables:
    """All tables of one file (not yet finalized)."""
    opts = _options_for(path, options)
    state = ParseState()
    parts = []
    for block in iter_blocks(path, block_bytes):
        tables, state = parse_lines(block_lines(block), state, opts)
        parts.append(tables)
        if progress is not None:
            progress(block.source, len(block.data))
    return Tables.concat(parts)


def parse_paths(
    paths: Iterable[str | Path],
    options: ParseOptions | None = None,
    block_bytes: int = DEFAULT_BLOCK_BYTES,
    progress: Progress | None = None,
) -> Tables:
    """Finalized tables of every log file under ``paths``."""
    files = expand_paths(paths)
    return Tables.concat(parse_source(f, options, block_bytes, progress) for f in files).finalize()


def parse_text(text: str, source: str = "<text>", options: ParseOptions | None = None) -> Tables:
    """Finalized tables of an in-memory log (for `explain --line`, tests and notebooks)."""
    tables, _ = parse_lines(lines_of_text(text, source), ParseState(), options or ParseOptions())
    return Tables.concat([tables]).finalize()
