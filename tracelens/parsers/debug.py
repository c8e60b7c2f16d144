"""Hand-added `*_DEBUG[site] event: key=value ...` lines (EAGLE3_DEBUG and any tag of that shape).

Parsed generically, so a new debug print needs no new code: every `key=value` item is kept as text in
`items`, and the keys EAGLE-3 debugging relies on get typed columns.

Read by template: a debug print repeats its text but for a value that changes every step
(`aux capture: layer_id=30 shape=torch.Size([1, 7168]) norm=40.9112`), so the first `norm=` value of
each line is cut out (`SLOT_PATTERN`), leaving a template with a placeholder; a block holds a handful
of templates where it held thousands of distinct bodies. Each template is read once by the patterns,
and remembered for the process's next blocks (`_Memo`: reading is a pure function of the text). The
value is then put back where the template's reading holds the placeholder: into `norm` and into the
item that carries it. That is exact when the placeholder stands alone as a bare value after the header
(`_template_flags` says why); a line whose template fails the test is read from its whole body, and so
is a block with many lines of new templates seen once (a print that counts something). A 3 MiB block of
the issue-11 mix (3,900 debug lines) costs one core 3-5 ms this way, 10-13 read by body.
`parse_debug(df, templates=False)` reads every distinct body whole: the reference the tests compare with.

Speed notes: an eager polars `select` recomputes a subexpression for every column that uses it, so
intermediate values (`_rest`, the item list) are materialised once as columns; no pattern captures
`.*` to the end of the line (the rest is sliced off after the header instead).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from tracelens.parsers.distinct import with_groups
from tracelens.parsers.literals import has_literal
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform, project

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
NORM_PATTERN = r"\bnorm=([^\s,]+)"
NORM_MATCH = r"\bnorm=[^\s,]+"  # NORM_PATTERN's whole match, read without a capture (twice as fast)
# The value a line's template leaves out: the first `norm=` followed by a bare word (`40.9`, `1e-05`,
# `nan`, `-3`). Neither a word boundary nor what follows is tested here: the template's own reading
# decides whether putting the value back is exact, and reads the line whole when it is not.
SLOT_PATTERN = r"norm=[-+.0-9A-Za-z_]+"
SLOT_KEY = "norm="
SLOT_MARK = "\x00"  # the placeholder; a body that holds one itself is read whole
# The placeholder where a cut is exact: a bare value of its own (a separator or the end follows).
SLOT_END_PATTERN = r"\x00(?:[\s,]|$)"
FIELDS = (
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


def parse_debug(df: pl.DataFrame, templates: bool = True) -> pl.DataFrame:
    """Rows routed to `debug` -> the `debug` table; lines whose header does not match are dropped.
    Each line is read by its template (its body with the `norm=` value cut out); ``templates=False``
    reads each distinct body whole instead (the reference)."""
    if not templates or df.is_empty():
        return _parse_whole(df)
    body = pl.col(W.BODY)
    cut = df.select(
        body.str.replace(SLOT_PATTERN, SLOT_KEY + SLOT_MARK).alias(W.TEMPLATE),
        body.str.extract(SLOT_PATTERN, 0).str.slice(len(SLOT_KEY)).alias(W.SLOT),
    )
    fields = _MEMO.fields(project(cut, W.TEMPLATE))
    if fields is None:  # many lines of new templates seen once: templates do not pay in this block
        return _parse_whole(df)
    slot = cut.get_column(W.SLOT)
    if fields.get_column(W.TEMPLATE_OK).null_count():  # a template where putting back is not exact
        whole = slot.is_not_null() & fields.get_column(W.TEMPLATE_OK).is_null()
        if whole.any():  # rare: these lines are read from their body, with nothing cut out
            again = pl.select(
                pl.when(whole)
                .then(df.get_column(W.BODY))
                .otherwise(cut.get_column(W.TEMPLATE))
                .alias(W.TEMPLATE),
                pl.when(~whole).then(slot).alias(W.SLOT),
            )
            fields = _MEMO.fields(again.select(W.TEMPLATE), always=True)
            assert fields is not None  # `always` never declines
            slot = again.get_column(W.SLOT)
    # Now a line has a cut value only where its template puts it back exactly.
    out = pl.concat([project(df, *COMMON_COLUMNS), slot.to_frame(), fields], how="horizontal")
    if out.get_column(C.TAG).null_count():
        out = out.filter(pl.col(C.TAG).is_not_null())
    value = pl.col(W.SLOT)
    norm = pl.when(value.is_not_null() & pl.col(W.SLOT_NORM)).then(value.cast(pl.Float64, strict=False))
    return conform(T.DEBUG, out.with_columns(norm.otherwise(pl.col(C.NORM)).alias(C.NORM), _put_back(out)))


def _parse_whole(df: pl.DataFrame) -> pl.DataFrame:
    """The reference read: each distinct body read whole by the patterns, the rows joined back."""
    bodies = df.select(pl.col(W.BODY).unique())
    fields = _parse_bodies(bodies)
    rows = df.select(*COMMON_COLUMNS, W.BODY).join(fields, on=W.BODY, how="inner", maintain_order="left")
    return conform(T.DEBUG, rows.drop(W.BODY))


class _Memo:
    """The templates this process has read, with their fields and how to put a value back (one row
    per template). The same few templates come back in every block, and reading one costs the block
    the patterns' fixed cost (about 5 ms of polars calls and regex compiles, whatever the row count):
    as much as the whole-body read of the block. So a block whose new templates are only a few keeps
    them all, else only those it repeats; and a block with more than FEW lines of new templates seen
    once (a print that counts something) is read by body. Bounded: past ``ROWS`` templates or ``BYTES``
    it starts again from the templates of the block at hand."""

    ROWS = 1024
    BYTES = 8 << 20
    FEW = 64

    def __init__(self) -> None:
        self.known: pl.DataFrame | None = None

    def fields(self, keys: pl.DataFrame, always: bool = False) -> pl.DataFrame | None:
        """``keys`` (one TEMPLATE column, a row per line) with each template's fields, in the same order;
        None (unless ``always``) when more than FEW lines are of new templates seen once."""
        known = self.known
        if known is not None:
            found = keys.join(known, on=W.TEMPLATE, how="left", maintain_order="left", nulls_equal=True)
            if not found.get_column(W.SLOT_NORM).null_count():  # SLOT_NORM is never null once read
                return found
            keys_new = keys.filter(found.get_column(W.SLOT_NORM).is_null())
        else:
            keys_new = keys
        new = keys_new.group_by(W.TEMPLATE).len(W.REPEATS)
        if not always and new.get_column(W.REPEATS).eq(1).sum() > self.FEW:
            return None
        read = _read_templates(new)
        keep = read if read.height <= self.FEW else read.filter(pl.col(W.REPEATS) > 1)
        if known is None or known.height > self.ROWS or known.estimated_size() > self.BYTES:
            self.known = keep.drop(W.REPEATS)
        else:
            self.known = pl.concat([known, keep.drop(W.REPEATS)])
        table = read.drop(W.REPEATS) if known is None else pl.concat([known, read.drop(W.REPEATS)])
        return keys.join(table, on=W.TEMPLATE, how="left", maintain_order="left", nulls_equal=True)


_MEMO = _Memo()


def _read_templates(templates: pl.DataFrame) -> pl.DataFrame:
    """``templates`` (TEMPLATE and any other column) with the debug columns of each (TAG null when its
    header does not match) and `_template_flags`."""
    found = _template_flags(_read_bodies(templates.rename({W.TEMPLATE: W.BODY}), keep_all=True))
    # TEMPLATE_OK: true where a value is put back exactly, false where there is no placeholder, null
    # where a line with a cut value must be read whole (its template, or its template's header, fails).
    holds = has_literal(pl.col(W.BODY), SLOT_MARK)
    exact = pl.col(W.TEMPLATE_OK) & pl.col(C.TAG).is_not_null()
    return found.select(
        pl.col(W.BODY).alias(W.TEMPLATE),
        *(c for c in templates.columns if c != W.TEMPLATE),
        *FIELDS,
        pl.when(holds).then(pl.when(exact).then(True)).otherwise(False).alias(W.TEMPLATE_OK),
        W.SLOT_NORM,  # never null: the memo's mark of a template it has read
        W.SLOT_ITEM,
        W.SLOT_ITEM_VALUE,
    )


def _template_flags(found: pl.DataFrame) -> pl.DataFrame:
    """Where a template's reading holds the placeholder, and whether putting a value back is exact.

    The line is `P norm=V D Q` and its template `P norm=\\x00 D Q`, with V a run of `[-+.0-9A-Za-z_]`.
    TEMPLATE_OK holds when the template has one placeholder, in the part after the header, followed by a
    separator D of `[\\s,]` or the end. Then every pattern reads the line as it reads the template:
    V and the placeholder are both inside every class the patterns run through values with (`[^\\]]`,
    `[^\\[\\]]`, `[^\\s,\\[\\]]`, `.`) and outside `[`, `]`, `(`, `)`, `:`, `=`, `,` and whitespace; the
    `=` before V ends every header, event and key attempt before it; and no key, size, `\\b`-led key or
    header can start inside V, for a separator follows it. So the fields are the template's but for the
    one item whose value holds the placeholder (SLOT_ITEM, its value SLOT_ITEM_VALUE) and `norm`, which
    is V when the template's first `norm=` reads the placeholder alone (SLOT_NORM; any other reading that
    runs into it holds an `=` and is null either way)."""
    holds = pl.col(C.ITEMS).list.eval(has_literal(pl.element().struct.field(C.VALUE), SLOT_MARK))
    one = pl.col(W.BODY).str.count_matches(SLOT_MARK, literal=True) == 1
    found = found.with_columns(
        (one & pl.col(W.REST).str.contains(SLOT_END_PATTERN)).alias(W.TEMPLATE_OK),
        (pl.col(W.REST).str.extract(NORM_MATCH, 0) == SLOT_KEY + SLOT_MARK)
        .fill_null(False)
        .alias(W.SLOT_NORM),
        pl.when(holds.list.any()).then(holds.list.arg_max()).alias(W.SLOT_ITEM),
    )
    item = pl.col(C.ITEMS).list.get(pl.col(W.SLOT_ITEM), null_on_oob=True).struct.field(C.VALUE)
    # null when the item's value is the placeholder alone (the usual case): the value is put back as is
    return found.with_columns(pl.when(item != SLOT_MARK).then(item).alias(W.SLOT_ITEM_VALUE))


def _put_back(out: pl.DataFrame) -> pl.Series:
    """ITEMS where, in each row with a cut value, the item that holds the placeholder (SLOT_ITEM) has
    its value back. Done on the flat Arrow child of the list column: a list rebuilt per row by polars
    (`concat_list`, `list.gather` of a second list) cost 3 µs a row, this a scatter over the block."""
    held = pl.col(W.SLOT).is_not_null() & pl.col(W.SLOT_ITEM).is_not_null()
    value = pl.col(W.SLOT)
    if out.get_column(W.SLOT_ITEM_VALUE).null_count() < out.height:  # the placeholder inside a longer value
        inside = pl.col(W.SLOT_ITEM_VALUE).str.replace(SLOT_MARK, value, literal=True)
        value = pl.when(pl.col(W.SLOT_ITEM_VALUE).is_null()).then(value).otherwise(inside)
    picked = out.select(
        pl.arg_where(held).alias(W.ROW),
        pl.col(W.SLOT_ITEM).filter(held),
        value.filter(held).alias(W.SLOT_ITEM_VALUE),
    )
    items = out.get_column(C.ITEMS)
    if not picked.height:
        return items
    lists = items.to_arrow(compat_level=pl.CompatLevel.newest())
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    # The offsets point into the child as a whole (a sliced list keeps its whole child).
    where = (
        np.asarray(lists.offsets)[picked.get_column(W.ROW).to_numpy()]
        + picked.get_column(W.SLOT_ITEM).to_numpy()
    )
    keys, values = lists.values.flatten()
    put = pl.Series(values).scatter(where, picked.get_column(W.SLOT_ITEM_VALUE))
    child = pa.StructArray.from_arrays(
        [keys, put.to_arrow(compat_level=pl.CompatLevel.newest())], names=[C.KEY, C.VALUE]
    )
    rebuilt = pa.Array.from_buffers(
        pa.large_list(child.type), len(lists), lists.buffers()[:2], offset=lists.offset, children=[child]
    )
    return pl.Series(C.ITEMS, rebuilt)


def _parse_bodies(bodies: pl.DataFrame) -> pl.DataFrame:
    """BODY and the debug table's own columns, for the bodies whose header matches."""
    return _read_bodies(bodies).select(W.BODY, *FIELDS)


