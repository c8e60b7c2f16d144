"""The one place that names every table, column and Arrow type.

Everything else imports the constants below (``C.ACCEPT_LEN``, ``T.BATCHES``) instead of spelling a
column name as a string literal, so that renaming a column is a one-line change and a typo is an
``AttributeError`` rather than a silently empty column.

Why Arrow types and not polars dtypes: the tables are the contract between the parsers and everyone
else (Parquet files, DuckDB, Spark, notebooks). ``polars_schema()`` derives the polars view.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import polars as pl
import pyarrow as pa


class T:
    """Table names."""

    LINES = "lines"
    BATCHES = "batches"
    DEBUG = "debug"
    LIFECYCLE = "lifecycle"
    SERVER_ARGS = "server_args"
    RUNS = "runs"
    HTTP = "http"
    FAULTS = "faults"
    SPEC_METRICS = "spec_metrics"
    BENCHMARKS = "benchmarks"
    FOREIGN = "foreign"
    MESSAGES = "messages"
    UNPARSED = "unparsed"
    # The text of the lines findings may cite (written by the batch engine, empty in memory): evidence
    # keeps its text when the source is compressed, in an archive, moved or deleted.
    EVIDENCE = "evidence"


class C:
    """Column names. Grouped by the table that introduces them; shared columns are defined once."""

    # identity and prefix, shared by every line-level table
    SOURCE = "source"
    LINE_NO = "line_no"
    RUN = "run"
    TS = "ts"
    DP = "dp"
    PP = "pp"
    TP = "tp"
    EP = "ep"
    ATTN_CP = "attn_cp"
    MOE_DP = "moe_dp"

    # lines
    BYTE_OFFSET = "byte_offset"
    BYTE_LEN = "byte_len"
    KIND = "kind"
    RECORD = "record"

    # batches
    PHASE = "phase"
    FORWARD_ITER = "forward_iter"
    NEW_SEQ = "new_seq"
    NEW_TOKEN = "new_token"
    CACHED_TOKEN = "cached_token"
    CACHE_HIT_RATE = "cache_hit_rate"
    TOKEN = "token"
    TOKEN_USAGE = "token_usage"
    RUNNING_REQ = "running_req"
    QUEUE_REQ = "queue_req"
    REMAINING_REQ = "remaining_req"
    PENDING_TOKEN = "pending_token"
    ACCEPT_LEN = "accept_len"
    ACCEPT_RATE = "accept_rate"
    CAP_LEN = "cap_len"
    BLOCK_ACCEPT_LEN = "block_accept_len"
    GRAPH = "graph"
    GEN_THROUGHPUT = "gen_throughput"
    INPUT_THROUGHPUT = "input_throughput"
    LARGEST_LEN = "largest_len"
    BATCH_TIMESTAMP = "batch_timestamp"
    FULL_TOKEN = "full_token"
    FULL_TOKEN_USAGE = "full_token_usage"
    SWA_TOKEN = "swa_token"
    SWA_TOKEN_USAGE = "swa_token_usage"
    MAMBA_NUM = "mamba_num"
    MAMBA_USAGE = "mamba_usage"
    GPU_TOKEN = "gpu_token"
    PREALLOCATED_USAGE = "preallocated_usage"
    RETRACTED_REQ = "retracted_req"
    PREALLOC_REQ = "prealloc_req"
    TRANSFER_REQ = "transfer_req"
    INFLIGHT_REQ = "inflight_req"
    BOOTSTRAP_REQ = "bootstrap_req"
    UNBOOTSTRAPPED_REQ = "unbootstrapped_req"
    TRANSFERRING_REQ = "transferring_req"
    EXTRA = "extra"

    # debug
    TAG = "tag"
    SITE = "site"
    EVENT = "event"
    ITEMS = "items"
    NUM_AUX = "num_aux"
    NUM_ITEMS = "num_items"
    LAYER_ID = "layer_id"
    LAYER_IDS = "layer_ids"
    NORM = "norm"
    SHAPES = "shapes"
    TRUNCATED = "truncated"

    # key/value structs (debug items, batch extras)
    KEY = "key"
    VALUE = "value"

    # benchmarks: one row per line of an `sglang.bench_serving` result block pasted into a log
    BENCH_ITEM = "item"  # header | section | metric | footer
    BENCH_METRIC = "bench_metric"  # the printed name without its unit: `Mean TTFT`, `Accept length`
    BENCH_UNIT = "unit"  # ms, s, req/s, tok/s, or null
    BENCH_NUMBER = "number"  # the value as a number (null for `Backend: sglang`; inf is kept)

    # lifecycle
    MODEL_TYPE = "model_type"
    DTYPE = "dtype"
    TARGET = "target"
    ELAPSED_S = "elapsed_s"
    AVAIL_MEM_GB = "avail_mem_gb"
    MEM_USAGE_GB = "mem_usage_gb"
    KV_SIZE_GB = "kv_size_gb"
    TOKENS = "tokens"
    DETAIL = "detail"

    # server_args
    FORM = "form"

    # runs
    START_LINE = "start_line"
    START_TS = "start_ts"
    END_TS = "end_ts"
    LINE_COUNT = "line_count"
    MODEL = "model"
    TP_SIZE = "tp_size"
    DP_SIZE = "dp_size"
    PP_SIZE = "pp_size"
    EP_SIZE = "ep_size"
    SPEC_ALGORITHM = "speculative_algorithm"
    SPEC_NUM_STEPS = "speculative_num_steps"
    SPEC_EAGLE_TOPK = "speculative_eagle_topk"
    SPEC_NUM_DRAFT_TOKENS = "speculative_num_draft_tokens"
    SPEC_DRAFT_MODEL = "speculative_draft_model_path"
    DISABLE_CUDA_GRAPH = "disable_cuda_graph"

    # http
    CLIENT = "client"
    METHOD = "method"
    PATH = "path"
    PROTOCOL = "protocol"
    STATUS = "status"

    # faults
    COMPONENT = "component"
    FAULT_KIND = "fault_kind"
    MESSAGE = "message"
    EXCEPTION_TYPE = "exception_type"
    TRACEBACK = "traceback"
    FIRST_LINE = "first_line"
    LAST_LINE = "last_line"

    # spec_metrics
    LAYOUT = "layout"
    MEAN_ACCEPTANCE_LENGTH = "mean_acceptance_length"
    ACCEPTANCE_RATE = "acceptance_rate"
    ACCEPTED = "accepted"
    DRAFTED = "drafted"
    EMITTED = "emitted"
    ACCEPTED_THROUGHPUT = "accepted_throughput"
    DRAFTED_THROUGHPUT = "drafted_throughput"
    SYSTEM_EFFICIENCY = "system_efficiency"
    NUM_SPEC_TOKENS = "num_spec_tokens"
    PER_POSITION = "per_position"

    # foreign, messages
    FORMAT = "format"
    LEVEL = "level"
    LOGGER = "logger"

    # unparsed
    TEXT = "text"


class Kind:
    """Values of ``lines.kind``: which table a line (or the record it continues) lives in."""

    BATCH = "batch"
    DEBUG = "debug"
    LIFECYCLE = "lifecycle"
    HTTP = "http"
    FAULT = "fault"
    SPEC_METRICS = "spec_metrics"
    BENCHMARK = "benchmark"
    FOREIGN = "foreign"
    MESSAGE = "message"
    UNPARSED = "unparsed"
    BLANK = "blank"


# The table each kind's lines land in. Blank lines live only in `lines` (they carry no information
# but are still accounted for, so counts reconcile).
KIND_TABLE: dict[str, str] = {
    Kind.BATCH: T.BATCHES,
    Kind.DEBUG: T.DEBUG,
    Kind.LIFECYCLE: T.LIFECYCLE,
    Kind.HTTP: T.HTTP,
    Kind.FAULT: T.FAULTS,
    Kind.SPEC_METRICS: T.SPEC_METRICS,
    Kind.BENCHMARK: T.BENCHMARKS,
    Kind.FOREIGN: T.FOREIGN,
    Kind.MESSAGE: T.MESSAGES,
    Kind.UNPARSED: T.UNPARSED,
    Kind.BLANK: T.LINES,
}
KINDS: tuple[str, ...] = tuple(KIND_TABLE)

TIMESTAMP = pa.timestamp("us")
KV_STRUCT = pa.struct([(C.KEY, pa.string()), (C.VALUE, pa.string())])
KV_LIST = pa.list_(KV_STRUCT)

RANK_COLUMNS: tuple[str, ...] = (C.DP, C.PP, C.ATTN_CP, C.MOE_DP, C.TP, C.EP)

# Columns at the front of every line-level table: where the line is, when, which run and rank.
_COMMON: list[tuple[str, pa.DataType]] = [
    (C.SOURCE, pa.string()),
    (C.LINE_NO, pa.int64()),
    (C.RUN, pa.int32()),
    (C.TS, TIMESTAMP),
    *((r, pa.int32()) for r in RANK_COLUMNS),
]


@dataclass(frozen=True)
class BatchField:
    """One `key: value` item of a Prefill/Decode batch body, as SGLang spells the key."""

    log_key: str
    column: str
    type: pa.DataType


# Every key in the field guide. Several log keys may feed one column (eras renamed them). Keys not
# listed here go to the `extra` map column with their raw value, so a new SGLang field is never lost.
BATCH_FIELDS: tuple[BatchField, ...] = (
    BatchField("#new-seq", C.NEW_SEQ, pa.int64()),
    BatchField("#seq", C.NEW_SEQ, pa.int64()),
    BatchField("#new-token", C.NEW_TOKEN, pa.int64()),
    BatchField("#new_token", C.NEW_TOKEN, pa.int64()),
    BatchField("#cached-token", C.CACHED_TOKEN, pa.int64()),
    BatchField("#cached_token", C.CACHED_TOKEN, pa.int64()),
    BatchField("cache hit rate", C.CACHE_HIT_RATE, pa.float64()),
    BatchField("tree_cache_hit_rate", C.CACHE_HIT_RATE, pa.float64()),
    BatchField("#token", C.TOKEN, pa.int64()),
    BatchField("token usage", C.TOKEN_USAGE, pa.float64()),
    BatchField("#running-req", C.RUNNING_REQ, pa.int64()),
    BatchField("#running_req", C.RUNNING_REQ, pa.int64()),
    BatchField("#queue-req", C.QUEUE_REQ, pa.int64()),
    BatchField("#remaining_req", C.REMAINING_REQ, pa.int64()),
    BatchField("#pending-token", C.PENDING_TOKEN, pa.int64()),
    BatchField("accept len", C.ACCEPT_LEN, pa.float64()),
    BatchField("accept rate", C.ACCEPT_RATE, pa.float64()),
    BatchField("cap len", C.CAP_LEN, pa.float64()),
    BatchField("block accept len", C.BLOCK_ACCEPT_LEN, pa.float64()),
    BatchField("cuda graph", C.GRAPH, pa.bool_()),
    BatchField("cpu graph", C.GRAPH, pa.bool_()),
    BatchField("npu graph", C.GRAPH, pa.bool_()),
    BatchField("musa graph", C.GRAPH, pa.bool_()),
    BatchField("gen throughput (token/s)", C.GEN_THROUGHPUT, pa.float64()),
    BatchField("input throughput (token/s)", C.INPUT_THROUGHPUT, pa.float64()),
    BatchField("largest-len", C.LARGEST_LEN, pa.int64()),
    BatchField("timestamp", C.BATCH_TIMESTAMP, pa.string()),
    BatchField("#full token", C.FULL_TOKEN, pa.int64()),
    BatchField("full token usage", C.FULL_TOKEN_USAGE, pa.float64()),
    BatchField("#swa token", C.SWA_TOKEN, pa.int64()),
    BatchField("swa token usage", C.SWA_TOKEN_USAGE, pa.float64()),
    BatchField("mamba num", C.MAMBA_NUM, pa.int64()),
    BatchField("mamba usage", C.MAMBA_USAGE, pa.float64()),
    BatchField("#gpu token", C.GPU_TOKEN, pa.int64()),
    BatchField("pre-allocated usage", C.PREALLOCATED_USAGE, pa.float64()),
    BatchField("#retracted-req", C.RETRACTED_REQ, pa.int64()),
    BatchField("#prealloc-req", C.PREALLOC_REQ, pa.int64()),
    BatchField("#transfer-req", C.TRANSFER_REQ, pa.int64()),
    BatchField("#inflight-req", C.INFLIGHT_REQ, pa.int64()),
    BatchField("#bootstrap-req", C.BOOTSTRAP_REQ, pa.int64()),
    BatchField("#unbootstrapped-req", C.UNBOOTSTRAPPED_REQ, pa.int64()),
    BatchField("#transferring-req", C.TRANSFERRING_REQ, pa.int64()),
)


def _batch_columns() -> list[tuple[str, pa.DataType]]:
    seen: dict[str, pa.DataType] = {}
    for f in BATCH_FIELDS:
        seen.setdefault(f.column, f.type)
    return list(seen.items())


SCHEMAS: dict[str, pa.Schema] = {
    T.LINES: pa.schema(
        [
            *_COMMON,
            (C.BYTE_OFFSET, pa.int64()),
            (C.BYTE_LEN, pa.int32()),
            (C.KIND, pa.string()),
            (C.RECORD, pa.int64()),
        ]
    ),
    T.BATCHES: pa.schema(
        [
            *_COMMON,
            (C.PHASE, pa.string()),
            (C.FORWARD_ITER, pa.int64()),
            *_batch_columns(),
            (C.EXTRA, KV_LIST),
        ]
    ),
    T.DEBUG: pa.schema(
        [
            *_COMMON,
            (C.TAG, pa.string()),
            (C.SITE, pa.string()),
            (C.EVENT, pa.string()),
            (C.ITEMS, KV_LIST),
            (C.NUM_AUX, pa.int64()),
            (C.NUM_ITEMS, pa.int64()),
            (C.LAYER_ID, pa.int64()),
            (C.LAYER_IDS, pa.list_(pa.int64())),
            (C.NORM, pa.float64()),
            (C.SHAPES, pa.list_(pa.list_(pa.int64()))),
            (C.TRUNCATED, pa.bool_()),
        ]
    ),
    T.LIFECYCLE: pa.schema(
        [
            *_COMMON,
            (C.EVENT, pa.string()),
            (C.TARGET, pa.string()),
            (C.ELAPSED_S, pa.float64()),
            (C.AVAIL_MEM_GB, pa.float64()),
            (C.MEM_USAGE_GB, pa.float64()),
            (C.KV_SIZE_GB, pa.float64()),
            (C.TOKENS, pa.int64()),
            (C.MODEL_TYPE, pa.string()),
            (C.DTYPE, pa.string()),
            (C.DETAIL, pa.string()),
        ]
    ),
    T.SERVER_ARGS: pa.schema(
        [
            (C.SOURCE, pa.string()),
            (C.RUN, pa.int32()),
            (C.LINE_NO, pa.int64()),
            (C.FORM, pa.string()),
            (C.KEY, pa.string()),
            (C.VALUE, pa.string()),
        ]
    ),
    T.RUNS: pa.schema(
        [
            (C.SOURCE, pa.string()),
            (C.RUN, pa.int32()),
            (C.START_LINE, pa.int64()),
            (C.START_TS, TIMESTAMP),
            (C.END_TS, TIMESTAMP),
            (C.LINE_COUNT, pa.int64()),
            (C.MODEL, pa.string()),
            (C.TP_SIZE, pa.int64()),
            (C.DP_SIZE, pa.int64()),
            (C.PP_SIZE, pa.int64()),
            (C.EP_SIZE, pa.int64()),
            (C.SPEC_ALGORITHM, pa.string()),
            (C.SPEC_NUM_STEPS, pa.int64()),
            (C.SPEC_EAGLE_TOPK, pa.int64()),
            (C.SPEC_NUM_DRAFT_TOKENS, pa.int64()),
            (C.SPEC_DRAFT_MODEL, pa.string()),
            (C.DISABLE_CUDA_GRAPH, pa.bool_()),
        ]
    ),
    T.HTTP: pa.schema(
        [
            *_COMMON,
            (C.CLIENT, pa.string()),
            (C.METHOD, pa.string()),
            (C.PATH, pa.string()),
            (C.PROTOCOL, pa.string()),
            (C.STATUS, pa.int32()),
        ]
    ),
    T.FAULTS: pa.schema(
        [
            *_COMMON,
            (C.COMPONENT, pa.string()),
            (C.FAULT_KIND, pa.string()),
            (C.MESSAGE, pa.string()),
            (C.EXCEPTION_TYPE, pa.string()),
            (C.TRACEBACK, pa.string()),
            (C.FIRST_LINE, pa.int64()),
            (C.LAST_LINE, pa.int64()),
        ]
    ),
    T.SPEC_METRICS: pa.schema(
        [
            *_COMMON,
            (C.LAYOUT, pa.string()),
            (C.MEAN_ACCEPTANCE_LENGTH, pa.float64()),
            (C.ACCEPTANCE_RATE, pa.float64()),
            (C.ACCEPTED, pa.int64()),
            (C.DRAFTED, pa.int64()),
            (C.EMITTED, pa.int64()),
            (C.NUM_SPEC_TOKENS, pa.int64()),
            (C.ACCEPTED_THROUGHPUT, pa.float64()),
            (C.DRAFTED_THROUGHPUT, pa.float64()),
            (C.SYSTEM_EFFICIENCY, pa.float64()),
            (C.PER_POSITION, pa.list_(pa.float64())),
        ]
    ),
    T.BENCHMARKS: pa.schema(
        [
            *_COMMON,
            (C.BENCH_ITEM, pa.string()),
            (C.BENCH_METRIC, pa.string()),
            (C.BENCH_UNIT, pa.string()),
            (C.BENCH_NUMBER, pa.float64()),
            (C.VALUE, pa.string()),
        ]
    ),
    T.FOREIGN: pa.schema(
        [*_COMMON, (C.FORMAT, pa.string()), (C.LEVEL, pa.string()), (C.MESSAGE, pa.string())]
    ),
    T.MESSAGES: pa.schema(
        [*_COMMON, (C.LEVEL, pa.string()), (C.LOGGER, pa.string()), (C.MESSAGE, pa.string())]
    ),
    T.UNPARSED: pa.schema([(C.SOURCE, pa.string()), (C.LINE_NO, pa.int64()), (C.TEXT, pa.string())]),
    T.EVIDENCE: pa.schema([(C.SOURCE, pa.string()), (C.LINE_NO, pa.int64()), (C.TEXT, pa.string())]),
}

TABLES: tuple[str, ...] = tuple(SCHEMAS)
COMMON_COLUMNS: tuple[str, ...] = tuple(name for name, _ in _COMMON)

# What a dataset's `lines` part files hold: only what cannot be recomputed. The rank columns are left
# out (a line's ranks are in the table of its kind, row `record`; the in-memory `lines` of a parse keeps
# them, for the live view's rank filter), and `record` is written null where it equals `line_no` (a
# line that is its own record: all but continuation lines). `stored_lines` and `restored_lines` convert.
STORED_LINES: tuple[str, ...] = tuple(name for name in SCHEMAS[T.LINES].names if name not in RANK_COLUMNS)


def stored_lines(lines: pl.DataFrame) -> pl.DataFrame:
    """`lines` as a dataset stores it (see `STORED_LINES`)."""
    own = pl.col(C.RECORD) == pl.col(C.LINE_NO)
    return lines.select(
        *(
            pl.when(~own).then(pl.col(C.RECORD)).alias(C.RECORD) if c == C.RECORD else pl.col(c)
            for c in STORED_LINES
        )
    )


def restored_lines(lines: pl.DataFrame) -> pl.DataFrame:
    """`lines` read from a dataset, with the table's schema (rank columns null, `record` filled)."""
    lines = conform(T.LINES, lines)
    return lines.with_columns(pl.coalesce(C.RECORD, C.LINE_NO).alias(C.RECORD))


