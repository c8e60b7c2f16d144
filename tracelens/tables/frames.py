"""A set of parsed tables: a name -> polars frame mapping that concatenates blocks, in memory or read from a
dataset (`DatasetTables`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import polars as pl

from tracelens.tables.schema import TABLES, C, T, empty

# The dataset's hidden metadata folder (manifest, journal), as the batch engine names it.
DATASET_META = ".tracelens"

# Working table of multi-line record pieces (source, run, record, line_no, kind, text); `finalize` joins them.
PARTS = "_parts"


def compact(frame: pl.DataFrame) -> pl.DataFrame:
    """The frame in buffers of its own. polars' strings are views into shared buffers (a block's text is
    views over the block's bytes), and a filtered, sliced or concatenated frame keeps every buffer its
    rows came from: a few rows kept from each block would keep each block's whole text. Arrow's plain
    strings hold only the bytes the rows use; polars copies them back into views. Used where rows
    outlive their block: the live window and its small tables (without it the worker grew by megabytes a
    block, bench/live.py memory), and the engine's part writer, whose small tables gather rows over a
    whole task (without it a worker grew by a block's bytes per block: 3 MiB a block, bench/throughput.py).

    A frame whose text holds little more than it uses is returned as it is: most tables' strings are
    made by their parsers (numbers, shapes, kinds), and copying them cost the engine more than a CPU-second
    per GiB (the batch, debug and http rows of every block) to free nothing."""
    if not _holds_more_than_it_uses(frame):
        return frame
    back = pl.from_arrow(frame.to_arrow())
    if isinstance(back, pl.DataFrame) and back.schema == frame.schema:
        return back
    return frame.rechunk()


# Bytes of slack before a frame's text counts as holding more than it uses: below this, a copy frees
# less than it costs.
_HELD_SLACK = 64 << 10


def _holds_more_than_it_uses(frame: pl.DataFrame) -> bool:
    """Whether the buffers of ``frame``'s string columns are over twice the bytes its rows use (plus
    `_HELD_SLACK`). Arrow's newest layout is polars' own, so the buffers are seen without a copy. Strings
    nested in lists or structs are not looked at: no table's nested column points into a block (debug's
    `items` are copied out by the parser), and a list's buffers are its whole child, however few rows."""
    held = used = 0
    for i in _string_columns(tuple(frame.dtypes)):
        column = frame.to_series(i)
        held += column.to_arrow(compat_level=pl.CompatLevel.newest()).get_total_buffer_size()
        used += int(column.estimated_size())
    return held > 2 * used + _HELD_SLACK


@cache
def _string_columns(dtypes: tuple[pl.DataType, ...]) -> tuple[int, ...]:
    """The positions of the string columns. Cached: a table's frames have one of a few shapes, and the
    type tests cost more than the test of the buffers (a frame a table a block)."""
    return tuple(i for i, dtype in enumerate(dtypes) if isinstance(dtype, (pl.String, pl.Binary)))


@dataclass
class Tables:
    """Named polars frames, one per table of `schema.SCHEMAS` (plus the working `_parts`)."""

    frames: dict[str, pl.DataFrame]

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.frames.get(name, empty(name) if name in TABLES else pl.DataFrame())

    def scan(self, name: str) -> pl.LazyFrame:
        """The table as a lazy frame: what a question reads of a big table, so that a dataset on disk
        (`DatasetTables`) reads only the columns and row groups the question needs."""
        return self[name].lazy()

    def per_run(
        self, name: str, runs: Iterable[tuple[str, int]], columns: Sequence[str], where: pl.Expr | None = None
    ) -> Iterator[tuple[tuple[str, int], pl.DataFrame]]:
        """((source, run), its rows of table ``name``) for each run of ``runs`` in that order, with only
        ``columns``: one run in memory at a time (a dataset reads each run's row groups alone)."""
        frame = self[name]
        if where is not None:
            frame = frame.filter(where)
        # One pass over the table, not one per run (a log of 2,400 server starts filtered it 2,400 times).
        groups = _by_run(frame, columns)
        empty_rows = frame.select(columns).clear()
        for key in runs:
            yield key, groups.get(key, empty_rows)

    @staticmethod
    def concat(parts: Iterable[Tables]) -> Tables:
        collected: dict[str, list[pl.DataFrame]] = {}
        for part in parts:
            for name, frame in part.frames.items():
                collected.setdefault(name, []).append(frame)
        return Tables({name: pl.concat(frames, how="vertical_relaxed") for name, frames in collected.items()})

    @staticmethod
    def is_dataset(path: Path) -> bool:
        """A folder written by `tracelens parse -o` (one sub-folder of part files per table)."""
        return path.is_dir() and (path / DATASET_META).is_dir() and (path / "lines").is_dir()

    @staticmethod
    def read_dataset(path: Path) -> DatasetTables:
        """The tables of a dataset written by `tracelens parse -o`, read when asked (see `DatasetTables`)."""
        return DatasetTables({}, path)


