"""Run one task on a worker: parse its units block by block and write part files into the run's staging
folder. Only a small summary travels back (line counts, run spans, file names), never the tables.

Multi-line records (tracebacks, wrapped `server_args`) are finished as soon as they are closed, so a
worker holds only the record that is still open. Faults are written before interleaved crash groups
share their exception type (`_faults_pre`): groups can cross ranges, so sharing happens at commit.
"""

from __future__ import annotations

import datetime as dt
import tarfile
import zipfile
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import polars as pl

from tracelens.engine.plan import SourceResult, TaskResult, TaskSpec, Unit
from tracelens.engine.store import FAULTS_PRE, ParquetPart, Store, os_error_of
from tracelens.engine.stream import Parsed, parse_blocks
from tracelens.errors import SourceReadError
from tracelens.parsers import ParseOptions, ParseState
from tracelens.parsers.faults import join_tracebacks
from tracelens.parsers.finalize import merge_run_spans, run_spans, server_args_from_parts
from tracelens.sources.files import Block, block_lines, blocks_from_stream
from tracelens.sources.inputs import FILE, TAR, Input
from tracelens.sources.logfiles import decompressing, is_read_error, looks_like_log, open_source
from tracelens.tables.frames import PARTS, compact
from tracelens.tables.schema import TABLES, C, Kind, T, project

# Tables a task writes as they are; `faults` and `runs` are built at commit.
DIRECT_TABLES = tuple(t for t in TABLES if t not in (T.FAULTS, T.RUNS))
# Lines whose text the `evidence` table keeps: the kinds findings cite, few against the bulk (batch,
# http, foreign lines), plus the first and last decode lines of each run in a block (acceptance
# findings cite a run's first ones). Other cited lines are read from their source by offset.
EVIDENCE_KINDS = (Kind.FAULT, Kind.LIFECYCLE, Kind.DEBUG, Kind.SPEC_METRICS, Kind.MESSAGE, Kind.UNPARSED)
EDGE_LINES = 3


