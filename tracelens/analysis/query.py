"""SQL over the parsed tables (polars SQL): every table is registered under its own name."""

from __future__ import annotations

import polars as pl

from tracelens.errors import InputError
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import TABLES


def run_sql(tables: Tables, query: str) -> pl.DataFrame:
    """The query's result. Tables are registered as lazy scans and the query runs on the streaming
    engine, so on a dataset it reads only the columns it names and an aggregate holds its groups only."""
    context = pl.SQLContext({name: tables.scan(name) for name in TABLES})
    try:
        return collect(context.execute(query, eager=False))
    except (
        pl.exceptions.SQLInterfaceError,
        pl.exceptions.SQLSyntaxError,
        pl.exceptions.ColumnNotFoundError,
        pl.exceptions.ComputeError,
        pl.exceptions.InvalidOperationError,
    ) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"SQL: {first}") from exc
