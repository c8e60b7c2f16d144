"""Request-log lines -> the `requests` table: one row per line, the speculative fields as the engine
wrote them (what they mean, and how they compare across engines: docs/acceptance.md).

The layouts, each from the engines' own sources (2026):

- `sglang_text`: SGLang's `--log-requests` in its text format (`python/sglang/srt/utils/request_logger.py`,
  `RequestLogger.log_received_request` / `log_finished_request`): `Receive: obj=GenerateReqInput(...)` and
  `Finish: obj=..., out={'text': ..., 'output_ids': [...], 'meta_info': {...}}`, Python reprs, behind
  SGLang's prefix. The fields are read from the text after the last `'meta_info': {` (the output text,
  which is untrusted and may hold anything, comes before it), by patterns with one capture each.
- `sglang_json`: the same logger with `--log-requests-format json`: `{"timestamp": ..., "event":
  "request.received" | "request.finished", "rid": ..., "obj": {...}, "out": {"meta_info": {...}}}`, a bare
  JSON object per line (to stdout, or to `{hostname}_{rank}.log` files rotated hourly in a folder).
- `sglang_metrics_file`: `--export-metrics-to-file` (`python/sglang/srt/observability/
  request_metrics_exporter.py`, `FileRequestMetricsExporter`): `{"request_parameters": "<json>", **meta_info}`
  per line of `sglang-request-metrics-YYYYMMDD_HH.log`.
- `vllm_response`: a vLLM OpenAI response saved as a JSON line, with `--per-request-spec-decode-metrics`
  on: `metrics.speculative_decoding` = {num_spec_steps, num_draft_tokens, num_accepted_draft_tokens,
  mean_acceptance_length, draft_acceptance_rate, acceptance_histogram[, per_step_accepted, per_step_drafted]}.

JSON is decoded by polars over the block's JSON rows at once, into the one struct type below (keys it
does not name are skipped). A block whose JSON does not decode as that type (a line cut short, a value of
another type) is decoded again a row at a time, so only the bad lines fall back to `message`/`unparsed`.
"""

from __future__ import annotations

import polars as pl

from tracelens.parsers.literals import has_literal
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform, empty, project

RECEIVE = "Receive: obj="
FINISH = "Finish: obj="
# What a JSON request line starts with, by layout: the request logger's first key, the metrics file's.
JSON_LOGGER_START = '{"timestamp": '
METRICS_FILE_START = '{"request_parameters": '
# A saved vLLM response (an OpenAI object: `id` first), as a client's `json.dumps` or vLLM's own compact
# JSON writes it, or a streamed chunk; its per-request metrics are under `metrics.speculative_decoding`.
VLLM_RESPONSE_STARTS = ('{"id": ', '{"id":"', 'data: {"id": ', 'data: {"id":"')
# A streamed vLLM response's chunks, saved as they came: `data: {...}` (the last one carries the metrics).
SSE_DATA = "data: "
_META_START = "'meta_info': {"

_INT: pl.DataType = pl.Int64()
_FLOAT: pl.DataType = pl.Float64()
_META = pl.Struct(
    {
        "id": pl.String,
        "finish_reason": pl.Struct({"type": pl.String}),
        "prompt_tokens": _INT,
        "completion_tokens": _INT,
        "cached_tokens": _INT,
        "e2e_latency": _FLOAT,
        "queue_time": _FLOAT,
        "prefill_launch_latency": _FLOAT,
        "request_received_ts": _FLOAT,
        "spec_verify_ct": _INT,
        "spec_accept_length": _FLOAT,
        "spec_accept_rate": _FLOAT,
        "spec_accept_token_num": _INT,
        "spec_draft_token_num": _INT,
        "spec_accept_histogram": pl.List(_INT),
    }
)
_VLLM_SPEC = pl.Struct(
    {
        "num_spec_steps": _INT,
        "num_draft_tokens": _INT,
        "num_accepted_draft_tokens": _INT,
        "mean_acceptance_length": _FLOAT,
        "draft_acceptance_rate": _FLOAT,
        "acceptance_histogram": pl.List(_INT),
    }
)
_JSON = pl.Struct(
    {
        "timestamp": pl.String,
        "event": pl.String,
        "rid": pl.String,
        "out": pl.Struct({"meta_info": _META}),
        "request_parameters": pl.String,
        **dict(_META.to_schema()),  # the metrics file's meta_info keys sit at the top level
        "created": _INT,
        "usage": pl.Struct({"prompt_tokens": _INT, "completion_tokens": _INT}),
        "choices": pl.List(pl.Struct({"finish_reason": pl.String})),
        "metrics": pl.Struct({"speculative_decoding": _VLLM_SPEC}),
    }
)
_EVENTS = {"request.received": "received", "request.finished": "finished"}

