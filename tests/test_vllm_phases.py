"""What a vLLM engine was doing when it failed, from its stats lines (it prints no other sign of serving),
and a stop it was asked for told from the same shutdown lines after an engine's fatal error."""

from __future__ import annotations

import datetime as dt

import pytest
from test_chain import only

from tracelens.analysis import Analysis, analyze_tables
from tracelens.engine.ingest import parse_text
from tracelens.parsers.pipeline import ParseOptions

# vLLM V1's engine stats (vllm/v1/metrics/loggers.py), printed by the API server every 10 s
V1_STATS = (
    "(APIServer pid=1) INFO 05-13 10:{at} [loggers.py:271] Engine 000: Avg prompt throughput: {prompt} tokens/s, "
    "Avg generation throughput: {gen} tokens/s, Running: {running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
    "21.4%, Prefix cache hit rate: 0.0%"
)
# V0's (vllm/engine/metrics.py), printed on the engine's steps every 5 s
V0_STATS = (
    "INFO 08-29 02:{at} metrics.py:406] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: {gen} "
    "tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 2.9%, CPU KV "
    "cache usage: 0.0%."
)
WORKER_DIED = (
    "(EngineCore_DP0 pid=196) ERROR 05-13 10:46:44 [multiproc_executor.py:149] Worker proc VllmWorker-0 died "
    "unexpectedly, shutting down executor."
)


def v1_stats(at: str, running: int, gen: float = 0.0, prompt: float = 0.0) -> str:
    return V1_STATS.format(at=at, running=running, gen=gen, prompt=prompt)


def run(lines: list[str]) -> Analysis:
    """The analysis of ``lines`` dated as a file of that day is (vLLM's lines carry no year)."""
    options = ParseOptions(base_date=dt.date(2026, 12, 1), base_date_is_end=True)
    return analyze_tables(parse_text("\n".join(lines) + "\n", "hand.log", options))


def headline(lines: list[str]) -> str:
    verdict = only(run(lines))
    assert verdict.status == "broken", verdict.headline
    return verdict.headline


def test_a_stats_line_after_the_failure_that_counts_work_says_it_struck_while_serving() -> None:
    # the API server's logger prints once more: the interval the engine died in, 5 requests running
    assert headline([WORKER_DIED, v1_stats("46:50", running=5, gen=45.2)]).startswith(
        "stopped while serving:"
    )
    # tokens generated in that interval, none running at its end: it served too
    assert headline([WORKER_DIED, v1_stats("46:50", running=0, gen=12.0)]).startswith(
        "stopped while serving:"
    )
    v0_failed = [
        "ERROR 08-29 02:12:22 async_llm_engine.py:61] Engine background task failed",
        "ERROR 08-29 02:12:22 async_llm_engine.py:61] Traceback (most recent call last):",
        "ERROR 08-29 02:12:22 async_llm_engine.py:61] RuntimeError: CUDA error: an illegal memory access was "
        "encountered",
        V0_STATS.format(at="12:25", gen=31.0, running=7),
    ]
    assert headline(v0_failed).startswith("crashed while serving: CUDA illegal memory access")


def test_stats_lines_that_count_no_work_say_the_engine_was_idle() -> None:
    # the engine was up (it printed stats) with nothing running: not serving a request, not starting
    assert headline([v1_stats("46:40", running=0), WORKER_DIED]).startswith("stopped while idle:")
    assert headline([WORKER_DIED, v1_stats("46:50", running=0)]).startswith("stopped while idle:")
    # an idle line before, but the interval of the failure counts work
    lines = [v1_stats("46:40", running=0), WORKER_DIED, v1_stats("46:50", running=2, gen=30.0)]
    assert headline(lines).startswith("stopped while serving:")


def test_the_last_stats_line_before_the_failure_says_what_the_engine_did_then() -> None:
    assert headline([v1_stats("46:40", running=3, gen=80.0), WORKER_DIED]).startswith(
        "stopped while serving:"
    )
    # it served, then went idle long before it failed
    lines = [v1_stats("40:00", running=3, gen=80.0), v1_stats("46:40", running=0), WORKER_DIED]
    assert headline(lines).startswith("stopped while idle:")


def test_a_stats_line_long_after_the_failure_says_nothing_of_it() -> None:
    # five minutes later: another interval, the failure's is not in it
    assert headline([WORKER_DIED, v1_stats("51:50", running=5, gen=45.2)]).startswith("stopped: ")


def test_a_speculative_metrics_line_before_the_failure_says_it_struck_while_serving() -> None:
    # V1 prints its drafts' figures only for an interval that drafted for requests; then the engine core
    # dumps the input of the step that raised (its exception cut from the paste)
    lines = [
        "(APIServer pid=1) INFO 05-01 14:39:04 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
        "3.89, Accepted throughput: 21.10 tokens/s, Drafted throughput: 21.90 tokens/s, Accepted: 211 tokens, "
        "Drafted: 219 tokens, Per-position acceptance rate: 0.986, 0.963, 0.940, Avg Draft acceptance rate: 96.3%",
        "(EngineCore pid=112) ERROR 05-01 14:39:06 [dump_input.py:72] Dumping input data for V1 LLM engine "
        "(v0.19.2rc1) with config: model='/models/qwen3', speculative_config=SpeculativeConfig(method='mtp')",
    ]
    said = headline(lines)
    assert said.startswith("stopped while serving: engine or worker process failed"), said


