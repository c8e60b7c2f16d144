"""SQL over the parsed tables (polars SQL): every table is registered under its own name."""

from __future__ import annotations

import polars as pl

from tracelens.errors import InputError
from tracelens.schema import TABLES
from tracelens.tables import Tables


def run_sql(tables: Tables, query: str) -> pl.DataFrame:
    context = pl.SQLContext({name: tables[name] for name in TABLES}, eager=True)
    try:
        return context.execute(query, eager=True)
    except (
        pl.exceptions.SQLInterfaceError,
        pl.exceptions.SQLSyntaxError,
        pl.exceptions.ColumnNotFoundError,
        pl.exceptions.ComputeError,
        pl.exceptions.InvalidOperationError,
    ) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"SQL: {first}") from exc
