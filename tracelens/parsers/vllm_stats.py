"""vLLM's engine stats, printed every few seconds while it serves (every version since 0.4):

    INFO 03-18 09:04:46 [metrics.py:481] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput:
    0.4 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.6%, ...
    (V1: `Engine 000: Avg prompt throughput: ..., Running: 18 reqs, Waiting: 43 reqs, ...`)

They are vLLM's batch lines: one row of the `batches` table each, read by key (the eras renamed
`Pending` to `Waiting` and moved the keys about), so that a vLLM run's serving, throughput, load and
stalls are judged as an SGLang run's. A line with no work (nothing running, waiting or generated) is
phase `idle`: kept, but no decode round.
"""

from __future__ import annotations

import polars as pl

from tracelens.tables.schema import COMMON_COLUMNS, C, W

# The literal that routes a line here (`parsers/kinds.py`) and picks it out of the batch rows.
VLLM_STATS = "Avg generation throughput: "
IDLE = "idle"


def _num(pattern: str, dtype: type[pl.DataType] = pl.Float64) -> pl.Expr:
    return pl.col(W.BODY).str.extract(pattern, 1).cast(dtype, strict=False)


def parse_vllm_stats(df: pl.DataFrame) -> pl.DataFrame:
    """Rows holding `VLLM_STATS` (row index, common columns, body) -> `batches` columns and the row."""
    prompt = _num(r"Avg prompt throughput: ([\d.]+) tokens/s")
    gen = _num(r"Avg generation throughput: ([\d.]+) tokens/s")
    running = _num(r"\bRunning: (\d+) reqs", pl.Int64)
    waiting = pl.coalesce(_num(r"\bWaiting: (\d+) reqs", pl.Int64), _num(r"\bPending: (\d+) reqs", pl.Int64))
    out = df.with_columns(
        prompt.alias(C.INPUT_THROUGHPUT),
        gen.alias(C.GEN_THROUGHPUT),
        running.alias(C.RUNNING_REQ),
        waiting.alias(C.QUEUE_REQ),
        (_num(r"GPU KV cache usage: ([\d.]+)%") / 100).alias(C.TOKEN_USAGE),
        (_num(r"Prefix cache hit rate: ([\d.]+)%") / 100).alias(C.CACHE_HIT_RATE),
    ).with_columns(
        pl.when((pl.col(C.GEN_THROUGHPUT) > 0) | (pl.col(C.RUNNING_REQ) > 0))
        .then(pl.lit("decode"))
        .when((pl.col(C.INPUT_THROUGHPUT) > 0) | (pl.col(C.QUEUE_REQ) > 0))
        .then(pl.lit("prefill"))
        .otherwise(pl.lit(IDLE))
        .alias(C.PHASE)
    )
    return out.select(
        W.ROW,
        *COMMON_COLUMNS,
        C.PHASE,
        C.INPUT_THROUGHPUT,
        C.GEN_THROUGHPUT,
        C.RUNNING_REQ,
        C.QUEUE_REQ,
        C.TOKEN_USAGE,
        C.CACHE_HIT_RATE,
    )
