"""Prefill/Decode batch statistics: the header, then the body read as `key: value` pairs, never by
position (fields were inserted, removed and reordered across SGLang versions).

Fast path, by shape. A block holds thousands of batch lines but only a handful of distinct key
sequences. Each body's values (numbers, `nan`, `True`, ...) are replaced by a placeholder: what is left
is the line's *shape*. The few distinct shapes are read once in Python (which key sits at which value
position), and every line then takes its values by position from one `extract_all`, with no per-key
regex. A shape whose keys do not all map to plain values (an unknown key, an odd value such as
`#token: full=N, swa=M`) sends its lines to the slow path, which reads each line key by key and keeps
unknown keys in `extra`. Both paths give the same rows.

Lanes, first (issue 11, `batch_lane.py`): nearly every batch line of a block starts `Decode batch, ` or
`Prefill batch, ` and has its phase's one layout, `key: value, key: value, ...` with known keys and short
plain values. Each phase's layout is learnt from the block's first lines, and its lines are read from
the bytes with numpy, every line at once: the fixed text between values compared 8 bytes at a time,
numbers summed 8 digits at a time, no regex and no string column per item. A line is read there only
when all of it is checked, so its row is the one the other paths give (tests/test_literal_paths.py).

Literal path, for the lines no lane read: the block's one or two most common layouts, learnt from the
shapes of its first lines; a line is of a layout when one anchored regex without captures matches it
(the keys in order, one plain value each), and its values are then read with no regex: split on `, `,
slice each key off. A block whose lines all start `Decode batch, ` or `Prefill batch, ` has its header
read by those literals instead of HEADER_PATTERN. Lines of no layout go on to the shape path.
``parse_batches(df, literal=False)`` skips the lanes and the literal path: the reference the tests
compare them with.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

import polars as pl

from tracelens.parsers.batch_lane import Kind, Lane, read_lanes
from tracelens.parsers.distinct import with_groups
from tracelens.parsers.literals import has_literal
from tracelens.parsers.vllm_stats import VLLM_STATS, parse_vllm_stats
from tracelens.tables.first_match import first_match
from tracelens.tables.schema import (
    BATCH_FIELDS,
    COMMON_COLUMNS,
    C,
    T,
    W,
    conform,
    discard,
    polars_schema,
    project,
)

# `Prefill batch`, `Decode batch`, optional ` [N]` iteration counter, `.` or `,`; early 2024 `new fill batch.`
# The body is sliced off after the header rather than captured (capturing `.*` to the line end is slow).
HEADER_PATTERN = rf"^(?P<{W.BATCH_HEAD}>(?P<{W.BATCH_PHASE}>Prefill|Decode|new fill) batch(?: \[(?P<{W.BATCH_ITER}>\d+)\])?[.,]? ?)"
# One item: a key (may hold spaces, `#`, `-`, `(token/s)`), then a value token. A `#token: full=N, swa=M`
# value holds a comma, so `, name=value` continuations stay in the value.
PAIR_PATTERN = r"#?[A-Za-z][\w\-#]*(?: [\w\-#()/]+)*: [^,\s]+(?:, [a-z_]+=[^,\s]+)*"
# A value a typed column can hold; anything else (`full=N, swa=M`) is kept raw in `extra`.
SCALAR_PATTERN = r"^(?:-?[\d.]+%?|nan|inf|True|False|\d{4}-\d\d-\d\dT[\d:.]+)$"
# A plain value as the shape reader sees it. It never holds `,`, `:` followed by a space, or
# whitespace, and never ends with `.` or `:`, so cutting values out cannot create or remove a separator
# or a key: two bodies of one shape read the same way. Every match is a SCALAR_PATTERN value.
VALUE_PATTERN = r"\d{4}-\d\d-\d\dT\d[\d:.]*\d|-?\d+(?:\.\d+)*%?|\bnan\b|\binf\b|\bTrue\b|\bFalse\b"
_SLOT = "\x00"  # where a value was cut out of a shape (a NUL never survives in a log line's body)

# Percent to fraction by multiplying: polars divides a one-row column exactly but a longer one by
# multiplying with the reciprocal, so `x / 100` would depend on how many lines a block holds.
PERCENT = 0.01

_KEY_MAP = pl.DataFrame(
    {C.KEY: [f.log_key for f in BATCH_FIELDS], W.COLUMN: [f.column for f in BATCH_FIELDS]}
)
_PHASES = {"Prefill": "prefill", "Decode": "decode", "new fill": "prefill"}
_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(f.column for f in BATCH_FIELDS))
# Layouts are learnt from this many first batch lines of a block, and at most this many are tried.
LAYOUT_SAMPLE = 256
MAX_LAYOUTS = 2
# The lanes' layouts are learnt from fewer lines: a lane that misses costs only speed.
LANE_SAMPLE = 64
_LANE_KINDS = {
    f.log_key: kind for f in BATCH_FIELDS for kind in Kind if polars_schema(T.BATCHES)[f.column] == kind.value
}


def _value_of(log_key: str) -> pl.Expr:
    """The raw scalar value of one known key in the body (null when absent or not a scalar). The key
    must start the body or follow a separator, so `#token` never matches inside `#new-token`."""
    raw = (
        pl.col(W.KV).str.extract(rf"(?:^|, |\. ){re.escape(log_key)}: ([^,\s]+)", 1).str.strip_chars_end(".")
    )
    return pl.when(raw.str.contains(SCALAR_PATTERN)).then(raw)


def _first_key_at(shape: str, key: str) -> int | None:
    """Where `_value_of(key)`'s pattern `(?:^|, |\\. )key: ` first matches in ``shape``, or None."""
    needle = f"{key}: "
    start = shape.find(needle)
    while start != -1:
        if start == 0 or shape[start - 2 : start] in (", ", ". "):
            return start + len(needle)
        start = shape.find(needle, start + 1)
    return None


