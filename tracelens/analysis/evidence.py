"""The text of cited log lines: from the dataset's `evidence` table when it kept them, else from the
source by byte offset (`tracelens.sources.archives.read_source_lines`, one pass per source). When the
source is gone, a batch line (a decode line where acceptance steps down, say) is rebuilt from its parsed
fields and says so; other lines of a gone source give no text, except for those the dataset kept.
"""

from __future__ import annotations

import polars as pl

from tracelens.sources.archives import read_source_lines
from tracelens.tables.schema import BATCH_FIELDS, C

Key = tuple[str, int]  # (source, line_no)


REBUILT = "(rebuilt from the parsed fields: the log is gone)"
# One log key per batch column: the first the field guide lists for it.
_BATCH_KEYS: dict[str, str] = {}
for _field in BATCH_FIELDS:
    _BATCH_KEYS.setdefault(_field.column, _field.log_key)


def texts(
    keys: set[Key],
    lines: pl.DataFrame | pl.LazyFrame,
    kept: pl.LazyFrame,
    batches: pl.LazyFrame | None = None,
) -> dict[Key, str]:
    """The text of each cited (source, line_no): ``kept`` (a scan of the `evidence` table, filtered
    before it is loaded) first, the rest read from the sources by the offsets in ``lines``, and what
    is still missing rebuilt from ``batches`` when given."""
    if not keys:
        return {}
    wanted = pl.DataFrame(list(keys), schema={C.SOURCE: pl.String, C.LINE_NO: pl.Int64}, orient="row")
    out: dict[Key, str] = {}
    near = kept.filter(pl.col(C.LINE_NO).is_in(wanted.get_column(C.LINE_NO).unique().implode()))
    hits = near.collect().join(wanted, on=[C.SOURCE, C.LINE_NO]).unique([C.SOURCE, C.LINE_NO])
    out.update(((s, n), t) for s, n, t in hits.select(C.SOURCE, C.LINE_NO, C.TEXT).iter_rows())
    found = pl.DataFrame(list(out), schema=wanted.schema, orient="row")
    missing = wanted.join(found, on=[C.SOURCE, C.LINE_NO], how="anti")
    where = (
        lines.lazy()
        # the line numbers alone first: a scan of a dataset skips every row group that holds none of them
        .filter(pl.col(C.LINE_NO).is_in(missing.get_column(C.LINE_NO).unique().implode()))
        .select(C.SOURCE, C.LINE_NO, C.BYTE_OFFSET, C.BYTE_LEN)
        .join(missing.lazy(), on=[C.SOURCE, C.LINE_NO])
        .collect()
    )
    for (source,), group in where.group_by(C.SOURCE):
        spans = [(n, o, length) for _, n, o, length in group.iter_rows()]
        for line_no, text in read_source_lines(str(source), spans).items():
            out[(str(source), line_no)] = text
    gone = {key for key in keys if not out.get(key)}
    if batches is not None and gone:
        out.update(_rebuilt(gone, batches))
    return out


def _rebuilt(keys: set[Key], batches: pl.LazyFrame) -> dict[Key, str]:
    """Batch lines written again from their typed row, e.g. `[2026-08-06 07:16:11] Decode batch,
    #running-req: 1, accept len: 2.58, ...`, marked as rebuilt (the values' printed precision is lost)."""
    wanted = pl.DataFrame(list(keys), schema={C.SOURCE: pl.String, C.LINE_NO: pl.Int64}, orient="row")
    rows = (
        batches.filter(pl.col(C.LINE_NO).is_in(wanted.get_column(C.LINE_NO).unique().implode()))
        .join(wanted.lazy(), on=[C.SOURCE, C.LINE_NO])
        .collect()
    )
    out = {}
    for row in rows.iter_rows(named=True):
        fields = [
            f"{key}: {_value(row[column])}"
            for column, key in _BATCH_KEYS.items()
            if column in row and row[column] is not None
        ]
        stamp = f"[{row[C.TS]:%Y-%m-%d %H:%M:%S}] " if row.get(C.TS) is not None else ""
        body = ", ".join([f"{str(row[C.PHASE]).capitalize()} batch", *fields])
        out[(row[C.SOURCE], row[C.LINE_NO])] = f"{stamp}{body} {REBUILT}"
    return out


def _value(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)
