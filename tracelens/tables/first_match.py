"""One polars expression for "the value of the first test that holds": a `when/then` chain built from
a list of cases, the way kinds, fault phrases, lifecycle events and foreign formats are declared."""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl
from polars.expr.whenthen import ChainedThen, Then


def first_match(cases: Iterable[tuple[pl.Expr, pl.Expr]], otherwise: pl.Expr | None = None) -> pl.Expr:
    """The value of the first (test, value) case whose test holds, else ``otherwise`` (null when None)."""
    chain: Then | ChainedThen | None = None
    for test, value in cases:
        chain = pl.when(test).then(value) if chain is None else chain.when(test).then(value)
    fallback = otherwise if otherwise is not None else pl.lit(None)
    return fallback if chain is None else chain.otherwise(fallback)
