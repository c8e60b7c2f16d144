"""The failure chain on small real-shaped logs: the earliest fatal event is the cause, what follows is
what it explains, a graceful stop and its noise are no failure, a frozen heartbeat is a hang."""

from __future__ import annotations

from test_detectors import decode, run, server_args, stamp

from tracelens.analysis import Analysis
from tracelens.analysis.findings import Severity
from tracelens.analysis.verdicts import Verdict

READY = f"{stamp(5, '')} The server is fired up and ready to roll!"


def serving(n: int = 5) -> list[str]:
    return [server_args(0, spec=False), READY, *(decode(10 + i, accept=None) for i in range(n))]


def only(analysis: Analysis) -> Verdict:
    (verdict,) = analysis.verdicts
    return verdict


def broken(lines: list[str]) -> Verdict:
    """The verdict of a log that must be broken."""
    verdict = only(run(lines))
    assert verdict.status == "broken", verdict.headline
    return verdict


def start_up_crash(earlier: str, frame: str, exception: str, at: float = 30) -> list[str]:
    """A server start, an ``earlier`` line, then the scheduler's traceback through ``frame`` (a `File`
    line) to ``exception``."""
    return [
        server_args(0, spec=False),
        earlier,
        f"{stamp(at)} Scheduler hit an exception: Traceback (most recent call last):",
        frame,
        exception,
    ]


def errors(analysis: Analysis) -> list[str]:
    return [f.code for f in analysis.findings if f.severity == Severity.ERROR]


def eof_traceback(at: float) -> list[str]:
    return [
        f"{stamp(at, '')} DataParallelController hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/data_parallel_controller.py", line 120, in launch_tensor_parallel_group',
        "    scheduler_info.append(scheduler_pipe_readers[i].recv())",
        "EOFError",
        f"{stamp(at + 1, '')} Received sigquit from a child process. It usually means the child failed.",
    ]


def test_the_earliest_fatal_event_is_the_cause_and_the_eoferror_its_consequence() -> None:
    lines = [
        server_args(0, spec=False),
        f"{stamp(3)} init.cu:997: building transport map failed",
        f"{stamp(3)} transport.cpp:420: non-zero status: 7 Peer GPU 8 is not accessible, exiting ...",
        *eof_traceback(40),
    ]
    verdict = only(run(lines))
    assert verdict.status == "broken"
    assert verdict.causes == ["nvshmem-transport"]
    assert "NVSHMEM" in verdict.headline and "at start-up" in verdict.headline
    assert "EOFError" not in verdict.headline.split(";")[0]
    assert verdict.explains[:2] == [
        "connection to another process lost (EOFError)",
        "SIGQUIT from a child process",
    ]
    assert verdict.fix and "GPUDirect RDMA" in verdict.fix
    assert verdict.evidence[0].line_no == 2


def test_a_consequence_alone_is_named_as_such() -> None:
    verdict = only(run([*serving(), *eof_traceback(60)]))
    assert verdict.status == "broken"
    assert verdict.headline.startswith("stopped while serving: connection to another process lost (EOFError)")
    assert "not in the log" in verdict.headline


def test_the_innermost_exception_of_a_chained_traceback_is_the_cause() -> None:
    lines = [
        *serving(),
        f"{stamp(60)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/layers/attention.py", line 10, in forward',
        "ValueError: head_size 72 is not in the kernel's list",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 20, in event_loop',
        "Exception: Capture cuda graph failed: head_size 72 is not in the kernel's list",
    ]
    verdict = only(run(lines))
    assert verdict.causes == ["exception"]
    assert verdict.headline.startswith("crashed while serving: ValueError: head_size 72")
    assert (
        verdict.evidence[0].line_no == lines.index("ValueError: head_size 72 is not in the kernel's list") + 1
    )


