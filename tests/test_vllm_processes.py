"""Which vLLM process printed a line: the `(NAME pid=N) ` wrapper vLLM puts before each line of its child
processes, kept as the process, pid and host columns and the worker's rank tags. Workers that fail
together print their tracebacks at once, interleaved line by line: each line is its own process'
(its traceback's head, frames and exception line), and the verdict names the failing worker's rank.
The lines are in the forms vLLM's `_add_prefix` and Python print them (vLLM 0.6-0.8's `rank=N`,
0.10's `TPn`, late 2025's `Worker_DP0_TP1_EP1`, V0's `VllmWorkerProcess`, Ray's actors)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from test_chain import broken

from tracelens.analysis.chain_events import CUT, RANK, events
from tracelens.engine import EngineOptions, parse_to_dataset
from tracelens.engine.ingest import parse_paths, parse_text
from tracelens.tables.frames import Tables
from tracelens.tables.schema import C, T

SITE = "/usr/local/lib/python3.12/dist-packages/vllm"
SERVING = [
    "INFO 05-06 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5",
    "INFO 05-06 10:01:00 [loggers.py:116] Engine 000: Avg prompt throughput: 120.0 tokens/s, Avg generation "
    "throughput: 310.2 tokens/s, Running: 4 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.1%, Prefix cache "
    "hit rate: 0.0%",
    'INFO:     127.0.0.1:40312 - "POST /v1/completions HTTP/1.1" 200 OK',
]
# Two workers of a TP=2 engine: rank 1 hits an illegal memory access, rank 0 then fails in its NCCL
# all-reduce (its peer is gone): the consequence.
RANK0 = [
    "Traceback (most recent call last):",
    f'  File "{SITE}/v1/executor/multiproc_executor.py", line 465, in worker_busy_loop',
    "    output = func(*args, **kwargs)",
    f'  File "{SITE}/distributed/device_communicators/pynccl.py", line 130, in all_reduce',
    "    self.nccl.ncclAllReduce(buffer_type(in_tensor.data_ptr()),",
    "RuntimeError: NCCL error: remote process exited or there was a network error",
]
RANK1 = [
    "Traceback (most recent call last):",
    f'  File "{SITE}/v1/executor/multiproc_executor.py", line 465, in worker_busy_loop',
    "    output = func(*args, **kwargs)",
    f'  File "{SITE}/v1/worker/gpu_model_runner.py", line 1203, in execute_model',
    "    valid_sampled_token_ids = sampled_token_ids.tolist()",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
]


def interleaved(lead0: str, lead1: str, first: list[str] = RANK0, second: list[str] = RANK1) -> list[str]:
    return [
        line
        for pair in zip(first, second, strict=True)
        for line in (f"{lead0} {pair[0]}", f"{lead1} {pair[1]}")
    ]


def test_each_wrapper_form_gives_the_process_its_pid_and_its_workers_rank() -> None:
    lines = [
        "(VllmWorkerProcess pid=382811) ERROR 07-13 02:56:30 [worker.py:10] RuntimeError: x",
        "(VllmWorker rank=3 pid=1068781) ERROR 01-04 17:21:04 multiproc_executor.py:401] RuntimeError: x",
        "(VllmWorker TP2 pid=47571) WARNING 09-09 15:47:25 [fused_moe.py:727] Using default MoE config.",
        "(VllmWorker PP1_TP2 pid=47572) WARNING 09-09 15:47:25 [fused_moe.py:727] Using default MoE config.",
        "(Worker pid=782969) (Worker_DP1_TP1_EP3 pid=782969) ERROR 03-31 02:49:30 [mooncake_connector.py:547] x",
        "(EngineCore_0 pid=675221) (VllmWorker TP0 pid=675227) ERROR 08-07 12:16:03 [multiproc_executor.py:596] x",
        "(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700] EngineCore failed to start.",
        "(APIServer pid=1000) INFO 08-14 10:04:00 [api_server.py:1880] vLLM API server version 0.10.1",
        "\x1b[36m(RayWorkerWrapper pid=7106, ip=10.0.0.2)\x1b[0m INFO 02-24 20:21:58 [worker.py:9] Loading",
        "INFO 02-24 20:21:58 [worker.py:9] a line of the parent process, pid=12 in its text",
    ]
    tables = parse_text("\n".join(lines) + "\n", "w.log")
    rows = pl.concat(
        [
            tables[t].select(C.LINE_NO, C.PROCESS, C.PID, C.HOST, C.DP, C.PP, C.TP, C.EP)
            for t in (T.FOREIGN, T.FAULTS)
        ]
    ).sort(C.LINE_NO)
    assert rows.height == len(lines)
    assert rows.drop(C.LINE_NO).rows() == [
        ("VllmWorkerProcess", 382811, None, None, None, None, None),
        ("VllmWorker rank=3", 1068781, None, None, None, 3, None),
        ("VllmWorker TP2", 47571, None, None, None, 2, None),
        ("VllmWorker PP1_TP2", 47572, None, None, 1, 2, None),
        ("Worker_DP1_TP1_EP3", 782969, None, 1, None, 1, 3),
        ("VllmWorker TP0", 675227, None, None, None, 0, None),
        # an engine core's index names the engine, not a rank
        ("EngineCore_DP0", 1102, None, None, None, None, None),
        ("APIServer", 1000, None, None, None, None, None),
        ("RayWorkerWrapper", 7106, "10.0.0.2", None, None, None, None),
        (None, None, None, None, None, None, None),
    ]


def test_interleaved_worker_tracebacks_in_error_lines_name_the_failing_rank() -> None:
    # vLLM V1 logs a worker's traceback one ERROR line per line (`WorkerProc hit an exception.`)
    lead0 = "(VllmWorker rank=0 pid=4101) ERROR 05-06 10:02:11 [multiproc_executor.py:470]"
    lead1 = "(VllmWorker rank=1 pid=4102) ERROR 05-06 10:02:11 [multiproc_executor.py:470]"
    hit = ["WorkerProc hit an exception."]
    verdict = broken([*SERVING, *interleaved(lead0, lead1, hit + RANK0, hit + RANK1)])
    assert verdict.causes == ["illegal-memory-access"], verdict.headline
    assert "(CUDA, rank 1)" in verdict.headline, verdict.headline
    assert "NCCL error" in verdict.explains, verdict.explains


def test_leads_with_a_path_in_vllms_package_are_read_as_vllms() -> None:
    """vLLM logging at DEBUG (or told to) names the file by its path in the package, shortened when long
    (`[v1/executor/multiproc_executor.py:470]`, `[v1/engine/.../core.py:7]`): the same records, each
    failing worker's traceback its own, the rank named (every such line was unparsed)."""
    lead0 = "(EngineCore_DP0 pid=4100) (Worker_TP0 pid=4101) ERROR 05-06 10:02:11 [v1/executor/multiproc_executor.py:470]"
    lead1 = "(EngineCore_DP0 pid=4100) (Worker_TP1 pid=4102) ERROR 05-06 10:02:11 [v1/executor/.../executor.py:470]"
    hit = ["WorkerProc hit an exception."]
    lines = [*SERVING, *interleaved(lead0, lead1, hit + RANK0, hit + RANK1)]
    assert parse_text("\n".join(lines))[T.UNPARSED].height == 0
    verdict = broken(lines)
    assert verdict.causes == ["illegal-memory-access"], verdict.headline
    assert "(CUDA, rank 1)" in verdict.headline, verdict.headline