def conform_parts(table: str, parts: list[pl.DataFrame]) -> pl.DataFrame:
    """One table from its part files, which leave out their all-null columns (`engine.store`)."""
    if not parts:
        return empty(table)
    frame = conform(table, pl.concat(parts, how="diagonal_relaxed"))
    return restored_lines(frame) if table == T.LINES else frame


@cache
def polars_schema(table: str) -> pl.Schema:
    """The polars view of a table's Arrow schema."""
    return pl.DataFrame(SCHEMAS[table].empty_table()).schema


def empty(table: str) -> pl.DataFrame:
    """A zero-row frame with the table's exact schema."""
    return _empty(table).clone()  # a copy, cheap, so that no caller can change the cached frame


@cache
def _empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(table))


def conform(table: str, df: pl.DataFrame) -> pl.DataFrame:
    """Select, order and cast ``df``'s columns to the table schema; missing columns become null."""
    schema = polars_schema(table)
    have = df.schema
    return df.select(_conform_exprs(table, tuple((name, have[name]) for name in schema if name in have)))


@cache
def _conform_exprs(table: str, present: tuple[tuple[str, pl.DataType], ...]) -> tuple[pl.Expr, ...]:
    """`conform`'s expressions for frames with the same columns: a parser's output has one of a few
    shapes, and building the expressions anew for every block cost more than running them."""
    have = dict(present)
    return tuple(
        pl.col(name)
        if have.get(name) == dtype
        else (pl.col(name) if name in have else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in polars_schema(table).items()
    )


class W:
    """Working columns the parsers add to a line frame while they read it; never part of a table."""

    CLEAN = "_clean"  # line text without colour codes, tqdm carriage returns and wrappers
    BODY = "_body"  # the message after the prefix (the whole clean text when there is no prefix)
    PREFIXED = "_prefixed"  # SGLang's own prefix was found ([T TAGS], [gpu=N], Rank N:)
    DATE = "_date"
    TIME = "_time"
    FRAC = "_frac"
    TAGS = "_tags"
    GPU = "_gpu"
    CONT = "_cont"  # could continue a multi-line record (traceback frame, wrapped server_args)
    ROW = "_row"


class A:
    """Columns of the analysis frames (`tracelens.analysis.Analysis`); table columns are in `C`."""

    LABEL = "label"  # a run's display name: `<file name>#<run>`
    # client-side results of an sglang.bench_serving block (analysis/benchmarks.py), beside the run's
    BENCH_LINE = "bench_line"  # the line of the block's header
    BENCH_BACKEND = "bench_backend"
    BENCH_REQUESTS = "bench_successful_requests"
    BENCH_ACCEPT_LENGTH = "bench_accept_length"
    BENCH_OUTPUT_THROUGHPUT = "bench_output_throughput"
    BENCH_REQUEST_THROUGHPUT = "bench_request_throughput"
    BENCH_MEAN_E2E_MS = "bench_mean_e2e_ms"
    BENCH_MEAN_TTFT_MS = "bench_mean_ttft_ms"
    BENCH_MEAN_TPOT_MS = "bench_mean_tpot_ms"
    BENCH_MEAN_ITL_MS = "bench_mean_itl_ms"
    IS_BASELINE = "is_baseline"
    T_SINCE_START = "t_since_start_s"
    DP_RANKS = "dp_ranks"
    ACCEPTANCE_RATE = "acceptance_rate"  # recomputed, one definition across versions (README)
    ACCEPT_RATE_LOGGED = "accept_rate_logged"  # the `accept rate` SGLang printed, as printed
    ACCEPT_RATE_DEFINITION = "accept_rate_definition"  # which formula the logged value follows
    STAGE = "stage"  # warmup | steady
    ROLLING_MEDIAN = "accept_len_rolling_median"
    ROLLING_P10 = "accept_len_rolling_p10"
    ROLLING_P90 = "accept_len_rolling_p90"
    TPUT_ROLLING_MEDIAN = "gen_throughput_rolling_median"
    BATCH_SIZE = "batch_size"
    METRIC = "metric"
    BEFORE = "before"
    AFTER = "after"
    LOAD_CHANGE = "load_change"  # in words, the load shift that explains a step (null: none)
    # run overview
    DURATION_S = "duration_s"
    TIME_TO_READY_S = "time_to_ready_s"
    EXPECTED_TIME_TO_READY_S = "expected_time_to_ready_s"
    MEAN_ACCEPT_LEN = "mean_accept_len"
    MEAN_ACCEPTANCE_RATE = "mean_acceptance_rate"
    MEAN_GEN_THROUGHPUT = "mean_gen_throughput"
    SPEEDUP = "speedup"
    SPEEDUP_LOW = "speedup_ci_low"
    SPEEDUP_HIGH = "speedup_ci_high"
    BASELINE = "baseline"
    MATCHED_BATCH_SIZES = "matched_batch_sizes"
    SAMPLES = "samples"
    FINDINGS = "findings"
    ERRORS = "errors"
    ENDED_CLEANLY = "ended_cleanly"
    CAPTURED_LAYERS = "captured_layers"  # in words
    STATUS = "status"  # the run's verdict: healthy | degraded | broken | incomplete
    HEADLINE = "headline"  # the verdict in one sentence
    # startup
    PHASE_NAME = "phase"
    START = "start"
    END = "end"
    # config diff
    RUN_A = "run_a"
    RUN_B = "run_b"
    VALUE_A = "value_a"
    VALUE_B = "value_b"
    # capture
    COUNT = "count"
    NORM_MEAN = "norm_mean"
    NORM_MIN = "norm_min"
    NORM_MAX = "norm_max"
    BAD_NORMS = "bad_norms"  # NaN, infinite or zero norms of a debug site
    EMBED_STATE = "embed_state"  # seen | missing | unexpected | as expected | unknown
    # incidents
    INCIDENT = "incident"
    RANKS = "ranks"
    LAST_FRAMES = "last_frames"
    FIRST_TS = "first_ts"
    LAST_TS = "last_ts"
    # spec curves
    POSITION = "position"
    RATE = "rate"