def test_a_graceful_stop_of_2026_and_its_cleanup_keep_the_run_healthy() -> None:
    lines = [
        *serving(),
        f"{stamp(100, '')} SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
        f"{stamp(101, '')} Child process unexpectedly failed with exitcode=-15. pid=4321",
        f"{stamp(101, '')} Received sigquit from a child process. It usually means the child failed.",
        f"{stamp(102, '')} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 20, in event_loop',
        "RuntimeError: the pipe to the tokenizer is closed",
    ]
    analysis = run(lines)
    verdict = only(analysis)
    assert verdict.status == "healthy", verdict.headline
    assert errors(analysis) == []


def test_a_stop_asked_for_during_start_up_leaves_the_run_unfinished() -> None:
    # an orchestrator's SIGTERM while the weights load: nothing failed, and nothing was served
    lines = [
        server_args(0, spec=False),
        f"{stamp(2)} Load weight begin. avail mem=78.94 GB",
        f"{stamp(100, '')} SIGTERM received. signum=None frame=None. Draining requests and shutting down...",
        f"{stamp(101, '')} Child process unexpectedly failed with exitcode=-15. pid=4321",
    ]
    verdict = only(run(lines))
    assert verdict.status == "incomplete", verdict.headline
    assert verdict.headline == (
        "stopped during weight loading: a shutdown was asked for before the server was ready"
    ), verdict.headline
    # the stop alone (a paste of its lines), with no start-up line, is a graceful stop: nothing to act on
    assert only(run(lines[2:])).status == "healthy"


def test_a_monitor_thread_traceback_after_its_processes_are_gone_is_noise() -> None:
    lines = [
        *serving(),
        "Exception in thread Thread-3 (monitor):",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/psutil/_pslinux.py", line 1643, in wrapper',
        "ProcessLookupError: [Errno 3] No such process",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/sglang/srt/utils.py", line 700, in monitor',
        "psutil.NoSuchProcess: process no longer exists (pid=1234)",
    ]
    analysis = run(lines)
    assert only(analysis).status == "healthy"
    assert errors(analysis) == []


def test_health_checks_with_one_frozen_heartbeat_are_a_hang_with_its_start() -> None:
    fail = (
        "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        "tic start time: {tic}. last_heartbeat time: 1000.00"
    )
    lines = [*serving(), *(f"{stamp(200 + 30 * i, '')} {fail.format(tic=1100 + 30 * i)}" for i in range(3))]
    verdict = only(run(lines))
    assert verdict.status == "broken"
    assert verdict.causes == ["hang"]
    # the first failing check started 100 s after the last heartbeat
    assert verdict.headline.startswith(f"hung while serving since {stamp(100, '')[1:-1]}"), verdict.headline


def test_repeated_nan_logits_degrade_a_serving_run() -> None:
    nan = "Detected errors during sampling! NaN in the logits."
    verdict = only(run([*serving(), *(f"{stamp(50 + i)} {nan}" for i in range(4))]))
    assert verdict.status == "degraded"
    assert verdict.headline.startswith(
        "NaN in the logits during sampling (sampling, rank 0, 4 times) while serving"
    )
    assert "crash" not in verdict.headline


def test_a_newest_first_log_is_read_from_its_end() -> None:
    lines = [
        f"{stamp(60, '')} Received sigquit from a child process. It usually means the child failed.",
        "KeyError: 'model.layers.3.mlp.gate_up_proj.input_scale'",
        "param = params_dict[name]",
        'File "/sglang/srt/models/llama.py", line 503, in load_weights',
        f"{stamp(59)} Scheduler hit an exception: Traceback (most recent call last):",
        f"{stamp(20)} Load weight begin. avail mem=70.00 GB",
    ]
    verdict = only(run(lines))
    assert verdict.causes == ["weight-key"], verdict.headline
    assert verdict.fix and "checkpoint" in verdict.fix


