"""Nothing lost: check that every input line is in `lines` exactly once and in the table of its kind.

A line of kind K is accounted for when it is a row of K's table (faults are keyed by `first_line`) or
a continuation whose `record` is such a row. Blank lines live only in `lines`. A line that holds
several records of one kind glued together (a copy that lost its newlines) is several rows of that
table, one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from tracelens.tables.frames import Tables
from tracelens.tables.schema import KIND_TABLE, C, T


@dataclass
class Reconciliation:
    lines: int
    by_kind: dict[str, int]
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _row_keys(tables: Tables, table: str) -> pl.DataFrame:
    key = C.FIRST_LINE if table == T.FAULTS else C.LINE_NO
    return tables[table].select(C.SOURCE, pl.col(key).alias(C.RECORD)).unique()


def reconcile(tables: Tables, expected_lines: dict[str, int] | None = None) -> Reconciliation:
    """Check the tables against each other (and against each source's physical line count if given)."""
    lines = tables[T.LINES]
    result = Reconciliation(lines.height, dict(lines.group_by(C.KIND).len().iter_rows()))
    per_source = lines.group_by(C.SOURCE).agg(
        pl.len().alias("n"),
        pl.col(C.LINE_NO).n_unique().alias("unique"),
        pl.col(C.LINE_NO).max().alias("last"),
    )
    for source, n, unique, last in per_source.iter_rows():
        if not (n == unique == last):
            result.problems.append(f"{source}: {n} rows for {unique} distinct line numbers up to {last}")
        if expected_lines is not None and expected_lines.get(source, n) != n:
            result.problems.append(
                f"{source}: {n} rows in `lines` but the input has {expected_lines[source]} lines"
            )
    for kind, table in KIND_TABLE.items():
        if table == T.LINES:
            continue
        of_kind = lines.filter(pl.col(C.KIND) == kind).select(C.SOURCE, C.LINE_NO, C.RECORD)
        missing = of_kind.join(_row_keys(tables, table), on=[C.SOURCE, C.RECORD], how="anti")
        if missing.height:
            first = missing.row(0, named=True)
            result.problems.append(
                f"{missing.height} {kind} line(s) not in `{table}`, e.g. {first[C.SOURCE]}:{first[C.LINE_NO]}"
            )
        heads = of_kind.filter(pl.col(C.RECORD) == pl.col(C.LINE_NO)).height
        # a line that holds several records glued (`parsers/glued.py`) is one row per record
        rows = _row_keys(tables, table).height
        if rows != heads:
            result.problems.append(f"`{table}` has {rows} rows for {heads} {kind} record(s)")
    return result
