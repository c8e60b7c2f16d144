"""The decode series and what is computed from it, one run at a time, so a dataset of any size is
analysed in the memory of its largest run.

For each run, its decode lines (only the columns the series needs) are read alone, the series is made
exactly as `acceptance.decode_series` makes it, and everything that needs every row is computed on it
at once: the steady-state means, the acceptance-rate statistics, the logged `accept rate` definition,
the change points, and the steady rows a speedup compares. What is kept of the series afterwards is the
whole run when it has at most `SERIES_LIMIT` decode rounds (every log a person reads, and the sample
logs: their figures and findings are those of the whole series), else the rows the report's plots draw
(per time bucket the lowest and highest value and the middle row of each rolling statistic, plus the
first and last rows), so memory stays bounded by the number of runs, not lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import polars as pl

from tracelens.analysis import acceptance, long_run
from tracelens.analysis.compare import Groups, throughput_groups
from tracelens.analysis.parallel import in_order
from tracelens.analysis.plotdata import (
    DISTRIBUTION_POINTS,
    coarse_pairs,
    decimate,
    keep_peaks,
    pair_counts,
    quantile_sample,
)
from tracelens.analysis.runs import RUN_KEY, with_labels
from tracelens.analysis.sketch import Blocks, Sums, ValueCounts
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, T, W, empty

# A run with more decode rounds than this keeps only the rows the plots draw (see the module's doc).
SERIES_LIMIT = 50_000
# Short runs are made together, up to this many decode lines at once: a run costs its forty-odd polars
# calls whatever its length, so a log of 2,400 server starts of a few rounds each spent 20 CPU-s on
# them where one run of the same lines takes under one. `acceptance`'s paths for several runs give
# each run the values it gets alone (each window, rank and change point is per run).
GROUP_LINES = 20_000
# A run of more lines than this is made alone.
ALONE_LINES = 2_000
BATCH_COLUMNS = (
    C.SOURCE,
    C.RUN,
    C.LINE_NO,
    C.TS,
    C.DP,
    C.PHASE,
    C.ACCEPT_LEN,
    C.ACCEPT_RATE,
    C.GEN_THROUGHPUT,
    C.RUNNING_REQ,
    C.TOKEN_USAGE,
    C.QUEUE_REQ,
)
DECODE = pl.col(C.PHASE) == "decode"
_DISTRIBUTION = pl.DataFrame(schema={C.SOURCE: pl.String, C.RUN: pl.Int32, C.ACCEPT_LEN: pl.Float64})
_PAIRS = pl.DataFrame(
    schema={
        C.SOURCE: pl.String,
        C.RUN: pl.Int32,
        A.BATCH_SIZE: pl.Float64,
        C.ACCEPT_LEN: pl.Float64,
        "count": pl.UInt32,
    }
)


@dataclass
class RunSeries:
    series: pl.DataFrame  # per run: every row, or the rows the plots draw (over SERIES_LIMIT rounds)
    rounds: pl.DataFrame  # source, run, _n: decode rounds of every run, all counted
    steady_means: pl.DataFrame  # source, run, mean accept len / acceptance rate / tok/s (steady state)
    rate_stats: pl.DataFrame  # source, run, `STEADY_STATS` over every steady round
    definitions: pl.DataFrame  # acceptance.logged_definition
    changes: pl.DataFrame  # acceptance.change_points of accept len, then of throughput
    speed_groups: dict[tuple[str, int], Groups]  # of the runs `keep_steady` named: compare.throughput_groups
    distributions: pl.DataFrame  # source, run, accept_len: `plot_samples` of the thinned runs
    batch_pairs: pl.DataFrame  # source, run, batch_size, accept_len, count: the same


def decode_rounds(tables: Tables) -> pl.DataFrame:
    """source, run, _n: how many decode rounds each run has (with attention DP, a round is the k-th line
    of every DP rank), counted in one streaming query without reading the values."""
    per_rank = tables.scan(T.BATCHES).filter(DECODE).group_by(C.SOURCE, C.RUN, C.DP).agg(pl.len().alias(W.N))
    dp_run = pl.col(C.DP).is_not_null().any()
    return collect(
        per_rank.group_by(RUN_KEY).agg(
            pl.when(dp_run).then(pl.col(W.N).max()).otherwise(pl.col(W.N).sum()).cast(pl.UInt32).alias(W.N)
        )
    )


def series_by_run(
    tables: Tables,
    runs: pl.DataFrame,
    ready: pl.DataFrame,
    keep_steady: Iterable[tuple[str, int]] = (),
    round_counts: pl.DataFrame | None = None,
) -> RunSeries:
    """The decode series of every run of ``runs`` (labelled), made one run at a time (`parallel.in_order`).
    ``round_counts`` (`decode_rounds`): a run of more than `long_run.LONG_RUN` rounds is made in pieces."""
    wanted = set(keep_steady)
    keys = [(source, run) for source, run in runs.select(RUN_KEY).iter_rows()]
    frames: tuple[list[pl.DataFrame], ...] = ([], [], [], [], [], [])
    series, means, rates, definitions, len_changes, tput_changes = frames
    speed: dict[tuple[str, int], Groups] = {}
    rounds: list[pl.DataFrame] = []
    distributions, batch_pairs = [_DISTRIBUTION], [_PAIRS]

    long = (
        set()
        if round_counts is None
        else {(source, run) for source, run, n in round_counts.iter_rows() if n > long_run.LONG_RUN}
    )

    def one_run(item: tuple[tuple[str, int], pl.DataFrame | None]) -> _Run | None:
        key, rows = item
        if rows is None:
            return _long_run(tables, key, runs, ready, key in wanted)
        if not rows.height:
            return None
        part = _labelled(acceptance.decode_series(rows, runs, ready), runs, key)
        made = _Run(key, part, _summary(part), None, None, None)
        if key in wanted:  # only what `compare.speedups` reads: a run's steady rows can be millions
            made.speed = throughput_groups(part)
        if part.height > SERIES_LIMIT:
            made.series = plot_rows(part)
            made.distribution, made.pairs = plot_samples(part)
        return made

    def one_group(group: list[tuple[tuple[str, int], pl.DataFrame | None]]) -> list[_Run | None]:
        if len(group) == 1:
            return [one_run(group[0])]
        return [_together(group, runs, ready)]

    def alone(key: tuple[str, int], rows: pl.DataFrame | None) -> bool:
        return rows is None or key in wanted or rows.height > ALONE_LINES

    # the short runs' rows are read as the pass reaches them (in the order of ``keys``), the long ones by
    # `_long_run` itself
    # a run's idle lines come with its decode lines (`acceptance.after_idle`); a run of idle lines alone
    # has no series
    short = tables.per_run(
        T.BATCHES, [key for key in keys if key not in long], BATCH_COLUMNS, acceptance.SERIES_LINES
    )
    batches = ((key, None) if key in long else _with_decode(*next(short)) for key in keys)
    groups = _grouped(batches, alone)
    for made in (made for group in in_order(one_group, groups) for made in group):
        if made is None:
            continue
        _append(made.summary, means, rates, definitions, len_changes, tput_changes, rounds)
        if made.speed is not None:
            speed[made.key] = made.speed
        series.append(made.series)
        if made.distribution is not None and made.pairs is not None:
            distributions.append(made.distribution)
            batch_pairs.append(made.pairs)
    if not series:  # the frames' columns and types, from the same code on no rows
        part = with_labels(acceptance.decode_series(empty(T.BATCHES), runs, ready), runs)
        _append(_summary(part), means, rates, definitions, len_changes, tput_changes, rounds)
        series.append(part)
    return RunSeries(
        series=pl.concat(series),
        rounds=pl.concat(rounds),
        steady_means=pl.concat(means),
        rate_stats=pl.concat(rates),
        definitions=pl.concat(definitions),
        changes=pl.concat([*len_changes, *tput_changes]),
        speed_groups=speed,
        distributions=pl.concat(distributions),
        batch_pairs=pl.concat(batch_pairs),
    )


Item = tuple[tuple[str, int], pl.DataFrame | None]


def _with_decode(key: tuple[str, int], rows: pl.DataFrame) -> Item:
    """A run's series lines, none when it has no decode line."""
    return key, rows if rows.select(DECODE.any()).item() else rows.clear()