# SGLang's repr: `'key': value` inside meta_info. A number, and the histogram's list of integers.
_NUMBER = r"(-?[0-9][0-9.eE+-]*|nan|inf)"


def _meta_number(key: str) -> str:
    return rf"'{key}': {_NUMBER}"


_TEXT_FIELDS: tuple[tuple[str, str, pl.DataType], ...] = (
    (C.PROMPT_TOKENS, "prompt_tokens", _INT),
    (C.COMPLETION_TOKENS, "completion_tokens", _INT),
    (C.CACHED_TOKENS, "cached_tokens", _INT),
    (C.E2E_LATENCY_S, "e2e_latency", _FLOAT),
    (C.QUEUE_TIME_S, "queue_time", _FLOAT),
    (C.PREFILL_LAUNCH_LATENCY_S, "prefill_launch_latency", _FLOAT),
    (C.SPEC_VERIFY_CT, "spec_verify_ct", _INT),
    (C.SPEC_ACCEPT_LENGTH, "spec_accept_length", _FLOAT),
    (C.SPEC_ACCEPT_RATE, "spec_accept_rate", _FLOAT),
    (C.SPEC_ACCEPTED_TOKENS, "spec_accept_token_num", _INT),
    (C.SPEC_DRAFT_TOKENS, "spec_draft_token_num", _INT),
)


