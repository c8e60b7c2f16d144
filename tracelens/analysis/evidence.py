"""The text of cited log lines: from the dataset's `evidence` table when it kept them, else from the
source by byte offset (`tracelens.sources.archives.read_source_lines`, one pass per source). A source
that is gone gives no text, except for the lines the dataset kept.
"""

from __future__ import annotations

import polars as pl

from tracelens.sources.archives import read_source_lines
from tracelens.tables.schema import C

Key = tuple[str, int]  # (source, line_no)


def texts(keys: set[Key], lines: pl.DataFrame | pl.LazyFrame, kept: pl.LazyFrame) -> dict[Key, str]:
    """The text of each cited (source, line_no): ``kept`` (a scan of the `evidence` table, filtered
    before it is loaded) first, the rest read from the sources by the offsets in ``lines``."""
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
    return out