def _grouped(
    items: Iterable[Item], alone: Callable[[tuple[str, int], pl.DataFrame | None], bool]
) -> Iterator[list[Item]]:
    """``items`` in their order, as groups: a run ``alone`` picks on its own, consecutive short ones
    together up to `GROUP_LINES` lines (runs with no decode line are left out)."""
    group: list[Item] = []
    held = 0
    for key, rows in items:
        if rows is not None and not rows.height:
            continue
        if alone(key, rows):
            if group:
                yield group
                group, held = [], 0
            yield [(key, rows)]
            continue
        assert rows is not None
        if group and held + rows.height > GROUP_LINES:
            yield group
            group, held = [], 0
        group.append((key, rows))
        held += rows.height
    if group:
        yield group


def _together(group: list[Item], runs: pl.DataFrame, ready: pl.DataFrame) -> _Run:
    """The series and `_summary` of several short runs made at once, each frame in the runs' order
    (as the runs made one by one and put end to end give them)."""
    order = pl.DataFrame(
        {
            C.SOURCE: [key[0] for key, _ in group],
            C.RUN: pl.Series([key[1] for key, _ in group], dtype=pl.Int32),
            W.RUN_ORDER: range(len(group)),
        }
    )
    rows = pl.concat([rows for _, rows in group if rows is not None])
    part = in_run_order(with_labels(acceptance.decode_series(rows, runs, ready), runs), order, C.LINE_NO)
    summary = tuple(in_run_order(frame, order) for frame in _summary(part))
    return _Run(group[0][0], part, summary, None, None, None)


