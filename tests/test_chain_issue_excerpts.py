"""The failure chain on more excerpts users paste into issues: a launcher's word on how a child died,
a traceback pasted from its middle, a benchmark client whose requests failed. Each test is a small log
in the form the programs print; the lines that name a failure are real lines from users' logs."""

from __future__ import annotations

from test_chain import broken, only
from test_detectors import run

# SGLang (0.5.x) raises this in the launcher when a scheduler process exits before it is ready; the
# exit code is minus the signal that ended the process.
_DIED = (
    "RuntimeError: Rank 0 scheduler died during initialization (exit code: {code}). If exit code is -9 "
    "(SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check."
)
_LAUNCHER_FRAMES = [
    "Traceback (most recent call last):",
    '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 647, in wait_for_ready',
    "    infos = _wait_for_scheduler_ready(scheduler_pipe_readers, scheduler_procs)",
    '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 1277, in '
    "_wait_for_scheduler_ready",
    "    raise _scheduler_died_error(i, scheduler_procs[i])",
]


def test_a_scheduler_that_died_of_another_signal_was_not_killed() -> None:
    # the message names SIGKILL only as a hint: exit code -3 is a SIGQUIT, not the OOM killer
    verdict = broken([*_LAUNCHER_FRAMES, _DIED.format(code=-3)])
    assert verdict.causes == ["scheduler-died"], (verdict.causes, verdict.headline)
    assert "killed" not in verdict.headline, verdict.headline


def test_a_scheduler_that_died_of_sigkill_was_killed() -> None:
    verdict = broken([*_LAUNCHER_FRAMES, _DIED.format(code=-9)])
    assert verdict.causes == ["killed"], (verdict.causes, verdict.headline)


def test_frames_pasted_from_a_tracebacks_middle_are_a_crash() -> None:
    # no `Traceback (most recent call last):` above and no exception line below: the paste holds only
    # the middle of an engine core's traceback (vLLM's process wrapper, colour codes in caret notation)
    lead = "^[[1;36m(EngineCore_DP0 pid=6444)^[[0;0m "
    lines = [
        f"{lead}    super().__init__(*args, **kwargs)",
        f'{lead}  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 511, in __init__',
        f"{lead}    self.input_batch = InputBatch(",
        f"{lead}                       ^^^^^^^^^^^",
        f'{lead}  File "/vllm-workspace/vllm-ascend/vllm_ascend/worker/block_table.py", line 60, in __init__',
    ]
    analysis = run(lines)
    assert not analysis.not_logs, analysis.not_logs
    verdict = only(analysis)
    assert verdict.status == "broken", verdict.headline
    assert "no exception line" in verdict.headline and "start-up" in verdict.headline, verdict.headline


def test_a_tracebacks_frames_in_prose_do_not_make_it_a_crash() -> None:
    # a client's traceback (a benchmark script's frames only) beside a serving server is not the server's
    lines = [
        "[2025-09-03 18:33:19 TP0] Decode batch. #running-req: 1, #token: 177, token usage: 0.00, cuda graph: "
        "True, gen throughput (token/s): 84.20, #queue-req: 0, ",
        '  File "/home/u/bench/bench_serving.py", line 120, in send_request',
        "    resp = await session.post(url, json=payload)",
        '  File "/usr/lib/python3/dist-packages/aiohttp/client.py", line 560, in _request',
        "[2025-09-03 18:33:20 TP0] Decode batch. #running-req: 1, #token: 217, token usage: 0.00, cuda graph: "
        "True, gen throughput (token/s): 84.10, #queue-req: 0, ",
    ]
    assert only(run(lines)).status == "healthy"


def test_an_exception_groups_framed_lines_belong_to_its_head() -> None:
    # Python 3.11+ prints an exception group's tracebacks behind `| `: the frames under its head are
    # its own, not a traceback pasted from its middle
    lines = [
        "[2025-08-12 08:36:54 TP0] Decode batch. #running-req: 1, #token: 177, token usage: 0.00, cuda graph: "
        "True, gen throughput (token/s): 84.20, #queue-req: 0, ",
        "[2025-08-12 08:36:55] ERROR:    Exception in ASGI application",
        "  + Exception Group Traceback (most recent call last):",
        '  |   File "/x/site-packages/starlette/_utils.py", line 77, in collapse_excgroups',
        "  |     yield",
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)",
        "  +-+---------------- 1 ----------------",
        "    | Traceback (most recent call last):",
        '    |   File "/x/site-packages/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
        "    |     result = await app(  # type: ignore[func-returns-value]",
        "    | openai_harmony.HarmonyError: Unexpected token 12606 while expecting start token 200006",
        "    +------------------------------------",
        "[2025-08-12 08:36:56 TP0] Decode batch. #running-req: 1, #token: 217, token usage: 0.00, cuda graph: "
        "True, gen throughput (token/s): 84.10, #queue-req: 0, ",
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline


_BAR = "100%|" + "█" * 60 + "| {done}/{total} [00:02<00:00, 34.85it/s]"


