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


def test_a_rank_that_reports_another_ranks_failure_gives_way_to_that_failure() -> None:
    # gloo's monitoredBarrier on rank 3 says rank 0 failed: rank 0's own error, when in the log, is the cause
    barrier = (
        "[rank3]:[E421 04:13:43.426633564 ProcessGroupGloo.cpp:143] Rank 3 successfully reached "
        "monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 "
        "logs for faulty rank."
    )
    oom = [
        "[2025-04-21 04:13:40 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2056, in run_scheduler_process',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    assert broken([*oom, barrier]).causes == ["oom"]
    # alone, the waiting rank's report is the cause, said as another rank's failure
    verdict = broken(["[2025-04-21 04:13:30 TP3] Load weight begin. avail mem=70.00 GB", barrier])
    assert verdict.causes == ["peer-failed"], verdict.headline
    assert "another rank failed" in verdict.headline


def test_ranks_that_finished_loading_while_another_did_not_are_waiting_on_it() -> None:
    head = "Scheduler hit an exception: Traceback (most recent call last):"
    frame = '  File "/sglang/srt/model_executor/model_runner.py", line 849, in load_model'
    waited = (
        "ValueError: TP rank {} could finish the model loading, but there are other ranks that didn't finish "
        "loading. It is likely due to unexpected failures (e.g., OOM) or a slow node."
    )
    lines = [f"[2025-12-04 07:44:24 TP{rank}] {head}\n{frame}\n{waited.format(rank)}" for rank in (1, 2)]
    verdict = broken("\n".join(lines).split("\n"))
    assert verdict.causes == ["peer-failed"], verdict.headline
    assert verdict.fix and "other" in verdict.fix


def test_workers_that_miss_the_engines_rpc_deadline_are_a_hang() -> None:
    lead = "ERROR 09-06 04:14:11 [core.py:640]"
    lines = [
        "INFO 09-06 04:10:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 310.2 tokens/s, Running: 12 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.1%",
        f"{lead} EngineCore encountered a fatal error.",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "/vllm/v1/executor/multiproc_executor.py", line 243, in collective_rpc',
        f'{lead}     raise TimeoutError(f"RPC call to {{method}} timed out.") from e',
        f"{lead} TimeoutError: RPC call to execute_model timed out.",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["worker-rpc-timeout"], verdict.headline
    assert verdict.headline.startswith("hung"), verdict.headline


def test_a_gpu_whose_memory_another_process_holds_says_so() -> None:
    lead = "(EngineCore_0 pid=1810465) ERROR 09-03 11:03:37 [core.py:712]"
    lines = [
        f'{lead}   File "/vllm/v1/worker/gpu_worker.py", line 180, in init_device',
        f"{lead}     raise ValueError(",
        f"{lead} ValueError: Free memory on device (7.34/139.72 GiB) on startup is less than desired GPU memory "
        "utilization (0.9, 125.75 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
        "processes.",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["gpu-memory-in-use"], verdict.headline
    assert verdict.fix and "--gpu-memory-utilization" in verdict.fix


def test_a_routers_errors_from_its_workers_degrade_it() -> None:
    lines = [
        "2025-09-04 07:15:20 INFO sglang_router_rs::server: src/server.rs:261: Starting router on 0.0.0.0:30000",
        "2025-09-04 07:15:26 ERROR http_request{method=POST uri=/v1/completions version=HTTP/1.1}: "
        "sglang_router_rs::routers::pd_router: src/routers/pd_router.rs:565: Decode server returned error "
        "status decode_url=http://10.160.1.22:50000 status=500 Internal Server Error",
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.causes == ["router-upstream-error"], verdict.causes


def test_one_streamed_requests_failure_in_vllms_api_server_does_not_break_it() -> None:
    lead = "(APIServer pid=27525) ERROR 08-06 23:25:57 [serving_chat.py:1001]"
    lines = [
        "(APIServer pid=27525) INFO 08-06 23:25:50 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 "
        "tokens/s, Avg generation throughput: 25.5 tokens/s, Running: 16 reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: 0.1%, Prefix cache hit rate: 73.8%",
        f"{lead} Error in chat completion stream generator.",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "/vllm/entrypoints/openai/serving_chat.py", line 642, in chat_completion_stream_generator',
        f"{lead}     harmony_parser.process(token_id)",
        f'{lead} openai_harmony.HarmonyError: unexpected tokens remaining in message header: ["commentary"]',
        '(APIServer pid=27525) INFO:     127.0.0.1:34650 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.causes == ["request-error"], verdict.causes
    # the engine's own death seen from the API server stays what it is
    dead = [*lines[:3], f"{lead} vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."]
    assert only(run(dead)).status == "broken"


def test_a_ray_workers_exception_is_the_cause_not_the_ray_wrapper_that_carries_it() -> None:
    lead = "[2026-02-24T20:21:58Z] (EngineCore_DP0 pid=6940)"
    wrapper = [
        f'{lead}   File "/usr/local/lib/python3.12/dist-packages/ray/_private/worker.py", line 958, in get_objects',
        f"{lead}     raise value.as_instanceof_cause()",
        f"{lead} ray.exceptions.RayTaskError(ValueError): ray::RayWorkerWrapper.execute_method() (pid=7106, "
        "ip=192.168.10.10, actor_id=ad5a2b63ebdb1b232073aa1b03000000)",
        f'{lead}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/worker_base.py", line 341, in '
        "execute_method",
        f"{lead}     raise e",
    ]
    carried = (
        f"{lead} ValueError: Free memory on device (19.77/22.05 GiB) on startup is less than desired GPU memory "
        "utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
    )
    verdict = broken([*wrapper, carried])
    assert verdict.causes == ["gpu-memory-in-use"], verdict.headline
    # cut before the worker's own exception line: the wrapper is what is left, said as such
    alone = broken(wrapper)
    assert alone.causes == ["ray-task-error"], alone.headline
    assert "RAY_CGRAPH_get_timeout" not in (alone.fix or "")


def test_the_kernels_oom_killer_is_host_memory_not_the_gpus() -> None:
    lines = [
        "[ 2448.628961] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=user.slice,mems_allowed=0,"
        "global_oom,task_memcg=/user.slice/user-1000.slice/session-4.scope,task=cicc,pid=16014,uid=1000",
        "[ 2448.628970] Out of memory: Killed process 16014 (cicc) total-vm:3069420kB, anon-rss:2111980kB, "
        "file-rss:2412kB, shmem-rss:0kB, UID:1000 pgtables:5204kB oom_score_adj:0",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["host-oom"], verdict.headline
    assert "GPU" not in verdict.headline and verdict.fix and "--mem-fraction-static" not in verdict.fix


def test_a_deepep_timeout_waits_on_the_rank_that_failed_first() -> None:
    head = "TpModelWorkerClient hit an exception: Traceback (most recent call last):"
    frame = '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker_overlap_thread.py", line 118, in x'
    timeout = [f"[2025-05-29 02:52:38 TP0] {head}", frame, "RuntimeError: DeepEP error: CPU recv timeout"]
    assert broken(timeout).causes == ["deepep-timeout"]
    oom = [f"[2025-05-29 02:52:30 TP3] {head}", frame, "torch.OutOfMemoryError: CUDA out of memory."]
    assert broken([*timeout, *oom]).causes == ["oom"]


def test_log_lines_quoted_as_markdown_list_items_are_read() -> None:
    # an issue's log quoted as a list: `> - <ISO stamp> <vLLM line>`, or a bare `- <ISO stamp> ...`
    lead = "2024-06-22T20:16:34.700+00:00 ERROR 06-22 20:16:34 async_llm_engine.py:52]"
    body = [
        f'{lead}   File "/usr/local/lib/python3.10/dist-packages/vllm/engine/async_llm_engine.py", line 532, in '
        "run_engine_loop",
        f"{lead}     has_requests_in_progress = await asyncio.wait_for(",
        f"{lead} asyncio.exceptions.TimeoutError",
    ]
    for marker in ("> - ", "- ", "> * "):
        verdict = broken([marker + line for line in body])
        assert "TimeoutError" in verdict.headline, (marker, verdict.headline)


def test_a_rocm_gpu_fault_is_the_cause_and_the_abort_its_consequence() -> None:
    lines = [
        "[2026-04-13 10:02:11 TP0] Decode batch, #running-req: 3, #token: 5312, token usage: 0.01, cuda graph: "
        "True, gen throughput (token/s): 88.41, #queue-req: 0,",
        ":0:rocdevice.cpp            :3586: 1183357978 us:  Callback: Queue 0x7f35e8100000 aborting with error : "
        "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
        "Fatal Python error: Aborted",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["hsa-exception"], verdict.headline
    assert "process aborted (core dumped)" in verdict.explains


def test_a_bare_timeout_waiting_on_the_workers_broadcast_is_a_hang() -> None:
    # older vLLM raises a bare TimeoutError when its workers' shared-memory queue gives no answer
    lead = "ERROR 08-07 07:04:32 [core.py:588]"
    lines = [
        "INFO 08-07 07:00:00 [loggers.py:116] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
        "throughput: 55.2 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.1%",
        f"{lead} EngineCore encountered a fatal error.",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "/vllm-workspace/vllm/vllm/distributed/device_communicators/shm_broadcast.py", line 469, '
        "in acquire_read",
        f"{lead}     raise TimeoutError",
        f"{lead} TimeoutError",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["worker-rpc-timeout"], verdict.headline
    # a TimeoutError of other frames stays what it is
    other = [
        *lines[:3],
        f'{lead}   File "/x/vllm/v1/engine/core.py", line 9, in step',
        f"{lead} TimeoutError",
    ]
    assert broken(other).causes != ["worker-rpc-timeout"]


def test_a_ranks_exception_line_under_torchs_prefix_is_a_crash_of_that_rank() -> None:
    # an excerpt with only the rank's last line (`[rank0]: AssertionError: ...`), no frames above it
    lines = [
        "INFO 07-13 02:56:20 llm_engine.py:100] Initializing an LLM engine (v0.5.1) with config: model='m'",
        "[rank0]: AssertionError: 32768 is not divisible by 3",
        "ERROR 07-13 02:56:30 multiproc_worker_utils.py:120] Worker VllmWorkerProcess pid 382811 died, exit "
        "code: -15",
    ]
    verdict = broken(lines)
    assert "AssertionError: 32768 is not divisible by 3" in verdict.headline, verdict.headline
    assert "rank 0" in verdict.headline, verdict.headline