def in_run_order(frame: pl.DataFrame, order: pl.DataFrame, *then: str) -> pl.DataFrame:
    """``frame``'s rows sorted by their run's place in ``order`` (source, run, `W.RUN_ORDER`), then by
    ``then``; rows that tie keep their order."""
    if not frame.height:
        return frame
    placed = frame.join(order, on=RUN_KEY, how="left", maintain_order="left")
    return placed.sort(W.RUN_ORDER, *then, maintain_order=True).drop(W.RUN_ORDER)


def _labelled(part: pl.DataFrame, runs: pl.DataFrame, key: tuple[str, int]) -> pl.DataFrame:
    """`with_labels` of one run's rows, the label a constant column instead of a join (a copy)."""
    label = runs.filter((pl.col(C.SOURCE) == key[0]) & (pl.col(C.RUN) == key[1])).get_column(A.LABEL)
    if label.len() != 1:
        return with_labels(part, runs)
    return part.with_columns(pl.lit(label.item(), pl.String).alias(A.LABEL))


@dataclass
class _Run:
    """What one run's pass keeps: its series (whole, or the rows the plots draw), the `_summary` of
    every row, its steady rows when a speedup compares it, its distribution and pairs when thinned."""

    key: tuple[str, int]
    series: pl.DataFrame
    summary: tuple[pl.DataFrame, ...]
    speed: Groups | None
    distribution: pl.DataFrame | None
    pairs: pl.DataFrame | None


# The figures `summary` prints per run: (column, statistics), over the run's steady-state rounds.
STEADY_STATS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (C.ACCEPT_LEN, ("mean", "median", "p10", "p90")),
    (C.GEN_THROUGHPUT, ("mean", "median")),
    (A.ACCEPTANCE_RATE, ("mean", "median")),
)