def read_shape(shape: str) -> dict[str, int] | None:
    """{column: value position} for a shape whose every `key: value` item is a known key with a plain
    value; None when its lines need the slow path."""
    positions: dict[str, int] = {}
    found = 0
    for field in BATCH_FIELDS:
        at = _first_key_at(shape, field.log_key)
        if at is None:
            continue
        end = at
        while end < len(shape) and shape[end] not in ", \t\n\r\x0b\x0c":
            end += 1
        if shape[at:end] != _SLOT:  # the value is not exactly one plain value
            return None
        found += 1
        positions.setdefault(field.column, shape.count(_SLOT, 0, at))
    # Same test as the slow path: every item must have been read by a known key.
    if shape.count(": ") != found:
        return None
    return positions


def parse_batches(df: pl.DataFrame, literal: bool = True) -> pl.DataFrame:
    """Rows routed to `batch` -> the `batches` table (lines whose header does not match are dropped).
    ``literal=False`` skips the lanes and the literal path (tests compare the paths)."""
    df = project(df, *COMMON_COLUMNS, W.BODY).with_row_index(W.ROW)
    parts = []
    vllm = has_literal(pl.col(W.BODY), VLLM_STATS)
    if df.height and df.select(vllm.any()).item():
        parts.append(parse_vllm_stats(df.filter(vllm)))
        df = df.filter(~vllm)
    if literal and df.height:
        read, df = _by_lanes(df)
        if read is not None:
            parts.append(read)
    if df.height or not parts:
        base = _literal_base(df) if literal else None
        if base is None:
            base = _base(df)
        if base.height or not parts:
            parts.append(read_batches(base, literal) if base.height else base)
    parts = [p for p in parts if p.height] or parts[:1]
    out = parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed").sort(W.ROW)
    return conform(T.BATCHES, out)


def _by_lanes(df: pl.DataFrame) -> tuple[pl.DataFrame | None, pl.DataFrame]:
    """(the rows the lanes read, the other rows)."""
    lanes = _lanes(df)
    if not lanes:
        return None, df
    got = read_lanes(df.get_column(W.BODY), lanes)
    lane_of = got.get_column(W.LAYOUT)
    # The columns in any order: `parse_batches` conforms them to the table.
    phase = first_match(
        ((pl.col(W.LAYOUT) == i, pl.lit(lane.phase)) for i, lane in enumerate(lanes)),
        pl.lit(None, dtype=pl.String),
    )
    read = pl.concat(
        [project(df, W.ROW, *COMMON_COLUMNS), discard(got.with_columns(phase.alias(C.PHASE)), W.LAYOUT)],
        how="horizontal",
    )
    taken = lane_of >= 0
    if taken.all():
        return read, df.clear()
    if not taken.any():
        return None, df
    return read.filter(taken), df.filter(~taken)


