"""The failure catalog: every entry's sample lines are read as that entry, and its patterns stay linear."""

from __future__ import annotations

import polars as pl
import pytest

from tracelens.analysis.catalog import FAILURES, Weight
from tracelens.analysis.chain_events import GENERIC, _classify

CASES = [(f.code, line) for f in FAILURES for line in f.samples]


def classify(lines: list[str], in_traceback: bool = True) -> list[str | None]:
    frame = pl.DataFrame({"text": lines})
    return frame.select(_classify(pl.col("text"), pl.lit(in_traceback))).to_series().to_list()


@pytest.mark.parametrize(("code", "line"), CASES, ids=[f"{c}-{i}" for i, (c, _) in enumerate(CASES)])
def test_each_sample_is_read_as_its_entry(code: str, line: str) -> None:
    assert classify([line]) == [code]


def test_every_entry_has_samples_and_the_failures_a_fix() -> None:
    for entry in FAILURES:
        assert entry.samples, entry.code
        if entry.weight == Weight.FATAL:
            assert entry.fix, f"{entry.code}: a fatal entry says what to try first"
    assert len({f.code for f in FAILURES}) == len(FAILURES)


def test_an_unknown_exception_line_of_a_traceback_is_a_failure_and_prose_is_not() -> None:
    lines = [
        "AttributeError: 'Scheduler' object has no attribute 'x'",
        "the model loaded fine",
        "UserWarning: x",
    ]
    assert classify(lines) == [GENERIC, None, None]
    # outside a traceback an exception-shaped line is left to the catalog
    assert classify(lines[:1], in_traceback=False) == [None]


def test_look_alikes_are_not_failures() -> None:
    lines = [
        "Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        "The following error message 'operation scheduled before its operands' can be ignored.",
        "max_total_num_tokens=100000, chunked_prefill_size=8192, max_prefill_tokens=16384",
    ]
    assert classify(lines, in_traceback=False) == [None, None, None]
    # a process that died is no graceful stop for saying `shutting down`
    died = "Engine core proc EngineCore_0 died unexpectedly, shutting down client."
    assert classify([died], in_traceback=False) == ["child-failed"]
    # Triton's shared-memory limit is not an out-of-memory
    assert classify(["triton.runtime.errors.OutOfResources: out of resource: shared memory"]) == [
        "triton-shared-memory"
    ]


def test_the_user_reference_lists_every_entry() -> None:
    from pathlib import Path

    from tracelens.analysis.catalog import HANG

    doc = (Path(__file__).resolve().parent.parent / "docs" / "verdicts.md").read_text()
    missing = [f.code for f in (*FAILURES, HANG) if f"| `{f.code}` |" not in doc]
    assert not missing, f"docs/verdicts.md lacks {missing}"


# Flags only SGLang's launcher takes: a vLLM user told to set one has nothing to set.
SGLANG_ONLY_FLAGS = (
    "--mem-fraction-static",
    "--cuda-graph-max-bs",
    "--max-running-requests",
    "--disaggregation-ib-device",
    "--model-path",
    "--torch-compile-max-bs",
    "--enable-torch-compile",
    "--dist-init-addr",
    "--disable-cuda-graph",
)
# Entries only SGLang prints (their wording is SGLang's own): no vLLM log meets them.
SGLANG_WORDING = {"kv-pool-too-small"}


def test_a_fix_in_sglangs_flags_has_one_in_vllms() -> None:
    for entry in FAILURES:
        if entry.code in SGLANG_WORDING or not any(f in (entry.fix or "") for f in SGLANG_ONLY_FLAGS):
            continue
        vllm = entry.fix_for("vllm")
        assert vllm != entry.fix, f"{entry.code}: no fix in vLLM's flags"
        assert not any(f in (vllm or "") for f in SGLANG_ONLY_FLAGS), f"{entry.code}: {vllm}"
        assert entry.fix_for("sglang") == entry.fix


def test_a_rank_named_in_an_entrys_words_is_read_from_one_of_its_samples() -> None:
    # `rank_in_text` is data with its samples as tests: each pattern reads a number off a sample line
    for entry in FAILURES:
        if entry.rank_in_text:
            ranks = pl.Series(entry.samples).str.extract(entry.rank_in_text, 1).drop_nulls()
            assert len(ranks) and ranks.str.contains(r"^\d+$").all(), entry.code


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        (
            "(EngineCore_0 pid=271) ERROR 08-25 12:24:19 [multiproc_executor.py:146] Worker proc VllmWorker-1 "
            "died unexpectedly, shutting down executor.",
            "rank 1",
        ),
        ("RuntimeError: Rank 3 scheduler died during initialization (exit code: -11).", "rank 3"),
    ],
)
def test_a_failure_that_names_its_rank_only_in_words_says_the_rank(line: str, rank: str) -> None:
    from test_chain import broken

    verdict = broken([line])
    assert rank in verdict.headline, verdict.headline
