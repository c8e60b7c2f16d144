"""Read the fields of a leading pattern once per distinct matched text.

A capture group makes the regex engine leave its fast automaton, and a block repeats the same few
heads thousands of times (one SGLang prefix per second and rank, `Decode batch, `, `EAGLE3_DEBUG[dsv2] `).
So the pattern is matched without captures to find each line's text, and the named groups are read
on the distinct texts only, then joined back.
"""

from __future__ import annotations

import re

import polars as pl


def without_captures(pattern: str) -> str:
    """The same pattern with every named group made non-capturing."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


def with_groups(df: pl.DataFrame, column: str, pattern: str, key: str) -> pl.DataFrame:
    """``df`` plus ``key`` (the text ``pattern`` matched in ``column``, null when none) and one column
    per named group of the anchored ``pattern``."""
    df = df.with_columns(pl.col(column).str.extract(without_captures(pattern), 0).alias(key))
    distinct = (
        df.select(pl.col(key).unique())
        .with_columns(pl.col(key).str.extract_groups(pattern).alias("_groups"))
        .unnest("_groups")
    )
    return df.join(distinct, on=key, how="left", maintain_order="left", nulls_equal=True)