def _lanes(df: pl.DataFrame) -> list[Lane]:
    """The lane of each literal header: the most common key sequence among the block's first lines
    with that header, when it makes one. Read in Python, since the sample is small and fixed: a wrong
    guess (a value holding `, `) only yields no lane or a lane that reads no line."""
    counts: dict[str, Counter[tuple[str, ...]]] = {head: Counter() for head in _LITERAL_HEADS}
    for body in df.get_column(W.BODY).head(LANE_SAMPLE).to_list():
        for head, seen in counts.items():
            if body is not None and body.startswith(head):
                items = body[len(head) :].split(", ")
                seen[tuple(item.partition(": ")[0] for item in items if item)] += 1
                break
    lanes = []
    for head, seen in counts.items():
        for keys, _ in seen.most_common():
            lane = _lane(head, keys)
            if lane is not None:
                lanes.append(lane)
                break
    return lanes


@cache
def _lane(head: str, keys: tuple[str, ...]) -> Lane | None:
    """The lane of a literal header and key sequence, when the keys are distinct known keys of numbers
    or booleans (the layout's shape read as the shape path reads it, for the item of each column)."""
    if len(set(keys)) != len(keys) or not all(k in _LANE_KINDS for k in keys):
        return None
    layout = _layout("".join(f"{key}: {_SLOT}, " for key in keys))
    if layout is None:
        return None
    columns = tuple(sorted(layout[1].items(), key=lambda kv: _COLUMNS.index(kv[0])))
    return Lane(_LITERAL_HEADS[head], head, keys, tuple(_LANE_KINDS[k] for k in keys), columns)


# The two headers of nearly every batch line since 2024, each with its phase.
_LITERAL_HEADS = {"Decode batch, ": "decode", "Prefill batch, ": "prefill"}


def _literal_base(df: pl.DataFrame) -> pl.DataFrame | None:
    """`_base` by literal tests, when every line starts with one of `_LITERAL_HEADS` (what
    HEADER_PATTERN reads of them: the phase, no iteration counter, the body after the header);
    None when some line has another header (the pattern then reads the block)."""
    body = pl.col(W.BODY)
    phase = pl.lit(None, dtype=pl.String)
    for head, name in reversed(_LITERAL_HEADS.items()):
        phase = pl.when(body.str.starts_with(head)).then(pl.lit(name)).otherwise(phase)
    base = df.select(W.ROW, *COMMON_COLUMNS, W.BODY, phase.alias(C.PHASE))
    if base.get_column(C.PHASE).null_count():
        return None
    head_len = pl.col(C.PHASE).replace_strict({v: len(k) for k, v in _LITERAL_HEADS.items()})
    return base.select(
        W.ROW,
        *COMMON_COLUMNS,
        C.PHASE,
        pl.lit(None, dtype=pl.Int64).alias(C.FORWARD_ITER),
        body.str.slice(head_len).alias(W.KV),
    )


def _base(df: pl.DataFrame) -> pl.DataFrame:
    """Common columns, PHASE, FORWARD_ITER and the body after the header (`_kv`), by HEADER_PATTERN."""
    unlabelled = pl.col(W.BODY).str.starts_with("#running-req: ")
    return (
        with_groups(df.select(W.ROW, *COMMON_COLUMNS, W.BODY), W.BODY, HEADER_PATTERN, W.HEADER)
        .with_columns(
            pl.when(unlabelled)
            .then(pl.lit("decode"))
            .otherwise(pl.col(W.BATCH_PHASE).replace_strict(_PHASES, default=None))
            .alias(C.PHASE),
            pl.col(W.BATCH_ITER).cast(pl.Int64).alias(C.FORWARD_ITER),
            pl.col(W.BODY).str.slice(pl.col(W.BATCH_HEAD).str.len_chars().fill_null(0)).alias(W.KV),
        )
        .filter(pl.col(C.PHASE).is_not_null())
        .select(W.ROW, *COMMON_COLUMNS, C.PHASE, C.FORWARD_ITER, W.KV)
    )


def read_batches(base: pl.DataFrame, literal: bool) -> pl.DataFrame:
    """The typed batch columns of ``base`` (ROW, common columns, PHASE, FORWARD_ITER, `_kv`): lines of
    the block's main layouts by the literal path (when ``literal``), the rest by shape or by key."""
    parts = []
    layouts = _layouts(base) if literal else []
    if layouts:
        read, base = _by_layouts(base, layouts)
        parts.append(read)
    if base.height:
        parts.append(_by_shape_or_key(base))
    parts = [p for p in parts if p.height] or parts[:1]
    out = parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed").sort(W.ROW)
    return out.with_columns(_typed_values(out))


