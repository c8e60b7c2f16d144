"""Hand-added `*_DEBUG[site] event: key=value ...` lines (EAGLE3_DEBUG and any tag of that shape).

Parsed generically, so a new debug print needs no new code: every `key=value` item is kept as text in
`items`, and the keys EAGLE-3 debugging relies on get typed columns.

Speed notes: an eager polars `select` recomputes a subexpression for every column that uses it, so
intermediate values (`_rest`, the item list) are materialised once as columns; no pattern captures
`.*` to the end of the line (the rest is sliced off after the header instead).
"""

from __future__ import annotations

import polars as pl

from tracelens.parsers.distinct import with_groups
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform

# The header, wherever it starts in the body (`W.BEFORE_HEADER` is what comes before it, usually nothing). The
# items follow one space after it; a header not followed by a space has no items.
HEADER_PATTERN = rf"^(?P<{W.BEFORE_HEADER}>.*?)(?P<tag>[A-Z][A-Z0-9_]*_DEBUG)\[(?P<site>[^\]\s]*)(?P<{W.CLOSE}>\])?(?P<{W.SPACE}> )?"
# The whole line as `explain` matches it (parsing slices the rest off after HEADER_PATTERN instead).
DEBUG_PATTERN = rf"(?P<tag>[A-Z][A-Z0-9_]*_DEBUG)\[(?P<site>[^\]\s]*)(?P<{W.CLOSE}>\])?(?: (?P<{W.REST}>.*))?"
EVENT_PATTERN = r"^([^:=]*?):"
EVENT_BEFORE_ITEMS_PATTERN = r"^([^=]*?)\s*(?:[\w.]+=.*)?$"
# key=value where value is torch.Size([...]), a list (one level of nesting), a bare token, or, when the
# line was cut off, an unclosed list running to the end of the line.
ITEM_PATTERN = r"[\w.]+=(?:torch\.Size\(\[[^\]]*\]\)|\[(?:[^\[\]]|\[[^\[\]]*\])*\]|[^\s,\[\]]+|\[.*$)"
SIZE_PATTERN = r"torch\.Size\(\[[\d, ]*\]\)"


def _int_list(expr: pl.Expr) -> pl.Expr:
    """'1, 7168' -> [1, 7168]."""
    return expr.str.split(",").list.eval(pl.element().str.strip_chars().cast(pl.Int64, strict=False))


def _event(found: pl.DataFrame) -> pl.Series:
    """The event phrase: the text before the first `:` (when no `=` comes first), else the text before
    the first `key=` item. The second, costlier pattern runs only on the rows the first did not read."""
    rest = pl.col(W.REST)
    event = found.select(rest.str.extract(EVENT_PATTERN, 1)).to_series()
    missing = event.is_null() & found.get_column(W.CLOSE).is_not_null()
    if missing.any():
        idx = missing.arg_true()
        other = found[idx].select(rest.str.extract(EVENT_BEFORE_ITEMS_PATTERN, 1)).to_series()
        event = event.scatter(idx, other)
    closed = found.get_column(W.CLOSE).is_not_null()
    return pl.select(pl.when(closed).then(event.str.strip_chars())).to_series().alias(C.EVENT)


def parse_debug(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `debug` -> the `debug` table. A debug print repeats its text often (the same
    `forward end: num_aux=3, shapes=[...]` every step), so each distinct body is read once and the
    rows are joined back; lines whose header does not match are dropped."""
    bodies = df.select(pl.col(W.BODY).unique())
    fields = _parse_bodies(bodies)
    rows = df.select(*COMMON_COLUMNS, W.BODY).join(fields, on=W.BODY, how="inner", maintain_order="left")
    return conform(T.DEBUG, rows.drop(W.BODY))


def _parse_bodies(bodies: pl.DataFrame) -> pl.DataFrame:
    """BODY and the debug table's own columns, for the bodies whose header matches."""
    found = with_groups(bodies, W.BODY, HEADER_PATTERN, W.HEADER).filter(pl.col(C.TAG).is_not_null())
    found = found.with_columns(
        pl.when(pl.col(W.SPACE).is_not_null())
        .then(pl.col(W.BODY).str.slice(pl.col(W.HEADER).str.len_chars()))
        .otherwise(pl.lit(""))
        .alias(W.REST)
    )
    rest = pl.col(W.REST)
    items = rest.str.extract_all(ITEM_PATTERN).list.eval(
        pl.element().str.splitn("=", 2).struct.rename_fields([C.KEY, C.VALUE])
    )
    sizes = rest.str.extract_all(SIZE_PATTERN).list.eval(
        _int_list(pl.element().str.strip_prefix("torch.Size([").str.strip_suffix("])"))
    )
    unbalanced = (rest.str.count_matches("[", literal=True) != rest.str.count_matches("]", literal=True)) | (
        rest.str.count_matches("(", literal=True) != rest.str.count_matches(")", literal=True)
    )
    out = found.with_columns(
        _event(found),
        items.alias(C.ITEMS),
        rest.str.extract(r"\bnum_aux=(-?\d+)", 1).cast(pl.Int64).alias(C.NUM_AUX),
        rest.str.extract(r"\bnum_items=(-?\d+)", 1).cast(pl.Int64).alias(C.NUM_ITEMS),
        rest.str.extract(r"\blayer_id=(-?\d+)", 1).cast(pl.Int64).alias(C.LAYER_ID),
        _int_list(rest.str.extract(r"\blayer_ids=\[([-\d, ]*)\]", 1)).alias(C.LAYER_IDS),
        rest.str.extract(r"\bnorm=([^\s,]+)", 1).cast(pl.Float64, strict=False).alias(C.NORM),
        sizes.alias(C.SHAPES),
        (pl.col(W.CLOSE).is_null() | unbalanced).alias(C.TRUNCATED),
    )
    return out.select(
        W.BODY,
        C.TAG,
        C.SITE,
        C.EVENT,
        C.ITEMS,
        C.NUM_AUX,
        C.NUM_ITEMS,
        C.LAYER_ID,
        C.LAYER_IDS,
        C.NORM,
        C.SHAPES,
        C.TRUNCATED,
    )