def _client(*rows: str, bar: str | None = None) -> list[str]:
    head = ["Traffic request rate: inf", "Maximum request concurrency: 2"]
    return [*head, *([bar] if bar else []), "============ Serving Benchmark Result ============", *rows]


def test_a_benchmark_client_whose_requests_failed_is_degraded() -> None:
    # vLLM's `bench serve` (late 2025) counts the failed requests itself
    verdict = only(run(_client("Successful requests:                     40", "Failed requests:  60")))
    assert verdict.status == "degraded", verdict.headline
    assert "40 of 100 requests succeeded" in verdict.headline, verdict.headline


def test_a_benchmark_client_that_sent_more_than_succeeded_is_degraded() -> None:
    # older clients print no failed count: its progress bar right above the results counted the requests
    bar = _BAR.format(done=100, total=100)
    verdict = only(run(_client("Successful requests:                     1", bar=bar)))
    assert verdict.status == "degraded", verdict.headline
    assert "1 of 100 requests succeeded" in verdict.headline, verdict.headline


def test_a_benchmark_clients_command_line_says_how_many_requests_it_sent() -> None:
    # no failed count and no progress bar: the command pasted above the results asked for 300 prompts
    command = "python3 -m sglang.bench_serving --backend sglang --dataset-name random --num-prompts 300"
    verdict = only(run([command, *_client("Successful requests:                     164")]))
    assert verdict.status == "degraded", verdict.headline
    assert "164 of 300 requests succeeded" in verdict.headline, verdict.headline
    # argparse's prefix form, and a run that sent them all
    command = "python3 -m sglang.bench_serving --port 8000 --num-prompt 164 --random-input 650"
    assert only(run([command, *_client("Successful requests:                     164")])).status == "healthy"


def test_a_benchmark_client_whose_requests_all_succeeded_is_healthy() -> None:
    bar = _BAR.format(done=64, total=64)
    rows = ("Successful requests:                     64", "Failed requests:                         0")
    verdict = only(run(_client(*rows, bar=bar)))
    assert verdict.status == "healthy", verdict.headline
    assert "64 requests succeeded" in verdict.headline, verdict.headline


def test_a_speculative_benchmark_clients_accept_length_is_in_its_verdict() -> None:
    rows = ("Successful requests:                     256", "Accept length:                           5.86")
    verdict = only(run(_client(*rows)))
    assert verdict.status == "healthy", verdict.headline
    assert "accept length 5.86" in verdict.headline, verdict.headline


def test_a_prefill_node_is_known_by_its_prefill_lines_own_queues() -> None:
    # no server args in the excerpt: SGLang prints a prefill line's bootstrap and transfer queues only on
    # a PD prefill node (`#unbootstrapped-req` / `#transferring-req` in 2025, `#inflight-req` since)
    older = [
        f"[2025-10-15 14:44:3{i} DP8 TP8 EP8] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, "
        f"token usage: 0.01, #unbootstrapped-req: 0, #queue-req: {i}, #transferring-req: 1, input throughput "
        "(token/s): 1258.57, "
        for i in range(3)
    ]
    newer = [
        f"[2026-04-15 17:13:0{i} DP0 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 4096, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0, #prealloc-req: 0, #inflight-req: 1, cuda graph: "
        "False, input throughput (token/s): 21000.00"
        for i in range(3)
    ]
    for lines in (older, newer):
        verdict = only(run(lines))
        assert verdict.status == "healthy", verdict.headline
        assert verdict.headline.startswith("prefill node"), verdict.headline


def test_a_requests_traceback_cut_short_is_still_that_requests() -> None:
    # vLLM's API server logs a failed request's traceback under its head line; an excerpt that stops
    # before the exception line leaves the request's handler frames only: one request failed, not the engine
    lead = "ERROR 07-03 03:19:15 [serving_chat.py:200]"
    frames = "/x/site-packages/vllm/entrypoints/openai"
    lines = [
        f"{lead} Error in preprocessing prompt inputs",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "{frames}/serving_chat.py", line 183, in create_chat_completion',
        f"{lead}     ) = await self._preprocess_chat(",
        f'{lead}   File "{frames}/serving_engine.py", line 835, in _preprocess_chat',
        f"{lead}     prompt_inputs = await self._tokenize_prompt_input_async(",
    ]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert verdict.causes == ["request-error"], (verdict.causes, verdict.headline)


def test_a_traceback_head_cut_inside_its_line_is_no_headline() -> None:
    # a paste that stops inside the head line itself: the headline says what it is, never shows the cut
    # head as the failure
    lines = [
        '[2026-06-30 10:40:53] INFO:     127.0.0.1:47660 - "GET /model_info HTTP/1.1" 200 OK',
        "[2026-06-30 10:40:53 TP9 EP9] get env HOSTNAME = pod1",
        "[2026-06-30 10:41:04 TP13 EP13] Scheduler hit an exception: Traceback (most recent call",
    ]
    verdict = broken(lines)
    assert "no exception line" in verdict.headline, verdict.headline
    assert "most recent call" not in verdict.headline, verdict.headline


