"""Keeping plots light: at most a fixed number of points per trace, whatever the input size.

The numbers on the page (means, speedups, rolling medians and spreads, findings) all come from the
`Analysis`; what is done here only chooses which of its rows to draw. It lives with the analysis
because the analysis applies it too, inside its pass over each run: of a run too long to keep whole it
keeps the rows these functions pick (`per_run.plot_rows`), and its distribution and pairs, so the report
draws the same points from them; the report's figures import these functions from here. Every function
returns rows (or values) of its input, except `pair_counts`, which draws repeated points once with their
count.

- `keep_peaks`, for raw values (a dot per decode line): a series longer than the limit is cut into equal
  time buckets, and in each bucket the row with the lowest and the row with the highest value are kept
  (min/max decimation), so spikes and dips stay visible while a 10-million-row series draws at most
  `limit` points.
- `decimate`, for smooth series the analysis already made (the rolling median, the p10-p90 band): one
  row per time bucket, its middle one, so the line keeps its course instead of turning into a min/max
  zigzag.
- `quantile_sample`: a distribution keeps its values at evenly spaced ranks (the empirical quantile
  function, smallest and largest included), so a violin or box drawn from it matches the full data.
- `pair_counts`: a scatter of (batch size, accept len) draws each distinct pair once, with how many rows
  it stands for; when there are still too many, accept len is rounded to a coarser grid.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tracelens.tables.schema import W

TIME_POINTS = 1200  # per time-series trace (a run's accept len, its rolling median, ...)
DISTRIBUTION_POINTS = 800  # per run's distribution
PAIR_POINTS = 600  # per run's (batch size, accept len) scatter


def _finite(column: str, dtype: pl.DataType) -> pl.Expr:
    ok = pl.col(column).is_not_null()
    return ok & pl.col(column).is_finite() if dtype.is_float() else ok


def _buckets(x: str, count: int) -> pl.Expr:
    lo, hi = pl.col(x).min(), pl.col(x).max()
    width = pl.when(hi > lo).then(hi - lo).otherwise(pl.lit(1.0))
    return ((pl.col(x) - lo) / width * count).floor().clip(0, count - 1).cast(pl.Int64).alias(W.BUCKET)


def keep_peaks(frame: pl.DataFrame, x: str, y: str, limit: int = TIME_POINTS) -> pl.DataFrame:
    """Rows of ``frame`` (sorted by ``x``, a number) with a finite ``y``: all of them when they fit in
    ``limit``, else per time bucket the rows of the lowest and the highest ``y``."""
    data = frame.filter(_finite(y, frame.schema[y])).sort(x)
    if data.height <= limit:
        return data
    data = data.with_row_index(W.ROW).with_columns(_buckets(x, max(limit // 2, 1)))
    picks = data.group_by(W.BUCKET).agg(
        pl.col(W.ROW).sort_by(y).first().alias(W.LOW), pl.col(W.ROW).sort_by(y).last().alias(W.HIGH)
    )
    rows = pl.concat([picks.get_column(W.LOW), picks.get_column(W.HIGH)]).unique().sort()
    return data[rows.to_list()].drop(W.ROW, W.BUCKET)


def decimate(frame: pl.DataFrame, x: str, columns: list[str], limit: int = TIME_POINTS) -> pl.DataFrame:
    """Rows of ``frame`` (sorted by ``x``, a number) where every one of ``columns`` is finite: all of
    them when they fit in ``limit``, else the middle row of each of ``limit`` time buckets."""
    keep = pl.lit(True)
    for column in columns:
        keep = keep & _finite(column, frame.schema[column])
    data = frame.filter(keep).sort(x)
    if data.height <= limit:
        return data
    data = data.with_row_index(W.ROW).with_columns(_buckets(x, limit))
    # rows of a bucket are consecutive (sorted by x), so its middle row is halfway between its ends
    middle = data.group_by(W.BUCKET).agg(((pl.col(W.ROW).min() + pl.col(W.ROW).max()) // 2).alias(W.MIDDLE))
    return data[middle.get_column(W.MIDDLE).sort().to_list()].drop(W.ROW, W.BUCKET)


def quantile_sample(values: pl.Series, limit: int = DISTRIBUTION_POINTS) -> np.ndarray:
    """The finite values sorted; when more than ``limit``, those at ``limit`` evenly spaced ranks (the
    smallest and the largest always among them)."""
    data = values.drop_nulls()
    if data.dtype.is_float():
        data = data.filter(data.is_finite())
    ordered = data.sort().to_numpy()
    if ordered.size <= limit:
        return ordered
    ranks = np.linspace(0, ordered.size - 1, limit).round().astype(np.int64)
    return ordered[ranks]


def pair_counts(frame: pl.DataFrame, x: str, y: str, limit: int = PAIR_POINTS) -> pl.DataFrame:
    """x, y, count: each distinct (x, y) once with how many rows it stands for; while there are more
    than ``limit`` pairs, y is rounded to a grid twice as coarse (then x, when y alone cannot do it)."""
    data = frame.filter(_finite(x, frame.schema[x]) & _finite(y, frame.schema[y])).select(
        pl.col(x).cast(pl.Float64), pl.col(y).cast(pl.Float64)
    )
    # the distinct pairs once; each coarser grid then regroups them, not every row again
    return coarse_pairs(data.group_by(x, y).len("count"), x, y, limit)


def coarse_pairs(exact: pl.DataFrame, x: str, y: str, limit: int = PAIR_POINTS) -> pl.DataFrame:
    """`pair_counts` from the distinct finite pairs and their counts (``exact``: x, y, count), which a
    run read in pieces adds up piece by piece."""
    y_step, x_step = 0.0, 0.0
    while True:
        xs = pl.col(x) if x_step == 0 else (pl.col(x) / x_step).round() * x_step
        ys = pl.col(y) if y_step == 0 else (pl.col(y) / y_step).round() * y_step
        pairs = exact.group_by(xs.alias(x), ys.alias(y)).agg(pl.col("count").sum().cast(pl.UInt32)).sort(x, y)
        if pairs.height <= limit:
            return pairs
        values = exact.get_column(y)
        y_span = float(values.max() - values.min())  # type: ignore[operator,arg-type]
        if y_step == 0:
            y_step = 0.01
        elif y_step < y_span:
            y_step *= 2
        else:
            x_step = 1.0 if x_step == 0 else x_step * 2