@pytest.mark.parametrize("tag", ["rank=0", "TP0"])
def test_a_workers_traceback_cut_among_anothers_is_its_own(tag: str) -> None:
    # rank 0's copy stops inside its traceback, after rank 1's ended in its exception line: rank 0's is
    # still a traceback cut before its exception line (a failure of its own, on rank 0), not one that
    # rank 1's exception line ended
    lead0 = f"(VllmWorker {tag} pid=4101) ERROR 05-06 10:02:11 [multiproc_executor.py:470]"
    lead1 = f"(VllmWorker {tag.replace('0', '1')} pid=4102) ERROR 05-06 10:02:11 [multiproc_executor.py:470]"
    longer = [*RANK0[:-1], f'  File "{SITE}/distributed/utils.py", line 88, in wait', "    work.wait()"]
    lines = [
        *SERVING,
        *interleaved(lead0, lead1, longer[:6], RANK1),
        *(f"{lead0} {line}" for line in longer[6:]),
    ]
    found = events(parse_text("\n".join(lines) + "\n", "cut.log"))
    cut = found.filter(pl.col(CUT).fill_null(False))
    assert cut.get_column(RANK).to_list() == [0], found
    verdict = broken(lines)
    assert "(CUDA, rank 1)" in verdict.headline, verdict.headline


