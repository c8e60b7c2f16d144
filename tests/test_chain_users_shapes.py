"""The failure chain on more shapes users paste into issues: torch's per-rank line prefix, NIXL/UCX
transfer errors, a rank reporting another rank's failure, workers that stop answering vLLM's engine,
a router's errors, one request's failure in vLLM's API server. Each test is a small log in the form
the programs print; the lines that name a failure are real lines from users' logs."""

from __future__ import annotations

from test_chain import broken, only
from test_detectors import run


def test_torchs_per_rank_line_prefix_is_peeled() -> None:
    # torch (2.2+) prefixes each line of a rank's uncaught exception with `[rankN]: `: the traceback
    # under it is the crash, and the worker stopped by SIGTERM (-15) after it is its teardown
    lines = [
        "INFO 07-13 02:56:20 llm_engine.py:100] Initializing an LLM engine (v0.5.1) with config: model='m'",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/x/vllm/model_executor/layers/linear.py", line 300, in __init__',
        "[rank0]:     divide(self.output_size, tp_size)",
        "[rank0]: AssertionError: 32768 is not divisible by 3",
        "ERROR 07-13 02:56:30 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 382811 died, exit "
        "code: -15",
    ]
    verdict = broken(lines)
    assert "AssertionError: 32768 is not divisible by 3" in verdict.headline, verdict.headline


UCX = (
    "[1784621081.896649] [kimi-k2-7-disagg-on-sp-v1-prefill-92c6hc-07210529-x04q3qgn-pod:537  :1]       "
    "srd_iface.c:221  UCX  ERROR send completion[0] with error on rdmap132s0/0x55cf4425cfb0: Work Request "
    "Flushed Error, vendor_err 0x1 wr_id 0x7f8b20022480"
)


def test_ucx_errors_of_a_nixl_transfer_degrade_a_serving_prefill_node() -> None:
    lines = [
        "[2026-07-21 08:04:40 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 10048, token "
        "usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, #bootstrap-req: 0, #inflight-req: 1, "
        "cuda graph: False, input throughput (token/s): 178.18",
        '[2026-07-21 08:04:41] INFO:     10.0.0.2:5525 - "POST /generate HTTP/1.1" 200 OK',
        UCX,
        UCX.replace(":1]", ":0]"),
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.causes == ["nixl-transfer"], verdict.causes


def test_kv_blocks_no_decode_worker_fetched_are_a_failed_transfer() -> None:
    # vLLM's NIXL connector on a prefill node: the decode side never read the blocks it was given
    lead = "(APIServer pid=32) (EngineCore_0 pid=296) (VllmWorker TP0 pid=302) WARNING 09-07 11:25:27"
    lines = [
        "(APIServer pid=32) INFO 09-07 11:23:20 [loggers.py:123] Engine 000: Avg prompt throughput: 812.0 "
        "tokens/s, Avg generation throughput: 3.1 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: 0.4%, Prefix cache hit rate: 0.0%",
        f"{lead} [nixl_connector.py:1049] Releasing expired KV blocks for request cmpl-9258f785-7c6f-4b9b-bf83-"
        "9170fd2a0081-0 which were retrieved by 0 decode worker(s) within 120 seconds.",
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.causes == ["nixl-transfer"], verdict.causes
