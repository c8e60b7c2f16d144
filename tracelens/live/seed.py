"""A large local log opened live is first read by the batch engine into a dataset (the cache's, as every
command that takes log paths does), and the live session takes over where the engine's last byte range
starts: a second session on the same log starts from the engine's second look instead of parsing it
again.

Why the start of the last range and not the end of the file: a range starts at a line nothing can
continue (`engine.ranges`), so parsing from there with the range's first line number and run number
gives the rows a whole-file parse gives; this is how the engine itself reads a log that grew. What the
file holds after that point (up to a range's size, and what the server writes meanwhile) is parsed by
the live worker, exactly as it parses new lines. The hand-over, per file (`Cut`):

- the parent (`LiveSession`) checks that the file it opens is the one the engine read (size and the
  fingerprints of the manifest) and maps its bytes before the cut into the log index's store;
- the worker first reads, for the log index, the lines before the cut its scroll-back holds from the
  dataset's `lines` table (byte offsets, kinds, times: the file is not read again) and sends them to the
  parent (`held_lines`), which then starts the follower at the cut's byte;
- the worker starts that source's parser at the cut's line and run number and seeds its tables
  (`window.LiveTables.seed`) with what lies before the cut: the small tables and run spans in memory,
  the bulk rows left in the dataset (read back only for the full analysis or a whole run), and the
  findings of an analysis of the dataset (those of runs ended before the cut frozen, as if the live
  window had passed over them). It parses the lines after the cut only then.

Every read of the dataset is the worker's, one after another (index lines, seed, analysis, the parse
of what follows the cut): what one leaves in the allocators is returned before the next, and the
screen's process holds only the index's arrays (on one run of 1 GiB, `follow`'s process peaked at 260 MiB
resident when it read the index itself, 209 MiB this way: bench/RESULTS.md, "The live session").

Only plain local files larger than one engine range (`LOAD_BYTES`) are loaded this way: a smaller file
would be one range, re-read live anyway. A file whose ranges before the last hold metrics counters is
read live from its start: a counter going back is a restart only beside the pages before it.
Compressed files and archives are refused by the live commands (they are not followed); ssh, commands
and stdin stay live-only.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np
import polars as pl

from tracelens.analysis import Evidence, Finding
from tracelens.analysis.acceptance import SERIES_LINES
from tracelens.engine.cache import resolve_args
from tracelens.engine.engine import EngineOptions, Progress, Report, parse_to_dataset, reading_dataset
from tracelens.engine.executors import stop_fork_server
from tracelens.engine.lock import Notify
from tracelens.engine.manifest import InputRecord, Manifest
from tracelens.errors import InputError
from tracelens.live.index import LogIndex, parsed_columns
from tracelens.live.running import DEBUG_COLUMNS, DECODE_COLUMNS
from tracelens.sizes import DEFAULT_RANGE_BYTES
from tracelens.sources.generation import FileGeneration
from tracelens.sources.naming import run_label
from tracelens.tables.frames import DatasetTables, Tables
from tracelens.tables.schema import C, T

LOAD_BYTES = DEFAULT_RANGE_BYTES  # a plain file larger than this is read through the engine first
SMALL = (T.LIFECYCLE, T.SERVER_ARGS, T.BENCHMARKS)  # kept whole by the window: seeded in memory
_FINGERPRINT = 64 << 10  # bytes hashed at each end of a file, as the manifest does (`manifest.input_record`)
# lines read from the dataset at a time for the log index: polars keeps what a read took (1M lines in
# slices of 250,000 left the process 48 MiB larger than in slices of 50,000, for 0.08 s less)
_INDEX_SLICE = 50_000


@dataclass(frozen=True)
class Cut:
    """Where a live session takes a file over from the dataset the engine wrote: the start of the
    engine's last range of it (byte ``offset``, ``first_line``, ``run``). ``before`` are the tasks that
    read the bytes before it: a dataset rewritten since (the file changed, another command re-read it)
    no longer holds them, and its rows are then not read as this file's."""

    dataset: str
    source: str  # the dataset's name for the file (its resolved path)
    offset: int
    first_line: int
    run: int
    record: InputRecord
    before: tuple[str, ...]