def test_a_client_traceback_beside_a_healthy_server_is_the_clients() -> None:
    lines = [
        *serving(),
        "Traceback (most recent call last):",
        '  File "/workspace/tests/test_openai_server.py", line 88, in test_chat',
        "    assert response['choices'][0]['logprobs']",
        '  File "/usr/lib/python3/site-packages/openai/_base_client.py", line 1000, in request',
        "KeyError: 'logprobs'",
        *(decode(100 + i, accept=None) for i in range(3)),
    ]
    analysis = run(lines)
    verdict = only(analysis)
    assert verdict.status == "healthy", verdict.headline
    assert "a client in the same log failed (KeyError: 'logprobs')" in verdict.headline
    assert errors(analysis) == []


def test_a_vllm_traceback_of_error_lines_names_its_exception() -> None:
    lines = [
        "INFO 04-16 10:30:00 [api_server.py:1043] vLLM API server version 0.8.4",
        "ERROR 04-16 10:35:25 [core.py:387] EngineCore hit an exception: Traceback (most recent call last):",
        'ERROR 04-16 10:35:25 [core.py:387]   File "/vllm/v1/engine/core.py", line 380, in run_engine_core',
        "ERROR 04-16 10:35:25 [core.py:387] ValueError: the prompt is longer than max_model_len",
        "INFO 04-16 10:35:26 [core.py:390] Shutting down",
    ]
    assert "ValueError: the prompt is longer than max_model_len" in broken(lines).headline


def test_thousands_of_repeats_are_counted_from_a_few_rows() -> None:
    nan = "Detected errors during sampling! NaN in the logits."
    lines = [*serving(), *(f"{stamp(50 + i / 100, f' TP{i % 4}')} {nan}" for i in range(3000))]
    verdict = only(run(lines))
    assert "(sampling, ranks 0-3, 3000 times)" in verdict.headline


def test_a_frozen_heartbeat_printed_as_a_time_of_day_is_a_hang_too() -> None:
    fail = (
        "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. "
        "tic start time: {tic}. last_heartbeat time: {beat}"
    )
    beat = stamp(40, "")[12:20]  # the time of day of the last decode line's second
    lines = [*serving(), *(f"{stamp(300 + 20 * i, '')} {fail.format(tic='x', beat=beat)}" for i in range(3))]
    verdict = only(run(lines))
    assert verdict.causes == ["hang"]
    assert f"since {stamp(40, '')[1:-1]}" in verdict.headline, verdict.headline


