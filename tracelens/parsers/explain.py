"""How one line was read: its wrappers and prefix, its kind, its parsed fields, and for a line no
kind could read, the closest kind and the column where the line stopped matching that kind's pattern.

The "where it stopped" search uses the `regex` package's partial matching: the longest prefix of the
line that could still grow into a match. Partial matches are monotonic in the prefix length, so a
binary search finds it in O(log n) matches.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

import polars as pl
import regex

from tracelens.parsers.batch import HEADER_PATTERN, PAIR_PATTERN
from tracelens.parsers.debug import DEBUG_PATTERN
from tracelens.parsers.foreign import FOREIGN_FORMATS
from tracelens.parsers.http import ACCESS_PATTERN
from tracelens.parsers.prefix import PREFIX_PATTERN, add_prefix_columns
from tracelens.sources.files import lines_of_text
from tracelens.tables.frames import Tables
from tracelens.tables.schema import KIND_TABLE, RANK_COLUMNS, C, Kind, T, W

# Full-line patterns of the kinds a near-miss is most often meant to be; `body` = after the prefix.
_BATCH_LINE = HEADER_PATTERN + rf"(?:{PAIR_PATTERN}[,.]? ?)*$"
_CANDIDATES: tuple[tuple[str, str, str], ...] = (
    (Kind.BATCH, _BATCH_LINE, "body"),
    (Kind.DEBUG, "^" + DEBUG_PATTERN + "$", "body"),
    (Kind.HTTP, ACCESS_PATTERN + ".*$", "body"),
    ("sglang prefix", PREFIX_PATTERN, "clean"),
    *((f"{Kind.FOREIGN} ({f.name})", f.pattern, "clean") for f in FOREIGN_FORMATS if f.name != "tqdm"),
)


@dataclass
class NearMiss:
    """The kind whose pattern a line followed longest, and where it stopped following it."""

    kind: str
    matched: int  # characters of the text that still fit the pattern
    text: str

    def pointer(self) -> str:
        return f"{self.text[: self.matched]}⟨stops here⟩{self.text[self.matched :]}"


@dataclass
class Explanation:
    source: str
    line_no: int
    text: str
    clean: str
    body: str
    prefix: dict[str, Any]
    kind: str
    table: str
    record: int | None
    fields: dict[str, Any] = field(default_factory=dict)
    near_miss: NearMiss | None = None
    run: int | None = None  # the server start the line belongs to (0: before the first)


def _matched_length(pattern: str, text: str) -> int:
    compiled = regex.compile(pattern)
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if compiled.fullmatch(text[:mid], partial=True):
            lo = mid
        else:
            hi = mid - 1
    return lo


def near_miss(clean: str, body: str) -> NearMiss | None:
    """The candidate kind that matches the longest part of the line; None when no kind follows it for
    at least 10 characters and a quarter of the line (then nothing is close)."""
    best: NearMiss | None = None
    for kind, pattern, where in _CANDIDATES:
        text = body if where == "body" else clean
        matched = _matched_length(pattern, text)
        if matched >= max(10, len(text) // 4) and (best is None or matched > best.matched):
            best = NearMiss(kind, matched, text)
    return best


def _prefix_fields(text: str, base_date: dt.date | None) -> tuple[str, str, dict[str, Any]]:
    row = add_prefix_columns(lines_of_text(text), base_date).row(0, named=True)
    prefix = {k: row[k] for k in (C.TS, *RANK_COLUMNS, C.LEVEL, C.LOGGER) if row[k] is not None}
    return row[W.CLEAN], row[W.BODY], prefix


def _table_row(tables: Tables, table: str, source: str, record: int) -> dict[str, Any]:
    if table in (T.LINES,):
        return {}
    frame = tables[table]
    key = C.FIRST_LINE if table == T.FAULTS else C.LINE_NO
    hit = frame.filter((pl.col(C.SOURCE) == source) & (pl.col(key) == record))
    if not hit.height:
        return {}
    return {k: v for k, v in hit.row(0, named=True).items() if v is not None and v != []}


def explain(
    tables: Tables, source: str, line_no: int, text: str, base_date: dt.date | None = None
) -> Explanation:
    """Explain line ``line_no`` of ``source`` given the finalized tables of that source and its text."""
    line = tables[T.LINES].filter((pl.col(C.SOURCE) == source) & (pl.col(C.LINE_NO) == line_no))
    if not line.height:
        raise KeyError(f"{source}:{line_no} is not a line of the parsed input")
    row = line.row(0, named=True)
    clean, body, prefix = _prefix_fields(text, base_date)
    kind = row[C.KIND]
    table = KIND_TABLE[kind]
    result = Explanation(
        source, line_no, text, clean, body, prefix, kind, table, row[C.RECORD], run=row[C.RUN]
    )
    result.fields = _table_row(tables, table, source, row[C.RECORD])
    if kind in (Kind.UNPARSED, Kind.MESSAGE):
        result.near_miss = near_miss(clean, body)
    return result