def parse_requests(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `request` -> the `requests` table (a line of none of the layouts is dropped)."""
    df = project(df, *COMMON_COLUMNS, W.BODY).with_row_index(W.ROW)
    body = pl.col(W.BODY)
    text = df.select(body.str.starts_with(RECEIVE) | body.str.starts_with(FINISH)).to_series()
    parts = []
    if text.any():
        parts.append(_text_rows(df.filter(text)))
    if not text.all():
        parts.append(_json_rows(df.filter(~text)))
    return in_row_order(T.REQUESTS, parts)


def in_row_order(table: str, parts: list[pl.DataFrame]) -> pl.DataFrame:
    """``table`` from the rows each reader of a layout made (with their `W.ROW`), in the lines' order."""
    parts = [p for p in parts if p.height]
    if not parts:
        return empty(table)
    out = parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed").sort(W.ROW)
    return conform(table, out)


def _text_rows(df: pl.DataFrame) -> pl.DataFrame:
    finished = pl.col(W.BODY).str.starts_with(FINISH)
    meta = pl.when(finished & has_literal(pl.col(W.BODY), _META_START)).then(
        pl.col(W.BODY).str.split(_META_START).list.last()
    )
    df = df.with_columns(meta.alias(W.FIELDS))
    m = pl.col(W.FIELDS)
    histogram = (
        m.str.extract(r"'spec_accept_histogram': \[([0-9, ]*)\]", 1)
        .str.split(", ")
        .list.eval(pl.element().str.strip_chars().filter(pl.element() != "").cast(_INT, strict=False))
    )
    return df.select(
        W.ROW,
        *COMMON_COLUMNS,
        pl.lit("sglang_text").alias(C.LAYOUT),
        pl.when(finished).then(pl.lit("finished")).otherwise(pl.lit("received")).alias(C.EVENT),
        pl.coalesce(
            m.str.extract(r"'id': '([^']*)'", 1), pl.col(W.BODY).str.extract(r"rid='([^']*)'", 1)
        ).alias(C.RID),
        *(
            m.str.extract(_meta_number(key), 1).cast(dtype, strict=False).alias(col)
            for col, key, dtype in _TEXT_FIELDS
        ),
        m.str.extract(r"'finish_reason': \{'type': '([^']*)'", 1).alias(C.FINISH_REASON),
        histogram.alias(C.SPEC_ACCEPT_HISTOGRAM),
    )


def _decode(objects: pl.Series) -> pl.Series:
    """Each JSON object as `_JSON`, null where a line does not decode as that type."""
    try:
        return objects.str.json_decode(_JSON)
    except pl.exceptions.PolarsError:
        pass
    decoded = []  # the rare block with a bad line: one row at a time, so the others are kept
    for value in objects.to_list():
        try:
            decoded.append(pl.Series([value]).str.json_decode(_JSON))
        except pl.exceptions.PolarsError:
            decoded.append(pl.Series([None], dtype=_JSON))
    return pl.concat(decoded)


def _json_rows(df: pl.DataFrame) -> pl.DataFrame:
    objects = df.select(pl.col(W.BODY).str.strip_prefix(SSE_DATA)).to_series()
    df = df.with_columns(_decode(objects).alias(W.FIELDS)).unnest(W.FIELDS)
    logger = pl.col("event").is_in(list(_EVENTS)).fill_null(False)
    metrics_file = pl.col("request_parameters").is_not_null()
    vllm = pl.col("metrics").struct.field("speculative_decoding").is_not_null() & ~logger & ~metrics_file
    layout = (
        pl.when(logger)
        .then(pl.lit("sglang_json"))
        .when(metrics_file)
        .then(pl.lit("sglang_metrics_file"))
        .when(vllm)
        .then(pl.lit("vllm_response"))
    )
    df = df.with_columns(layout.alias(C.LAYOUT)).filter(pl.col(C.LAYOUT).is_not_null())
    inner = pl.col("out").struct.field("meta_info")
    spec = pl.col("metrics").struct.field("speculative_decoding")

    def meta(key: str) -> pl.Expr:
        """A meta_info field: inside `out` (request logger) or at the top level (metrics file)."""
        return pl.when(logger).then(inner.struct.field(key)).otherwise(pl.col(key))

    def pick(key: str, vllm_value: pl.Expr) -> pl.Expr:
        return pl.when(vllm).then(vllm_value).otherwise(meta(key))

    usage = pl.col("usage")
    epoch = pl.coalesce(meta("request_received_ts"), pl.col("created").cast(_FLOAT))
    stamp = pl.coalesce(
        pl.col("timestamp").str.to_datetime(time_unit="us", strict=False),
        (epoch * 1_000_000).cast(_INT).cast(pl.Datetime("us")),
    )
    return df.select(
        W.ROW,
        *(c for c in COMMON_COLUMNS if c != C.TS),
        pl.coalesce(pl.col(C.TS), stamp).alias(C.TS),
        C.LAYOUT,
        pl.col("event").replace_strict(_EVENTS, default="finished").alias(C.EVENT),
        pl.coalesce(pl.col("rid"), meta("id"), pl.col("id")).alias(C.RID),
        pick("prompt_tokens", usage.struct.field("prompt_tokens")).alias(C.PROMPT_TOKENS),
        pick("completion_tokens", usage.struct.field("completion_tokens")).alias(C.COMPLETION_TOKENS),
        meta("cached_tokens").alias(C.CACHED_TOKENS),
        pl.when(vllm)
        .then(pl.col("choices").list.first().struct.field("finish_reason"))
        .otherwise(meta("finish_reason").struct.field("type"))
        .alias(C.FINISH_REASON),
        meta("e2e_latency").alias(C.E2E_LATENCY_S),
        meta("queue_time").alias(C.QUEUE_TIME_S),
        meta("prefill_launch_latency").alias(C.PREFILL_LAUNCH_LATENCY_S),
        pick("spec_verify_ct", spec.struct.field("num_spec_steps")).alias(C.SPEC_VERIFY_CT),
        pick("spec_accept_length", spec.struct.field("mean_acceptance_length")).alias(C.SPEC_ACCEPT_LENGTH),
        pick("spec_accept_rate", spec.struct.field("draft_acceptance_rate")).alias(C.SPEC_ACCEPT_RATE),
        pick("spec_accept_token_num", spec.struct.field("num_accepted_draft_tokens")).alias(
            C.SPEC_ACCEPTED_TOKENS
        ),
        pick("spec_draft_token_num", spec.struct.field("num_draft_tokens")).alias(C.SPEC_DRAFT_TOKENS),
        pick("spec_accept_histogram", spec.struct.field("acceptance_histogram")).alias(
            C.SPEC_ACCEPT_HISTOGRAM
        ),
    )
