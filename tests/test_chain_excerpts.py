"""The failure chain on the shapes users paste into issues: excerpts that start mid-traceback, logs of
only a stop or only answered requests, torch's and NCCL's own timeout wordings, CUDA's advice lines.
Each line below is in the form the engines print (SGLang's `[date TPn]` prefix, vLLM V1's `(EngineCore
pid=N) INFO MM-DD ...`, torch's glog lines, uvicorn's access lines)."""

from __future__ import annotations

import pytest
from test_chain import broken, only, serving, start_up_crash
from test_detectors import run, server_args, stamp


def test_a_vllm_sigint_stop_alone_is_a_graceful_stop() -> None:
    lines = [
        "(EngineCore pid=3946143) INFO 05-26 19:19:56 [core.py:1155] [shutdown] EngineCore: trigger received "
        "signal=SIGINT",
        "(APIServer pid=3945527) INFO 05-26 19:19:56 [launcher.py:100] [shutdown] API server: shutdown triggered",
    ]
    verdict = only(run(lines))
    assert verdict.status == "healthy"
    assert verdict.headline.startswith("stopped gracefully")


def test_answered_requests_with_no_batch_line_are_serving() -> None:
    answers = [
        f'{stamp(20 + i, "")} INFO:     10.0.0.2:5525{i} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        for i in range(3)
    ]
    verdict = only(run([server_args(0, spec=False), *answers]))
    assert verdict.status == "healthy"
    assert verdict.headline.startswith("answered 3 request(s)")


