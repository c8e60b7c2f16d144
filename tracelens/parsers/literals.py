"""Literal substring tests that leave polars' regex cache to the regexes.

polars (2.1) runs `str.contains(text, literal=True)` (and `str.find`) through the same cache of compiled
regexes as its patterns, as a regex of the escaped text: a cache of 32 entries per thread, least recently
used first out. A block's parse tested some forty literals (the fault phrases, the foreign formats' marks)
beside its patterns, so polars' pool thread went through 41 keys in two blocks: every pattern was evicted
before its next use and compiled again, 15 regexes per block in a steady run (up to 1.4 ms each; counted
with a uprobe on the regex builder). `contains_any` (Aho-Corasick) is as fast on one literal or a few
and puts nothing in that cache. A long list of phrases over many lines is faster as one regex of
alternatives (its literal prefilter is SIMD): `pipeline.route_expr` keeps those.
"""

from __future__ import annotations

from typing import TypeVar

import polars as pl

Text = TypeVar("Text", pl.Expr, pl.Series)


def has_literal(text: Text, *literals: str) -> Text:
    """Whether each string of ``text`` contains any of ``literals`` (null where ``text`` is null)."""
    return text.str.contains_any(list(literals))
