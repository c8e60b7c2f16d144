"""A run too long to hold whole: its decode series made in pieces, in memory bounded by a piece.

A production server is one run for days or weeks, millions of decode rounds; `per_run` makes a run's
series whole (about 300 bytes a round at its peak), which is right for every run of up to `LONG_RUN`
rounds. A longer run is read here a piece at a time: its decode lines in ranges of line numbers of
about `PIECE_LINES` lines each (a dataset reads only the row groups of a range). Each piece becomes its
rounds exactly as in the whole run: `acceptance.round_columns` is given the run's earliest time and the
number of rounds before the piece; DP rounds that a cut splits wait for the next piece; the rolling
windows see `HALF` rounds on either side. What needs every round is accumulated instead of kept:

- means (`sketch.Sums`): exact, up to the order of the float additions;
- medians, percentiles and the distribution the report draws (`sketch.ValueCounts`): exact while a
  column has at most `sketch.DISTINCT_LIMIT` distinct values, else within 5e-5 of the value;
- the logged `accept rate`'s definition and the (batch size, accept len) pairs: exact;
- change points (`sketch.Blocks`): searched on the means of blocks of ``rounds / CHANGE_POINTS``
  rounds, so a step is placed to within a block (a few rounds of a week-long run);
- the throughput a speedup compares: every k-th steady round, at most `SPEED_SAMPLE` in all, so each
  batch size keeps its share and the bootstrap interval says how sure the figure is;
- the rows the plots draw: per time bucket of the whole run, the lowest and highest row of accept len
  and of tok/s, and the row nearest the bucket's middle for each rolling statistic (where `per_run`
  takes the bucket's middle row), plus the first three rows and the last.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import polars as pl

from tracelens.analysis import acceptance
from tracelens.analysis.plotdata import TIME_POINTS
from tracelens.tables.frames import Tables
from tracelens.tables.schema import A, C, T, W

LONG_RUN = 400_000  # decode rounds: a longer run is made in pieces
PIECE_LINES = 50000  # decode lines read at a time
CHANGE_POINTS = 200_000  # values a change-point search reads at most
SPEED_SAMPLE = 200_000  # steady rounds a speedup compares at most
HALF = acceptance.ROLLING_WINDOW // 2
DECODE = pl.col(C.PHASE) == "decode"
# The rolling statistics the plots draw as lines (`per_run.plot_rows`: one row per bucket).
SMOOTH = ([A.ROLLING_P10, A.ROLLING_P90], [A.ROLLING_MEDIAN], [A.TPUT_ROLLING_MEDIAN])


@dataclass
class RunFacts:
    """What the pieces need to know of the whole run, from one streaming query over its decode lines."""

    lines: int
    dp_values: int  # distinct DP tags (null counts as one); 0: no line has a DP tag
    first_ts: dt.datetime | None  # None: no decode line has a time
    last_ts: dt.datetime | None
    first_line: int
    last_line: int


def run_facts(tables: Tables, key: tuple[str, int]) -> RunFacts:
    rows = _run_lines(tables, key, DECODE).select(
        pl.len().alias("lines"),
        pl.when(pl.col(C.DP).is_not_null().any()).then(pl.col(C.DP).n_unique()).otherwise(0).alias("dp"),
        pl.col(C.TS).min().alias("first_ts"),
        pl.col(C.TS).max().alias("last_ts"),
        pl.col(C.LINE_NO).min().alias("first_line"),
        pl.col(C.LINE_NO).max().alias("last_line"),
    )
    lines, dp, first_ts, last_ts, first_line, last_line = rows.collect(engine="streaming").row(0)
    return RunFacts(int(lines), int(dp), first_ts, last_ts, int(first_line or 0), int(last_line or 0))


def _run_lines(tables: Tables, key: tuple[str, int], which: pl.Expr) -> pl.LazyFrame:
    """The run's batch lines that ``which`` keeps."""
    source, run = key
    return tables.scan(T.BATCHES).filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run) & which)


