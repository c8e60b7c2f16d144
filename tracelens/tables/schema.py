"""The Arrow type of every table: its columns, in order, with their types, and the functions that bring
a frame to that schema (`conform`, `empty`, `conform_parts`).

The names themselves are in `names` (tables, columns, kinds, analysis columns) and `working` (working
columns); they are re-exported here, so ``from tracelens.tables.schema import A, C, T`` is the one import
for a module that names columns.

Why Arrow types and not polars dtypes: the tables are the contract between the parsers and everyone
else (Parquet files, DuckDB, Spark, notebooks). ``polars_schema()`` derives the polars view.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import polars as pl
import pyarrow as pa

from tracelens.tables.names import KIND_TABLE, KINDS, TABLES, A, C, Kind, T
from tracelens.tables.working import W

__all__ = [
    "BATCH_FIELDS",
    "COMMON_COLUMNS",
    "KINDS",
    "KIND_TABLE",
    "KV_LIST",
    "KV_STRUCT",
    "PROCESS_COLUMNS",
    "RANK_COLUMNS",
    "SCHEMAS",
    "TABLES",
    "TIMESTAMP",
    "A",
    "BatchField",
    "C",
    "Kind",
    "T",
    "W",
    "arrow_schema",
    "conform",
    "conform_parts",
    "empty",
    "polars_schema",
    "process_types",
]

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
# Which process printed a line (`names.C.PROCESS`), in the tables of lines that can tell a failure.
_PROCESS: list[tuple[str, pa.DataType]] = [
    (C.PROCESS, pa.string()),
    (C.PID, pa.int64()),
    (C.HOST, pa.string()),
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
            *_PROCESS,
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
    T.REQUESTS: pa.schema(
        [
            *_COMMON,
            (C.LAYOUT, pa.string()),
            (C.EVENT, pa.string()),
            (C.RID, pa.string()),
            (C.PROMPT_TOKENS, pa.int64()),
            (C.COMPLETION_TOKENS, pa.int64()),
            (C.CACHED_TOKENS, pa.int64()),
            (C.FINISH_REASON, pa.string()),
            (C.E2E_LATENCY_S, pa.float64()),
            (C.QUEUE_TIME_S, pa.float64()),
            (C.PREFILL_LAUNCH_LATENCY_S, pa.float64()),
            (C.SPEC_VERIFY_CT, pa.int64()),
            (C.SPEC_ACCEPT_LENGTH, pa.float64()),
            (C.SPEC_ACCEPT_RATE, pa.float64()),
            (C.SPEC_ACCEPTED_TOKENS, pa.int64()),
            (C.SPEC_DRAFT_TOKENS, pa.int64()),
            (C.SPEC_ACCEPT_HISTOGRAM, pa.list_(pa.int64())),
        ]
    ),
    T.ENDPOINT_METRICS: pa.schema(
        [
            *_COMMON,
            (C.METRIC_ITEM, pa.string()),
            (C.METRIC_NAME, pa.string()),
            (C.METRIC_LABELS, KV_LIST),
            (C.METRIC_VALUE, pa.float64()),
            (C.METRIC_POSITION, pa.int64()),
            (C.SPEC_NUM_STEPS, pa.int64()),
            (C.DETAIL, pa.string()),
        ]
    ),
    T.FOREIGN: pa.schema(
        [*_COMMON, *_PROCESS, (C.FORMAT, pa.string()), (C.LEVEL, pa.string()), (C.MESSAGE, pa.string())]
    ),
    T.MESSAGES: pa.schema(
        [*_COMMON, *_PROCESS, (C.LEVEL, pa.string()), (C.LOGGER, pa.string()), (C.MESSAGE, pa.string())]
    ),
    T.UNPARSED: pa.schema([(C.SOURCE, pa.string()), (C.LINE_NO, pa.int64()), (C.TEXT, pa.string())]),
    T.EVIDENCE: pa.schema([(C.SOURCE, pa.string()), (C.LINE_NO, pa.int64()), (C.TEXT, pa.string())]),
}

assert tuple(SCHEMAS) == TABLES, "names.TABLES names the tables of SCHEMAS, in its order"
COMMON_COLUMNS: tuple[str, ...] = tuple(name for name, _ in _COMMON)
PROCESS_COLUMNS: tuple[str, ...] = tuple(name for name, _ in _PROCESS)


def conform_parts(table: str, parts: list[pl.DataFrame]) -> pl.DataFrame:
    """One table from frames read from its part files (each holds the table's whole schema)."""
    if not parts:
        return empty(table)
    return conform(table, pl.concat(parts, how="vertical_relaxed"))


@cache
def polars_schema(table: str) -> pl.Schema:
    """The polars view of a table's Arrow schema."""
    return pl.DataFrame(SCHEMAS[table].empty_table()).schema


def process_types() -> dict[str, pl.DataType]:
    """The polars types of `PROCESS_COLUMNS` (as every table that has them holds them)."""
    schema = polars_schema(T.FAULTS)
    return {name: schema[name] for name in PROCESS_COLUMNS}


@cache
def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema a table's part files are written with: `SCHEMAS`' columns and types as polars
    hands them to Arrow (strings as large strings), so a frame converts without a cast."""
    return _empty(table).to_arrow().schema


def empty(table: str) -> pl.DataFrame:
    """A zero-row frame with the table's exact schema."""
    return _empty(table).clone()  # a copy, cheap, so that no caller can change the cached frame


@cache
def _empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(table))


def project(df: pl.DataFrame, *names: str) -> pl.DataFrame:
    """The named columns of ``df``, in that order, as they are. A `select` of plain names runs a query
    (150-200 us for a block's frame, whatever its rows: an expression per column); taking columns by
    name does not (about 12 us). A block's parse takes columns like this a dozen times."""
    return df[list(names)]


def discard(df: pl.DataFrame, *names: str) -> pl.DataFrame:
    """``df`` without the named columns: `DataFrame.drop` runs a query too (126 us for a block's frame,
    against 11)."""
    gone = set(names)
    return project(df, *(name for name in df.columns if name not in gone))


def conform(table: str, df: pl.DataFrame) -> pl.DataFrame:
    """Select, order and cast ``df``'s columns to the table schema; missing columns become null."""
    schema = polars_schema(table)
    have = df.schema
    if have == schema:  # most small tables' parsers build the exact schema: a select would only copy names
        return df
    missing = tuple(name for name in schema if name not in have)
    if all(have[name] == dtype for name, dtype in schema.items() if name in have):
        # No cast needed: the null columns are added by a concatenation with a frame of no rows (57 us
        # for a batch block against 264 for the select), and the columns taken in the schema's order.
        if missing:
            df = pl.concat([df, _nulls_of(table, missing)], how="diagonal")
        return project(df, *schema)
    return df.select(_conform_exprs(table, tuple((name, have[name]) for name in schema if name in have)))


@cache
def _nulls_of(table: str, names: tuple[str, ...]) -> pl.DataFrame:
    """A frame of no rows with ``names``, typed as in ``table``: what `conform` adds a frame's missing
    columns from. Never changed: `pl.concat` copies from it."""
    schema = polars_schema(table)
    return pl.DataFrame(schema={name: schema[name] for name in names})


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