def _layout(shape: str) -> tuple[list[str], dict[str, int]] | None:
    """(keys, {column: item index}) when every item of ``shape`` is `known key: one plain value` (the
    last item may be empty: SGLang ends its lines with `, `) and no value is a timestamp; else None."""
    positions = read_shape(shape)
    if positions is None or C.BATCH_TIMESTAMP in positions:
        return None
    items = shape.split(", ")
    if items[-1] == "":
        items.pop()
    keys = []
    for item in items:
        key, sep, value = item.partition(": ")
        if not sep or value != _SLOT or _SLOT in key:
            return None
        keys.append(key)
    return keys, positions  # one value per item: a value's slot is its item's index


def _layouts(base: pl.DataFrame) -> list[tuple[list[str], dict[str, int]]]:
    """The most common literal layouts among the block's first lines."""
    sample = base.head(LAYOUT_SAMPLE).get_column(W.KV).str.replace_all(VALUE_PATTERN, _SLOT)
    found = []
    for shape, _ in sample.value_counts(sort=True).iter_rows():
        layout = _layout(shape)
        if layout is not None:
            found.append(layout)
        if len(found) == MAX_LAYOUTS:
            break
    return found


# One plain value, as VALUE_PATTERN cuts it, when it is the whole value (dates are never in a layout).
_PLAIN = r"(?:-?\d+(?:\.\d+)*%?|nan|inf|True|False)"


def layout_pattern(keys: list[str]) -> str:
    """The lines of a layout: these keys in this order, each with one plain value, and nothing else but
    SGLang's trailing `, `. No capture group: the regex engine stays on its fast automaton."""
    return "^" + ", ".join(f"{re.escape(key)}: {_PLAIN}" for key in keys) + "(?:, )?$"