def _spec_interval(t: str, accepted: int, drafted: int) -> list[str]:
    lead = f"(APIServer pid=1) INFO 05-02 20:{t}"
    return [
        f"{lead} [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
        "35.2 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 56.1%, Prefix cache hit rate: 76.5%",
        f"{lead} [metrics.py:101] SpecDecoding metrics: Mean acceptance length: {1 + 3 * accepted / drafted:.2f}, "
        f"Accepted throughput: 26.40 tokens/s, Drafted throughput: 26.40 tokens/s, Accepted: {accepted} tokens, "
        f"Drafted: {drafted} tokens, Per-position acceptance rate: 1.000, 1.000, 1.000, Avg Draft acceptance "
        f"rate: {100 * accepted / drafted:.1f}%",
    ]


def test_every_drafted_token_accepted_for_minutes_is_a_loop_or_the_target_as_draft() -> None:
    # vLLM's own counts: accepted == drafted in every interval, hundreds of tokens: no real draft model
    # guesses that well; the output repeats itself, or the draft is the target
    lines = [*_spec_interval("46:59", 264, 264), *_spec_interval("47:09", 261, 261)]
    verdict = only(run(lines))
    assert verdict.status == "degraded", verdict.headline
    assert "drafted tokens accepted: the output loops" in verdict.headline, verdict.headline
    # one drafted token in ten rejected is a good draft, not a loop
    verdict = only(run([*_spec_interval("46:59", 240, 264), *_spec_interval("47:09", 250, 261)]))
    assert verdict.status == "healthy", verdict.headline


def test_torchs_hint_on_device_side_assertions_is_no_assert() -> None:
    # torch ends every CUDA error with `Compile with TORCH_USE_CUDA_DSA to enable device-side
    # assertions.`: a hint, not the `device-side assert triggered` error
    lead = "(WorkerDict pid=859188)"
    lines = [
        f'{lead}   File "/x/sglang/srt/managers/schedule_batch.py", line 1602, in get_model_worker_batch',
        f"{lead}     seq_lens_cpu = self.seq_lens.cpu()",
        f"{lead} RuntimeError: CUDA error: an illegal memory access was encountered",
        f"{lead} For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        f"{lead} Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    ]
    verdict = broken(lines)
    assert "device-side assert" not in verdict.headline, verdict.headline
    assert "CUDA device-side assert" not in " ".join(verdict.explains), verdict.explains


def test_a_traceback_head_right_after_a_frame_starts_a_traceback() -> None:
    # a frame's next line is its source line, except a new traceback's head: here a process's native
    # stack (frames without source lines) ends, and the launcher's EOFError waiting on it follows
    lines = [
        '  File "<unknown>", line 0, in _PyEval_EvalFrameDefault',
        '  File "<unknown>", line 0, in Py_RunMain',
        "Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 1340, in '
        "_wait_for_scheduler_ready",
        "    data = scheduler_pipe_readers[i].recv()",
        '  File "/usr/lib/python3.10/multiprocessing/connection.py", line 383, in _recv',
        "    raise EOFError",
        "EOFError",
    ]
    verdict = broken(lines)
    assert verdict.causes != ["pipe-closed"], verdict.headline
    assert "pipe-closed" in verdict.explains or "EOFError" in verdict.headline, verdict


_DECODE = (
    "[2025-06-01 10:00:{:02d} TP0] Decode batch. #running-req: 4, #token: 900, token usage: 0.01, cuda graph: "
    "True, gen throughput (token/s): 310.00, #queue-req: 0, "
)


def test_a_crash_of_ranks_whose_tracebacks_are_cut_says_when_where_and_which_ranks() -> None:
    # two schedulers' heads cut inside their own line while serving: the headline names the component
    # and the ranks by number, as a chain's does (it said `crashed while serving on 2 rank(s)`)
    lines = [_DECODE.format(s) for s in range(10, 20)] + [
        f"[2025-06-01 10:00:21 TP{rank}] Scheduler hit an exception: Traceback (most recent call"
        for rank in (3, 5)
    ]
    verdict = broken(lines)
    assert verdict.headline.startswith("crashed while serving:"), verdict.headline
    assert verdict.headline.endswith("(Scheduler, ranks 3, 5)"), verdict.headline


def test_a_traceback_cut_under_the_call_of_the_serving_loop_was_serving() -> None:
    # no serving line in the excerpt: the frame's source line that calls the loop says what the rank did
    lines = [
        "[2025-12-18 08:24:01 TP7] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2683, in '
        "run_scheduler_process",
        "    scheduler.event_loop_normal()",
        '  File "/usr/local/lib/python3.12/dist-packages/torch/utils/_contextlib.py", line 120, in '
        "decorate_context",
        "    return func(*args, **kwargs)",
    ]
    verdict = broken(lines)
    assert verdict.headline.startswith("crashed while serving:"), verdict.headline
    assert "rank 7" in verdict.headline, verdict.headline