def cut_of(manifest: Manifest, dataset: str, path: str) -> Cut | None:
    """The cut for ``path`` (resolved) in a dataset's manifest; None when there is nothing before its
    last range (one range: the live worker reads it all), or its reading broke."""
    record = manifest.inputs.get(path)
    summary = manifest.sources.get(path)
    if (
        record is None
        or summary is None
        or summary.errors
        or record.compression
        or record.container != "file"
    ):
        return None
    units = [(u, task_id) for task_id, task in manifest.tasks.items() for u in task.units if u.input == path]
    if not units:
        return None
    last, _ = max(units, key=lambda pair: pair[0].start)
    if last.start <= 0:
        return None
    # a metrics page's counter going back is a restart only beside the pages before it, which a parser
    # starting at the cut has not seen (`parsers/restarts.py`): such a file is read live from its start
    counted = (r for task in manifest.tasks.values() for r in task.sources if r.input == path and r.counters)
    if any(r.start < last.start for r in counted):
        return None
    before = tuple(sorted(task_id for unit, task_id in units if unit.start < last.start))
    return Cut(dataset, path, last.start, last.first_line, last.run_offset, record, before)


def load_files(
    paths: dict[str, str],
    dataset: str,
    options: EngineOptions | None = None,
    progress: Progress | None = None,
    notify: Notify | None = None,
) -> tuple[Report, dict[str, Cut]]:
    """Read local files (``paths``: label -> path) into ``dataset`` with the batch engine (reading only
    what changed since it last did), and return where each live source takes over (label -> cut; a
    file read as one range has none)."""
    resolved = {label: resolve_args([path])[0] for label, path in paths.items()}
    report = parse_to_dataset(sorted(set(resolved.values())), dataset, options, progress, notify)
    stop_fork_server()  # the session goes on for hours; the engine's workers are done
    timeout = (options or EngineOptions()).lock_timeout
    with reading_dataset(dataset, timeout, notify) as manifest:
        cuts = {label: cut_of(manifest, dataset, path) for label, path in resolved.items()}
    return report, {label: cut for label, cut in cuts.items() if cut is not None}


def same_file(fd: int, cut: Cut) -> bool:
    """Whether the open file still holds the bytes the engine read before the cut (the manifest's
    fingerprints of its first and last 64 KiB at the size it recorded; the file may have grown since)."""
    size = os.fstat(fd).st_size
    record = cut.record
    if size < record.size or size < cut.offset:
        return False
    head = min(_FINGERPRINT, record.size)

    def digest(start: int) -> str:
        return hashlib.blake2b(os.pread(fd, head, start), digest_size=16).hexdigest()

    return digest(0) == record.head and digest(record.size - head) == record.tail


def _still_there(manifest: Manifest, cut: Cut) -> bool:
    return all(task_id in manifest.tasks for task_id in cut.before)


def _rows(dataset: DatasetTables, name: str, cut: Cut, label: str) -> pl.LazyFrame:
    """The rows of one table before the cut, named by the session's label."""
    mine = (pl.col(C.SOURCE) == cut.source) & (pl.col(C.LINE_NO) < cut.first_line)
    return dataset.scan(name).filter(mine).with_columns(pl.lit(label).alias(C.SOURCE))


