"""The analysis's own rolling quantiles give polars' values, and its threads keep the order."""

from __future__ import annotations

import threading
import time

import numpy as np
import polars as pl
import pytest

from tracelens.analysis.parallel import in_order
from tracelens.analysis.rolling import rolling_quantiles

QUANTILES = {"p10": 0.1, "median": 0.5, "p90": 0.9, "q25": 0.25, "q75": 0.75, "q30": 0.3}


@pytest.mark.parametrize("window", [3, 5, 21])
@pytest.mark.parametrize("size", [0, 4, 42, 5000])
@pytest.mark.parametrize("kind", ["ties", "floats", "nulls", "nan", "ints"])
def test_rolling_quantiles_equal_polars(window: int, size: int, kind: str) -> None:
    rng = np.random.default_rng(size + window)
    if kind == "ties":  # accept len: a few distinct values, many equal neighbours
        values = pl.Series("x", rng.integers(1, 6, size).astype(float))
    elif kind == "ints":
        values = pl.Series("x", rng.integers(0, 100, size))
    else:
        values = pl.Series("x", rng.normal(100, 20, size))
        if size and kind == "nulls":
            values = values.scatter(list(range(0, size, 7)), None)
        if size and kind == "nan":
            values = values.scatter(list(range(0, size, 11)), float("nan"))
    got = rolling_quantiles(values, QUANTILES, window)
    for (name, q), series in zip(QUANTILES.items(), got, strict=True):
        expected = values.rolling_quantile(q, window_size=window, min_samples=1, center=True)
        assert series.name == name
        assert series.alias("x").equals(expected), (name, kind, size, window)


def test_in_order_keeps_the_order_and_bounds_the_work_in_flight() -> None:
    running, most = 0, 0
    lock = threading.Lock()

    def slow(i: int) -> int:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.01 * (i % 3))  # later items often finish first
        with lock:
            running -= 1
        return i * i

    assert list(in_order(slow, range(20), workers=2)) == [i * i for i in range(20)]
    assert most <= 2
    assert list(in_order(slow, range(5), workers=1)) == [0, 1, 4, 9, 16]
