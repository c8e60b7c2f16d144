"""Saved metrics-endpoint snapshots -> the `endpoint_metrics` table, one row per line.

- A `/metrics` page (Prometheus text exposition format 0.0.4, as `prometheus_client` writes it for both
  engines): `name{label="v",...} value [timestamp]` samples and `# TYPE name kind` / `# HELP name text`
  lines. SGLang's gauges `sglang:spec_accept_length`, `sglang:spec_accept_rate` (labels per rank and
  engine type, `python/sglang/srt/metrics/collector.py`); vLLM's counters `vllm:spec_decode_num_drafts_total`,
  `vllm:spec_decode_num_draft_tokens_total`, `vllm:spec_decode_num_accepted_tokens_total` and
  `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}` (`vllm/v1/spec_decode/metrics.py`).
  The `position` label is read into its own column.
- A `/server_info` (SGLang `get_server_info`) JSON object on one line: the server args at the top level
  (`speculative_num_steps`), one `internal_states` entry per DP rank with `avg_spec_accept_length` (and,
  with adaptive speculation, the `speculative_num_steps` in force). Its row is named
  `server_info:avg_spec_accept_length`, the mean over the ranks, with the depth in force.
"""

from __future__ import annotations

import polars as pl

from tracelens.parsers.distinct import groups_expr
from tracelens.parsers.literals import has_literal
from tracelens.parsers.requests import in_row_order
from tracelens.tables.names import SERVER_INFO_ACCEPT
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, project

# Metric families of the two engines, and the default collectors of `prometheus_client` that every
# Python exposition carries beside them.
ENGINE_SAMPLE_STARTS = ("sglang:", "vllm:")
DEFAULT_SAMPLE_STARTS = ("python_", "process_")
COMMENT_STARTS = ("# HELP ", "# TYPE ")
SERVER_INFO_KEY = '"internal_states":'
# `/server_info` begins with the server args (`model_path` first); a PD router's with `internal_states`.
SERVER_INFO_STARTS = ('{"model_path":', '{"model_path": ', '{"internal_states":', '{"internal_states": ')

_SAMPLE = r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?[ \t]+(?P<value>[^ \t]+)"
_COMMENT = r"^# (?P<item>HELP|TYPE) (?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:[ \t]+(?P<detail>.*))?$"
_LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"'
_SERVER_INFO = pl.Struct(
    {
        "speculative_num_steps": pl.Int64,
        "internal_states": pl.List(
            pl.Struct({"avg_spec_accept_length": pl.Float64, "speculative_num_steps": pl.Int64})
        ),
    }
)


def parse_endpoint_metrics(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `endpoint_metric` -> the `endpoint_metrics` table (unreadable lines dropped)."""
    df = project(df, *COMMON_COLUMNS, W.BODY).with_row_index(W.ROW)
    body = pl.col(W.BODY)
    kind = df.select(
        pl.when(body.str.starts_with("# "))
        .then(pl.lit("comment"))
        .when(has_literal(body, SERVER_INFO_KEY))
        .then(pl.lit("server_info"))
        .otherwise(pl.lit("sample"))
    ).to_series()
    parts = [
        reader(df.filter(kind == name))
        for name, reader in (("sample", _samples), ("comment", _comments), ("server_info", _server_info))
        if (kind == name).any()
    ]
    return in_row_order(T.ENDPOINT_METRICS, parts)


def _samples(df: pl.DataFrame) -> pl.DataFrame:
    read = df.with_columns(groups_expr(W.BODY, _SAMPLE).alias(W.GROUPS)).unnest(W.GROUPS)
    label = pl.element()
    labels = (
        pl.col("labels")
        .str.extract_all(_LABEL)
        .list.eval(
            pl.struct(
                label.str.extract(r"^([^=]*)=", 1).alias(C.KEY),
                label.str.extract(r'^[^=]*="(.*)"$', 1)
                .str.replace_all(r'\\"', '"', literal=True)
                .alias(C.VALUE),
            )
        )
    )
    value = pl.col("value").cast(pl.Float64, strict=False)
    return read.filter(pl.col("name").is_not_null() & value.is_not_null()).select(
        W.ROW,
        *COMMON_COLUMNS,
        pl.lit("sample").alias(C.METRIC_ITEM),
        pl.col("name").alias(C.METRIC_NAME),
        labels.alias(C.METRIC_LABELS),
        value.alias(C.METRIC_VALUE),
        pl.col("labels").str.extract(r'(?:^|,)position="(\d+)"', 1).cast(pl.Int64).alias(C.METRIC_POSITION),
    )


def _comments(df: pl.DataFrame) -> pl.DataFrame:
    read = df.with_columns(groups_expr(W.BODY, _COMMENT).alias(W.GROUPS)).unnest(W.GROUPS)
    return read.filter(pl.col("name").is_not_null()).select(
        W.ROW,
        *COMMON_COLUMNS,
        pl.col("item").str.to_lowercase().alias(C.METRIC_ITEM),
        pl.col("name").alias(C.METRIC_NAME),
        pl.col("detail").alias(C.DETAIL),
    )


def _server_info(df: pl.DataFrame) -> pl.DataFrame:
    objects = df.get_column(W.BODY)
    try:
        decoded = objects.str.json_decode(_SERVER_INFO)
    except pl.exceptions.PolarsError:  # the rare bad line: a row at a time, the others kept
        decoded = pl.concat([_decode_one(value) for value in objects.to_list()])
    df = df.with_columns(decoded.alias(W.FIELDS)).unnest(W.FIELDS)
    states = pl.col("internal_states")
    depth = pl.coalesce(
        states.list.eval(pl.element().struct.field("speculative_num_steps")).list.drop_nulls().list.first(),
        pl.col("speculative_num_steps"),
    )
    return df.filter(states.is_not_null()).select(
        W.ROW,
        *COMMON_COLUMNS,
        pl.lit("server_info").alias(C.METRIC_ITEM),
        pl.lit(SERVER_INFO_ACCEPT).alias(C.METRIC_NAME),
        states.list.eval(pl.element().struct.field("avg_spec_accept_length"))
        .list.mean()
        .alias(C.METRIC_VALUE),
        depth.alias(C.SPEC_NUM_STEPS),
    )


def _decode_one(value: str | None) -> pl.Series:
    try:
        return pl.Series([value]).str.json_decode(_SERVER_INFO)
    except pl.exceptions.PolarsError:
        return pl.Series([None], dtype=_SERVER_INFO)
