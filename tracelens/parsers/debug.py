"""Hand-added `*_DEBUG[site] event: key=value ...` lines (EAGLE3_DEBUG and any tag of that shape).

Parsed generically, so a new debug print needs no new code: every `key=value` item is kept as text in
`items`, and the keys EAGLE-3 debugging relies on get typed columns.
"""

from __future__ import annotations

import polars as pl

from tracelens.schema import COMMON_COLUMNS, C, T, W, conform

DEBUG_PATTERN = r"(?P<tag>[A-Z][A-Z0-9_]*_DEBUG)\[(?P<site>[^\]\s]*)(?P<_close>\])?(?: (?P<_rest>.*))?"
EVENT_PATTERN = r"^([^:=]*?):"
EVENT_BEFORE_ITEMS_PATTERN = r"^([^=]*?)\s*(?:[\w.]+=.*)?$"
# key=value where value is torch.Size([...]), a list (one level of nesting), a bare token, or, when the
# line was cut off, an unclosed list running to the end of the line.
ITEM_PATTERN = r"[\w.]+=(?:torch\.Size\(\[[^\]]*\]\)|\[(?:[^\[\]]|\[[^\[\]]*\])*\]|[^\s,\[\]]+|\[.*$)"
SIZE_PATTERN = r"torch\.Size\(\[[\d, ]*\]\)"


def _int_list(expr: pl.Expr) -> pl.Expr:
    """'1, 7168' -> [1, 7168]."""
    return expr.str.split(",").list.eval(pl.element().str.strip_chars().cast(pl.Int64, strict=False))


def parse_debug(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `debug` -> the `debug` table."""
    found = df.with_columns(pl.col(W.BODY).str.extract_groups(DEBUG_PATTERN).alias("_d")).unnest("_d")
    found = found.filter(pl.col(C.TAG).is_not_null())
    rest = pl.col("_rest").fill_null("")
    items_text = pl.col("_rest").fill_null("")
    event = pl.coalesce(rest.str.extract(EVENT_PATTERN, 1), rest.str.extract(EVENT_BEFORE_ITEMS_PATTERN, 1))
    unbalanced = (rest.str.count_matches("[", literal=True) != rest.str.count_matches("]", literal=True)) | (
        rest.str.count_matches("(", literal=True) != rest.str.count_matches(")", literal=True)
    )
    out = found.with_columns(
        pl.when(pl.col("_close").is_null()).then(None).otherwise(event.str.strip_chars()).alias(C.EVENT),
        items_text.str.extract_all(ITEM_PATTERN)
        .list.eval(
            pl.struct(
                pl.element().str.extract(r"^([^=]*)=", 1).alias(C.KEY),
                pl.element().str.extract(r"^[^=]*=(.*)$", 1).alias(C.VALUE),
            )
        )
        .alias(C.ITEMS),
        items_text.str.extract(r"\bnum_aux=(-?\d+)", 1).cast(pl.Int64).alias(C.NUM_AUX),
        items_text.str.extract(r"\bnum_items=(-?\d+)", 1).cast(pl.Int64).alias(C.NUM_ITEMS),
        items_text.str.extract(r"\blayer_id=(-?\d+)", 1).cast(pl.Int64).alias(C.LAYER_ID),
        _int_list(items_text.str.extract(r"\blayer_ids=\[([-\d, ]*)\]", 1)).alias(C.LAYER_IDS),
        items_text.str.extract(r"\bnorm=([^\s,]+)", 1).cast(pl.Float64, strict=False).alias(C.NORM),
        items_text.str.extract_all(SIZE_PATTERN)
        .list.eval(_int_list(pl.element().str.extract(r"\[([\d, ]*)\]", 1)))
        .alias(C.SHAPES),
        (pl.col("_close").is_null() | unbalanced).alias(C.TRUNCATED),
    )
    return conform(
        T.DEBUG,
        out.select(
            *COMMON_COLUMNS,
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
        ),
    )