def collect(frame: pl.LazyFrame) -> pl.DataFrame:
    """Run a query on polars' streaming engine: a scan of a dataset is read in batches, so an
    aggregate over a big table holds its groups, not the table."""
    return frame.collect(engine="streaming")


def largest(frame: pl.LazyFrame, by: Sequence[str], column: str, k: int) -> pl.DataFrame:
    """``by`` and ``column``: the ``k`` largest values of ``column`` in each group, read a batch at a
    time. In one query a per-group sort or `top_k` holds every row of the group (the streaming engine
    does not stream them): 720 MiB for the answered requests of one 4 GiB run."""
    kept: pl.DataFrame | None = None
    for batch in frame.select(*by, column).collect_batches():
        rows = batch if kept is None else pl.concat([kept, batch])
        kept = rows.sort(column, descending=True).group_by(*by, maintain_order=True).head(k)
    return kept if kept is not None else collect(frame.select(*by, column).head(0))


# `DatasetTables.per_run` reads the runs it is asked for a few at a time: as many as hold about this many
# rows (a run with more comes alone), one scan of the table for each such group instead of one per run.
PER_RUN_BATCH_ROWS = 2_000_000


def _by_run(frame: pl.DataFrame, columns: Sequence[str]) -> dict[tuple[str, int], pl.DataFrame]:
    """``frame``'s rows by (source, run), each with ``columns``, in the frame's order."""
    if not frame.height:
        return {}
    # A stable sort puts each run's rows together in their order; each run is then a slice (no copy).
    ordered = frame.sort(C.SOURCE, C.RUN, maintain_order=True)
    sizes = ordered.group_by(C.SOURCE, C.RUN, maintain_order=True).len()
    kept = ordered.select(columns)
    out: dict[tuple[str, int], pl.DataFrame] = {}
    at = 0
    for source, run, n in sizes.iter_rows():
        out[(source, run)] = kept.slice(at, n)
        at += n
    return out


def _batches(
    runs: list[tuple[str, int]], rows: dict[tuple[str, int], int], limit: int
) -> Iterator[list[tuple[str, int]]]:
    batch: list[tuple[str, int]] = []
    held = 0
    for key in runs:
        n = rows.get(key, 0)
        if batch and held + n > limit:
            yield batch
            batch, held = [], 0
        batch.append(key)
        held += n
    if batch:
        yield batch


@dataclass
class DatasetTables(Tables):
    """The tables of a dataset on disk, read on demand. `scan` is a lazy scan of a table's part files
    (projection and predicate pushdown: a question reads only its columns and the row groups that can
    match); `tables[name]` loads a whole table once and keeps it, which the small tables (runs,
    lifecycle, server args, faults) and whole-table callers use. The analysis reads the big ones
    (lines, batches, debug) only through scans and `per_run`."""

    path: Path = field(default_factory=Path)

    def _parts(self, name: str) -> list[Path]:
        return sorted((self.path / name).glob("*.parquet"))

    def scan(self, name: str) -> pl.LazyFrame:
        parts = self._parts(name)
        if not parts:
            return empty(name).lazy()
        return pl.scan_parquet(parts)  # every part file holds the table's whole schema (`engine.store`)

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self.frames:
            if name not in TABLES:
                return pl.DataFrame()
            frame = collect(self.scan(name))
            self.frames[name] = frame.sort(C.SOURCE, C.LINE_NO) if name == T.LINES else frame
        return self.frames[name]

    def per_run(
        self, name: str, runs: Iterable[tuple[str, int]], columns: Sequence[str], where: pl.Expr | None = None
    ) -> Iterator[tuple[tuple[str, int], pl.DataFrame]]:
        if name in self.frames:
            yield from super().per_run(name, runs, columns, where)
            return
        scan = self.scan(name)
        if where is not None:
            scan = scan.filter(where)
        wanted = list(runs)
        # How many rows each run has, in one pass; then a scan per batch of runs, split by run in memory.
        counts = collect(scan.group_by(C.SOURCE, C.RUN).len())
        rows = {(str(s), int(r)): int(n) for s, r, n in counts.iter_rows()}
        keep = list(dict.fromkeys([*columns, C.SOURCE, C.RUN]))
        for batch in _batches(wanted, rows, PER_RUN_BATCH_ROWS):
            sources = list({s for s, _ in batch})
            numbers = list({r for _, r in batch})
            found = (
                scan.filter(pl.col(C.SOURCE).is_in(sources) & pl.col(C.RUN).is_in(numbers))
                .select(keep)
                .collect()
            )
            if len(batch) == 1:  # a run alone (a long one): its rows as read, not a sorted copy beside them
                yield batch[0], found.select(columns)
                continue
            groups = _by_run(found, columns)
            empty_rows = found.select(columns).clear()
            del found  # the groups are slices of a sorted copy: the rows as read are not needed
            for key in batch:
                yield key, groups.get(key, empty_rows)