def _read_bodies(bodies: pl.DataFrame, keep_all: bool = False) -> pl.DataFrame:
    """BODY, REST and the debug table's own columns, for the bodies whose header matches (for every
    body with ``keep_all``: those without a header have a null TAG)."""
    found = with_groups(bodies, W.BODY, HEADER_PATTERN, W.HEADER)
    if not keep_all:
        found = found.filter(pl.col(C.TAG).is_not_null())
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
    return found.with_columns(
        _event(found),
        items.alias(C.ITEMS),
        rest.str.extract(r"\bnum_aux=(-?\d+)", 1).cast(pl.Int64, strict=False).alias(C.NUM_AUX),
        rest.str.extract(r"\bnum_items=(-?\d+)", 1).cast(pl.Int64, strict=False).alias(C.NUM_ITEMS),
        rest.str.extract(r"\blayer_id=(-?\d+)", 1).cast(pl.Int64, strict=False).alias(C.LAYER_ID),
        _int_list(rest.str.extract(r"\blayer_ids=\[([-\d, ]*)\]", 1)).alias(C.LAYER_IDS),
        rest.str.extract(NORM_PATTERN, 1).cast(pl.Float64, strict=False).alias(C.NORM),
        sizes.alias(C.SHAPES),
        (pl.col(W.CLOSE).is_null() | unbalanced).alias(C.TRUNCATED),
    )
