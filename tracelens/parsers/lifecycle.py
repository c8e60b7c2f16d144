"""Startup and shutdown milestones, with their typed values (elapsed, memory, tokens, sizes)."""

from __future__ import annotations

import polars as pl

from tracelens.parsers.kinds import LIFECYCLE_EVENTS
from tracelens.parsers.literals import has_literal
from tracelens.tables.first_match import first_match
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform, project

_GB = r"\s*GB"


def _number(pattern: str) -> pl.Expr:
    return pl.col(W.BODY).str.extract(pattern, 1).cast(pl.Float64, strict=False)


def event_expr() -> pl.Expr:
    """The lifecycle event name of a message, or null."""
    return first_match(
        (pl.any_horizontal(*(pl.col(W.BODY).str.starts_with(s) for s in event.starts)), pl.lit(event.event))
        for event in LIFECYCLE_EVENTS
    )


def parse_lifecycle(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `lifecycle` -> the `lifecycle` table."""
    body = pl.col(W.BODY)
    k_plus_v = _number(r"\bK size: ([\d.]+)" + _GB) + _number(r"\bV size: ([\d.]+)" + _GB)
    out = df.with_columns(event_expr().alias(C.EVENT)).with_columns(
        pl.when(pl.col(C.EVENT).str.starts_with("graph_capture"))
        .then(
            pl.when(has_literal(body, "draft"))
            .then(pl.lit("draft"))
            .when(has_literal(body, "target verify"))
            .then(pl.lit("target_verify"))
            .otherwise(pl.lit("target"))
        )
        .alias(C.TARGET),
        pl.coalesce(_number(r"\belapsed=([\d.]+) s"), _number(r"Time elapsed: ([\d.]+) s")).alias(
            C.ELAPSED_S
        ),
        pl.coalesce(_number(r"avail mem=([\d.]+)" + _GB), _number(r"available_gpu_mem=([\d.]+)" + _GB)).alias(
            C.AVAIL_MEM_GB
        ),
        _number(r"mem usage=([\d.]+)" + _GB).alias(C.MEM_USAGE_GB),
        pl.coalesce(_number(r"\bKV size: ([\d.]+)" + _GB), k_plus_v).alias(C.KV_SIZE_GB),
        pl.coalesce(
            body.str.extract(r"#tokens: (\d+)", 1), body.str.extract(r"^max_total_num_tokens?=(\d+)", 1)
        )
        .cast(pl.Int64)
        .alias(C.TOKENS),
        body.str.extract(r"\btype=([\w.]+)", 1).alias(C.MODEL_TYPE),
        body.str.extract(r"\bdtype=([\w.]+)", 1).alias(C.DTYPE),
        pl.coalesce(
            body.str.extract(r"^Started server process \[(\d+)\]", 1),
            body.str.extract(r"^Uvicorn running on (\S+)", 1),
        ).alias(C.DETAIL),
    )
    return conform(
        T.LIFECYCLE,
        project(
            out.filter(pl.col(C.EVENT).is_not_null()),
            *COMMON_COLUMNS,
            C.EVENT,
            C.TARGET,
            C.ELAPSED_S,
            C.AVAIL_MEM_GB,
            C.MEM_USAGE_GB,
            C.KV_SIZE_GB,
            C.TOKENS,
            C.MODEL_TYPE,
            C.DTYPE,
            C.DETAIL,
        ),
    )