# The lines vLLM prints as it stops: the engine core when SIGTERM or SIGINT reaches it (`EngineCore
# exiting.`, at DEBUG), the API server when a signal cancels its server task, then uvicorn's own.
ENGINE_EXITING = "(EngineCore_DP0 pid=196) DEBUG 05-13 10:46:{s} [core.py:705] EngineCore exiting."
SHUTDOWN = [
    "(APIServer pid=1) INFO 05-13 10:46:{s} [launcher.py:101] Shutting down FastAPI HTTP server.",
    "(APIServer pid=1) INFO:     Shutting down",
    "(APIServer pid=1) INFO:     Waiting for application shutdown.",
    "(APIServer pid=1) INFO:     Application shutdown complete.",
]
FATAL = [
    "(EngineCore_DP0 pid=196) ERROR 05-13 10:46:44 [core.py:1138] EngineCore encountered a fatal error.",
    "(EngineCore_DP0 pid=196) ERROR 05-13 10:46:44 [core.py:1138] Traceback (most recent call last):",
    '(EngineCore_DP0 pid=196) ERROR 05-13 10:46:44 [core.py:1138]   File "/usr/local/lib/python3.12/site-packages/'
    'vllm/v1/engine/core.py", line 1170, in run_busy_loop',
    "(EngineCore_DP0 pid=196) ERROR 05-13 10:46:44 [core.py:1138]     self._process_engine_step()",
    "(EngineCore_DP0 pid=196) ERROR 05-13 10:46:44 [core.py:1138] torch.AcceleratorError: CUDA error: an illegal "
    "memory access was encountered",
    "(APIServer pid=1) ERROR 05-13 10:46:44 [async_llm.py:480] AsyncLLM output_handler failed.",
    "(APIServer pid=1) ERROR 05-13 10:46:44 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
]


def stopping(at: int) -> list[str]:
    return [ENGINE_EXITING.format(s=at), *(line.format(s=at) for line in SHUTDOWN)]


def test_the_shutdown_lines_after_an_engine_s_fatal_error_are_its_consequence() -> None:
    serving = [v1_stats("46:40", running=5, gen=45.2)]
    verdict = only(run([*serving, *FATAL, *stopping(46)]))
    assert verdict.status == "broken", verdict.headline
    assert verdict.headline.startswith("crashed while serving: CUDA illegal memory access"), verdict.headline
    # the API server's EngineDeadError alone (the engine's own error is not in the excerpt), then uvicorn
    verdict = only(run([*serving, *FATAL[-2:], *SHUTDOWN[1:]]))
    assert verdict.status == "broken", verdict.headline
    assert "engine or worker process failed: EngineDeadError" in verdict.headline
    verdict = only(run([*serving, WORKER_DIED, *stopping(47)]))
    assert verdict.headline.startswith("stopped while serving: engine or worker process failed"), (
        verdict.headline
    )


def test_a_stop_asked_for_first_makes_the_errors_of_its_teardown_no_failure() -> None:
    serving = [v1_stats("46:40", running=5, gen=45.2)]
    # Ctrl-C: the API server's task is cancelled, then the engine core fails as its workers go
    lines = [*serving, SHUTDOWN[0].format(s=43), *FATAL, *SHUTDOWN[1:]]
    assert only(run(lines)).status == "healthy"
    # the engine core's own word that a signal reached it, then a worker's collective aborted under it
    worker = "(VllmWorker rank=0 pid=120) ERROR 05-13 10:46:44 [multiproc_executor.py:527] "
    lines = [
        *serving,
        ENGINE_EXITING.format(s=43),
        f"{worker}WorkerProc hit an exception.",
        f"{worker}Traceback (most recent call last):",
        f'{worker}  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/executor/multiproc_executor.py", line '
        "522, in worker_busy_loop",
        f"{worker}    output = func(*args, **kwargs)",
        f"{worker}RuntimeError: NCCL communicator was aborted on rank 0.",
    ]
    verdict = only(run(lines))
    assert verdict.status == "healthy", verdict.headline
    # and the stop alone: the engine was asked to exit, the server shut down
    assert only(run([*serving, *stopping(50)])).status == "healthy"


def frame(path: str, line: int, function: str, source: str) -> list[str]:
    return [
        f'  File "/usr/local/lib/python3.12/dist-packages/vllm/{path}", line {line}, in {function}',
        f"    {source}",
    ]


# A traceback's frames that run only once vLLM serves: V0's speculative step, V1's API-side output
# loop, a request's stream generator (no stats line, no other sign of serving in the log)
SERVING_TRACEBACKS = [
    [
        *frame(
            "spec_decode/spec_decode_worker.py",
            388,
            "_run_speculative_decoding_step",
            "proposal_scores = x()",
        ),
        *frame("worker/model_runner.py", 717, "execute_model", "model_executable = self.graph_runners[bs]"),
        "KeyError: 8",
    ],
    [
        *frame(
            "v1/engine/async_llm.py", 375, "output_handler", "outputs = await engine_core.get_output_async()"
        ),
        *frame("v1/engine/core_client.py", 716, "get_output_async", "raise self._format_exception(outputs)"),
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
        "the root cause.",
    ],
    [
        *frame(
            "entrypoints/openai/serving_chat.py", 497, "chat_completion_stream_generator", "async for r in g:"
        ),
        *frame("v1/engine/async_llm.py", 323, "generate", "out = q.get_nowait() or await q.get()"),
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
        "the root cause.",
    ],
]


@pytest.mark.parametrize("frames", SERVING_TRACEBACKS)
def test_frames_that_run_only_while_vllm_serves_say_so(frames: list[str]) -> None:
    said = headline(["Traceback (most recent call last):", *frames])
    assert said.startswith(("crashed while serving:", "stopped while serving:")), said
