"""Keeping the report light: at most a fixed number of points per trace, whatever the input size.

A presentation concern only, so it lives with the report and not in the analysis: the numbers on the
page (means, speedups, rolling medians and spreads, findings) all come from the `Analysis`; what is
done here only chooses which of its rows to draw. Every function returns rows (or values) of its input,
except `envelope`, which draws the outer bounds of a band per bucket, and `pair_counts`, which draws
repeated points once with their count.

- `keep_peaks`: a time series longer than the limit is cut into equal time buckets, and in each bucket
  the row with the lowest and the row with the highest value are kept (min/max decimation), so spikes
  and dips stay visible while a 10-million-row series draws at most `limit` points.
- `envelope`: a band (rolling p10 to p90) keeps, per bucket, its lowest low and highest high.
- `quantile_sample`: a distribution keeps its values at evenly spaced ranks (the empirical quantile
  function, smallest and largest included), so a violin or box drawn from it matches the full data.
- `pair_counts`: a scatter of (batch size, accept len) draws each distinct pair once, with how many rows
  it stands for; when there are still too many, accept len is rounded to a coarser grid.
"""

from __future__ import annotations

import numpy as np
import polars as pl

TIME_POINTS = 1200  # per time-series trace (a run's accept len, its rolling median, ...)
DISTRIBUTION_POINTS = 800  # per run's distribution
PAIR_POINTS = 600  # per run's (batch size, accept len) scatter

_BUCKET = "_bucket"
_ROW = "_row"


def _finite(column: str, dtype: pl.DataType) -> pl.Expr:
    ok = pl.col(column).is_not_null()
    return ok & pl.col(column).is_finite() if dtype.is_float() else ok


def _buckets(x: str, count: int) -> pl.Expr:
    lo, hi = pl.col(x).min(), pl.col(x).max()
    width = pl.when(hi > lo).then(hi - lo).otherwise(pl.lit(1.0))
    return ((pl.col(x) - lo) / width * count).floor().clip(0, count - 1).cast(pl.Int64).alias(_BUCKET)


def keep_peaks(frame: pl.DataFrame, x: str, y: str, limit: int = TIME_POINTS) -> pl.DataFrame:
    """Rows of ``frame`` (sorted by ``x``, a number) with a finite ``y``: all of them when they fit in
    ``limit``, else per time bucket the rows of the lowest and the highest ``y``."""
    data = frame.filter(_finite(y, frame.schema[y])).sort(x)
    if data.height <= limit:
        return data
    data = data.with_row_index(_ROW).with_columns(_buckets(x, max(limit // 2, 1)))
    picks = data.group_by(_BUCKET).agg(
        pl.col(_ROW).sort_by(y).first().alias("_lo"), pl.col(_ROW).sort_by(y).last().alias("_hi")
    )
    rows = pl.concat([picks.get_column("_lo"), picks.get_column("_hi")]).unique().sort()
    return data[rows.to_list()].drop(_ROW, _BUCKET)


def envelope(frame: pl.DataFrame, x: str, low: str, high: str, limit: int = TIME_POINTS) -> pl.DataFrame:
    """x, low, high of a band: the rows themselves when they fit in ``limit``, else per time bucket its
    first and last x with the bucket's lowest low and highest high (the band never narrows)."""
    data = (
        frame.filter(_finite(low, frame.schema[low]) & _finite(high, frame.schema[high]))
        .select(x, low, high)
        .sort(x)
    )
    if data.height <= limit:
        return data
    per = (
        data.with_columns(_buckets(x, max(limit // 2, 1)))
        .group_by(_BUCKET)
        .agg(
            pl.col(x).min().alias("_x0"),
            pl.col(x).max().alias("_x1"),
            pl.col(low).min(),
            pl.col(high).max(),
        )
    )
    first = per.select(pl.col("_x0").alias(x), low, high)
    last = per.select(pl.col("_x1").alias(x), low, high)
    return pl.concat([first, last]).unique(subset=[x], keep="first").sort(x)


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
    y_step, x_step = 0.0, 0.0
    while True:
        xs = pl.col(x) if x_step == 0 else (pl.col(x) / x_step).round() * x_step
        ys = pl.col(y) if y_step == 0 else (pl.col(y) / y_step).round() * y_step
        pairs = data.group_by(xs.alias(x), ys.alias(y)).len("count").sort(x, y)
        if pairs.height <= limit:
            return pairs
        y_span = float(data.get_column(y).max() - data.get_column(y).min())  # type: ignore[operator]
        if y_step == 0:
            y_step = 0.01
        elif y_step < y_span:
            y_step *= 2
        else:
            x_step = 1.0 if x_step == 0 else x_step * 2