def _by_layouts(
    base: pl.DataFrame, layouts: list[tuple[list[str], dict[str, int]]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows of a layout read, the other rows). A line is of the first layout whose anchored match
    (no captures) holds; it is cut at `, ` and each value sliced off after its key. All layouts are
    read in one pass, so a block whose lines are all of its layouts keeps its order: no filter,
    concatenation or sort."""
    which = first_match(
        (pl.col(W.KV).str.contains(layout_pattern(keys)), pl.lit(i, dtype=pl.Int8))
        for i, (keys, _) in enumerate(layouts)
    )
    base = base.with_columns(which.alias(W.LAYOUT))
    n = max(len(keys) for keys, _ in layouts)
    names = [f"{W.ITEM}{i}" for i in range(n + 1)]
    values: dict[str, pl.Expr] = {}
    for i, (keys, positions) in reversed(list(enumerate(layouts))):
        for column, at in positions.items():
            value = pl.col(names[at]).str.slice(len(keys[at]) + 2)
            values[column] = (
                pl.when(pl.col(W.LAYOUT) == i).then(value).otherwise(values.get(column, pl.lit(None)))
            )
    matched = base.get_column(W.LAYOUT).is_not_null()
    all_matched = bool(matched.all())
    rows = base if all_matched else base.filter(matched)
    items = pl.col(W.KV).str.splitn(", ", n + 1).struct.rename_fields(names).alias(W.ITEMS)
    read = (
        rows.with_columns(items)
        .unnest(W.ITEMS)
        .select(
            W.ROW,
            *COMMON_COLUMNS,
            C.PHASE,
            C.FORWARD_ITER,
            *(
                expr.alias(column)
                for column, expr in sorted(values.items(), key=lambda kv: _COLUMNS.index(kv[0]))
            ),
        )
    )
    rest = base.clear() if all_matched else base.filter(~matched)
    return read, discard(rest, W.LAYOUT)


def _by_shape_or_key(base: pl.DataFrame) -> pl.DataFrame:
    """The shape path for lines of simple shapes, the key path for the rest (values still raw text)."""
    base = base.with_columns(pl.col(W.KV).str.replace_all(VALUE_PATTERN, _SLOT).alias(W.SHAPE))
    shapes = {shape: read_shape(shape) for shape in base.get_column(W.SHAPE).unique().to_list()}
    simple = {shape: pos for shape, pos in shapes.items() if pos is not None}
    parts = []
    if simple:
        parts.append(_by_shape(base.filter(pl.col(W.SHAPE).is_in(list(simple))), simple))
    if len(simple) < len(shapes):
        parts.append(_by_key(base.filter(~pl.col(W.SHAPE).is_in(list(simple)))))
    return parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed").sort(W.ROW)


def _by_shape(rows: pl.DataFrame, shapes: dict[str, dict[str, int]]) -> pl.DataFrame:
    """Fast path: values by position, the position of each column looked up by the line's shape."""
    present = [c for c in _COLUMNS if any(c in pos for pos in shapes.values())]
    table = pl.DataFrame(
        {
            W.SHAPE: list(shapes),
            **{f"{W.AT}{c}": [pos.get(c) for pos in shapes.values()] for c in present},
        },
        schema={W.SHAPE: pl.String, **{f"{W.AT}{c}": pl.Int64 for c in present}},
    )
    # Materialised once: an eager `select` does not share a subexpression between columns.
    values = pl.col(W.KV).str.extract_all(VALUE_PATTERN).alias(W.VALUES)
    with_pos = rows.with_columns(values).join(table, on=W.SHAPE, how="left", maintain_order="left")
    return with_pos.select(
        W.ROW,
        *COMMON_COLUMNS,
        C.PHASE,
        C.FORWARD_ITER,
        *(pl.col(W.VALUES).list.get(pl.col(f"{W.AT}{c}"), null_on_oob=True).alias(c) for c in present),
    )


def _by_key(base: pl.DataFrame) -> pl.DataFrame:
    """Slow path: one literal-led extract per known key, and every pair of the body for `extra`."""
    keys = [f.log_key for f in BATCH_FIELDS]
    raw = base.select(W.ROW, W.KV, *(_value_of(k).alias(f"{W.VALUE}{i}") for i, k in enumerate(keys)))
    columns: dict[str, list[str]] = {}
    for i, f in enumerate(BATCH_FIELDS):
        columns.setdefault(f.column, []).append(f"{W.VALUE}{i}")
    found = pl.sum_horizontal(pl.col(f"{W.VALUE}{i}").is_not_null().cast(pl.Int32) for i in range(len(keys)))
    items = pl.col(W.KV).str.count_matches(": ", literal=True)
    wide = raw.select(
        W.ROW,
        (items != found).alias(W.ODD),
        *(
            pl.coalesce(names).alias(column) if len(names) > 1 else pl.col(names[0]).alias(column)
            for column, names in columns.items()
        ),
    )
    odd_rows = base.filter(wide.get_column(W.ODD))
    out = base.select(W.ROW, *COMMON_COLUMNS, C.PHASE, C.FORWARD_ITER).join(wide.drop(W.ODD), on=W.ROW)
    return out.join(_extras(odd_rows), on=W.ROW, how="left")


def _extras(rows: pl.DataFrame) -> pl.DataFrame:
    """Every pair of the body; the ones no typed column took, as a key/value list."""
    pairs = (
        rows.select(W.ROW, pl.col(W.KV).str.extract_all(PAIR_PATTERN).alias(W.PAIR))
        .explode(W.PAIR)
        .drop_nulls(W.PAIR)
        .with_columns(
            pl.col(W.PAIR).str.splitn(": ", 2).struct.rename_fields([C.KEY, C.VALUE]).alias(W.KEY_VALUE)
        )
        .select(
            W.ROW,
            pl.col(W.KEY_VALUE).struct.field(C.KEY),
            pl.col(W.KEY_VALUE).struct.field(C.VALUE).str.strip_chars_end("."),
        )
        .join(_KEY_MAP, on=C.KEY, how="left")
    )
    is_known = pl.col(W.COLUMN).is_not_null() & pl.col(C.VALUE).str.contains(SCALAR_PATTERN)
    return (
        pairs.filter(~is_known)
        .group_by(W.ROW, maintain_order=True)
        .agg(pl.struct(C.KEY, C.VALUE).alias(C.EXTRA))
    )


def _typed_values(raw_values: pl.DataFrame) -> list[pl.Expr]:
    """Cast raw value strings to each column's type: `%` -> fraction, `True/False` -> bool, `nan` kept.
    A column none of whose values holds a `%` is cast as it is: stripping and testing every value for a
    `%` cost three passes over the column, and percentages are rare."""
    schema = polars_schema(T.BATCHES)
    exprs = []
    for column in _COLUMNS:
        if column not in raw_values.columns:
            continue
        raw = pl.col(column)
        dtype = schema[column]
        if dtype == pl.Boolean:
            exprs.append(
                raw.replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)
            )
        elif dtype == pl.Float64:
            values = raw_values.get_column(column)
            if values.dtype == pl.String and not has_literal(values, "%").any():
                exprs.append(raw.cast(pl.Float64, strict=False))
                continue
            number = raw.str.strip_chars_end("%").cast(pl.Float64, strict=False)
            exprs.append(
                pl.when(raw.str.ends_with("%")).then(number * PERCENT).otherwise(number).alias(column)
            )
        elif dtype == pl.Int64:
            exprs.append(raw.cast(pl.Int64, strict=False))
    return exprs