def stat_column(column: str, stat: str) -> str:
    """The name of one of `STEADY_STATS` in `RunSeries.rate_stats`."""
    return f"{column}_{stat}"


def steady_stats() -> list[pl.Expr]:
    """`STEADY_STATS` as aggregations, on every steady round of a run (so a thinned series changes none)."""
    out: list[pl.Expr] = []
    for column, stats in STEADY_STATS:
        values = pl.col(column).cast(pl.Float64).fill_nan(None).drop_nulls()
        made = {
            "mean": values.mean(),
            "median": values.median(),
            "p10": values.quantile(0.1, "linear"),
            "p90": values.quantile(0.9, "linear"),
        }
        out.extend(made[stat].alias(stat_column(column, stat)) for stat in stats)
    return out


def _summary(part: pl.DataFrame) -> tuple[pl.DataFrame, ...]:
    """What needs every row of one run's series: steady means, rate statistics, the logged definition,
    the change points of accept len and of throughput, the number of rounds."""
    steady = acceptance.steady_rows(part)
    means = steady.group_by(RUN_KEY).agg(
        pl.col(C.ACCEPT_LEN).mean().alias(A.MEAN_ACCEPT_LEN),
        pl.col(A.ACCEPTANCE_RATE).mean().alias(A.MEAN_ACCEPTANCE_RATE),
        pl.col(C.GEN_THROUGHPUT).mean().alias(A.MEAN_GEN_THROUGHPUT),
    )
    rates = steady.group_by(RUN_KEY).agg(*steady_stats())
    # Throughput rises with batch size, so its steps are looked for at each run's usual batch size only.
    usual = pl.col(A.BATCH_SIZE) == pl.col(A.BATCH_SIZE).mode().first().over(RUN_KEY)
    return (
        means,
        rates,
        acceptance.logged_definition(part),
        acceptance.change_points(part, C.ACCEPT_LEN),
        acceptance.change_points(part.filter(usual), C.GEN_THROUGHPUT),
        part.group_by(RUN_KEY).agg(pl.len().cast(pl.UInt32).alias(W.N)),
    )


def _append(summary: tuple[pl.DataFrame, ...], *lists: list[pl.DataFrame]) -> None:
    """Each frame of a run's `_summary` onto the list of all runs' frames of its kind."""
    for frame, frames in zip(summary, lists, strict=True):
        frames.append(frame)


def plot_rows(part: pl.DataFrame) -> pl.DataFrame:
    """The rows of one run's series that its plots draw, picked by the report's own functions on the
    whole run: per value (accept len, tok/s) each time bucket's lowest and highest row, per rolling
    statistic each bucket's middle row; plus the run's first three and last rows (findings cite the
    first lines, the live screen shows the last)."""
    # only the columns the picks read: each pick sorts its rows, and a sort moves every column it holds
    values = [
        C.ACCEPT_LEN,
        C.GEN_THROUGHPUT,
        A.ROLLING_P10,
        A.ROLLING_P90,
        A.ROLLING_MEDIAN,
        A.TPUT_ROLLING_MEDIAN,
    ]
    data = part.select(values).with_row_index(W.KEPT)
    data = data.with_columns((part.get_column(A.T_SINCE_START) / 60.0).alias(W.MINUTES))
    picks = [
        keep_peaks(data, W.MINUTES, C.ACCEPT_LEN),
        keep_peaks(data, W.MINUTES, C.GEN_THROUGHPUT),
        decimate(data, W.MINUTES, [A.ROLLING_P10, A.ROLLING_P90]),
        decimate(data, W.MINUTES, [A.ROLLING_MEDIAN]),
        decimate(data, W.MINUTES, [A.TPUT_ROLLING_MEDIAN]),
    ]
    ends = pl.Series(W.KEPT, [0, 1, 2, part.height - 1], dtype=pl.UInt32)
    kept = pl.concat([ends, *(p.get_column(W.KEPT) for p in picks)]).unique().sort()
    return part[kept.to_list()]