def test_one_request_failing_in_the_http_server_does_not_break_it() -> None:
    lines = [
        *serving(),
        f"{stamp(60, '')} ERROR:    Exception in ASGI application",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3/site-packages/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        *(decode(100 + i, accept=None) for i in range(3)),
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.causes == ["asgi-error"]
    assert "crash" not in verdict.headline


def test_failed_health_checks_the_server_recovered_from_are_no_failure() -> None:
    fail = "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds."
    lines = [*serving(), f"{stamp(60, '')} {fail}", *(decode(100 + i, accept=None) for i in range(3))]
    assert only(run(lines)).status == "healthy"


def test_a_traceback_without_its_exception_line_never_heads_a_verdict_with_its_first_line() -> None:
    lines = [*serving(), f"{stamp(60)} Scheduler hit an exception: Traceback (most recent call last):"]
    verdict = only(run(lines))
    assert verdict.status == "broken"
    assert "Traceback (most recent call last)" not in verdict.headline
    assert "a traceback with no exception line in the log" in verdict.headline


def test_nccl_warnings_alone_leave_a_serving_run_healthy() -> None:
    warn = "node1:123:456 [0] NCCL WARN NET/IB : Got async event : port error"
    assert only(run([*serving(), warn])).status == "healthy"


def test_not_enough_memory_for_the_kv_cache_asks_for_more_memory_not_less() -> None:
    lines = [
        server_args(0, spec=False),
        f"{stamp(30)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/model_executor/model_runner.py", line 900, in init_memory_pool',
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ]
    verdict = only(run(lines))
    assert verdict.causes == ["kv-pool-too-small"]
    assert verdict.fix and "raise --mem-fraction-static" in verdict.fix


def test_an_exception_the_server_served_on_after_is_no_crash() -> None:
    lines = [
        *serving(),
        f"{stamp(60)} TokenizerManager hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/tokenizer_manager.py", line 300, in handle_loop',
        "ValueError: a request's sampling params are invalid",
        *(decode(200 + i, accept=None) for i in range(3)),
    ]
    analysis = run(lines)
    verdict = only(analysis)
    assert verdict.status == "degraded", verdict.headline
    assert verdict.headline.endswith("the server went on serving after it")
    assert "crash" not in verdict.headline
    assert errors(analysis) == []


def test_a_stop_after_a_failure_is_its_teardown_not_a_graceful_stop() -> None:
    lines = [
        *serving(),
        f"{stamp(60, '')} Received sigquit from a child process. It usually means the child failed.",
        f"{stamp(60, '')} INFO:     Shutting down",
        f"{stamp(61)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 20, in event_loop',
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    verdict = only(run(lines))
    assert verdict.status == "broken"
    assert verdict.causes == ["illegal-memory-access"], verdict.headline


def test_an_earlier_error_of_the_causes_component_is_its_detail() -> None:
    lines = start_up_crash(
        "node1:123:456 [0] NCCL WARN NET/Socket : Connect to 10.0.0.2<4000> failed : Connection refused",
        '  File "/sglang/srt/distributed/parallel_state.py", line 200, in init',
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
    )
    verdict = only(run(lines))
    assert verdict.causes == ["nccl"]
    assert "NCCL error (NCCL, rank 0) after NCCL warning" in verdict.headline
    assert [e.line_no for e in verdict.evidence[:2]] == [2, 5]


def test_a_vllm_request_error_the_server_answered_requests_after_is_no_crash() -> None:
    ok = 'INFO:     127.0.0.1:{m} - "POST /v1/chat/completions HTTP/1.1" 200 OK'
    lines = [
        "INFO 04-16 10:30:00 [api_server.py:1043] vLLM API server version 0.8.4",
        "ERROR 04-16 10:35:25 [serving_chat.py:200] Error in preprocessing prompt inputs",
        "ERROR 04-16 10:35:25 [serving_chat.py:200] ValueError: the prompt is longer than max_model_len",
        *(ok.format(m=40 + i) for i in range(3)),
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    # the handler's own head line says whose failure it is: one request's (`request_scope`)
    assert verdict.causes == ["request-error"] and "crash" not in verdict.headline, verdict.headline


def test_a_collective_timeout_gives_way_to_the_peer_failure_it_waited_on() -> None:
    watchdog = (
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLGATHER) ran "
        "for 600000 milliseconds before timing out."
    )
    lines = [*serving(), f"{stamp(700, ' TP1')} {watchdog}", "Fatal Python error: Segmentation fault"]
    verdict = only(run(lines))
    assert verdict.causes == ["segfault"], verdict.headline
    assert "NCCL watchdog collective timeout" in verdict.explains
    alone = only(run([*serving(), f"{stamp(700, ' TP1')} {watchdog}"]))
    assert alone.causes == ["watchdog-timeout"]


def test_a_scheduler_watchdog_says_the_server_hung() -> None:
    line = f"{stamp(400, '')} Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"
    verdict = only(run([*serving(), line]))
    assert verdict.status == "broken"
    assert verdict.headline.startswith("hung while serving: scheduler watchdog timeout")


def test_an_import_error_at_start_up_before_the_server_got_ready_stopped_nothing() -> None:
    lines = [
        server_args(0, spec=False),
        f"{stamp(2)} Failed to import the fused kernel, falling back: Traceback (most recent call last):",
        '  File "/sglang/srt/layers/fused.py", line 3, in <module>',
        "ModuleNotFoundError: No module named 'fused_kernels'",
        READY,
        *(decode(10 + i, accept=None) for i in range(3)),
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.headline.endswith("the server went on serving after it")
