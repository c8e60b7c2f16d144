"""torch's per-rank prefix: `[rankN]: ` before each line of a distributed rank's uncaught exception
(often behind a CI runner's stamp), `[rankN]:` glued to c10d's C++ log lines. The parser reads the rank
into tp on every such line, whatever its kind; ranks that crash together print their tracebacks at once,
interleaved line by line, and each is joined on its own, so the verdict names the ranks. The lines have
the shapes of users' logs in issues (SGLang CI output, vLLM and SGLang multi-GPU starts)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from test_chain import broken
from test_vllm_processes import cut_in_blocks

from tracelens.engine.ingest import parse_text
from tracelens.tables.schema import C, T

SGL = "/sgl-workspace/sglang/python/sglang/srt"
CI = "2025-10-09T04:13:06.6371779Z "
SERVER_ARGS = (
    "[2025-10-09 04:12:40] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-70B-Instruct', tp_size=4, "
    "port=30000)"
)
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU {rank} has a total capacity "
    "of 79.10 GiB of which 1.02 GiB is free."
)


def crash(rank: int, exception: str, lead: str = "") -> list[str]:
    """A rank's uncaught exception in weight loading, as torch prints it: `[rankN]: ` on every line."""
    lines = [
        "Traceback (most recent call last):",
        f'  File "{SGL}/model_executor/model_runner.py", line 417, in load_model',
        "    self.model = get_model(",
        f'  File "{SGL}/model_loader/loader.py", line 381, in load_model',
        "    model = _initialize_model(",
        exception.format(rank=rank),
    ]
    return [f"{lead}[rank{rank}]: {line}" for line in lines]


def interleaved(first: list[str], second: list[str]) -> list[str]:
    return [line for pair in zip(first, second, strict=True) for line in pair]


def test_the_rank_prefix_fills_tp_on_every_kind_of_line() -> None:
    lines = [
        "[2025-10-09 04:12:41 TP2] Init torch distributed begin.",  # SGLang's own prefix: its own tp
        # c10d's glog lines: read in their format, and a watchdog's line routed as a fault
        "[rank0]:[W1009 04:13:05.371849012 ProcessGroupNCCL.cpp:1476] Warning: WARNING: destroy_process_group() "
        "was not called before program exit, which can leak resources.",
        "[rank2]:[E1009 04:13:06.537131842 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=128, NumelOut=128, Timeout(ms)=600000) "
        "ran for 600009 milliseconds before timing out.",
        # the glued form behind a lead no wrapper peels (a pasted table's `| `)
        "  | [rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600059 milliseconds before timing out.",
        # a traceback behind a CI runner's stamps: head, frame, source line, exception line
        *crash(1, "RuntimeError: CUDA error: an illegal memory access was encountered", CI)[:3],
        f"{CI}[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
        # a line of a message alone (a paste that starts there) is unparsed, and still the rank's
        "[rank3]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        # `[rank` inside a message is no prefix
        "Gathering weights from [rank3]: 12 tensors",
    ]
    tables = parse_text("\n".join(lines) + "\n", "ranks.log")
    read = tables[T.LINES].select(C.KIND, C.TP).rows()
    assert read == [
        ("lifecycle", 2),
        ("foreign", 0),
        ("fault", 2),
        ("fault", 0),
        ("fault", 1),
        ("fault", 1),
        ("fault", 1),
        ("fault", 1),
        ("unparsed", 3),
        ("unparsed", None),
    ], read
    faults = tables[T.FAULTS].select(C.LINE_NO, C.FAULT_KIND, C.TP).rows()
    assert faults == [(3, "watchdog", 2), (4, "watchdog", 0), (5, "exception", 1)], faults


def test_interleaved_tracebacks_of_two_ranks_are_one_each() -> None:
    # rank 3's lines bare, rank 1's behind a CI runner's stamps, line by line in turn
    rank3 = crash(3, OOM)
    rank1 = crash(1, "ValueError: missing weight model.layers.0.mlp.gate_proj.weight", CI)
    tables = parse_text("\n".join([SERVER_ARGS, *interleaved(rank3, rank1)]) + "\n", "two.log")
    faults = tables[T.FAULTS].select(C.LINE_NO, C.TP, C.EXCEPTION_TYPE, C.LAST_LINE).rows()
    assert faults == [(2, 3, "torch.OutOfMemoryError", 12), (3, 1, "ValueError", 13)], faults
    assert all(tb.count("Traceback") == 1 for tb in tables[T.FAULTS].get_column(C.TRACEBACK))


def test_the_verdict_names_the_ranks_of_interleaved_tracebacks() -> None:
    lines = [SERVER_ARGS, *interleaved(crash(3, OOM), crash(1, OOM, CI))]
    verdict = broken(lines)
    assert verdict.causes == ["oom"], verdict.headline
    assert verdict.headline.startswith(
        "crashed at start-up during weight loading: GPU out of memory (CUDA, ranks 1, 3)"
    ), verdict.headline


def test_a_block_cut_inside_two_ranks_tracebacks_changes_nothing(tmp_path: Path) -> None:
    # each rank's open traceback is carried to the next block
    body = "\n".join(interleaved(crash(3, OOM), crash(1, OOM, CI))) + "\n"
    filler = "[rank0]:[W1009 04:13:05.371849012 ProcessGroupNCCL.cpp:1476] Warning: destroy_process_group()\n"
    whole = cut_in_blocks(tmp_path / "ranks.log", body, filler)
    assert whole[T.FAULTS].get_column(C.TP).to_list() == [3, 1]
    ranks = whole[T.LINES].filter(pl.col(C.KIND) == "fault").get_column(C.TP)
    assert ranks.unique().sort().to_list() == [1, 3]