def test_interleaved_raw_tracebacks_of_workers_join_by_process() -> None:
    # Python's own print of an uncaught exception: no log lead, only vLLM's wrapper on every line
    tables = parse_text(
        "\n".join([*SERVING, *interleaved("(VllmWorker rank=0 pid=4101)", "(VllmWorker rank=1 pid=4102)")])
        + "\n",
        "raw.log",
    )
    faults = tables[T.FAULTS].sort(C.LINE_NO)
    assert faults.select(C.TP, C.EXCEPTION_TYPE, C.LAST_LINE).rows() == [
        (0, "RuntimeError", 14),
        (1, "RuntimeError", 15),
    ]
    assert [m.split(":")[1].strip() for m in faults.get_column(C.MESSAGE)] == ["NCCL error", "CUDA error"]
    assert all(text.count("Traceback") == 1 for text in faults.get_column(C.TRACEBACK))
    verdict = broken([*SERVING, *interleaved("(VllmWorker TP0 pid=4101)", "(VllmWorker TP1 pid=4102)")])
    assert "(CUDA, rank 1)" in verdict.headline, verdict.headline


def test_the_same_failure_on_both_workers_names_both_ranks() -> None:
    oom = [*RANK1[:-1], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    verdict = broken([*SERVING, *interleaved("(Worker_TP0 pid=4101)", "(Worker_TP1 pid=4102)", oom, oom)])
    assert verdict.causes == ["oom"], verdict.headline
    assert "ranks 0, 1" in verdict.headline, verdict.headline


def test_an_engine_cores_failure_names_no_rank() -> None:
    lead = "(EngineCore_DP0 pid=1102) ERROR 03-02 10:00:01 [core.py:700]"
    lines = [
        f"{lead} EngineCore failed to start.",
        f"{lead} Traceback (most recent call last):",
        f'{lead}   File "{SITE}/v1/core/kv_cache_utils.py", line 528, in check_enough_kv_cache_memory',
        f"{lead} ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`",
    ]
    verdict = broken(lines)
    assert verdict.causes == ["kv-no-memory"] and "rank" not in verdict.headline, verdict.headline


def cut_in_blocks(path: Path, body: str, filler: str) -> Tables:
    """The tables of ``body`` written after lines of ``filler`` so that a 4 KiB block ends inside it,
    checked to be those of one block: each process' open traceback is carried to the next block."""
    pad = filler * ((4096 - len(body) // 2) // len(filler))
    assert len(pad) < 4096 < len(pad) + len(body)  # a 4 KiB block ends inside the body
    path.write_text(pad + body)
    whole = parse_paths([path])
    small = parse_paths([path], block_bytes=4096)
    for table in (T.LINES, T.FAULTS, T.FOREIGN, T.UNPARSED):
        assert small[table].equals(whole[table]), table
    return whole


def test_a_block_cut_inside_interleaved_tracebacks_changes_nothing(tmp_path: Path) -> None:
    body = "\n".join(interleaved("(VllmWorker TP0 pid=4101)", "(VllmWorker TP1 pid=4102)")) + "\n"
    stats = "INFO 05-06 10:01:00 [loggers.py:116] Engine 000: Running: 4 reqs, Waiting: 0 reqs\n"
    assert cut_in_blocks(tmp_path / "raw.log", body, stats)[T.FAULTS].height == 2


def test_a_line_of_sglangs_prefix_closes_every_processs_traceback(tmp_path: Path) -> None:
    # a byte range of the engine starts at such a line with no state from before it: a whole-file parse
    # must close every open traceback there too, a named process' as well
    cut = ["(VllmWorker TP0 pid=4101) " + line for line in RANK0[:3]]
    stamp = "[2025-05-06 10:02:12 TP0] "
    sglang = [f"{stamp}Decode batch, #running-req: 1, #token: 90, token usage: 0.01, #queue-req: 0, "] * 40
    lines = [*cut, *sglang, *("(VllmWorker TP0 pid=4101) " + line for line in RANK0)]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(lines) + "\n")
    whole = parse_paths([path])
    assert whole[T.FAULTS].get_column(C.LINE_NO).to_list() == [1, 44], whole[T.FAULTS]
    out = tmp_path / "out"
    options = EngineOptions(jobs=1, block_bytes=1 << 10, range_bytes=1 << 10)
    parse_to_dataset([str(path)], str(out), options)
    ranged = pl.read_parquet(out / T.FAULTS / "*.parquet").sort(C.LINE_NO)
    assert ranged.get_column(C.LINE_NO).to_list() == [1, 44]


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_traceback_head_right_after_a_frame_starts_a_traceback_in_either_join(wrapped: bool) -> None:
    # a worker's native stack (frames without source lines) ends and its Python traceback follows at
    # once: the head is no frame's source line but a traceback of its own, whether the lines are read
    # in file order or per process (behind vLLM's wrapper, beside another worker's lines)
    native = [
        '  File "<unknown>", line 0, in _PyEval_EvalFrameDefault',
        '  File "<unknown>", line 0, in Py_RunMain',
    ]
    lines = [*native, *RANK1]
    if wrapped:
        lines = [
            *interleaved("(VllmWorker rank=0 pid=4101)", "(VllmWorker rank=1 pid=4102)", RANK0[:2], native),
            *(f"(VllmWorker rank=1 pid=4102) {line}" for line in RANK1),
        ]
    faults = parse_text("\n".join(lines) + "\n", "native.log")[T.FAULTS]
    own = faults.filter(pl.col(C.TRACEBACK).str.contains("illegal memory access"))
    assert own.height == 1, faults
    assert own.item(0, C.TRACEBACK).startswith("Traceback"), own.item(0, C.TRACEBACK)
    assert own.item(0, C.EXCEPTION_TYPE) == "RuntimeError", own


def test_a_relays_lead_is_peeled_and_names_the_host() -> None:
    # an RL framework relays its nodes' output, each line behind a stamp, the pod's name and `>> `, then
    # Ray's actor wrapper: SGLang's traceback under it is one record of that process on that pod
    lead = "[2025-12-18T16:24:02+08:00] rl-qwen3-8b-eagle3-20251218-162008s-3da56-cfcd2 >> (SGLangEngine pid=3111) "
    lines = [
        f"{lead}[2025-12-18 08:24:01 TP7] Scheduler hit an exception: Traceback (most recent call last):",
        f'{lead}  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2683, in '
        "run_scheduler_process",
        f"{lead}    scheduler.event_loop_normal()",
        f'{lead}  File "/usr/local/lib/python3.12/dist-packages/torch/utils/_contextlib.py", line 120, in '
        "decorate_context",
        f"{lead}    return func(*args, **kwargs)",
    ]
    tables = parse_text("\n".join(lines) + "\n", "relay.log")
    assert tables[T.UNPARSED].height == 0, tables[T.UNPARSED]
    faults = tables[T.FAULTS]
    assert faults.select(C.PROCESS, C.PID, C.HOST, C.TP, C.LAST_LINE).rows() == [
        ("SGLangEngine", 3111, "rl-qwen3-8b-eagle3-20251218-162008s-3da56-cfcd2", 7, 5)
    ]
    assert "event_loop_normal" in faults.item(0, C.TRACEBACK)
    verdict = broken(lines)
    assert "rank 7" in verdict.headline, verdict.headline
