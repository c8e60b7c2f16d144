"""Line kinds declared as data: how a line is recognised (cheap literal tests) and sample lines with the
fields they must parse to. `tests/test_kinds.py` runs every sample, so a sample here is a test.

Routing is first-match in the order of `ROUTES`. A literal test is only a router: the kind's own parser
then extracts fields, and a line it cannot read falls back to `message` (prefixed) or `unparsed`.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracelens.parsers.bench_serving import FOOTER, HEADER, METRIC_STARTS, SECTIONS
from tracelens.parsers.endpoint_metrics import (
    COMMENT_STARTS,
    DEFAULT_SAMPLE_STARTS,
    ENGINE_SAMPLE_STARTS,
    SERVER_INFO_STARTS,
)
from tracelens.parsers.request_kinds import REQUEST_SAMPLES
from tracelens.parsers.requests import (
    FINISH,
    JSON_LOGGER_START,
    METRICS_FILE_START,
    RECEIVE,
    VLLM_RESPONSE_STARTS,
)
from tracelens.parsers.sample import Sample
from tracelens.parsers.vllm_stats import VLLM_STATS
from tracelens.tables.schema import C, Kind

__all__ = ["FAULT_PHRASES", "LIFECYCLE_EVENTS", "ROUTES", "SAMPLES", "LifecycleEvent", "Route", "Sample"]


@dataclass(frozen=True)
class Route:
    """One way to recognise a kind. ``starts`` tests the message after the prefix; ``contains`` the
    whole clean line. ``prefixed``: True = only SGLang-prefixed lines, False = only unprefixed ones."""

    kind: str
    starts: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()
    prefixed: bool | None = None


@dataclass(frozen=True)
class LifecycleEvent:
    """A startup/shutdown milestone, recognised by the start of the message."""

    event: str
    starts: tuple[str, ...]


def _graph_phrases(edge: str) -> tuple[str, ...]:
    graphs = ("", "draft ", "target verify ", "draft extend ")
    return tuple(f"Capture {g}{cuda} graph {edge}" for g in graphs for cuda in ("cuda", "CUDA"))


LIFECYCLE_EVENTS: tuple[LifecycleEvent, ...] = (
    LifecycleEvent("server_args", ("server_args=",)),
    LifecycleEvent("dist_init_begin", ("Init torch distributed begin",)),
    LifecycleEvent("dist_init_end", ("Init torch distributed ends",)),
    LifecycleEvent("weight_load_begin", ("Load weight begin", "load weight begin")),
    LifecycleEvent("weight_load_end", ("Load weight end", "load weight end")),
    LifecycleEvent("kv_cache_allocated", ("KV Cache is allocated",)),
    LifecycleEvent("memory_pool_end", ("Memory pool end",)),
    # SGLang wrote `cuda` until 2025 and `CUDA` in the 2026 wording; both, for target, draft and verify.
    LifecycleEvent("graph_capture_begin", _graph_phrases("begin")),
    LifecycleEvent("graph_capture_end", _graph_phrases("end")),
    LifecycleEvent("capacity", ("max_total_num_tokens=", "max_total_num_token=")),
    LifecycleEvent("server_process_started", ("Started server process",)),
    LifecycleEvent("app_startup", ("Waiting for application startup", "Application startup complete")),
    LifecycleEvent("uvicorn_running", ("Uvicorn running on",)),
    LifecycleEvent("ready", ("The server is fired up and ready to roll",)),
    LifecycleEvent("shutdown", ("Shutting down", "Finished server process")),
)

# Fault phrases and the fault kind each one means (first match wins).
FAULT_PHRASES: tuple[tuple[str, str], ...] = (
    ("hit an exception", "exception"),
    ("Received sigquit", "sigquit"),
    ("SIGQUIT received", "sigquit"),
    ("Watchdog caught collective operation timeout", "watchdog"),
    ("atchdog timeout", "watchdog"),
    ("Decode out of memory happened", "retract"),
    ("KV cache pool is full", "retract"),
    ("Health check failed", "health"),
    ("OutOfMemoryError", "oom"),
    ("CUDA out of memory", "oom"),
    ("Not enough memory", "oom"),
    ("NCCL WARN", "nccl"),
    ("NCCL error", "nccl"),
    ("Traceback (most recent call last)", "exception"),
    ("Initialization failed", "exception"),
)

ROUTES: tuple[Route, ...] = (
    Route(Kind.DEBUG, contains=("_DEBUG[",)),
    Route(Kind.BATCH, starts=("Prefill batch", "Decode batch", "new fill batch", "#running-req: ")),
    # Request logs come before every route that tests the whole line: their text holds user prompts.
    # Starts only, and few tests (more than four starts are one anchored regex): these run on every line
    # the bulk routes leave. A `/server_info` snapshot may be stamped by whatever polled it.
    Route(Kind.REQUEST, starts=(RECEIVE, FINISH)),
    Route(
        Kind.REQUEST, starts=(JSON_LOGGER_START, METRICS_FILE_START, *VLLM_RESPONSE_STARTS), prefixed=False
    ),
    Route(
        Kind.ENDPOINT_METRIC,
        starts=ENGINE_SAMPLE_STARTS + COMMENT_STARTS + DEFAULT_SAMPLE_STARTS + SERVER_INFO_STARTS,
    ),
    Route(Kind.SPEC_METRICS, contains=("SpecDecoding metrics:", "Speculative metrics:")),
    Route(Kind.BATCH, contains=(VLLM_STATS,)),  # vLLM's engine stats: its batch lines (`vllm_stats`)
    # sglang.bench_serving result blocks pasted into a log (never SGLang-prefixed)
    Route(Kind.BENCHMARK, contains=(f" {HEADER} ", *(f"-{s}-" for s in SECTIONS)), prefixed=False),
    Route(Kind.BENCHMARK, starts=(FOOTER, *METRIC_STARTS), prefixed=False),
    Route(Kind.LIFECYCLE, starts=tuple(s for e in LIFECYCLE_EVENTS for s in e.starts)),
    Route(Kind.HTTP, contains=(" HTTP/1", " HTTP/2")),
    Route(Kind.FAULT, contains=tuple(p for p, _ in FAULT_PHRASES)),
    Route(Kind.MESSAGE, prefixed=True),
)

SAMPLES: dict[str, tuple[Sample, ...]] = {
    Kind.BATCH: (
        Sample(
            "INFO 03-18 09:04:46 [metrics.py:481] Avg prompt throughput: 0.0 tokens/s, Avg generation "
            "throughput: 0.4 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
            "usage: 0.6%, CPU KV cache usage: 0.0%.",
            {
                C.PHASE: "decode",
                C.GEN_THROUGHPUT: 0.4,
                C.RUNNING_REQ: 2,
                C.QUEUE_REQ: 0,
                C.TOKEN_USAGE: 0.006,
            },
        ),
        Sample(
            "(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: "
            "12068.8 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 43 reqs, "
            "GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%",
            {C.PHASE: "prefill", C.INPUT_THROUGHPUT: 12068.8, C.RUNNING_REQ: 0, C.QUEUE_REQ: 43},
        ),
        Sample(
            "INFO 04-02 18:03:41 [loggers.py:87] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
            "generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: "
            "0.1%, Prefix cache hit rate: 50.0%",
            {C.PHASE: "idle", C.GEN_THROUGHPUT: 0.0, C.CACHE_HIT_RATE: 0.5},
        ),
        Sample(
            "[2024-12-05 10:11:12 TP0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, "
            "cache hit rate: 0.00%, token usage: 0.00, #running-req: 0, #queue-req: 0",
            {
                C.PHASE: "prefill",
                C.NEW_SEQ: 1,
                C.NEW_TOKEN: 7,
                C.CACHED_TOKEN: 0,
                C.CACHE_HIT_RATE: 0.0,
                C.TOKEN_USAGE: 0.0,
                C.RUNNING_REQ: 0,
                C.QUEUE_REQ: 0,
                C.TP: 0,
            },
        ),
        Sample(
            "[2025-01-28 08:00:01 TP0] Decode batch. #running-req: 1, #token: 120, token usage: 0.00, "
            "accept len: 3.21, gen throughput (token/s): 190.55, #queue-req: 0",
            {C.PHASE: "decode", C.RUNNING_REQ: 1, C.TOKEN: 120, C.ACCEPT_LEN: 3.21, C.GEN_THROUGHPUT: 190.55},
        ),
        Sample(
            "[2025-05-20 12:00:00 DP0 TP0] Decode batch. #running-req: 32, #token: 40960, token usage: 0.21, "
            "accept len: 2.71, cuda graph: True, gen throughput (token/s): 1523.44, #queue-req: 0",
            {C.DP: 0, C.TP: 0, C.GRAPH: True, C.ACCEPT_LEN: 2.71, C.RUNNING_REQ: 32},
        ),
        Sample(
            "[2025-10-28 10:00:00 DP0 TP0 EP0] Decode batch, #running-req: 64, #token: 120000, token usage: 0.35, "
            "accept len: 2.80, accept rate: 0.70, pre-allocated usage: 0.02, #prealloc-req: 1, #transfer-req: 2, "
            "#retracted-req: 0, cuda graph: True, gen throughput (token/s): 2100.55, #queue-req: 0, ",
            {
                C.EP: 0,
                C.ACCEPT_RATE: 0.70,
                C.PREALLOCATED_USAGE: 0.02,
                C.PREALLOC_REQ: 1,
                C.TRANSFER_REQ: 2,
                C.RETRACTED_REQ: 0,
                C.QUEUE_REQ: 0,
            },
        ),
        Sample(
            "[2026-05-24 00:53:21] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 1234.56",
            {C.PENDING_TOKEN: 0, C.GRAPH: False, C.INPUT_THROUGHPUT: 1234.56, C.TP: None},
        ),
        Sample(
            "[2026-05-24 00:53:21.250 TP1] Decode batch [1234], #running-req: 3, #token: 90, token usage: nan, "
            "npu graph: False, gen throughput (token/s): 12.5, #queue-req: 0 ",
            {C.FORWARD_ITER: 1234, C.GRAPH: False, C.QUEUE_REQ: 0},
        ),
        Sample(
            "[2025-07-09 10:00:00 TP0] Decode batch. #running-req: 2, #token: full=1200, swa=300, "
            "token usage: 0.01, gen throughput (token/s): 50.00, #queue-req: 0, new field: 7",
            {
                C.RUNNING_REQ: 2,
                C.TOKEN_USAGE: 0.01,
                C.GEN_THROUGHPUT: 50.0,
                C.EXTRA: [
                    {C.KEY: "#token", C.VALUE: "full=1200, swa=300"},
                    {C.KEY: "new field", C.VALUE: "7"},
                ],
            },
        ),
        Sample(
            "new fill batch. #seq: 1. #cached_token: 9. #new_token: 8. #remaining_req: 0. #running_req: 0. "
            "tree_cache_hit_rate: 49.92%.",
            {C.PHASE: "prefill", C.NEW_SEQ: 1, C.CACHED_TOKEN: 9, C.NEW_TOKEN: 8, C.CACHE_HIT_RATE: 0.4992},
        ),
        Sample(
            "#running-req: 1, #token: 646, token usage: 0.01, #queue-req: 0",
            {C.PHASE: "decode", C.TOKEN: 646},
        ),
        Sample(
            "[gpu=0] Prefill batch. #new-seq: 1, #new-token: 20, #cached-token: 5, cache hit rate: 17.86%, "
            "#running-req: 0, #queue-req: 0",
            {C.TP: 0, C.CACHE_HIT_RATE: 0.1786},
        ),
    ),
    Kind.DEBUG: (
        Sample(
            "EAGLE3_DEBUG[dsv2] embed capture: layer_id=-1 shape=torch.Size([1, 7168]) norm=10.6277",
            {
                C.TAG: "EAGLE3_DEBUG",
                C.SITE: "dsv2",
                C.EVENT: "embed capture",
                C.LAYER_ID: -1,
                C.SHAPES: [[1, 7168]],
                C.NORM: 10.6277,
                C.TRUNCATED: False,
            },
        ),
        Sample(
            "EAGLE3_DEBUG[dsv2] forward end: num_aux=3, shapes=[torch.Size([1, 7168]), torch.Size([1, 7168]), "
            "torch.Size([1, 7168])]",
            {C.NUM_AUX: 3, C.SHAPES: [[1, 7168], [1, 7168], [1, 7168]], C.EVENT: "forward end"},
        ),
        Sample(
            "[2026-11-20 09:00:00 TP0] EAGLE3_DEBUG[logits] FULL cat: num_items=3, shapes=[torch.Size([1, 7168]), "
            "torch.Size([1, 7168]), torch.Size([1, 7168])]",
            {C.SITE: "logits", C.NUM_ITEMS: 3, C.TP: 0, C.EVENT: "FULL cat"},
        ),
        Sample(
            "EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 21504]) norm=55.1",
            {C.SHAPES: [[1, 21504]], C.NORM: 55.1, C.LAYER_ID: None},
        ),
        Sample(
            "EAGLE3_DEBUG[dsv2] set aux layers: layer_ids=[-1, 2, 30], layers_to_capture=[0, 3, 31]",
            {
                C.LAYER_IDS: [-1, 2, 30],
                C.ITEMS: [
                    {C.KEY: "layer_ids", C.VALUE: "[-1, 2, 30]"},
                    {C.KEY: "layers_to_capture", C.VALUE: "[0, 3, 31]"},
                ],
            },
        ),
        Sample("EAGLE3_DEBUG[eagle", {C.SITE: "eagle", C.TRUNCATED: True, C.EVENT: None}),
        Sample(
            "EAGLE3_DEBUG[dsv2] forward end: num_aux=3, shapes=[torch.Size([1, 7168]), torch.Si",
            {C.NUM_AUX: 3, C.TRUNCATED: True},
        ),
        Sample("MTP_DEBUG[nextn] hidden: norm=nan", {C.TAG: "MTP_DEBUG", C.EVENT: "hidden"}),
    ),
    Kind.LIFECYCLE: (
        Sample(
            "[2025-03-06 06:14:53 TP0] Init torch distributed ends. mem usage=0.13 GB",
            {C.EVENT: "dist_init_end", C.MEM_USAGE_GB: 0.13},
        ),
        Sample(
            "[2026-02-26 05:21:00 TP0] Init torch distributed ends. elapsed=13.00 s, mem usage=3.81 GB",
            {C.EVENT: "dist_init_end", C.ELAPSED_S: 13.0, C.MEM_USAGE_GB: 3.81},
        ),
        Sample(
            "[2025-03-06 06:14:53 TP0] Load weight begin. avail mem=78.12 GB",
            {C.EVENT: "weight_load_begin", C.AVAIL_MEM_GB: 78.12},
        ),
        Sample(
            "[2026-02-26 05:25:00 TP0] Load weight end. elapsed=228.09 s, type=GlmMoeDsaForCausalLM, "
            "dtype=torch.bfloat16, avail mem=100.00 GB, mem usage=89.58 GB.",
            {
                C.EVENT: "weight_load_end",
                C.ELAPSED_S: 228.09,
                C.MODEL_TYPE: "GlmMoeDsaForCausalLM",
                C.DTYPE: "torch.bfloat16",
                C.MEM_USAGE_GB: 89.58,
                C.AVAIL_MEM_GB: 100.0,
            },
        ),
        Sample("Rank 0: load weight end.", {C.EVENT: "weight_load_end", C.TP: 0}),
        Sample(
            "[2025-03-06 06:15:01 TP0] KV Cache is allocated. #tokens: 46611, K size: 1.42 GB, V size: 1.42 GB",
            {C.EVENT: "kv_cache_allocated", C.TOKENS: 46611, C.KV_SIZE_GB: 2.84},
        ),
        Sample(
            "[2026-02-26 05:26:00 TP0] KV Cache is allocated. #tokens: 3262823, KV size: 186.77 GB",
            {C.TOKENS: 3262823, C.KV_SIZE_GB: 186.77},
        ),
        Sample("[gpu_id=0] Memory pool end. avail mem=10.31 GB", {C.EVENT: "memory_pool_end", C.TP: 0}),
        Sample(
            "[2025-03-06 06:15:02 TP0] Capture cuda graph begin. This can take up to several minutes. "
            "avail mem=9.12 GB",
            {C.EVENT: "graph_capture_begin", C.TARGET: "target"},
        ),
        Sample(
            "[2026-05-24 00:53:01.200 TP1] Capture draft CUDA graph begin. This can take up to several minutes. "
            "avail mem=20.10 GB",
            {C.EVENT: "graph_capture_begin", C.TARGET: "draft", C.AVAIL_MEM_GB: 20.1, C.TP: 1},
        ),
        Sample(
            "[2025-03-06 06:15:30 TP0] Capture cuda graph end. Time elapsed: 27.91 s. mem usage=1.2 GB. "
            "avail mem=7.9 GB.",
            {C.EVENT: "graph_capture_end", C.ELAPSED_S: 27.91, C.TARGET: "target"},
        ),
        Sample(
            "[2025-06-01 00:00:00 TP0] Capture draft cuda graph end. Time elapsed: 5.50 s. mem usage=0.3 GB. "
            "avail mem=7.6 GB.",
            {C.EVENT: "graph_capture_end", C.TARGET: "draft", C.ELAPSED_S: 5.5},
        ),
        Sample(
            "[2026-05-24 00:53:00.100 TP0] Capture target verify CUDA graph end. bs=[1, 2, 4], elapsed=3.21 s, "
            "mem usage=0.50 GB.",
            {C.TARGET: "target_verify", C.ELAPSED_S: 3.21},
        ),
        Sample(
            "[2025-03-06 06:15:31 TP0] max_total_num_tokens=46611, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=2049, context_len=131072, available_gpu_mem=7.9 GB",
            {C.EVENT: "capacity", C.TOKENS: 46611, C.AVAIL_MEM_GB: 7.9},
        ),
        Sample(
            "[2025-03-06 06:15:33] INFO:     Started server process [123]",
            {C.EVENT: "server_process_started", C.DETAIL: "123"},
        ),
        Sample(
            "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
            {C.EVENT: "uvicorn_running", C.DETAIL: "http://0.0.0.0:30000"},
        ),
        Sample("[2025-03-06 06:15:40] The server is fired up and ready to roll!", {C.EVENT: "ready"}),
        Sample(
            "[2024-08-15 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)",
            {C.EVENT: "server_args"},
        ),
    ),
    Kind.HTTP: (
        Sample(
            '[2025-03-06 06:15:35] INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
            {
                C.CLIENT: "127.0.0.1:51234",
                C.METHOD: "POST",
                C.PATH: "/generate",
                C.PROTOCOL: "HTTP/1.1",
                C.STATUS: 200,
            },
        ),
        Sample('INFO:   - "POST /generate HTTP/1.1" 200 OK', {C.CLIENT: None, C.STATUS: 200}),
        Sample(
            '127.0.0.1 [28/May/2025:06:32:54 +0000] "GET /route?bootstrap=1 HTTP/1.1" 200 236 "-" "curl"',
            {C.CLIENT: "127.0.0.1", C.METHOD: "GET", C.PATH: "/route?bootstrap=1", C.STATUS: 200},
        ),
    ),
    Kind.FAULT: (
        Sample(
            "[2025-03-07 18:14:03 TP0] Scheduler hit an exception: Traceback (most recent call last):",
            {C.COMPONENT: "Scheduler", C.FAULT_KIND: "exception", C.TP: 0},
        ),
        Sample("[2025-02-01 10:00:00] Received sigquit from a child proces.", {C.FAULT_KIND: "sigquit"}),
        Sample(
            "[2026-01-01 10:00:00] SIGQUIT received. signum=None, frame=None. It usually means the child failed.",
            {C.FAULT_KIND: "sigquit"},
        ),
        Sample(
            "[2025-05-01 10:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, "
            "self.soft=False)",
            {C.FAULT_KIND: "watchdog"},
        ),
        Sample(
            "[2025-05-01 10:00:00 TP0] Decode out of memory happened. #retracted_reqs: 3, "
            "#new_token_ratio: 0.4000 -> 0.7000",
            {C.FAULT_KIND: "retract"},
        ),
        Sample(
            "[2025-05-01 10:00:00] Health check failed. Server couldn't get a response from detokenizer.",
            {C.FAULT_KIND: "health"},
        ),
        Sample(
            "node1:1234:5678 [3] NCCL WARN Call to connect returned Connection refused",
            {C.FAULT_KIND: "nccl"},
        ),
        Sample(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB.",
            {C.FAULT_KIND: "oom", C.EXCEPTION_TYPE: "torch.OutOfMemoryError"},
        ),
    ),
    Kind.SPEC_METRICS: (
        Sample(
            "INFO 06-01 10:00:00 [metrics.py:53] SpecDecoding metrics: Mean acceptance length: 2.51, Accepted "
            "throughput: 30.10 tokens/s, Drafted throughput: 60.00 tokens/s, Accepted: 301 tokens, Drafted: 600 "
            "tokens, Per-position acceptance rate: 0.812, 0.503, 0.195, Avg Draft acceptance rate: 50.2%",
            {
                C.LAYOUT: "vllm_v1",
                C.MEAN_ACCEPTANCE_LENGTH: 2.51,
                C.ACCEPTED: 301,
                C.DRAFTED: 600,
                C.PER_POSITION: [0.812, 0.503, 0.195],
                C.ACCEPTANCE_RATE: 0.502,
                C.ACCEPTED_THROUGHPUT: 30.1,
            },
        ),
        Sample(
            "INFO 04-02 18:03:41 [metrics.py:53] SpecDecoding metrics: Draft acceptance rate: nan%, "
            "Accepted: 0 tokens, Drafted: 0 tokens",
            {C.LAYOUT: "vllm_v1_early", C.ACCEPTED: 0, C.DRAFTED: 0},
        ),
        Sample(
            "INFO 01-01 00:00:00 metrics.py:450] Speculative metrics: Draft acceptance rate: 0.625, System "
            "efficiency: 0.480, Number of speculative tokens: 3, Number of accepted tokens: 1250, Number of draft "
            "tokens: 2000, Number of emitted tokens: 1920.",
            {
                C.LAYOUT: "vllm_v0",
                C.ACCEPTANCE_RATE: 0.625,
                C.SYSTEM_EFFICIENCY: 0.48,
                C.NUM_SPEC_TOKENS: 3,
                C.ACCEPTED: 1250,
                C.DRAFTED: 2000,
                C.EMITTED: 1920,
                # 1920 emitted over 2000 / 3 steps
                C.MEAN_ACCEPTANCE_LENGTH: 2.88,
            },
        ),
        # V0 in mid 2024 doubled a word (`tokens tokens`); Medusa with 16 heads that never hit
        Sample(
            "INFO 07-24 04:00:31 metrics.py:316] Speculative metrics: Draft acceptance rate: 0.000, System "
            "efficiency: 0.059, Number of speculative tokens: 16, Number of accepted tokens: 0, Number of draft "
            "tokens tokens: 42272, Number of emitted tokens tokens: 2642.",
            {
                C.LAYOUT: "vllm_v0",
                C.ACCEPTANCE_RATE: 0.0,
                C.NUM_SPEC_TOKENS: 16,
                C.DRAFTED: 42272,
                C.EMITTED: 2642,
                C.MEAN_ACCEPTANCE_LENGTH: 1.0,
            },
        ),
        # V1's first layout (March 2025): V0's words, per interval, no k and no emitted tokens
        Sample(
            "INFO 03-28 10:00:00 [loggers.py:80] Speculative metrics: Draft acceptance rate: 0.750, Number of "
            "accepted tokens: 66, Number of draft tokens: 88, ",
            {
                C.LAYOUT: "vllm_v1_early",
                C.ACCEPTANCE_RATE: 0.75,
                C.ACCEPTED: 66,
                C.DRAFTED: 88,
                C.MEAN_ACCEPTANCE_LENGTH: None,
            },
        ),
    ),
    Kind.BENCHMARK: (
        Sample("============ Serving Benchmark Result ============", {C.BENCH_ITEM: "header"}),
        Sample(
            "Backend:                                 sglang    ",
            {C.BENCH_ITEM: "metric", C.BENCH_METRIC: "Backend", C.VALUE: "sglang", C.BENCH_NUMBER: None},
        ),
        Sample(
            "Output token throughput (tok/s):         1715.29   ",
            {C.BENCH_METRIC: "Output token throughput", C.BENCH_UNIT: "tok/s", C.BENCH_NUMBER: 1715.29},
        ),
        Sample(
            "Accept length:                           2.83      ", {C.BENCH_NUMBER: 2.83, C.BENCH_UNIT: None}
        ),
        Sample("Traffic request rate:                    inf       ", {C.BENCH_NUMBER: float("inf")}),
        Sample(
            "-----Time per Output Token (excl. 1st token)------",
            {C.BENCH_ITEM: "section", C.BENCH_METRIC: "Time per Output Token (excl. 1st token)"},
        ),
        Sample(
            "P99 TTFT (ms):                           15089.74  ",
            {C.BENCH_METRIC: "P99 TTFT", C.BENCH_UNIT: "ms"},
        ),
        Sample("==================================================", {C.BENCH_ITEM: "footer"}),
    ),
    Kind.FOREIGN: (
        Sample(
            "INFO 02-21 21:52:48 __init__.py:190] Automatically detected platform cuda.",
            {C.FORMAT: "vllm", C.LEVEL: "INFO", C.MESSAGE: "Automatically detected platform cuda."},
        ),
        Sample(  # a path in vLLM's package where its logging is at DEBUG (its formatter shortens it)
            "WARNING 10-30 17:31:58 [v1/worker/.../gpu_model_runner.py:2500] Cascade attention is off.",
            {C.FORMAT: "vllm", C.LEVEL: "WARNING", C.MESSAGE: "Cascade attention is off."},
        ),
        Sample(
            "E0528 06:32:54.247906 735017 tcp_transport.cpp:136] Session::writeBody failed",
            {C.FORMAT: "glog", C.LEVEL: "ERROR", C.MESSAGE: "Session::writeBody failed"},
        ),
        Sample(
            "2025-02-21 21:53:17,414 - INFO - flashinfer.jit: Loading JIT ops: norm",
            {C.FORMAT: "python", C.LEVEL: "INFO", C.MESSAGE: "flashinfer.jit: Loading JIT ops: norm"},
        ),
        Sample(
            "2025-04-16 10:00:00,123 INFO scripts.py:865 -- Local node IP: 10.0.0.1",
            {C.FORMAT: "ray", C.LEVEL: "INFO", C.MESSAGE: "Local node IP: 10.0.0.1"},
        ),
        Sample(
            "node1:1234:5678 [3] NCCL INFO Channel 00/02 : 0 1 2 3",
            {C.FORMAT: "nccl", C.LEVEL: "INFO", C.MESSAGE: "Channel 00/02 : 0 1 2 3"},
        ),
        Sample(
            "[rank4]:[W208 00:25:40.123456 socket.cpp:752] [c10d] The client socket has failed to connect.",
            {C.FORMAT: "c10d", C.LEVEL: "WARNING"},
        ),
        Sample(
            "Loading safetensors checkpoint shards:  25% Completed | 41/163 [02:30<07:30,  3.69s/it]",
            {C.FORMAT: "tqdm"},
        ),
        Sample(
            "[Gloo] Rank 0 is connected to 7 peer ranks. Expected number of connected peer ranks is : 7",
            {C.FORMAT: "gloo"},
        ),
        Sample("[aiter] import [module_aiter_enum] under /sgl-workspace/aiter", {C.FORMAT: "aiter"}),
    ),
    Kind.MESSAGE: (
        Sample(
            "[2025-02-08 00:25:02 TP3] MLA optimization is turned on. Use triton backend.",
            {C.TP: 3, C.MESSAGE: "MLA optimization is turned on. Use triton backend."},
        ),
        Sample(
            "[2026-02-26 06:24:34] INFO server_args.py:1697: Attention backend not specified.",
            {C.LEVEL: "INFO", C.LOGGER: "server_args.py:1697", C.MESSAGE: "Attention backend not specified."},
        ),
    ),
    Kind.UNPARSED: (
        Sample(
            "Special tokens have been added in the vocabulary, make sure the associated word embeddings are "
            "fine-tuned or trained.",
            {
                C.TEXT: "Special tokens have been added in the vocabulary, make sure the "
                "associated word embeddings are fine-tuned or trained."
            },
        ),
    ),
    **REQUEST_SAMPLES,
}