def opened(path: str, cut: Cut) -> FileGeneration | None:
    """The file at ``path``, open, when it is the one the engine read and its dataset still holds the
    rows before the cut; None otherwise (the session then reads the file from its start)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        if not same_file(fd, cut):
            return None
        with reading_dataset(cut.dataset) as manifest:
            if not _still_there(manifest, cut):
                return None
        return FileGeneration.of(path, fd)
    except (OSError, InputError):
        return None
    finally:
        os.close(fd)


def index_skip(cut: Cut, limit: int | None) -> int:
    """The lines before the cut a log index of scroll-back ``limit`` does not hold: it would drop them at
    once, so they are neither read nor sent (`held_lines`)."""
    return max(0, cut.first_line - 1 - limit) if limit is not None else 0


def map_before_cut(index: LogIndex, source: int, cut: Cut, generation: FileGeneration) -> None:
    """Give the log index's store the file's bytes before the cut (their text is read from
    ``generation`` at the offsets `held_lines` gives) and count the lines it does not hold as seen."""
    # the store needs only the bytes' length to map them to the file (`TextStore.append`): a map of the
    # file gives it without reading them
    with mmap.mmap(generation.fd, cut.offset, access=mmap.ACCESS_READ) as mapped:
        index.store(source).append(cast(bytes, memoryview(mapped)), generation, 0, keep=False)
    index.skip(source, index_skip(cut, index.limit))


def held_lines(cut: Cut, label: str, skip: int) -> Iterator[dict[str, np.ndarray]]:
    """The log index's columns of the lines before the cut after the first ``skip`` (byte offset and
    length, and `index.parsed_columns`: kinds, ranks, times), from the dataset's `lines` table (the file
    is not read), in slices in line order. Nothing when the dataset no longer holds every one of them.
    Ranks are not stored in `lines`: they come from the table of each line's kind (a traceback's
    continuation lines have none). The live worker reads these for the screen's process, whose memory
    then holds the index's arrays only, not what a dataset read leaves behind."""
    with reading_dataset(cut.dataset) as manifest:
        if not _still_there(manifest, cut):
            return
        data = Tables.read_dataset(Path(cut.dataset))
        n = cut.first_line - 1
        held = _rows(data, T.LINES, cut, label).filter(pl.col(C.LINE_NO) > skip)
        numbers = held.select(
            pl.len().alias("n"), pl.col(C.LINE_NO).min().alias("lo"), pl.col(C.LINE_NO).max().alias("hi")
        )
        count, lo, hi = numbers.collect().row(0)
        # line numbers are unique per source: the dataset holds every one of them
        if count != n - skip or (count and (lo, hi) != (skip + 1, n)):
            return
        # in slices of line numbers (row groups are pruned by them): the index's columns are what
        # stays, about 30 bytes a line
        for first in range(skip + 1, cut.first_line, _INDEX_SLICE):
            last = min(first + _INDEX_SLICE, cut.first_line)
            part = pl.col(C.LINE_NO).is_between(first, last, closed="left")
            lines = (
                _rows(data, T.LINES, cut, label)
                .filter(part)
                .select(C.LINE_NO, C.BYTE_OFFSET, C.BYTE_LEN, C.KIND, C.TS, C.TP, C.DP)
                .collect()
                .sort(C.LINE_NO)
            )
            yield {
                C.BYTE_OFFSET: lines.get_column(C.BYTE_OFFSET).to_numpy(),
                C.BYTE_LEN: lines.get_column(C.BYTE_LEN).to_numpy(),
                **parsed_columns(lines),
            }


@dataclass
class Seed:
    """What a live worker's tables start from (`window.LiveTables.seed`): per source label the first
    line after its cut, the finished rows of the small tables before the cuts, their run spans and line
    count, and ``older``, which reads the bulk rows before the cuts back from the datasets (filtered)."""

    starts: dict[str, int]
    small: Tables
    spans: pl.DataFrame
    lines: int
    older: Callable[[list[str], pl.Expr | None], Tables]
    # the rows the running figures read (`live/running.py`), before the cuts, in slices in line order
    running_rows: Callable[[], Iterator[Tables]] = lambda: iter(())


def read_seed(cuts: dict[str, Cut]) -> Seed:
    """The worker's seed for ``cuts`` (by source label), read under each dataset's read lock."""
    small: list[Tables] = []
    spans: list[pl.DataFrame] = []
    lines = 0
    for label, cut in cuts.items():
        with reading_dataset(cut.dataset) as manifest:
            if not _still_there(manifest, cut):
                raise ValueError(f"{cut.dataset} no longer holds {cut.source} as it was opened")
            data = Tables.read_dataset(Path(cut.dataset))
            small.append(Tables({name: _rows(data, name, cut, label).collect() for name in SMALL}))
            span = (
                _rows(data, T.LINES, cut, label)
                .group_by(C.SOURCE, C.RUN)
                .agg(
                    pl.col(C.LINE_NO).min().alias(C.START_LINE),
                    pl.col(C.TS).min().alias(C.START_TS),
                    pl.col(C.TS).max().alias(C.END_TS),
                    pl.len().cast(pl.Int64).alias(C.LINE_COUNT),
                )
                .collect()
            )
        spans.append(span)
        lines += int(span.get_column(C.LINE_COUNT).sum() or 0)
    frame = pl.concat(spans, how="vertical_relaxed") if spans else pl.DataFrame()
    return Seed(
        {label: cut.first_line for label, cut in cuts.items()},
        Tables.concat(small),
        frame,
        lines,
        lambda names, where: older_rows(cuts, names, where),
        lambda: running_rows(cuts),
    )