def test_cudas_advice_lines_are_part_of_its_error() -> None:
    lines = [
        *serving(),
        f"{stamp(60)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 20, in event_loop',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]
    verdict = only(run(lines))
    assert verdict.causes == ["illegal-memory-access"]
    assert "CUDA device-side assert" not in verdict.explains


def test_an_excerpt_that_starts_mid_traceback_keeps_its_exception_line() -> None:
    lines = [
        *serving(),
        '  File "/sglang/srt/utils/common.py", line 3774, in raise_error_or_warn',
        "    raise ValueError(message)",
        "ValueError: token_to_kv_pool_allocator memory leak detected! full_available_size=6016",
        "./run.sh: line 24: 3557732 Killed                  python -m sglang.launch_server",
    ]
    verdict = broken(lines)
    assert "ValueError: token_to_kv_pool_allocator memory leak detected" in verdict.headline
    assert "process killed" in verdict.explains


def test_a_source_line_quoting_the_message_is_no_event() -> None:
    lines = [
        server_args(0, spec=False),
        "(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700] EngineCore failed to start.",
        "(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700] Traceback (most recent call last):",
        '(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700]   File "/vllm/v1/core/kv_cache_utils.py", '
        "line 600, in check_enough_kv_cache_memory",
        '(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700]     raise ValueError("No available memory '
        'for the cache blocks. "',
        "(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700] ValueError: No available memory for the "
        "cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
    ]
    verdict = only(run(lines))
    assert verdict.causes == ["kv-no-memory"]
    assert verdict.fix and "--gpu-memory-utilization" in verdict.fix and "max-model-len" not in verdict.fix
    assert "times" not in verdict.headline  # the source line is not a second event
    assert verdict.evidence[0].line_no == 6


def test_an_nccl_warning_before_a_traceback_cut_short_leaves_the_crash() -> None:
    lines = [
        "node5:240:240 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned "
        "113(No route to host) errno 115(Operation now in progress)",
        f"{stamp(30)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 1816, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    ]
    broken(lines)


def test_torch_distributed_timeouts_in_their_own_words() -> None:
    store = start_up_crash(
        "[rank1]:[W623 15:37:01.824135523 socket.cpp:485] [c10d] waitForInput: socket SocketImpl(fd=100, "
        "addr=[node-1]:50216, remote=[node-0]:20000) timed out after 1800000ms",
        '  File "/torch/distributed/rendezvous.py", line 200, in _create_c10d_store',
        "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg/0//cuda//0",
        at=1800,
    )
    verdict = only(run(store))
    assert verdict.causes == ["dist-store-timeout"]
    # first seen as c10d's warning, shown by its exception line
    assert "DistStoreError" in verdict.headline and verdict.evidence[0].line_no == 5
    nccl = [
        *serving(),
        "[rank3]:[E227 16:30:43.526301625 ProcessGroupNCCL.cpp:1834] [PG ID 2 PG GUID 3 Rank 3] Timeout at NCCL "
        "work: 32, last enqueued NCCL work: 32, last completed NCCL work: 31.",
    ]
    assert only(run(nccl)).causes == ["watchdog-timeout"]


def test_a_traceback_cut_after_its_header_is_never_quoted_as_the_cause() -> None:
    prefix = "(EngineCore_DP0 pid=3258054) ERROR 01-11 03:46:48 [core.py:936]"
    lines = [
        server_args(0, spec=False),
        f"{prefix} EngineCore failed to start.",
        f"{prefix} Traceback (most recent call last):",
        f'{prefix}   File "/vllm/v1/engine/core.py", line 927, in run_engine_core',
        f"{prefix}     engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)",
    ]
    verdict = broken(lines)
    assert "Traceback" not in verdict.headline and "ERROR 01-11" not in verdict.headline


def test_a_vllm_logs_fix_is_in_vllms_flags() -> None:
    prefix = "(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700]"
    lines = [
        "(APIServer pid=1000) INFO 03-02 09:58:00 [api_server.py:1043] vLLM API server version 0.10.1",
        f"{prefix} EngineCore encountered a fatal error.",
        f"{prefix} Traceback (most recent call last):",
        f'{prefix}   File "/vllm/v1/worker/gpu_model_runner.py", line 1500, in execute_model',
        f"{prefix} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["oom"]
    assert verdict.fix and "--max-num-seqs" in verdict.fix and "--mem-fraction-static" not in verdict.fix


def test_a_crash_whose_exception_is_cut_says_when_it_came() -> None:
    cut = [
        f"{stamp(70)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 20, in run_scheduler_process',
    ]
    served = broken(
        [server_args(0, spec=False), f"{stamp(5, '')} The server is fired up and ready to roll!", *cut]
    )
    said = "a traceback with no exception line in the log (Scheduler, rank 0)"
    assert served.headline == f"crashed while serving: {said}", served.headline
    loading = broken([server_args(0, spec=False), f"{stamp(2)} Load weight begin. avail mem=78.94 GB", *cut])
    # the log's last start-up milestone before the crash names its step
    assert loading.headline == f"crashed at start-up during weight loading: {said}", loading.headline
    # without a line of the log to tell, the traceback's own frames do: an `__init__` is a start-up's
    building = [*cut, '  File "/sglang/srt/managers/scheduler.py", line 312, in __init__']
    assert broken([server_args(0, spec=False), *building]).headline == f"crashed at start-up: {said}"
    looping = [*cut, '  File "/vllm/v1/engine/core.py", line 700, in run_busy_loop']
    assert broken([server_args(0, spec=False), *looping]).headline == f"crashed while serving: {said}"


def test_a_cut_traceback_explains_the_sigquit_printed_before_it() -> None:
    # Two processes write at once: the parent's sigquit reaches the file a line before the traceback
    # of the child that failed, whose exception line the copy lost.
    lines = [
        server_args(0, spec=False),
        f"{stamp(5, '')} The server is fired up and ready to roll!",
        f"{stamp(70, '')} Received sigquit from a child process. It usually means the child failed.",
        f"{stamp(70, ' TP3')} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2013, in run_scheduler_process',
        "    scheduler.event_loop_normal()",
    ]
    verdict = broken(lines)
    assert verdict.headline.startswith("crashed while serving: a traceback with no exception line"), (
        verdict.headline
    )
    assert "(Scheduler, rank 3)" in verdict.headline
    assert "SIGQUIT from a child process" in verdict.headline and "consequence" in verdict.headline
    assert verdict.evidence[0].line_no == 4


def test_an_sglang_run_with_vllm_lines_mixed_in_keeps_sglangs_fix() -> None:
    lines = [
        server_args(0, spec=False),
        "INFO 03-02 09:58:00 [model_runner.py:1000] Capturing cudagraphs for decoding.",
        f"{stamp(30)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/model_executor/model_runner.py", line 900, in forward',
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    verdict = broken(lines)
    assert verdict.fix and "--mem-fraction-static" in verdict.fix


SHM_WAIT = (
    "(EngineCore_DP0 pid=47415) INFO 10-24 16:{}:27 [shm_broadcast.py:466] No available shared memory broadcast "
    "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
    "time-consuming work (e.g. compilation)."
)


def test_vllm_broadcast_waits_while_serving_are_a_hang_and_at_start_up_a_slow_step() -> None:
    stats = (
        "(APIServer pid=47275) INFO 10-24 16:25:39 [loggers.py:127] Engine 000: Avg prompt throughput: 0.0 "
        "tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache "
        "usage: 1.7%, Prefix cache hit rate: 0.0%"
    )
    hung = broken([stats, SHM_WAIT.format(26), SHM_WAIT.format(27)])
    assert hung.headline.startswith("hung while serving: vLLM workers stopped answering"), hung.headline
    assert hung.causes == ["worker-hang"] and hung.evidence[0].line_no == 2
    # a long torch.compile at start-up prints the same wait; the failure after it is the cause
    starting = [
        "(APIServer pid=1000) INFO 10-24 16:20:00 [api_server.py:1043] vLLM API server version 0.10.1",
        SHM_WAIT.format(26),
        "(EngineCore_DP0 pid=47415) ERROR 10-24 16:28:00 [core.py:700] EngineCore failed to start.",
    ]
    verdict = broken(starting)
    assert "hung" not in verdict.headline and "worker-hang" not in verdict.causes, verdict.headline


def test_a_vllm_workers_cut_traceback_while_serving_is_said_so() -> None:
    # vLLM 0.6-0.7: every traceback line carries the worker's wrapper and vLLM's lead; the copy stops
    # inside the traceback, after the server had answered requests
    lead = "(VllmWorker rank=0 pid=1068781) ERROR 01-04 17:21:04 multiproc_executor.py:401]"
    lines = [
        *(f'INFO:     127.0.0.1:{45354 + i} - "POST /v1/completions HTTP/1.1" 200 OK' for i in range(4)),
        "INFO 01-04 17:21:02 core.py:247] RUNNING: 306 | WAITING: 628",
        f"{lead} WorkerProc hit an exception: %s",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "/vllm/v1/executor/multiproc_executor.py", line 397, in worker_busy_loop',
        f"{lead}     output = getattr(self.worker, method)(*args, **kwargs)",
    ]
    verdict = broken(lines)
    said = "crashed while serving: a traceback with no exception line in the log (vLLM, rank 0)"
    assert verdict.headline == said, verdict.headline


def test_a_stretch_of_vllm_error_frames_with_no_exception_line_is_a_crash() -> None:
    # the copy holds only the middle of an engine core's traceback, one ERROR line per line
    lead = "worker        | (EngineCore_DP0 pid=249) ERROR 11-04 16:00:28 [core.py:793]"
    lines = [
        f'{lead}   File "/usr/local/lib/python3.12/dist-packages/torch/autograd/function.py", line 581, in apply',
        f"{lead}     return super().apply(*args, **kwargs)  # type: ignore[misc]",
        f'{lead}   File "/usr/local/lib/python3.12/dist-packages/flash_attn/flash_attn_interface.py", line 925, in '
        "forward",
    ]
    verdict = broken(lines)
    assert verdict.headline == "crashed: a traceback with no exception line in the log (vLLM)", (
        verdict.headline
    )
    assert verdict.evidence[0].line_no == 1
    # the same stretch ending in its exception line is that exception's
    named = broken([*lines, f"{lead} RuntimeError: HIP error: invalid device function"])
    assert "HIP" in named.headline, named.headline


def test_a_failed_warm_up_names_the_error_its_answer_carries() -> None:
    # the warm-up request's 500 answer quotes the NPU op failure: that is the cause, the failed warm-up
    # and the shell's `Killed` its consequences
    lines = [
        server_args(0, spec=False),
        f"{stamp(30, '')} Initialization failed. warmup error: Traceback (most recent call last):",
        '  File "/sglang/srt/entrypoints/http_server.py", line 1566, in _execute_server_warmup',
        '    assert res.status_code == 200, f"{res.text}"',
        'AssertionError: {"object":"error","message":"Internal server error: NPU function error: call '
        'aclnnInplaceCopy failed, error code is 161002"}',
        "Killed",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["npu-error"], verdict.headline
    assert "warmup request failed" in verdict.headline and "consequence" in verdict.headline


def test_vllm_worker_wrappers_named_by_rank_tag_are_peeled() -> None:
    # vLLM 0.10+ names its workers `(VllmWorker TP0 pid=N)`, nested in the engine core's wrapper
    lead = "(EngineCore_0 pid=675221) (VllmWorker TP0 pid=675227) ERROR 08-07 12:16:03 [multiproc_executor.py:596]"
    lines = [
        f'{lead}   File "/usr/local/lib/python3.10/dist-packages/torch/_inductor/compile_fx.py", line 760, in x',
        f"{lead}     raise InductorError(e, currentframe()).with_traceback(",
    ]
    # the worker's rank tag names the rank, as SGLang's `TP0` does
    assert broken(lines).headline == "crashed: a traceback with no exception line in the log (vLLM, rank 0)"


def test_a_systemd_journal_of_vllm_is_read_as_vllm() -> None:
    # `journalctl -u vllm`: each line behind the journal's own stamp, host and unit
    lead = "Aug 17 18:40:30 gpu-1 vllm[8052]: (EngineCore_0 pid=8100) ERROR 08-17 18:40:30 [core.py:700]"
    lines = [
        "Aug 17 18:40:01 gpu-1 vllm[8052]: (APIServer pid=8052) INFO 08-17 18:40:01 [api_server.py:1880] "
        "vLLM API server version 0.10.1",
        f"{lead} EngineCore failed to start.",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "/opt/vllm/v1/engine/core.py", line 691, in run_engine_core',
        f"{lead} ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`",
    ]
    analysis = run(lines)
    assert only(analysis).causes == ["kv-no-memory"], only(analysis).headline
    # the lines are vLLM's, timed by vLLM's own lead: the journal's stamp is no part of a message
    said = [f.message for f in analysis.findings]
    assert said and not any("gpu-1 vllm[" in m for m in said), said


def test_vllms_mooncake_transfer_failures_get_vllms_fix() -> None:
    # vLLM's Mooncake connector while serving: the KV transfer, told in the flags vLLM takes
    lines = [
        '(APIServer pid=7) INFO:     10.0.0.2:52864 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "(Worker_DP0_TP0_EP0 pid=8) ERROR 03-31 02:49:30 [mooncake_connector.py:547] Mooncake transfer failed "
        "for request chatcmpl-ba31",
    ]
    verdict = only(run(lines))
    assert verdict.causes == ["kv-transfer"], verdict.headline
    assert verdict.fix is not None and "--kv-transfer-config" in verdict.fix, verdict.fix


def test_retractions_are_a_full_kv_cache_not_a_crash() -> None:
    # SGLang gives back running requests when the KV cache runs full; the server goes on
    retract = "Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.0980 -> 0.9446"
    lines = [*serving(), *(f"{stamp(60, f' TP{r}')} {retract}" for r in range(3))]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.headline == "requests retracted: the KV cache ran full on 3 rank(s)", verdict.headline
    assert verdict.fix is not None and "--mem-fraction-static" in verdict.fix, verdict.fix


def test_a_record_glued_to_another_records_line_is_read() -> None:
    # two ranks wrote at once: TP3's crash head is glued to the end of TP0's unfinished line, whose rest
    # follows the traceback; the copy stops before the exception line
    lines = [
        server_args(0, spec=False),
        f"{stamp(10)} Capture cuda graph begin. This can take{stamp(11, ' TP3')} Scheduler hit an exception: "
        "Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 1816, in run_scheduler_process',
        " up to several minutes.",
        f"{stamp(12, '')} Received sigquit from a child process. It usually means the child failed.",
    ]
    verdict = broken(lines)
    assert verdict.headline.startswith("crashed at start-up: a traceback with no exception line"), (
        verdict.headline
    )
    assert "rank 3" in verdict.headline, verdict.headline


def test_a_stamp_quoted_in_a_request_is_text() -> None:
    # a prompt that quotes a log line is no record of the server's
    quoted = "Scheduler hit an exception: Traceback (most recent call last):"
    lines = [*serving(), f"{stamp(40)} Receive: obj=GenerateReqInput(text='{stamp(41, ' TP3')} {quoted}')"]
    assert only(run(lines)).status == "healthy"


def test_a_failed_warm_up_is_at_start_up_after_uvicorn_is_up() -> None:
    # uvicorn listens before the warm-up request; the server is not ready (and serves nobody) until it passes
    lines = [
        server_args(0, spec=False),
        f"{stamp(2, '')} INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        f'{stamp(26, "")} INFO:     127.0.0.1:40418 - "GET / HTTP/1.1" 404 Not Found',
        f"{stamp(154, '')} Initialization failed. warmup error: Traceback (most recent call last):",
        '  File "/sglang/python/sglang/srt/server.py", line 621, in _wait_and_warmup',
        '    assert res.status_code == 200, f"{res=}, {res.text=}"',
        "AssertionError: res=<Response [502]>, res.text=''",
    ]
    assert broken(lines).headline.startswith("crashed at start-up during warm-up: warmup request failed")


def test_a_ci_runners_bracketed_stamp_is_peeled() -> None:
    # Buildkite puts `[ISO]` before each line of vLLM's engine core, cut inside its traceback
    lead = "[2025-12-15T20:35:11Z] (EngineCore_DP0 pid=3112) ERROR 12-15 12:35:11 [core.py:866]"
    lines = [
        f"{lead} EngineCore failed to start.",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 857, in run',
        f'{lead}   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 637, in __init__',
    ]
    assert broken(lines).headline.startswith("crashed at start-up: a traceback with no exception line")


@pytest.mark.parametrize(
    "lead",
    [
        "ERROR 2026-01-02T03:04:05.123456Z ",  # GCP's Logs Explorer export
        "Alert 2026-01-02T03:04:05Z ",
        "error 2026-01-02T03:04:05.123+00:00 ",
        "[FATAL] 2026-01-02 03:04:05,123 ",
        "WARN: 2026-01-02T03:04:05.123-0700 ",
    ],
)
def test_a_cloud_loggers_severity_and_stamp_lead_is_peeled(lead: str) -> None:
    # a cloud console's export puts `SEVERITY <ISO stamp> ` before each line: the exception line under
    # it is the traceback's end, so the crash is named by it, not read as a cut traceback
    traceback = (
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1234, in event_loop',
        "    self.run_batch(batch)",
        "AssertionError: batch size mismatch",
    )
    lines = [*serving(), *(lead + line for line in traceback)]
    assert broken(lines).headline.startswith("crashed while serving: AssertionError: batch size mismatch")


def test_a_cri_files_traceback_keeps_its_frames() -> None:
    # a container runtime's file: `<ISO> stdout F ` before every line, the frames' too; the frames say
    # the scheduler was serving (its event loop) when the copy stops
    cri = "2025-07-25T07:53:08.217488644+08:00 stdout F "
    lines = [
        f"{cri}[2025-07-25 07:53:08 TP2] Scheduler hit an exception: Traceback (most recent call last):",
        f'{cri}  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2769, in run',
        f"{cri}    scheduler.event_loop_normal()",
        f'{cri}  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 772, in event_loop_normal',
        f"{cri}    result = self.run_batch(batch)",
    ]
    said = "crashed while serving: a traceback with no exception line in the log (Scheduler, rank 2)"
    assert broken(lines).headline == said


def test_a_vllm_engine_step_frame_is_serving_before_any_constructor() -> None:
    # the copy leaves out run_busy_loop's own frame; the step it calls says serving, and the FlashInfer
    # wrapper built inside that step is no start-up
    lines = [
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1133, in run_engine_core',
        "    engine_core.run_busy_loop()",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line 1213, in _process_engine_step',
        "    outputs, model_executed = self.step_fn()",
        '  File "/usr/local/lib/python3.12/dist-packages/flashinfer/decode.py", line 752, in __init__',
        "    self._pin_memory_int_workspace_buffer = torch.empty(",
        "torch.AcceleratorError: CUDA error: OS call failed or operation not supported on this OS",
    ]
    assert broken(lines).headline.startswith("crashed while serving: CUDA error"), broken(lines).headline


def test_the_cuda_error_nccl_names_after_last_error_is_the_cause() -> None:
    # NCCL's failed CUDA call names the CUDA error in its trailer: that is what to fix
    lead = "(VllmWorker rank=7 pid=240)"
    lines = [
        f"{lead} torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
        "NCCLUtils.cpp:133, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        f"{lead} ncclUnhandledCudaError: Call to CUDA function failed.",
        f"{lead} Last error:",
        f"{lead} Cuda failure 'out of memory'",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["oom"], verdict.headline
    assert verdict.headline.startswith("crashed: GPU out of memory"), verdict.headline
    # an NCCL error with nothing named after it stays the NCCL error
    assert broken(lines[:3]).causes == ["nccl"]