def pieces(
    tables: Tables, key: tuple[str, int], facts: RunFacts, columns: tuple[str, ...]
) -> Iterator[tuple[pl.DataFrame, bool]]:
    """The run's decode lines and idle lines (``columns``) in order, in ranges of line numbers of about `PIECE_LINES`
    lines each (assuming they are spread evenly over the run's lines), each with whether it is the last."""
    count = max(1, math.ceil(facts.lines / PIECE_LINES))
    span = facts.last_line - facts.first_line + 1
    bounds = [facts.first_line + span * i // count for i in range(count)] + [facts.last_line + 1]
    # with the idle lines (`acceptance.after_idle`), those before the first decode line too
    scan = _run_lines(tables, key, acceptance.SERIES_LINES)
    bounds[0] = 0
    for lo, hi in itertools.pairwise(bounds):
        rows = scan.filter((pl.col(C.LINE_NO) >= lo) & (pl.col(C.LINE_NO) < hi)).select(columns)
        yield rows.collect().sort(C.LINE_NO), hi > facts.last_line


class Rounds:
    """Decode lines in, combined rounds out, piece by piece, as `acceptance.decode_series` combines
    the whole run's: with attention DP the k-th line of every DP rank is one round, so each rank's count
    of lines so far is carried, and the lines of rounds that not every rank has printed by a piece's end
    wait for the next piece (the run's last such rounds are left out, as the whole run leaves them)."""

    def __init__(self, dp_values: int) -> None:
        self.dp_values = dp_values
        self.seen = pl.DataFrame(schema={W.DP_KEY: pl.Int64, W.N: pl.Int64})
        self.waiting: pl.DataFrame | None = None
        self.idle: pl.DataFrame | None = None  # which ranks were idle after their last decode line

    def combine(self, lines: pl.DataFrame, last: bool) -> pl.DataFrame:
        lines, self.idle = acceptance.after_idle(lines, self.idle)
        if not self.dp_values:
            return acceptance.single_rounds(lines)
        if self.waiting is not None:
            lines = pl.concat([self.waiting, lines])
            self.waiting = None
        dp_key = pl.col(C.DP).cast(pl.Int64).fill_null(-1).alias(W.DP_KEY)
        numbered = (
            lines.with_columns(dp_key)
            .join(self.seen, on=W.DP_KEY, how="left")
            .with_columns((pl.int_range(pl.len()).over(W.DP_KEY) + pl.col(W.N).fill_null(0)).alias(W.ROUND))
            .drop(W.N)
        )
        combined = numbered.group_by(C.SOURCE, C.RUN, W.ROUND).agg(acceptance.round_aggregates())
        complete = combined.filter(pl.col(A.DP_RANKS) >= self.dp_values).get_column(W.ROUND).max()
        if complete is None:
            self.waiting = numbered.drop(W.DP_KEY, W.ROUND) if not last else None
            return combined.clear().drop(W.ROUND)
        done = pl.col(W.ROUND) <= complete
        if not last:
            self.waiting = numbered.filter(~done).drop(W.DP_KEY, W.ROUND)
        taken = numbered.filter(done).group_by(W.DP_KEY).agg(pl.len().cast(pl.Int64).alias(W.N))
        self.seen = pl.concat([self.seen, taken]).group_by(W.DP_KEY).agg(pl.col(W.N).sum())
        return combined.filter(done).sort(C.LINE_NO).drop(W.ROUND)


class Rolling:
    """The rolling statistics of rounds that arrive a piece at a time: a round's centred window needs
    `HALF` rounds after it, so the last `HALF` rounds of a piece wait for the next one, and the `HALF`
    rounds before a piece are kept as its windows' start."""

    def __init__(self) -> None:
        self.before: pl.DataFrame | None = None
        self.waiting: pl.DataFrame | None = None

    def add(self, rounds: pl.DataFrame, last: bool) -> pl.DataFrame | None:
        frames = [f for f in (self.before, self.waiting, rounds) if f is not None and f.height]
        if not frames:
            return None
        buffer = pl.concat(frames)
        skip = self.before.height if self.before is not None else 0
        end = buffer.height if last else buffer.height - HALF
        if end <= skip:
            self.waiting = buffer.slice(skip)
            return None
        self.waiting = buffer.slice(end)
        self.before = buffer.slice(max(0, end - HALF), end - max(0, end - HALF))
        return acceptance.with_rolling(buffer).slice(skip, end - skip)


@dataclass
class Picks:
    """The rows of the run the plots draw (see the module's doc), narrowed after every piece."""

    lo: float
    width: float
    rows: list[pl.DataFrame] = field(default_factory=list)
    head: pl.DataFrame | None = None
    tail: pl.DataFrame | None = None

    def bucket(self, count: int) -> pl.Expr:
        return ((pl.col(W.MINUTES) - self.lo) / self.width * count).floor().clip(0, count - 1).cast(pl.Int64)

    def add(self, part: pl.DataFrame) -> None:
        if self.head is None:
            self.head = part.head(3)
        elif self.head.height < 3:
            self.head = pl.concat([self.head, part]).head(3)
        self.tail = part.tail(1)
        self.rows.append(self._pick(part))
        self.rows = [self._pick(pl.concat(self.rows))]

    def _pick(self, rows: pl.DataFrame) -> pl.DataFrame:
        """The rows of ``rows`` that the plots draw (the union of every pick), by `W.KEPT`."""
        data = rows.with_columns((pl.col(A.T_SINCE_START) / 60.0).alias(W.MINUTES))
        ids: list[pl.Series] = []
        for column in (C.ACCEPT_LEN, C.GEN_THROUGHPUT):
            valued = data.filter(_finite(column, rows.schema[column]))
            peaks = valued.with_columns(self.bucket(max(TIME_POINTS // 2, 1)).alias(W.BUCKET))
            picks = peaks.group_by(W.BUCKET).agg(
                pl.col(W.KEPT).sort_by(column).first().alias(W.LOW),
                pl.col(W.KEPT).sort_by(column).last().alias(W.HIGH),
            )
            ids += [picks.get_column(W.LOW), picks.get_column(W.HIGH)]
        for columns in SMOOTH:
            keep = pl.lit(True)
            for column in columns:
                keep = keep & _finite(column, rows.schema[column])
            smooth = data.filter(keep).with_columns(self.bucket(TIME_POINTS).alias(W.BUCKET))
            middle = self.lo + (pl.col(W.BUCKET) + 0.5) * self.width / TIME_POINTS
            distance = (pl.col(W.MINUTES) - middle).abs()
            picks = smooth.group_by(W.BUCKET).agg(
                pl.col(W.KEPT).sort_by(distance, pl.col(W.KEPT)).first().alias(W.MIDDLE)
            )
            ids.append(picks.get_column(W.MIDDLE))
        kept = pl.concat(ids).unique()
        return rows.filter(pl.col(W.KEPT).is_in(kept.implode()))

    def finish(self) -> pl.DataFrame:
        frames = [f for f in (self.head, *self.rows, self.tail) if f is not None]
        return pl.concat(frames).unique(W.KEPT).sort(W.KEPT)


def _finite(column: str, dtype: pl.DataType) -> pl.Expr:
    ok = pl.col(column).is_not_null()
    return ok & pl.col(column).is_finite() if dtype.is_float() else ok
