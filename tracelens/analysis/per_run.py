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

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from tracelens.analysis import acceptance
from tracelens.analysis.compare import Groups, throughput_groups
from tracelens.analysis.parallel import in_order
from tracelens.analysis.plotdata import decimate, keep_peaks, pair_counts, quantile_sample
from tracelens.analysis.runs import RUN_KEY, with_labels
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, T, W, empty

# A run with more decode rounds than this keeps only the rows the plots draw (see the module's doc).
SERIES_LIMIT = 50_000
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
    tables: Tables, runs: pl.DataFrame, ready: pl.DataFrame, keep_steady: Iterable[tuple[str, int]] = ()
) -> RunSeries:
    """The decode series of every run of ``runs`` (labelled), made one run at a time (`parallel.in_order`)."""
    wanted = set(keep_steady)
    keys = [(source, run) for source, run in runs.select(RUN_KEY).iter_rows()]
    frames: tuple[list[pl.DataFrame], ...] = ([], [], [], [], [], [])
    series, means, rates, definitions, len_changes, tput_changes = frames
    speed: dict[tuple[str, int], Groups] = {}
    rounds: list[pl.DataFrame] = []
    distributions, batch_pairs = [_DISTRIBUTION], [_PAIRS]

    def one_run(item: tuple[tuple[str, int], pl.DataFrame]) -> _Run | None:
        key, rows = item
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

    batches = tables.per_run(T.BATCHES, keys, BATCH_COLUMNS, DECODE)
    for made in in_order(one_run, batches):
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
