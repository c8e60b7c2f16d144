"""The failure chain across processes: whose traceback a line is. An engine client's traceback cut
before its exception line (the API server's, a program driving the engine) is what the engine's death
set off, never its cause; exception lines printed among other ranks' tracebacks are paired with their
own traceback."""

from __future__ import annotations

from test_chain import broken
from test_detectors import server_args, stamp

from tracelens.analysis.chain_events import FRONT_CUT_TEXT

STATS = (
    "(APIServer pid=1000) INFO 08-14 10:04:00 [loggers.py:123] Engine 000: Avg prompt throughput: 10.0 "
    "tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 1.7%, Prefix cache hit rate: 0.0%"
)
API = "(APIServer pid=1000) ERROR 08-14 10:05:00 [async_llm.py:480]"
SITE = "/usr/local/lib/python3.12/dist-packages"


def test_an_engine_clients_cut_traceback_after_the_engine_died_is_its_consequence() -> None:
    died = (
        "(APIServer pid=1000) ERROR 08-14 10:05:00 [core_client.py:564] Engine core proc EngineCore_DP0 died "
        "unexpectedly, shutting down client."
    )
    output_handler = [
        f"{API} AsyncLLM output_handler failed.",
        f"{API} Traceback (most recent call last):",
        f'{API}   File "{SITE}/vllm/v1/engine/async_llm.py", line 439, in output_handler',
        f"{API}     outputs = await engine_core.get_output_async()",
        f'{API}   File "{SITE}/vllm/v1/engine/core_client.py", line 846, in get_output_async',
    ]
    verdict = broken([STATS, died, *output_handler])
    assert verdict.causes == ["child-failed"], verdict.headline
    assert verdict.headline.startswith("stopped while serving: engine or worker process failed"), (
        verdict.headline
    )
    assert FRONT_CUT_TEXT in verdict.explains, verdict.explains
    # its exception line arrives later, after another process's line: the same
    later = [
        *output_handler,
        "(EngineCore_DP0 pid=1102) INFO 08-14 10:05:00 [core.py:700] shutting down",
        f"{API} vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
        "(above) for the root cause.",
    ]
    assert broken([STATS, died, *later]).causes == ["child-failed"]
    # a program driving the engine (its own outermost frame, no frame of the engine's processes)
    driver = [
        "ERROR 01-29 08:37:48 [core_client.py:564] Engine core proc EngineCore_DP1 died unexpectedly, "
        "shutting down client.",
        "Traceback (most recent call last):",
        f'  File "{SITE}/rlkit/rollout.py", line 262, in llm_worker',
        "    result = method(*args, **kwargs)",
    ]
    verdict = broken(driver)
    assert verdict.causes == ["child-failed"], verdict.headline
    assert FRONT_CUT_TEXT in verdict.explains, verdict.explains


def test_the_engines_own_cut_traceback_after_its_clients_report_stays_the_cause() -> None:
    # the API server reports the death first; the engine core's own traceback (cut) is the failure
    lead = "(EngineCore pid=104)"
    lines = [
        STATS,
        "(APIServer pid=1) ERROR 08-14 10:05:00 [serving.py:1173] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
        f"{lead} Process EngineCore:",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
        f"{lead}     self.run()",
        f'{lead}   File "{SITE}/vllm/v1/engine/core.py", line 1170, in run_busy_loop',
        f"{lead}     self._process_engine_step()",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["exception"], verdict.headline
    assert verdict.headline.startswith("crashed while serving: a traceback with no exception line"), (
        verdict.headline
    )
    # SGLang's scheduler: the parent's sigquit printed first, the child's traceback cut
    sglang = [
        server_args(0, spec=False),
        f"{stamp(5, '')} The server is fired up and ready to roll!",
        f"{stamp(70, '')} Received sigquit from a child process. It usually means the child failed.",
        f"{stamp(70, ' TP3')} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/managers/scheduler.py", line 2013, in run_scheduler_process',
    ]
    assert broken(sglang).causes == ["exception"]


SCHED_FRAME = '  File "/sglang/srt/managers/scheduler.py", line 2704, in run_scheduler_process'
ASSERTION = "AssertionError: Committed KV cache already freed (self.kv_committed_len=1)"


def head(rank: int) -> str:
    return f"{stamp(70, f' TP{rank}')} Scheduler hit an exception: Traceback (most recent call last):"


def serving_run() -> list[str]:
    return [
        server_args(0, spec=False),
        f"{stamp(5, '')} The server is fired up and ready to roll!",
        *(
            f"{stamp(10 + i)} Decode batch, #running-req: 1, #token: 100, token usage: 0.01, gen throughput "
            "(token/s): 90.00, #queue-req: 0, "
            for i in range(5)
        ),
    ]


def test_an_exception_line_above_another_ranks_head_is_the_cause() -> None:
    # one rank's last line (its traceback's head before the excerpt), then the next rank's traceback,
    # cut: the named exception is the cause, not "a traceback with no exception line"
    lines = [*serving_run(), ASSERTION, head(7), SCHED_FRAME, "    scheduler.event_loop_overlap()"]
    verdict = broken(lines)
    assert verdict.causes == ["exception"], verdict.headline
    assert verdict.headline.startswith(f"crashed while serving: {ASSERTION}"), verdict.headline
    assert "rank 7" not in verdict.headline, verdict.headline  # not the traceback below it
    assert verdict.evidence[0].line_no == 8


def test_interleaved_tracebacks_pair_each_exception_line_with_its_own_by_order() -> None:
    # rank 3's traceback is open when rank 7's head is printed; rank 3's exception line comes next
    inside = [
        *serving_run(),
        head(3),
        SCHED_FRAME,
        "    scheduler.event_loop_overlap()",
        head(7),
        ASSERTION,
        SCHED_FRAME,
        "    scheduler.event_loop_overlap()",
    ]
    verdict = broken(inside)
    assert verdict.headline.startswith(f"crashed while serving: {ASSERTION} (Scheduler, rank 3)"), (
        verdict.headline
    )
    # the same with another rank's line between: the exception line stands alone above rank 7's head
    between = [
        *serving_run(),
        head(3),
        SCHED_FRAME,
        f"{stamp(70, ' TP5')} Decode batch, #running-req: 1, #token: 100, token usage: 0.01, gen throughput "
        "(token/s): 90.00, #queue-req: 0, ",
        ASSERTION,
        head(7),
        SCHED_FRAME,
    ]
    verdict = broken(between)
    assert verdict.headline.startswith(f"crashed while serving: {ASSERTION} (Scheduler, rank 3)"), (
        verdict.headline
    )
