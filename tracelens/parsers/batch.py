"""Prefill/Decode batch statistics: the header, then the body read as `key: value` pairs, never by
position (fields were inserted, removed and reordered across SGLang versions)."""

from __future__ import annotations

import re

import polars as pl

from tracelens.schema import BATCH_FIELDS, COMMON_COLUMNS, C, T, W, conform, polars_schema

# `Prefill batch`, `Decode batch`, optional ` [N]` iteration counter, `.` or `,`; early 2024 `new fill batch.`
# The body is sliced off after the header rather than captured (capturing `.*` to the line end is slow).
HEADER_PATTERN = r"^(?P<_head>(?P<_phase>Prefill|Decode|new fill) batch(?: \[(?P<_iter>\d+)\])?[.,]? ?)"
# One item: a key (may hold spaces, `#`, `-`, `(token/s)`), then a value token. A `#token: full=N, swa=M`
# value holds a comma, so `, name=value` continuations stay in the value.
PAIR_PATTERN = r"#?[A-Za-z][\w\-#]*(?: [\w\-#()/]+)*: [^,\s]+(?:, [a-z_]+=[^,\s]+)*"
# A value a typed column can hold; anything else (`full=N, swa=M`) is kept raw in `extra`.
SCALAR_PATTERN = r"^(?:-?[\d.]+%?|nan|inf|True|False|\d{4}-\d\d-\d\dT[\d:.]+)$"

_KEY_MAP = pl.DataFrame(
    {C.KEY: [f.log_key for f in BATCH_FIELDS], "_column": [f.column for f in BATCH_FIELDS]}
)
_PHASES = {"Prefill": "prefill", "Decode": "decode", "new fill": "prefill"}


def _value_of(log_key: str) -> pl.Expr:
    """The raw scalar value of one known key in the body (null when absent or not a scalar). The key
    must start the body or follow a separator, so `#token` never matches inside `#new-token`."""
    raw = (
        pl.col("_kv").str.extract(rf"(?:^|, |\. ){re.escape(log_key)}: ([^,\s]+)", 1).str.strip_chars_end(".")
    )
    return pl.when(raw.str.contains(SCALAR_PATTERN)).then(raw)


def parse_batches(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `batch` -> the `batches` table (lines whose header does not match are dropped).

    Fast path: one literal-led extract per known key. Lines with more `key: value` items than known
    scalar values found (a new SGLang field, an odd value) also take the slow path, which splits the
    body into all its pairs and keeps the unknown ones in `extra`."""
    head = pl.col(W.BODY).str.extract_groups(HEADER_PATTERN)
    unlabelled = pl.col(W.BODY).str.starts_with("#running-req: ")
    base = (
        df.with_columns(head.alias("_h"))
        .with_columns(
            pl.when(unlabelled)
            .then(pl.lit("decode"))
            .otherwise(pl.col("_h").struct.field("_phase").replace_strict(_PHASES, default=None))
            .alias(C.PHASE),
            pl.col("_h").struct.field("_iter").cast(pl.Int64).alias(C.FORWARD_ITER),
            pl.col(W.BODY)
            .str.slice(pl.col("_h").struct.field("_head").str.len_chars().fill_null(0))
            .alias("_kv"),
        )
        .filter(pl.col(C.PHASE).is_not_null())
        .with_row_index(W.ROW)
    )
    keys = [f.log_key for f in BATCH_FIELDS]
    raw = base.select(W.ROW, "_kv", *(_value_of(k).alias(f"_v{i}") for i, k in enumerate(keys)))
    columns: dict[str, list[str]] = {}
    for i, f in enumerate(BATCH_FIELDS):
        columns.setdefault(f.column, []).append(f"_v{i}")
    found = pl.sum_horizontal(pl.col(f"_v{i}").is_not_null().cast(pl.Int32) for i in range(len(keys)))
    items = pl.col("_kv").str.count_matches(": ", literal=True)
    wide = raw.select(
        W.ROW,
        (items != found).alias("_odd"),
        *(
            pl.coalesce(names).alias(column) if len(names) > 1 else pl.col(names[0]).alias(column)
            for column, names in columns.items()
        ),
    )
    odd_rows = base.filter(wide.get_column("_odd"))
    out = base.select(W.ROW, *COMMON_COLUMNS, C.PHASE, C.FORWARD_ITER).join(wide.drop("_odd"), on=W.ROW)
    out = out.join(_extras(odd_rows), on=W.ROW, how="left")
    return conform(T.BATCHES, out.with_columns(_typed_values(out.columns)))


def _extras(rows: pl.DataFrame) -> pl.DataFrame:
    """Slow path: every pair of the body; the ones no typed column took, as a key/value list."""
    pairs = (
        rows.select(W.ROW, pl.col("_kv").str.extract_all(PAIR_PATTERN).alias("_pair"))
        .explode("_pair")
        .drop_nulls("_pair")
        .with_columns(
            pl.col("_pair").str.splitn(": ", 2).struct.rename_fields([C.KEY, C.VALUE]).alias("_kvs")
        )
        .select(
            W.ROW,
            pl.col("_kvs").struct.field(C.KEY),
            pl.col("_kvs").struct.field(C.VALUE).str.strip_chars_end("."),
        )
        .join(_KEY_MAP, on=C.KEY, how="left")
    )
    is_known = pl.col("_column").is_not_null() & pl.col(C.VALUE).str.contains(SCALAR_PATTERN)
    return (
        pairs.filter(~is_known)
        .group_by(W.ROW, maintain_order=True)
        .agg(pl.struct(C.KEY, C.VALUE).alias(C.EXTRA))
    )


def _typed_values(present: list[str]) -> list[pl.Expr]:
    """Cast raw value strings to each column's type: `%` -> fraction, `True/False` -> bool, `nan` kept."""
    schema = polars_schema(T.BATCHES)
    exprs = []
    for column in dict.fromkeys(f.column for f in BATCH_FIELDS):
        if column not in present:
            continue
        raw = pl.col(column)
        dtype = schema[column]
        if dtype == pl.Boolean:
            exprs.append(
                raw.replace_strict({"True": True, "False": False}, default=None, return_dtype=pl.Boolean)
            )
        elif dtype == pl.Float64:
            number = raw.str.strip_chars_end("%").cast(pl.Float64, strict=False)
            exprs.append(pl.when(raw.str.ends_with("%")).then(number / 100).otherwise(number).alias(column))
        elif dtype == pl.Int64:
            exprs.append(raw.cast(pl.Int64, strict=False))
    return exprs
