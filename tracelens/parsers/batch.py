"""Prefill/Decode batch statistics: the header, then the body read as `key: value` pairs, never by
position (fields were inserted, removed and reordered across SGLang versions)."""

from __future__ import annotations

import polars as pl

from tracelens.schema import BATCH_FIELDS, COMMON_COLUMNS, C, T, W, conform, polars_schema

# `Prefill batch`, `Decode batch`, optional ` [N]` iteration counter, `.` or `,`; early 2024 `new fill batch.`
HEADER_PATTERN = r"^(?P<_phase>Prefill|Decode|new fill) batch(?: \[(?P<_iter>\d+)\])?[.,]? ?(?P<_kv>.*)$"
# One item: a key (may hold spaces, `#`, `-`, `(token/s)`), then a value token. A `#token: full=N, swa=M`
# value holds a comma, so `, name=value` continuations stay in the value.
PAIR_PATTERN = r"#?[A-Za-z][\w\-#]*(?: [\w\-#()/]+)*: [^,\s]+(?:, [a-z_]+=[^,\s]+)*"

SCALAR_PATTERN = r"^(?:-?[\d.]+%?|nan|inf|True|False|\d{4}-\d\d-\d\dT[\d:.]+)$"

_KEY_MAP = pl.DataFrame(
    {C.KEY: [f.log_key for f in BATCH_FIELDS], "_column": [f.column for f in BATCH_FIELDS]}
)
_PHASES = {"Prefill": "prefill", "Decode": "decode", "new fill": "prefill"}


def parse_batches(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `batch` -> the `batches` table (lines whose header does not match are dropped)."""
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
            pl.when(unlabelled).then(pl.col(W.BODY)).otherwise(pl.col("_h").struct.field("_kv")).alias("_kv"),
        )
        .filter(pl.col(C.PHASE).is_not_null())
        .with_row_index(W.ROW)
    )
    pairs = (
        base.select(W.ROW, pl.col("_kv").str.extract_all(PAIR_PATTERN).alias("_pair"))
        .explode("_pair")
        .drop_nulls("_pair")
        .with_columns(pl.col("_pair").str.extract_groups(r"^(?P<key>.*?): (?P<value>.*)$").alias("_kvs"))
        .select(
            W.ROW,
            pl.col("_kvs").struct.field(C.KEY).alias(C.KEY),
            pl.col("_kvs").struct.field(C.VALUE).str.strip_chars_end(".").alias(C.VALUE),
        )
        .join(_KEY_MAP, on=C.KEY, how="left")
    )
    # A known key whose value is not a plain scalar (`#token: full=N, swa=M`) is kept raw in `extra`.
    is_known = pl.col("_column").is_not_null() & pl.col(C.VALUE).str.contains(SCALAR_PATTERN)
    known = pairs.filter(is_known)
    extra = (
        pairs.filter(~is_known)
        .group_by(W.ROW, maintain_order=True)
        .agg(pl.struct(C.KEY, C.VALUE).alias(C.EXTRA))
    )
    wide = (
        known.pivot(on="_column", index=W.ROW, values=C.VALUE, aggregate_function="first")
        if known.height
        else pl.DataFrame({W.ROW: []}, schema={W.ROW: pl.UInt32})
    )
    out = base.select(W.ROW, *COMMON_COLUMNS, C.PHASE, C.FORWARD_ITER).join(wide, on=W.ROW, how="left")
    out = out.join(extra, on=W.ROW, how="left")
    return conform(T.BATCHES, out.with_columns(_typed_values(out.columns)))


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