class PartWriter:
    """Writes a task's rows: one part file per table, filled a row group at a time. Small tables are
    gathered over blocks first, so that a row group is not a handful of rows; the rows a block leaves
    waiting are copied out of its text (`compact`), or each block's bytes would stay until the task ends."""

    ROW_GROUP = 16_384

    def __init__(self, store: Store, spec: TaskSpec) -> None:
        self.store = store
        self.spec = spec
        self.buffers: dict[str, list[pl.DataFrame]] = {}
        self.buffered: dict[str, int] = {}
        self.parts: dict[str, ParquetPart] = {}
        self.rows: dict[str, int] = {}
        self.fresh: dict[str, int] = {}  # table -> frames added since the last block ended

    @property
    def files(self) -> dict[str, list[str]]:
        return {table: list(part.rels) for table, part in self.parts.items()}

    @property
    def digests(self) -> dict[str, str]:
        """Each file written -> its content hash (`Store.digest`)."""
        return {rel: digest for part in self.parts.values() for rel, digest in part.digests.items()}

    def add(self, table: str, frame: pl.DataFrame) -> None:
        if frame.height:
            self.buffers.setdefault(table, []).append(frame)
            self.buffered[table] = self.buffered.get(table, 0) + frame.height
            self.fresh[table] = self.fresh.get(table, 0) + 1
            self.rows[table] = self.rows.get(table, 0) + frame.height

    def consumed(self, nbytes: int) -> None:
        """After each block: write the tables that have gathered a row group's worth."""
        for table, n in list(self.buffered.items()):
            if n >= self.ROW_GROUP:
                self._write(table)
        for table, added in self.fresh.items():
            frames = self.buffers.get(table)
            if frames:  # still waiting for a row group's worth
                frames[-added:] = [compact(pl.concat(frames[-added:], how="vertical_relaxed"))]
        self.fresh.clear()

    def _write(self, table: str) -> None:
        frames = self.buffers.pop(table, [])
        self.buffered.pop(table, None)
        if not frames:
            return
        if table not in self.parts:
            self.parts[table] = self.store.parquet_writer(
                f"{self.spec.staging}/{table}/{self.spec.task_id}.parquet",
                T.FAULTS if table == FAULTS_PRE else table,  # faults before they share their exception
            )
        self.parts[table].write(frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed"))

    def close(self) -> None:
        for table in list(self.buffers):
            self._write(table)
        for part in self.parts.values():
            part.close()

    def discard(self) -> None:
        """A task that failed (a full disk) leaves no open writer and no half-written file."""
        for part in self.parts.values():
            part.discard()


class SourceCollector:
    """Takes the parsed blocks of one source piece: writes its rows, finishes closed records, sums up."""

    def __init__(self, writer: PartWriter, result: SourceResult) -> None:
        self.writer = writer
        self.result = result
        self.open_faults = pl.DataFrame()
        self.open_parts = pl.DataFrame()
        self.spans: list[pl.DataFrame] = []
        self.state = ParseState(run=result.run_offset)

    def add(self, parsed: Parsed, texts: Sequence[pl.DataFrame] | None = None) -> None:
        """``texts``: (line_no, text) of consecutive blocks this one's lines may come from, for `evidence`."""
        tables, self.state = parsed.tables, parsed.state
        lines = tables.frames.get(T.LINES)
        if lines is not None and lines.height:
            self.result.lines += lines.height
            for kind, n in lines.get_column(C.KIND).value_counts().iter_rows():
                self.result.lines_by_kind[kind] = self.result.lines_by_kind.get(kind, 0) + n
            self.spans.append(run_spans(lines, one_source=True))
            if texts is not None:
                self.writer.add(T.EVIDENCE, _evidence(lines, tables.frames.get(T.BATCHES), texts))
        for table in DIRECT_TABLES:
            if table != T.SERVER_ARGS and table in tables.frames:
                self.writer.add(table, tables.frames[table])
        self._records(tables.frames, final=False)
        self.writer.consumed(parsed.bytes_read)

    def _records(self, frames: dict[str, pl.DataFrame], final: bool) -> None:
        """Finish the faults and `server_args` records that can no longer grow."""
        still_open = [] if final else self.state.open_records()
        self.open_faults, closed = _split_open(self.open_faults, frames.get(T.FAULTS), C.LINE_NO, still_open)
        self.open_parts, closed_parts = _split_open(self.open_parts, frames.get(PARTS), C.RECORD, still_open)
        if closed.height:
            fault_parts = (
                closed_parts.filter(pl.col(C.KIND) == Kind.FAULT) if closed_parts.height else closed_parts
            )
            self.writer.add(
                FAULTS_PRE, join_tracebacks(closed, fault_parts) if fault_parts.height else closed
            )
        if closed_parts.height:
            self.writer.add(T.SERVER_ARGS, server_args_from_parts(closed_parts))

    def finish(self, end: int) -> SourceResult:
        self._records({}, final=True)
        result = self.result
        result.end = end
        result.server_args = self.state.run - result.run_offset
        result.time_only = self.state.last_secs is not None
        result.counters = bool(self.state.counters.last)
        if self.spans:
            merged = merge_run_spans(pl.concat(self.spans))
            for row in merged.iter_rows(named=True):
                result.spans.append(
                    [
                        row[C.RUN],
                        row[C.START_LINE],
                        _us(row[C.START_TS]),
                        _us(row[C.END_TS]),
                        row[C.LINE_COUNT],
                    ]
                )
        return result


def _evidence(
    lines: pl.DataFrame, batches: pl.DataFrame | None, texts: Sequence[pl.DataFrame]
) -> pl.DataFrame:
    """The `evidence` rows of a block, in line order: its lines of the kinds findings cite, the first line
    of each run in it (a restart cites the line that starts the next run, a `foreign` line for vLLM),
    and the first and last decode lines of each run, with their text. ``texts``: the (line_no, text)
    frames of consecutive blocks that hold this block's lines. The text is taken by position (line
    numbers are consecutive), not joined: a join hashed every cited line, a fifth of them in the mix.
    The cited lines are a mask over the block's lines (consecutive numbers too), which keeps them in
    order and each once, without sorting and deduplicating lists of line numbers."""
    run = pl.col(C.RUN)
    cited = lines.select(
        # A comparison per kind: a third cheaper than `is_in`, which hashes every line's kind.
        (
            pl.any_horizontal(*(pl.col(C.KIND) == k for k in EVIDENCE_KINDS)) | run.is_first_distinct()
        ).fill_null(False)
    ).to_series()
    line_no = lines.get_column(C.LINE_NO)
    if batches is not None and batches.height:
        # Runs only grow along a source: a row is among the first (last) EDGE_LINES of its run when the
        # run differs EDGE_LINES rows before (after) it, or there are fewer rows before (after) it.
        edge = (run != run.shift(EDGE_LINES, fill_value=-1)) | (run != run.shift(-EDGE_LINES, fill_value=-1))
        edges = (
            batches.lazy()
            .filter(pl.col(C.PHASE) == "decode")
            .select(C.RUN, C.LINE_NO)
            .filter(edge)
            .collect()
            .get_column(C.LINE_NO)
        )
        if edges.len():
            mask = cited.to_numpy().copy()
            mask[(edges - line_no[0]).to_numpy()] = True
            cited = pl.Series(mask)
    wanted = line_no.filter(cited)
    texts = [f for f in texts if f.height]
    first = int(texts[0].item(0, C.LINE_NO)) if texts else 0
    text = (
        pl.concat([f.get_column(C.TEXT) for f in texts], rechunk=False)
        if texts
        else pl.Series([], dtype=pl.String)
    )
    wanted = wanted.filter((wanted >= first) & (wanted < first + text.len()))
    return pl.DataFrame(
        {
            C.SOURCE: pl.Series(C.SOURCE, [lines.item(0, C.SOURCE)], dtype=pl.String).new_from_index(
                0, wanted.len()
            ),
            C.LINE_NO: wanted,
            C.TEXT: text.gather(wanted - first),
        }
    )


class _Recorded:
    """Blocks of a stream, keeping the (line_no, text) frames of the last few: a parsed block's lines
    come from it and from the lines held back of the block before it. The parser takes each block's
    lines from here (`lines_of`): splitting every block twice cost a split per block, and two copies of
    its text."""

    def __init__(self, blocks: Iterable[Block]) -> None:
        self.blocks = blocks
        self.frames: deque[pl.DataFrame] = deque(maxlen=3)
        # The line frames of the last two blocks read: the parser asks for a block's lines once the
        # block after it is read.
        self.split: deque[tuple[Block, pl.DataFrame]] = deque(maxlen=2)

    def __iter__(self) -> Iterator[Block]:
        for block in self.blocks:
            lines = block_lines(block)
            self.split.append((block, lines))
            self.frames.append(project(lines, C.LINE_NO, C.TEXT))
            yield block

    def lines_of(self, block: Block) -> pl.DataFrame:
        for known, lines in self.split:
            if known is block:
                return lines
        return block_lines(block)

    def texts(self) -> list[pl.DataFrame]:
        return list(self.frames)


def _split_open(
    pending: pl.DataFrame, new: pl.DataFrame | None, key: str, still_open: list[int]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows of records still open, rows of closed records) of the pending rows and a block's new ones."""
    frames = [f for f in (pending, new) if f is not None and f.height]
    if not frames:
        return pl.DataFrame(), pl.DataFrame()
    rows = pl.concat(frames, how="vertical_relaxed")
    is_open = pl.col(key).is_in(still_open)
    return rows.filter(is_open), rows.filter(~is_open)


def _us(value: dt.datetime | None) -> int | None:
    if value is None:
        return None
    return int((value - dt.datetime(1970, 1, 1)) / dt.timedelta(microseconds=1))


class _Guarded:
    """Blocks of a stream; a read error ends the stream (what came before is kept) and is remembered."""

    def __init__(self, blocks: Iterable[Block]) -> None:
        self.blocks = blocks
        self.error: SourceReadError | None = None

    def __iter__(self) -> Iterator[Block]:
        try:
            yield from self.blocks
        except SourceReadError as exc:
            self.error = exc


def _parse_stream(
    fh: BinaryIO,
    writer: PartWriter,
    result: SourceResult,
    options: ParseOptions,
    block_bytes: int,
    limit: int | None,
) -> SourceResult:
    blocks = _Guarded(
        blocks_from_stream(fh, result.source, block_bytes, result.start, result.first_line, limit)
    )
    recorded = _Recorded(blocks)
    collector = SourceCollector(writer, result)
    read = result.start
    for parsed in parse_blocks(recorded, options, collector.state, recorded.lines_of):
        read += parsed.bytes_read
        collector.add(parsed, recorded.texts())
    out = collector.finish(read)
    if blocks.error is not None:
        out.error = str(blocks.error)
    return out


def _options(unit: Unit, mtime: float | None = None) -> ParseOptions:
    if unit.base_date is not None:
        return ParseOptions(base_date=dt.date.fromisoformat(unit.base_date))
    stamp = mtime if mtime is not None else unit.input.mtime
    return ParseOptions(base_date=dt.datetime.fromtimestamp(stamp).date(), base_date_is_end=True)


def _file_unit(unit: Unit, writer: PartWriter, block_bytes: int) -> list[SourceResult]:
    item = unit.input
    result = SourceResult(
        item.source_name(), item.path, unit.start, unit.start, unit.first_line, unit.run_offset
    )
    try:
        fh = open_source(Path(item.path))
    except OSError as exc:
        result.error = f"{item.path}: unreadable ({exc})"
        return [result]
    with fh:
        if unit.start:
            fh.seek(unit.start)
        limit = None if unit.end is None else unit.end - unit.start
        return [_parse_stream(fh, writer, result, _options(unit), block_bytes, limit)]


def _member_result(item: Input, member: str) -> SourceResult:
    return SourceResult(item.source_name(member), item.path, 0, 0, 1, 0)


def _tar_unit(unit: Unit, writer: PartWriter, block_bytes: int) -> list[SourceResult]:
    item = unit.input
    results: list[SourceResult] = []
    current: SourceResult | None = None
    try:
        with open_source(Path(item.path)) as raw, tarfile.open(fileobj=raw, mode="r|") as tar:
            for info in tar:
                if not info.isfile() or not looks_like_log(Path(info.name)):
                    continue
                current = _member_result(item, info.name)
                member = tar.extractfile(info)
                assert member is not None
                with decompressing(member) as fh:
                    results.append(
                        _parse_stream(fh, writer, current, _options(unit, info.mtime), block_bytes, None)
                    )
                if results[-1].error:  # a broken stream leaves the rest of the archive unreadable
                    break
                current = None
    except Exception as exc:
        if not is_read_error(exc):
            raise
        broken = current or _member_result(item, "(archive)")
        broken.error = f"{broken.source}: unreadable after {broken.end:,} bytes ({exc})"
        if current is None:
            results.append(broken)
    return results


def _zip_unit(unit: Unit, writer: PartWriter, block_bytes: int) -> list[SourceResult]:
    item = unit.input
    results: list[SourceResult] = []
    try:
        archive = zipfile.ZipFile(item.path)
    except (zipfile.BadZipFile, OSError) as exc:
        broken = _member_result(item, "(archive)")
        broken.error = f"{item.path}: not a readable zip archive ({exc})"
        return [broken]
    with archive:
        for info in archive.infolist():
            if info.is_dir() or not looks_like_log(Path(info.filename)):
                continue
            result = _member_result(item, info.filename)
            mtime = dt.datetime(*info.date_time).timestamp()
            try:
                with archive.open(info) as member, decompressing(member) as fh:
                    results.append(
                        _parse_stream(fh, writer, result, _options(unit, mtime), block_bytes, None)
                    )
            except Exception as exc:
                if not is_read_error(exc):
                    raise
                result.error = f"{result.source}: unreadable after {result.end:,} bytes ({exc})"
                results.append(result)
    return results


def run_task(spec: TaskSpec) -> TaskResult:
    """Parse a task's units and write their part files; the entry point of every executor."""
    store = Store(spec.root)
    writer = PartWriter(store, spec)
    sources: list[SourceResult] = []
    try:
        for unit in spec.units:
            if unit.input.container == FILE:
                sources.extend(_file_unit(unit, writer, spec.block_bytes))
            elif unit.input.container == TAR:
                sources.extend(_tar_unit(unit, writer, spec.block_bytes))
            else:
                sources.extend(_zip_unit(unit, writer, spec.block_bytes))
        writer.close()
    except BaseException as exc:
        writer.discard()
        failure = os_error_of(exc) if isinstance(exc, Exception) else None
        if failure is None or failure is exc:
            raise
        raise failure from exc
    return TaskResult(
        spec.task_id,
        sources,
        writer.files,
        writer.rows,
        sum(s.end - s.start for s in sources),
        writer.digests,
    )
