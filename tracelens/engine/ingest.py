"""Parse whole sources in memory: read blocks in order, carry the parse state between them, finalize
once (`parse_paths`: plain and compressed log files, the tests' reference parse). Also `analyze`, the
Python entry point (`tracelens.analyze`): logs or a dataset in, an `Analysis` out, read as the commands
read them."""

from __future__ import annotations

import datetime as dt
import os
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from tracelens.analysis import Analysis, analyze_tables
from tracelens.analysis.defaults import DEFAULT_STALL_SECONDS
from tracelens.analysis.expectations import Expectations
from tracelens.analysis.training import TrainingInputs
from tracelens.engine.stream import parse_blocks
from tracelens.errors import InputError
from tracelens.parsers import ParseOptions, ParseState, parse_lines
from tracelens.parsers.explain import Explanation, explain
from tracelens.parsers.finalize import finalize
from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.archives import open_member, read_source_lines, split_source
from tracelens.sources.files import blocks_from_stream, iter_blocks, lines_of_text
from tracelens.sources.inputs import FILE, discover
from tracelens.sources.logfiles import expand_paths
from tracelens.tables.frames import Tables
from tracelens.tables.schema import C, T

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
    result = explain(tables, "<line>", 1, line, (options or ParseOptions()).base_date)
    result.run = None  # a line alone belongs to no server start
    return result


def explain_file_line(path: Path, line_no: int, options: ParseOptions | None = None) -> Explanation:
    """How line ``line_no`` of ``path`` is read, in the context of the whole file (a traceback line
    belongs to the fault above it). ``path`` may name an archive member as `check` prints it,
    `archive.tar.gz:dir/member.log`."""
    archive, member = split_source(str(path))
    if member is None:
        file = _one_file(path)
        source, opts = str(file), _options_for(file, options)
        tables = finalize(parse_source(file, opts))
    else:
        source, opts = str(path), _options_for(archive, options)
        try:
            with open_member(archive, member) as fh:
                tables = finalize(
                    Tables.concat(p.tables for p in parse_blocks(blocks_from_stream(fh, source), opts))
                )
        except (KeyError, FileNotFoundError) as exc:
            raise InputError(f"{member} is not a member of {archive}") from exc
    rows = tables[T.LINES].filter(pl.col(C.LINE_NO) == line_no)
    if not rows.height:
        raise InputError(f"{path} has {tables[T.LINES].height} lines; there is no line {line_no}")
    row = rows.row(0, named=True)
    spans = [(line_no, row[C.BYTE_OFFSET], row[C.BYTE_LEN])]
    text = read_source_lines(source, spans).get(line_no, "")
    return explain(tables, source, line_no, text, opts.base_date)


def _one_file(path: Path) -> Path:
    """The one log file ``path`` names, found as every command finds its inputs (`sources.inputs.discover`:
    a glob, a compressed file too); a folder, several files or an archive is an `InputError`."""
    inputs = discover([path])
    if len(inputs) != 1:
        raise InputError(f"{path} names {len(inputs)} files: explain reads a line of one file")
    if inputs[0].container != FILE:
        raise InputError(f"{path} is an archive: name the line as {path}:MEMBER:LINE")
    return Path(inputs[0].path)


def analyze(
    paths_or_dataset: Iterable[str | os.PathLike[str]] | Tables,
    expectations: Expectations | None = None,
    *,
    baseline: str | None = None,
    stall_seconds: float = DEFAULT_STALL_SECONDS,
    options: ParseOptions | None = None,
    training: TrainingInputs | None = None,
) -> Analysis:
    """Analyse logs as the commands do: ``paths_or_dataset`` are read as `tracelens check` reads its
    paths (files, folders, glob patterns, compressed files, archives, or a dataset of `tracelens parse
    -o`), through `engine.logs.opened_logs` into the cache's dataset; or it is tables already parsed.
    An input read only in part is kept up to its break and named in a `UserWarning`. ``options``: its
    ``base_date`` is `--date`. ``baseline``: a run label such as `baseline.log#1`."""
    if isinstance(paths_or_dataset, Tables):
        return analyze_tables(
            paths_or_dataset, expectations, baseline=baseline, stall_seconds=stall_seconds, training=training
        )
    from tracelens.engine.cache import cache_limit
    from tracelens.engine.logs import opened_logs

    base_date = options.base_date if options is not None else None
    with opened_logs(list(paths_or_dataset), base_date=base_date, cache_limit=cache_limit()) as opened:
        for problem in [*opened.report.unread, *opened.report.problems]:
            warnings.warn(f"tracelens: read in part or not at all: {problem}", UserWarning, stacklevel=2)
        # Evidence text stays on disk: only the cited lines are read from it.
        tables = Tables.read_dataset(opened.path)
        return analyze_tables(
            tables, expectations, baseline=baseline, stall_seconds=stall_seconds, training=training
        )
