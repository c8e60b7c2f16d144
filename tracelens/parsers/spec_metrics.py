"""vLLM speculative-decoding metrics, in each layout vLLM has printed (read by key, not by position)."""

from __future__ import annotations

import polars as pl

from tracelens.parsers.batch import PERCENT
from tracelens.schema import COMMON_COLUMNS, C, T, W, conform


def _num(pattern: str, dtype: type[pl.DataType] = pl.Float64) -> pl.Expr:
    return pl.col(W.BODY).str.extract(pattern, 1).cast(dtype, strict=False)


def parse_spec_metrics(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `spec_metrics` -> the `spec_metrics` table."""
    body = pl.col(W.BODY)
    v0 = body.str.contains("Speculative metrics:", literal=True)
    current = body.str.contains("Mean acceptance length:", literal=True) & body.str.contains(
        "Accepted throughput:", literal=True
    )
    pct_rate = pl.coalesce(
        _num(r"Avg Draft acceptance rate: ([\w.]+)%"), _num(r"Draft acceptance rate: ([\w.]+)%")
    )
    out = df.with_columns(
        pl.when(v0)
        .then(pl.lit("vllm_v0"))
        .when(current)
        .then(pl.lit("vllm_v1"))
        .otherwise(pl.lit("vllm_v1_early"))
        .alias(C.LAYOUT),
        _num(r"Mean acceptance length: ([\w.]+)").alias(C.MEAN_ACCEPTANCE_LENGTH),
        pl.when(v0)
        .then(_num(r"Draft acceptance rate: ([\w.]+)"))
        .otherwise(pct_rate * PERCENT)
        .alias(C.ACCEPTANCE_RATE),
        pl.coalesce(
            _num(r"Accepted: (\d+) tokens", pl.Int64), _num(r"Number of accepted tokens: (\d+)", pl.Int64)
        ).alias(C.ACCEPTED),
        pl.coalesce(
            _num(r"Drafted: (\d+) tokens", pl.Int64), _num(r"Number of draft tokens: (\d+)", pl.Int64)
        ).alias(C.DRAFTED),
        _num(r"Number of emitted tokens: (\d+)", pl.Int64).alias(C.EMITTED),
        _num(r"Number of speculative tokens: (\d+)", pl.Int64).alias(C.NUM_SPEC_TOKENS),
        _num(r"Accepted throughput: ([\w.]+)").alias(C.ACCEPTED_THROUGHPUT),
        _num(r"Drafted throughput: ([\w.]+)").alias(C.DRAFTED_THROUGHPUT),
        _num(r"System efficiency: ([\w.]+)").alias(C.SYSTEM_EFFICIENCY),
        body.str.extract(r"Per-position acceptance rate: ((?:(?:[\d.]+|nan), )*(?:[\d.]+|nan))", 1)
        .str.split(", ")
        .list.eval(pl.element().cast(pl.Float64, strict=False))
        .alias(C.PER_POSITION),
    )
    return conform(
        T.SPEC_METRICS,
        out.select(
            *COMMON_COLUMNS,
            C.LAYOUT,
            C.MEAN_ACCEPTANCE_LENGTH,
            C.ACCEPTANCE_RATE,
            C.ACCEPTED,
            C.DRAFTED,
            C.EMITTED,
            C.NUM_SPEC_TOKENS,
            C.ACCEPTED_THROUGHPUT,
            C.DRAFTED_THROUGHPUT,
            C.SYSTEM_EFFICIENCY,
            C.PER_POSITION,
        ),
    )