def plot_samples(part: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The accept-len distribution (values at evenly spaced ranks) and the (batch size, accept len)
    pairs with their counts of one run's steady rows, as the report draws them: made on every row of a
    run whose series is thinned."""
    steady = acceptance.steady_rows(part)
    key = part.select(*RUN_KEY).head(1)
    values = pl.Series(C.ACCEPT_LEN, quantile_sample(steady.get_column(C.ACCEPT_LEN)), dtype=pl.Float64)
    distribution = key.join(values.to_frame(), how="cross") if values.len() else _DISTRIBUTION.clear()
    pairs = pair_counts(steady, A.BATCH_SIZE, C.ACCEPT_LEN)
    return distribution, key.join(pairs, how="cross").with_columns(pl.col("count").cast(pl.UInt32))


# The columns whose sums make a run's steady means (`_summary`'s first frame).
_MEANS = (
    (C.ACCEPT_LEN, A.MEAN_ACCEPT_LEN),
    (A.ACCEPTANCE_RATE, A.MEAN_ACCEPTANCE_RATE),
    (C.GEN_THROUGHPUT, A.MEAN_GEN_THROUGHPUT),
)


class _Figures:
    """What `_summary` and `plot_samples` read of a set of rows (a run's steady rows, or all of them),
    added a piece at a time (`long_run`)."""

    def __init__(self) -> None:
        self.rows = 0
        self.sums = {column: Sums() for column, _ in _MEANS}
        self.values = {column: ValueCounts() for column, _ in STEADY_STATS}
        self.pairs = pl.DataFrame(
            schema={A.BATCH_SIZE: pl.Float64, C.ACCEPT_LEN: pl.Float64, "count": pl.UInt64}
        )
        self.sampled: list[pl.DataFrame] = []
        self.sample_seen = 0

    def add(self, rows: pl.DataFrame) -> None:
        self.rows += rows.height
        for column, sums in self.sums.items():
            sums.add(rows.get_column(column))
        for column, counts in self.values.items():
            counts.add(rows.get_column(column))
        finite = rows.filter(
            pl.col(A.BATCH_SIZE).is_not_null()
            & pl.col(C.ACCEPT_LEN).is_not_null()
            & pl.col(C.ACCEPT_LEN).is_finite()
        ).select(pl.col(A.BATCH_SIZE).cast(pl.Float64), pl.col(C.ACCEPT_LEN).cast(pl.Float64))
        piece = finite.group_by(A.BATCH_SIZE, C.ACCEPT_LEN).agg(pl.len().cast(pl.UInt64).alias("count"))
        self.pairs = (
            pl.concat([self.pairs, piece]).group_by(A.BATCH_SIZE, C.ACCEPT_LEN).agg(pl.col("count").sum())
        )

    def sample(self, rows: pl.DataFrame, every: int) -> None:
        """Every ``every``-th of the rows a speedup compares (`compare.throughput_groups`), counted over
        the whole run."""
        usable = rows.filter(pl.col(C.GEN_THROUGHPUT).is_not_null() & pl.col(A.BATCH_SIZE).is_not_null())
        index = pl.int_range(self.sample_seen, self.sample_seen + usable.height, dtype=pl.Int64)
        self.sampled.append(usable.filter(index % every == 0).select(A.BATCH_SIZE, C.GEN_THROUGHPUT))
        self.sample_seen += usable.height

    def stat(self, column: str, stat: str) -> float | None:
        counts = self.values[column]
        if stat == "mean":
            return counts.mean()
        return counts.quantile({"median": 0.5, "p10": 0.1, "p90": 0.9}[stat])


def _long_run(
    tables: Tables, key: tuple[str, int], runs: pl.DataFrame, ready: pl.DataFrame, speed: bool
) -> _Run | None:
    """`one_run`'s result for a run of more than `long_run.LONG_RUN` rounds, made in pieces (see
    `long_run`): the same frames, from counts and sums instead of the whole series."""
    facts = long_run.run_facts(tables, key)
    if not facts.lines:
        return None
    template = _summary(_labelled(acceptance.decode_series(empty(T.BATCHES), runs, ready), runs, key))
    estimate = facts.lines // max(1, facts.dp_values)  # rounds, about
    block = max(1, math.ceil(estimate / long_run.CHANGE_POINTS))
    every = max(1, math.ceil(estimate / long_run.SPEED_SAMPLE))
    start = runs.filter((pl.col(C.SOURCE) == key[0]) & (pl.col(C.RUN) == key[1])).get_column(C.START_TS)
    origin = start.item() if start.len() == 1 and start.item() is not None else facts.first_ts
    lo = hi = 0.0  # minutes since the run's start of its first and last decode line
    if facts.first_ts is not None and facts.last_ts is not None and origin is not None:
        lo = (facts.first_ts - origin).total_seconds() / 60.0
        hi = (facts.last_ts - origin).total_seconds() / 60.0
    picks = long_run.Picks(lo, hi - lo if hi > lo else 1.0)
    rounds, rolling = long_run.Rounds(facts.dp_values), long_run.Rolling()
    steady, every_row = _Figures(), _Figures()
    errors = {name: Sums() for name in acceptance.LOGGED_DEFINITIONS}
    len_blocks, tput_blocks = Blocks(block), dict[float, Blocks]()
    sizes = pl.DataFrame(schema={A.BATCH_SIZE: pl.Float64, W.N: pl.UInt64})
    made = kept = 0
    for lines, last in long_run.pieces(tables, key, facts, BATCH_COLUMNS):
        combined = rounds.combine(lines, last)
        rows = acceptance.round_columns(combined, runs, ready, first_ts=facts.first_ts, index_offset=made)
        made += rows.height
        rolled = rolling.add(rows, last)
        if rolled is None:
            continue
        part = _labelled(rolled, runs, key).with_row_index(W.KEPT, offset=kept)
        kept += part.height
        is_steady = part.filter(pl.col(A.STAGE) == "steady")
        steady.add(is_steady)
        every_row.add(part)
        logged = part.filter(pl.col(A.ACCEPT_RATE_LOGGED).is_not_null() & pl.col(C.ACCEPT_LEN).is_not_null())
        for name, formula in acceptance.LOGGED_DEFINITIONS.items():
            errors[name].add(logged.select((formula - pl.col(A.ACCEPT_RATE_LOGGED)).abs()).to_series())
        len_blocks.add(part, C.ACCEPT_LEN, C.TS, C.LINE_NO)
        with_size = part.filter(pl.col(A.BATCH_SIZE).is_not_null())
        counted = with_size.group_by(pl.col(A.BATCH_SIZE).cast(pl.Float64)).agg(
            pl.len().cast(pl.UInt64).alias(W.N)
        )
        sizes = pl.concat([sizes, counted]).group_by(A.BATCH_SIZE).agg(pl.col(W.N).sum())
        for (size,), group in with_size.group_by(A.BATCH_SIZE, maintain_order=True):
            tput_blocks.setdefault(float(size), Blocks(block)).add(group, C.GEN_THROUGHPUT, C.TS, C.LINE_NO)
        if speed:
            steady.sample(is_steady, every)
            every_row.sample(part, every)
        picks.add(part)
    if not kept:
        return None
    figures = steady if steady.rows else every_row  # `acceptance.steady_rows`: all rows when none is steady
    return _Run(
        key,
        picks.finish().drop(W.KEPT),
        _long_summary(key, template, figures, errors, len_blocks, tput_blocks, sizes, kept, block),
        _sampled_groups(figures.sampled) if speed else None,
        *_long_samples(key, figures),
    )


def _long_summary(
    key: tuple[str, int],
    template: tuple[pl.DataFrame, ...],
    figures: _Figures,
    errors: dict[str, Sums],
    len_blocks: Blocks,
    tput_blocks: dict[float, Blocks],
    sizes: pl.DataFrame,
    count: int,
    block: int,
) -> tuple[pl.DataFrame, ...]:
    """`_summary`'s frames of a run read in pieces, in `template`'s columns and types."""
    means_t, rates_t, definitions_t, len_t, tput_t, rounds_t = template
    run_key = {C.SOURCE: key[0], C.RUN: key[1]}
    means = {**run_key, **{name: figures.sums[column].mean() for column, name in _MEANS}}
    rates = {**run_key}
    for column, stats in STEADY_STATS:
        rates.update({stat_column(column, stat): figures.stat(column, stat) for stat in stats})
    definitions = definitions_t.clear()
    if any(sums.count for sums in errors.values()):
        mean_errors = {name: mean for name, sums in errors.items() if (mean := sums.mean()) is not None}
        best = min(mean_errors, key=mean_errors.__getitem__) if mean_errors else None
        name = best if best is not None and mean_errors[best] < 0.02 else "unknown"
        definitions = pl.DataFrame([{**run_key, A.ACCEPT_RATE_DEFINITION: name}], schema=definitions_t.schema)
    segment = max(1, math.ceil(acceptance.MIN_SEGMENT / block))
    values, starts = len_blocks.finish(C.ACCEPT_LEN)
    len_changes = acceptance.step_rows(values, starts, key, C.ACCEPT_LEN, segment, acceptance.MIN_SHIFT)
    tput_changes: list[dict[str, object]] = []
    if sizes.height:  # throughput's steps at the run's usual batch size (the smallest of equally usual)
        usual = sizes.sort([W.N, A.BATCH_SIZE], descending=[True, False]).item(0, A.BATCH_SIZE)
        values, starts = tput_blocks[usual].finish(C.GEN_THROUGHPUT)
        tput_changes = acceptance.step_rows(
            values, starts, key, C.GEN_THROUGHPUT, segment, acceptance.MIN_SHIFT
        )
    return (
        pl.DataFrame([means], schema=means_t.schema),
        pl.DataFrame([rates], schema=rates_t.schema),
        definitions,
        pl.DataFrame(len_changes, schema=len_t.schema),
        pl.DataFrame(tput_changes, schema=tput_t.schema),
        pl.DataFrame([{**run_key, W.N: count}], schema=rounds_t.schema),
    )


def _long_samples(key: tuple[str, int], figures: _Figures) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`plot_samples` of a run read in pieces, from its counts."""
    values = figures.values[C.ACCEPT_LEN].ranks_sample(DISTRIBUTION_POINTS)
    run_key = pl.DataFrame(
        {C.SOURCE: [key[0]], C.RUN: [key[1]]}, schema={C.SOURCE: pl.String, C.RUN: pl.Int32}
    )
    distribution = (
        run_key.join(pl.Series(C.ACCEPT_LEN, values, dtype=pl.Float64).to_frame(), how="cross")
        if values.size
        else _DISTRIBUTION.clear()
    )
    pairs = coarse_pairs(figures.pairs, A.BATCH_SIZE, C.ACCEPT_LEN)
    return distribution, run_key.join(pairs, how="cross").with_columns(pl.col("count").cast(pl.UInt32))


def _sampled_groups(sampled: list[pl.DataFrame]) -> Groups:
    """`compare.throughput_groups` of the sampled steady rounds."""
    rows = (
        pl.concat(sampled)
        if sampled
        else pl.DataFrame(schema={A.BATCH_SIZE: pl.Int64, C.GEN_THROUGHPUT: pl.Float64})
    )
    return {
        int(size): part.get_column(C.GEN_THROUGHPUT).to_numpy()
        for (size,), part in rows.group_by(A.BATCH_SIZE)
    }
