"""Read the fields of a leading pattern once per distinct matched text.

A capture group makes the regex engine leave its fast automaton, and a block repeats the same few
heads thousands of times (one SGLang prefix per second and rank, `Decode batch, `, `EAGLE3_DEBUG[dsv2] `).
So the pattern is matched without captures to find each line's text, and the named groups are read
on the distinct texts only, then joined back.
"""

from __future__ import annotations

import re
from functools import cache

import polars as pl

from tracelens.tables.schema import W


def without_captures(pattern: str) -> str:
    """The same pattern with every named group made non-capturing."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


@cache
def groups_expr(column: str, pattern: str, strip: bool = False) -> pl.Expr:
    """``column`` (stripped of surrounding whitespace when ``strip``) read by ``pattern``'s named groups,
    as a struct. Built once per pattern: building it compiles the pattern, which cost more per block
    than matching a block's few distinct texts."""
    text = pl.col(column).str.strip_chars() if strip else pl.col(column)
    return text.str.extract_groups(pattern)


def with_groups(df: pl.DataFrame, column: str, pattern: str, key: str) -> pl.DataFrame:
    """``df`` plus ``key`` (the text ``pattern`` matched in ``column``, null when none) and one column
    per named group of the anchored ``pattern``."""
    df = df.with_columns(pl.col(column).str.extract(without_captures(pattern), 0).alias(key))
    distinct = (
        df.select(pl.col(key).unique())
        .with_columns(groups_expr(key, pattern).alias(W.GROUPS))
        .unnest(W.GROUPS)
    )
    return df.join(distinct, on=key, how="left", maintain_order="left", nulls_equal=True)
