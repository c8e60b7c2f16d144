"""The names of the tables, of their columns and of the analysis frames' columns: constants that every
module uses (``C.ACCEPT_LEN``, ``T.BATCHES``) instead of spelling a name as a string literal, so that
renaming a column is a one-line change and a typo is an ``AttributeError`` rather than a silently
empty column. Their types are in `schema`, which also re-exports these names."""

from __future__ import annotations


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
    # one row per request-log line (SGLang `--log-requests` text or JSON, its `--export-metrics-to-file`
    # records, vLLM responses with `metrics.speculative_decoding`) and per metrics-endpoint line
    # (a saved `/metrics` exposition or `/server_info` JSON): docs/acceptance.md
    REQUESTS = "requests"
    ENDPOINT_METRICS = "endpoint_metrics"
    FOREIGN = "foreign"
    MESSAGES = "messages"
    UNPARSED = "unparsed"
    # The text of the lines findings may cite (written by the batch engine, empty in memory): evidence
    # keeps its text when the source is compressed, in an archive, moved or deleted.
    EVIDENCE = "evidence"


# Every table, in the order a dataset's manifest counts them and `parse` prints them; `schema.SCHEMAS`
# gives each its Arrow types, in the same order. Here, without them, for what only names the tables
# (the second look of `parse` prints its row counts from the manifest and imports no pyarrow).
TABLES: tuple[str, ...] = (
    T.LINES,
    T.BATCHES,
    T.DEBUG,
    T.LIFECYCLE,
    T.SERVER_ARGS,
    T.RUNS,
    T.HTTP,
    T.FAULTS,
    T.SPEC_METRICS,
    T.BENCHMARKS,
    T.REQUESTS,
    T.ENDPOINT_METRICS,
    T.FOREIGN,
    T.MESSAGES,
    T.UNPARSED,
    T.EVIDENCE,
)


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

    # faults, foreign, messages: the process that printed the line, from the wrapper its engine put in
    # front (vLLM's `(VllmWorker rank=1 pid=4102) `, `(Worker_TP1 pid=N) `, Ray's `(RayWorkerWrapper
    # pid=N, ip=H) `); its rank tags go in the rank columns (parsers/processes.py)
    PROCESS = "process"  # the name before `pid=`, as printed: `VllmWorker rank=1`, `EngineCore_DP0`
    PID = "pid"
    HOST = "host"  # Ray's `ip=`: pids repeat across nodes' containers

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

    # requests: one row per request-log line; the spec fields as the engine wrote them
    RID = "rid"
    PROMPT_TOKENS = "prompt_tokens"
    COMPLETION_TOKENS = "completion_tokens"
    CACHED_TOKENS = "cached_tokens"
    FINISH_REASON = "finish_reason"
    E2E_LATENCY_S = "e2e_latency_s"
    QUEUE_TIME_S = "queue_time_s"
    PREFILL_LAUNCH_LATENCY_S = "prefill_launch_latency_s"
    SPEC_VERIFY_CT = "spec_verify_ct"  # SGLang verify steps; vLLM `num_spec_steps`
    SPEC_ACCEPT_LENGTH = "spec_accept_length"  # tokens per verify step, the bonus token included
    SPEC_ACCEPT_RATE = "spec_accept_rate"  # as the engine wrote it (docs/acceptance.md)
    SPEC_ACCEPTED_TOKENS = "spec_accepted_tokens"  # accepted draft tokens (no bonus)
    SPEC_DRAFT_TOKENS = "spec_draft_tokens"  # drafted tokens
    SPEC_ACCEPT_HISTOGRAM = "spec_accept_histogram"  # [i] = verify steps that accepted exactly i drafts

    # endpoint_metrics: a Prometheus sample, a `# TYPE`/`# HELP` line, or a `/server_info` object
    METRIC_ITEM = "metric_item"  # sample | type | help | server_info
    METRIC_NAME = "metric_name"
    METRIC_LABELS = "metric_labels"
    METRIC_VALUE = "metric_value"
    METRIC_POSITION = "metric_position"  # the `position` label of a per-position counter

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
    REQUEST = "request"
    ENDPOINT_METRIC = "endpoint_metric"
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
    Kind.REQUEST: T.REQUESTS,
    Kind.ENDPOINT_METRIC: T.ENDPOINT_METRICS,
    Kind.FOREIGN: T.FOREIGN,
    Kind.MESSAGE: T.MESSAGES,
    Kind.UNPARSED: T.UNPARSED,
    Kind.BLANK: T.LINES,
}
KINDS: tuple[str, ...] = tuple(KIND_TABLE)

