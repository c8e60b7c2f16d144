"""Centred rolling quantiles of one run's column, the same values as polars' `rolling_quantile`
(`interpolation="nearest"`, `min_samples=1`, `center=True`) at a fraction of its cost.

polars keeps one sorted window per quantile and moves it row by row; the series needs three quantiles of
accept len and one of throughput on every decode round, which was most of the cost of a long run's
series. Here every full window is sorted at once (numpy, a block of rows at a time so memory stays
small) and each quantile is a column of the sorted block. The rows near either end, whose windows are
cut short, and any column with a null or a non-finite value keep polars' own computation, so the result
is polars' everywhere (tests/test_analysis.py checks it against `rolling_quantile` on random data with
ties).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from numpy.lib.stride_tricks import sliding_window_view

BLOCK = 1 << 13  # windows sorted at a time: 8k x 21 floats, 1.3 MiB


def _polars(values: pl.Series, q: float, window: int) -> pl.Series:
    return values.rolling_quantile(q, window_size=window, min_samples=1, center=True)


def rolling_quantiles(values: pl.Series, quantiles: dict[str, float], window: int) -> list[pl.Series]:
    """One series per ``quantiles`` item (name -> q), as polars' centred `rolling_quantile` of
    ``values`` (odd ``window``) gives it."""
    n = values.len()
    floats = values.cast(pl.Float64)
    exact = window % 2 == 1 and n >= 2 * window and floats.null_count() == 0 and floats.is_finite().all()
    if not exact:
        return [_polars(values, q, window).alias(name) for name, q in quantiles.items()]
    data = floats.to_numpy()
    half = window // 2
    # The rank of the "nearest" quantile of a full window, as polars picks it.
    ranks = [math.floor(q * (window - 1) + 0.5) for q in quantiles.values()]
    out = [np.empty(n) for _ in ranks]
    windows = sliding_window_view(data, window)  # row i: the window centred on i + half
    for start in range(0, len(windows), BLOCK):
        block = np.sort(windows[start : start + BLOCK], axis=1)
        for column, rank in zip(out, ranks, strict=True):
            column[start + half : start + half + len(block)] = block[:, rank]
    head, tail = floats.head(window), floats.tail(window)
    for column, q in zip(out, quantiles.values(), strict=True):
        column[:half] = _polars(head, q, window).to_numpy()[:half]
        column[n - half :] = _polars(tail, q, window).to_numpy()[window - half :]
    return [
        pl.Series(name, column).cast(values.dtype) if values.dtype.is_float() else pl.Series(name, column)
        for name, column in zip(quantiles, out, strict=True)
    ]
