"""The live worker's parsed rows, held in bounded memory: per source a window of its newest lines for the
periodic analysis, the rest spilled to disk for the full analysis a view asks for.

Why: re-analysing every row seen so far at every interval makes an update cost, and the worker's
memory, grow with the session. An update reads instead:

- the *bulk* tables (`BULK`: lines, decode and prefill batches, debug, access lines, ...), whose rows
  grow with the lines, over each source's newest `window` lines only;
- the small tables (lifecycle, server args: they grow with server starts, not with traffic) whole;
- `runs` from run spans merged as rows arrive (`finalize.merge_run_spans`), so a run's start, end and
  line count are those of the whole run, not of the window.

Rows that leave the window are appended to Arrow IPC files in a private temporary folder (a chunk at a
time: the window is cut back to `window` lines when it holds twice that many), so `everything()` can
still give the whole session's tables when a view asks for them (the TUI's report, `follow`'s last
word): that one analysis reads the whole session, as `tracelens check` would, and is paid only when
asked for.

A source the batch engine read into a dataset first (`live.seed`) starts at a cut: its rows before the
cut stay in the dataset (`seed`), the small tables' and the run spans' in memory, the bulk rows read
back with the spilled ones.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from tracelens.live.running import RunningFigures
from tracelens.parsers.finalize import finalize, merge_run_spans, run_spans, runs_from_spans
from tracelens.tables.frames import PARTS, Tables, compact
from tracelens.tables.schema import C, Kind, T

if TYPE_CHECKING:
    from tracelens.live.seed import Seed

# Tables whose rows grow with the lines: windowed. Faults are among them (a busy server logs an
# out-of-memory retraction every few hundred lines), and so are the pieces of their multi-line records
# (`PARTS` of kind fault, cut by record so a traceback stays whole). Every other table is kept whole.
BULK = (T.LINES, T.BATCHES, T.DEBUG, T.HTTP, T.SPEC_METRICS, T.FOREIGN, T.MESSAGES, T.UNPARSED, T.FAULTS)
SPILLED = (*BULK, PARTS)
WINDOW_LINES = 20_000  # per source: lines an update analyses (bench/live.py measures the cost)
# Parsed lines held beyond the window before they are cut without waiting for an update: a session
# catching up on a log parses 32 MiB (230,000 lines) before its next update, and the update's join of
# them all made the worker's peak.
FOLD_WINDOWS = 4


class LiveTables:
    """Every parsed row of a session: the window in memory, older bulk rows on disk."""

    def __init__(self, window: int = WINDOW_LINES) -> None:
        self.window = window
        self.lines = 0  # every line parsed, windowed or not
        self._parts: list[Tables] = []  # parsed since the last fold
        self._pending = 0  # their lines
        self._held: Tables | None = None  # the window (bulk) and the small tables (whole)
        self._spans: pl.DataFrame | None = None
        self._spill: tempfile.TemporaryDirectory[str] | None = None
        self._spilled = 0  # chunks written
        self._newest: dict[str, int] = {}  # per source, its newest line number
        self._oldest: dict[str, int] = {}  # per source, the first line number still in the window
        self.running = RunningFigures()  # every run's whole-run figures, fed every row once
        self._seed: Seed | None = None  # what lies before the cuts of sources a dataset holds

    def seed(self, seed: Seed) -> None:
        """Start from a dataset's rows before each cut (`live.seed`): the window starts at the cut, the
        small tables and run spans hold what came before, the bulk rows are read back from the dataset
        when every row is asked for (`everything`, `with_whole_run`). Call before the first `add`.
        The running figures are fed the rows before the cut here, a slice at a time: the start-up lines
        (ready times) first, as a log prints them before its decode lines."""
        self._seed = seed
        self.running.add(Tables({T.LIFECYCLE: seed.small[T.LIFECYCLE]}))
        for part in seed.running_rows():
            self.running.add(part)
        self.lines += seed.lines
        self._spans = merge_run_spans(seed.spans) if seed.spans.height else None
        for source, first in seed.starts.items():
            self._oldest[source] = first
            self._newest[source] = first - 1

    @property
    def spilled(self) -> bool:
        """Some rows are outside the window: on disk, or in a dataset the tables were seeded from."""
        return self._spilled > 0 or self._seed is not None

    def add(self, tables: Tables) -> None:
        """New rows of a parse (in each source's order)."""
        lines = tables[T.LINES]
        self.lines += lines.height
        self.running.add(tables)
        spans = run_spans(lines)
        both = spans if self._spans is None else pl.concat([self._spans, spans], how="vertical_relaxed")
        self._spans = merge_run_spans(both)
        for source, newest in lines.group_by(C.SOURCE).agg(pl.col(C.LINE_NO).max()).iter_rows():
            self._newest[source] = max(newest, self._newest.get(source, 0))
        # the small tables' rows stay for the whole session: in buffers of their own (`tables.frames.compact`)
        self._parts.append(
            Tables({n: compact(f) if n not in SPILLED and f.height else f for n, f in tables.frames.items()})
        )
        self._pending += lines.height
        if self._pending > FOLD_WINDOWS * self.window:  # a catch-up: the window's rows are cut as they come
            self._fold()

    def window_start(self, source: str) -> int:
        """The first line number of ``source`` an update still reads (1 before anything was cut)."""
        return self._oldest.get(source, 1)

    def view(self) -> Tables:
        """The tables an update analyses, finalized: the window, the small tables, whole-run `runs`."""
        if self._parts:
            self._fold()
        made = self._with_seed(finalize(self._held if self._held is not None else Tables({})))
        if self._spans is not None:
            made.frames[T.RUNS] = runs_from_spans(self._spans, made[T.SERVER_ARGS])
        return made

    def _fold(self) -> None:
        """The rows of the parses since the last fold joined to the held ones, and cut (`_cut`)."""
        held = [self._held] if self._held is not None else []
        self._held = Tables.concat([*held, *self._parts])
        self._parts = []
        self._pending = 0
        self._cut()
        self._held = Tables({name: frame.rechunk() for name, frame in self._held.frames.items()})

    def everything(self) -> Tables:
        """Every row of the session (spilled chunks read back), finalized as a batch parse would be."""
        held = Tables.concat([*([self._held] if self._held is not None else []), *self._parts])
        if self._spill is None and self._seed is None:
            return finalize(held)
        chunks = self._older(None)
        # per source, the dataset's rows come first, the spilled chunks hold its older lines in order,
        # the window its newest
        made = self._with_seed(finalize(Tables.concat([*chunks, held])))
        if self._seed is not None and self._spans is not None:
            made.frames[T.RUNS] = runs_from_spans(self._spans, made[T.SERVER_ARGS])
        return made

    def _older(self, where: pl.Expr | None) -> list[Tables]:
        """The rows outside the window (``where`` filters them): the dataset's before the cuts, then the
        spilled chunks, each table's in the order they were spilled."""
        chunks = [self._seed.older(list(BULK), where)] if self._seed is not None else []
        if self._spill is not None:
            folder = Path(self._spill.name)
            for name in SPILLED:
                files = sorted(folder.glob(f"{name}.*.arrow"))
                if files:
                    frames = [pl.read_ipc(f) for f in files]
                    if where is not None:
                        frames = [frame.filter(where) for frame in frames]
                    chunks.append(Tables({name: pl.concat(frames, how="vertical_relaxed")}))
        return chunks

    def with_whole_run(self, source: str, run: int) -> Tables:
        """The tables of `view` (call it first) with every row of one run: its spilled rows read back.
        An ended run is judged once on them (the worker's `_judge_ended`)."""
        held = self._held if self._held is not None else Tables({})
        mine = (pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run)
        chunks = self._older(mine)
        made = self._with_seed(finalize(Tables.concat([*chunks, held])))
        if self._spans is not None:
            made.frames[T.RUNS] = runs_from_spans(self._spans, made[T.SERVER_ARGS])
        return made

    def _with_seed(self, made: Tables) -> Tables:
        """Finished tables with the seed's small-table rows (finished by the engine) in front."""
        if self._seed is None:
            return made
        for name, rows in self._seed.small.frames.items():
            made.frames[name] = pl.concat([rows, made[name]], how="diagonal_relaxed")
        return made

    def is_cut(self, source: str, run: int) -> bool:
        """Some of the run's lines have left the window (the analysis of `view` sees only the rest)."""
        first, count = self.run_lines(source, run)
        return count > 0 and first < self.window_start(source)

    def run_lines(self, source: str, run: int) -> tuple[int, int]:
        """(first line, line count) of a run, from the merged spans ((0, 0) when unknown)."""
        if self._spans is None:
            return 0, 0
        row = self._spans.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
        if not row.height:
            return 0, 0
        return int(row.item(0, C.START_LINE)), int(row.item(0, C.LINE_COUNT))

    def close(self) -> None:
        if self._spill is not None:
            self._spill.cleanup()
            self._spill = None

    def _cut(self) -> None:
        """Spill each source's bulk rows before its newest `window` lines once it holds twice that."""
        assert self._held is not None
        cut: dict[str, int] = {}
        for source, newest in self._newest.items():
            if newest - self.window_start(source) + 1 > 2 * self.window:
                cut[source] = newest - self.window + 1
        if not cut:
            return
        limit = pl.col(C.SOURCE).replace_strict(cut, default=0, return_dtype=pl.Int64)
        frames = dict(self._held.frames)
        if self._spill is None:
            self._spill = tempfile.TemporaryDirectory(prefix="tracelens-live-")
        self._spilled += 1
        for name in SPILLED:
            frame = frames.get(name)
            if frame is None or not frame.height:
                continue
            if name == PARTS:  # a fault's pieces go with its first line; server args stay
                old = (pl.col(C.RECORD) < limit) & (pl.col(C.KIND) == Kind.FAULT)
            else:
                old = pl.col(C.LINE_NO) < limit
            gone = frame.filter(old)
            if gone.height:
                gone.write_ipc(Path(self._spill.name) / f"{name}.{self._spilled:08d}.arrow")
            # The rows kept in buffers of their own too: the buffers held are then those of the
            # window's newest lines (at most twice `window`) and of the small tables' rows.
            frames[name] = compact(frame.filter(~old))
        self._held = Tables(frames)
        self._oldest.update(cut)
