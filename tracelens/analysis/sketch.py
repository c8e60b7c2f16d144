"""Whole-run statistics from counts, merged piece by piece: what a run too long to hold
(`long_run`) keeps of a column instead of its values.

`ValueCounts` holds each distinct value once with how many rows had it. SGLang and vLLM print accept
len, rates and throughput with two decimals, so a run of millions of rounds has few distinct values,
and every quantile, median and evenly spaced rank is then exact (`quantile` interpolates as polars'
``"linear"`` does). A column with more than `DISTINCT_LIMIT` distinct values is rounded to
`SIGNIFICANT_DIGITS` significant digits from then on: each value moves by less than 5e-5 of itself,
and so does each statistic read from the counts.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl

DISTINCT_LIMIT = 500_000
SIGNIFICANT_DIGITS = 5
_VALUE, _COUNT = "value", "count"
_EMPTY = pl.DataFrame(schema={_VALUE: pl.Float64, _COUNT: pl.UInt64})


class ValueCounts:
    """The distinct values of a column (nulls and NaN left out, as the statistics leave them out) and
    how often each occurs, added a piece at a time."""

    def __init__(self) -> None:
        self.counts = _EMPTY
        self.rounded = False

    def add(self, values: pl.Series) -> None:
        data = values.cast(pl.Float64).fill_nan(None).drop_nulls()
        if not data.len():
            return
        piece = data.to_frame(_VALUE).group_by(_VALUE).agg(pl.len().cast(pl.UInt64).alias(_COUNT))
        merged = pl.concat([self.counts, piece]).group_by(_VALUE).agg(pl.col(_COUNT).sum())
        if self.rounded or merged.height > DISTINCT_LIMIT:
            self.rounded = True
            merged = merged.group_by(pl.col(_VALUE).round_sig_figs(SIGNIFICANT_DIGITS)).agg(
                pl.col(_COUNT).sum()
            )
        self.counts = merged

    def total(self) -> int:
        """How many values were counted."""
        return int(self.counts.get_column(_COUNT).sum())

    def deviations(self, center: float) -> ValueCounts:
        """The counts of each value's absolute distance from ``center`` (their median is the median
        absolute deviation when ``center`` is the median)."""
        out = ValueCounts()
        out.counts = self.counts.group_by((pl.col(_VALUE) - center).abs().alias(_VALUE)).agg(
            pl.col(_COUNT).sum()
        )
        out.rounded = self.rounded
        return out

    def mean(self) -> float | None:
        """The mean of the counted values (polars' ``mean`` after ``fill_nan(None).drop_nulls()``)."""
        total = int(self.counts.get_column(_COUNT).sum())
        if not total:
            return None
        return float((self.counts.get_column(_VALUE) * self.counts.get_column(_COUNT)).sum()) / total

    def _sorted(self, finite: bool = False) -> tuple[np.ndarray, np.ndarray]:
        counts = self.counts
        if finite:
            counts = counts.filter(pl.col(_VALUE).is_finite())
        counts = counts.sort(_VALUE)
        return counts.get_column(_VALUE).to_numpy(), np.cumsum(
            counts.get_column(_COUNT).to_numpy().astype(np.int64)
        )

    @staticmethod
    def _at(values: np.ndarray, ends: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        """The values at 0-based ``ranks`` of the sorted column (``ends``: cumulative counts)."""
        return values[np.searchsorted(ends, ranks, side="right")]

    def quantile(self, q: float) -> float | None:
        """As polars' ``quantile(q, "linear")`` of the column (and ``median`` at 0.5)."""
        values, ends = self._sorted()
        if not values.size:
            return None
        n = int(ends[-1])
        at = q * (n - 1)
        low = math.floor(at)
        a, b = self._at(values, ends, np.array([low, min(low + 1, n - 1)]))
        return float(a + (at - low) * (b - a)) if b != a else float(a)

    def ranks_sample(self, limit: int) -> np.ndarray:
        """What `plotdata.quantile_sample` gives of the column's finite values: all of them sorted when
        there are at most ``limit``, else those at ``limit`` evenly spaced ranks."""
        values, ends = self._sorted(finite=True)
        if not values.size:
            return values
        n = int(ends[-1])
        if n <= limit:
            return np.repeat(values, np.diff(ends, prepend=np.zeros(1, ends.dtype)))
        ranks = np.linspace(0, n - 1, limit).round().astype(np.int64)
        return self._at(values, ends, ranks)


class Sums:
    """Sum and count of a column's non-null values: its mean, a NaN anywhere making it NaN as polars'
    ``mean`` does."""

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def add(self, values: pl.Series) -> None:
        data = values.cast(pl.Float64).drop_nulls()
        if data.len():
            self.total += float(data.sum())
            self.count += data.len()

    def mean(self) -> float | None:
        return self.total / self.count if self.count else None


class Blocks:
    """A column's values in their order, as means of consecutive blocks of ``size`` values (each value
    its own block when ``size`` is 1), with the time and line of each block's first value: the input of
    a change-point search over a run too long to hold every value."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.means: list[np.ndarray] = []
        self.starts: list[pl.DataFrame] = []  # ts, line_no of each block's first value
        self._carry: pl.DataFrame | None = None  # the values of a block not yet full, with ts, line_no

    def add(self, rows: pl.DataFrame, column: str, ts: str, line: str) -> None:
        rows = rows.select(column, ts, line).filter(pl.col(column).is_not_null())
        if self._carry is not None:
            rows = pl.concat([self._carry, rows])
        full = rows.height - rows.height % self.size
        self._take(rows.head(full), column)
        self._carry = rows.slice(full) if full < rows.height else None

    def _take(self, rows: pl.DataFrame, column: str) -> None:
        if not rows.height:
            return
        values = rows.get_column(column).cast(pl.Float64).to_numpy()
        self.means.append(values if self.size == 1 else values.reshape(-1, self.size).mean(axis=1))
        self.starts.append(rows.gather_every(self.size).select(rows.columns[1:]))

    def finish(self, column: str) -> tuple[np.ndarray, pl.DataFrame]:
        """The block means and their first rows' ts and line, the last block as long as it got."""
        if self._carry is not None and self._carry.height:
            carry, self._carry = self._carry, None
            values = carry.get_column(column).cast(pl.Float64).to_numpy()
            self.means.append(np.array([values.mean()]))
            self.starts.append(carry.head(1).select(carry.columns[1:]))
        if not self.means:
            return np.empty(0), pl.DataFrame()
        return np.concatenate(self.means), pl.concat(self.starts)