# What `RunningFigures.add` reads of the bulk tables, and how many line numbers one slice spans: the
# rows of a 1 GiB log are read a bounded slice at a time (274 MiB at most), only these columns of `batches`.
_RUNNING_TABLES = {T.BATCHES: list(DECODE_COLUMNS), T.DEBUG: list(DEBUG_COLUMNS), T.SPEC_METRICS: None}
RUNNING_SLICE_LINES = 250_000


def running_rows(cuts: dict[str, Cut], slice_lines: int = RUNNING_SLICE_LINES) -> Iterator[Tables]:
    """The rows before each cut that the running figures are fed, a slice of line numbers at a time in
    line order, of batches decode and idle lines only. A dataset rewritten since the session opened gives nothing."""
    for label, cut in cuts.items():
        with reading_dataset(cut.dataset) as manifest:
            if not _still_there(manifest, cut):
                continue
            data = Tables.read_dataset(Path(cut.dataset))
            for low in range(1, cut.first_line, slice_lines):
                within = pl.col(C.LINE_NO).is_between(low, low + slice_lines, closed="left")
                frames = {}
                for name, columns in _RUNNING_TABLES.items():
                    rows = _rows(data, name, cut, label).filter(within)
                    if name == T.BATCHES:
                        rows = rows.filter(SERIES_LINES)
                    frames[name] = (rows.select(columns) if columns else rows).collect()
                yield Tables(frames)


def older_rows(cuts: dict[str, Cut], names: list[str], where: pl.Expr | None) -> Tables:
    """The rows of tables ``names`` before the cuts (``where`` filters them), read from the datasets. A
    dataset rewritten since the session opened gives nothing (what the window holds is analysed)."""
    out: list[Tables] = []
    for label, cut in cuts.items():
        with reading_dataset(cut.dataset) as manifest:
            if not _still_there(manifest, cut):
                continue
            data = Tables.read_dataset(Path(cut.dataset))
            frames = {}
            for name in names:
                rows = _rows(data, name, cut, label)
                if where is not None:
                    # a table without the columns ``where`` reads (`unparsed` has no run) gives no rows
                    known = set(rows.collect_schema().names())
                    rows = rows.filter(where) if set(where.meta.root_names()) <= known else rows.head(0)
                frames[name] = rows.collect()
            out.append(Tables(frames))
    return Tables.concat(out)


def seed_findings(
    cuts: dict[str, Cut], analyse: Callable[[Tables], list[Finding]], short: Mapping[str, str]
) -> tuple[list[Finding], set[tuple[str, int]]]:
    """The findings of each dataset's analysis (``analyse``, as `tracelens check` would make them) for
    the cut sources, named by their labels, their runs labelled by the session's short names (``short``:
    label -> short name), and the runs that ended before their cut (judged whole)."""
    found: list[Finding] = []
    ended: set[tuple[str, int]] = set()
    datasets: dict[str, dict[str, str]] = {}
    for label, cut in cuts.items():
        datasets.setdefault(cut.dataset, {})[cut.source] = label
    for dataset, names in datasets.items():
        with reading_dataset(dataset):
            tables = Tables.read_dataset(Path(dataset))
            found += renamed(analyse(tables), names, short)
            runs = tables[T.RUNS].select(C.SOURCE, C.RUN)
        for label, cut in cuts.items():
            if cut.dataset == dataset:
                mine = runs.filter((pl.col(C.SOURCE) == cut.source) & (pl.col(C.RUN) < cut.run))
                ended |= {(label, int(run)) for run in mine.get_column(C.RUN)}
    return found, ended


def renamed(findings: list[Finding], names: dict[str, str], short: Mapping[str, str]) -> list[Finding]:
    """Findings of a dataset's analysis with each source's dataset name replaced by its live label, and
    the run's label by the session's (`sources.naming`: among the session's sources, not the dataset's)."""
    out = []
    for finding in findings:
        label = names.get(finding.source)
        if label is None:
            continue
        evidence = [Evidence(names.get(e.source, e.source), e.line_no, e.text) for e in finding.evidence]
        out.append(
            replace(
                finding,
                source=label,
                label=run_label(short.get(label, label), finding.run),
                evidence=evidence,
            )
        )
    return out