# The `endpoint_metrics.name` a `/server_info` object's mean `avg_spec_accept_length` is stored under
# (the parser writes it, the analysis reads it).
SERVER_INFO_ACCEPT = "server_info:avg_spec_accept_length"

# The `spec_metrics.layout` of vLLM V0's `Speculative metrics:` lines, whose counts are the server's since
# it started (the parser writes it, the analysis reads such lines as intervals: `analysis/vllm_metrics.py`).
VLLM_V0_METRICS = "vllm_v0"


class A:
    """Columns of the analysis frames (`tracelens.analysis.Analysis`); table columns are in `C`."""

    LABEL = "label"  # a run's display name: `<short name>#<run>` (`sources.naming`), unique per command
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
    T_SINCE_START = "t_since_start_s"
    DP_RANKS = "dp_ranks"
    ACCEPTANCE_RATE = "acceptance_rate"  # recomputed, one definition across versions (docs/findings.md)
    ACCEPT_RATE_LOGGED = "accept_rate_logged"  # the `accept rate` SGLang printed, as printed
    ACCEPT_RATE_DEFINITION = "accept_rate_definition"  # which formula the logged value follows
    RATE_ENGINE = "rate_engine"  # whose figure a run's mean acceptance rate is: sglang | vllm
    # where it comes from: decode lines | metrics lines, else (a run without them) requests | counters |
    # /metrics | server_info (`positions.served_figures`)
    RATE_FROM = "rate_from"
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
    PENDING_REQS = "pending_reqs"  # requests running, queued or received when a hang began (`hangs`)
    LINE_AFTER = "line_after"  # the first line after a hang's silence
    TIME_TO_READY_S = "time_to_ready_s"
    EXPECTED_TIME_TO_READY_S = "expected_time_to_ready_s"
    MEAN_ACCEPT_LEN = "mean_accept_len"
    MEAN_ACCEPTANCE_RATE = "mean_acceptance_rate"
    SPEC_TOKENS = "spec_tokens"  # vLLM's k, the tokens drafted a step, as its metrics lines print it
    MEAN_GEN_THROUGHPUT = "mean_gen_throughput"
    SPEEDUP = "speedup"
    SPEEDUP_LOW = "speedup_ci_low"
    SPEEDUP_HIGH = "speedup_ci_high"
    BASELINE = "baseline"
    SPEEDUP_NOTE = "speedup_note"  # why a run has no speedup, in words (null: it has one, or wants none)
    # whether a run decodes speculatively, decided once (`runs.with_speculation`): every view reads it
    SPECULATIVE = "speculative"
    SPECULATIVE_FROM = "speculative_from"  # what says so: server args | decode lines | metrics lines
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
    # spec curves and per-request acceptance (analysis/positions.py, docs/acceptance.md)
    POSITION = "position"  # 0 = the first drafted token
    RATE = "rate"
    ENGINE = "engine"  # sglang | vllm: whose figure it is
    BASIS = "basis"  # vllm_counters | request_histograms | vllm_metrics_lines
    REQUESTS = "requests"
    POOLED_ACCEPT_LEN = "pooled_accept_len"  # 1 + accepted drafts / verify steps, over the run's tokens
    REQUEST_MEAN_ACCEPT_LEN = "request_mean_accept_len"  # the mean of per-request accept lengths
    POOLED_RATE = "pooled_rate"  # accepted / drafted tokens over the run (the normalised rate)
    REQUEST_MEAN_RATE = "request_mean_rate"
    ACCEPT_LEN_P = "accept_len_p"  # + 10 | 50 | 90: percentiles of the per-request accept length
    NOT_PAID = "not_paid"  # requests below positions.NOT_PAID_ACCEPT_LEN
    PAID = "paid"
    DEPTH = "depth"  # speculative_num_steps in force
    LAUNCH_DEPTH = "launch_depth"
    DROP = "drop"
    BIN_FROM = "bin_from"  # the low edge of a histogram bin
