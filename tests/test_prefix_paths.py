"""The prefix read by position gives the columns the lead pattern gives.

`add_prefix_columns` reads a dated line's lead by position (a window after the stamp, read once per
distinct window) and every other line by the lead pattern; `by_position=False` reads every line by the
pattern. Both must agree on the sample logs, the real corpus, and generated lines built from the pieces
where the two could part: stamps with fractions or other digits, tags the pattern does not take, `]`
without a space, levels and messages that start like one, leads longer than a window, lines that end
inside one, and blocks whose first lines ask for another window width than the rest.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from tracelens.parsers.prefix import LEAD_SAMPLE, add_prefix_columns
from tracelens.sources.files import block_lines, iter_blocks, lines_of_text

from conftest import SAMPLE_LOGS, real_corpus_files

LOGS = sorted(SAMPLE_LOGS.glob("*.log")) + real_corpus_files()
BASE = dt.date(2026, 1, 1)


def assert_same_reading(lines: pl.DataFrame, base_date: dt.date | None = None) -> pl.DataFrame:
    ours = add_prefix_columns(lines, base_date)
    assert_frame_equal(ours, add_prefix_columns(lines, base_date, by_position=False))
    return ours


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_log_reads_the_same_both_ways(path: Path) -> None:
    for block in iter_blocks(path, 1 << 20):
        assert_same_reading(block_lines(block), BASE)


def test_the_common_lines_are_read_by_position() -> None:
    """Not a vacuous agreement: the dated lines of today's logs get their fields from the window."""
    text = (
        "[2026-11-20 09:00:01 TP3] Decode batch, #running-req: 4\n"
        "[2026-11-20 09:00:02 DP1 TP2 EP2] Prefill batch, #new-seq: 1\n"
        '[2026-11-20 09:00:03] INFO:     10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK\n'
        "EAGLE3_DEBUG[dsv2] aux capture: layer_id=2\n"
    )
    df = assert_same_reading(lines_of_text(text))
    assert df.get_column("tp").to_list() == [3, 2, None, None]
    assert df.get_column("dp").to_list() == [None, 1, None, None]
    assert df.get_column("level").to_list() == [None, None, "INFO", None]
    assert df.get_column("_body").to_list()[:3] == [
        "Decode batch, #running-req: 4",
        "Prefill batch, #new-seq: 1",
        '10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
    ]
    assert df.get_column("ts").to_list()[0] == dt.datetime(2026, 11, 20, 9, 0, 1)


def test_leads_arranged_otherwise_are_read_as_sglangs() -> None:
    """A user's logging config, an older router, a shipper or a caret-notation copy moves SGLang's
    fields around or puts text in front: the same time, tags, level and message come out."""
    text = (
        "2026-11-20 09:00:01.874 INFO 120984 [ TP3 scheduler_metrics_mixin.py:415] Decode batch, #running-req: 2\n"
        "[2026-11-20 09:00:02][scheduler_metrics_mixin.py:424][INFO]: Prefill batch, #new-seq: 1\n"
        "[Router (Rust)] 2026-11-20 09:00:03 - WARNING - Worker health check is pending\n"
        "^[[0;36m[2026-11-20 09:00:04 TP1] coloured in caret notation^[[0m\n"
        "[Sidecar k00]: 2026-11-20T09:00:05.672Z 1 stdout: [2026-11-20 09:00:05 TP2] shipped\n"
        "2026-11-20T09:00:06.123456789Z stderr F [2026-11-20 09:00:06 EP4] from a CRI log file\n"
        # the same config as the first line, on a prefix without its leading space (DP-attention ranks)
        "2026-11-20 09:00:07 INFO 31223 [DP3 TP3 EP3 scheduler_metrics_mixin.py:222] Decode batch. #token: 9\n"
    )
    df = assert_same_reading(lines_of_text(text))
    assert df.get_column("_body").to_list() == [
        "Decode batch, #running-req: 2",
        "Prefill batch, #new-seq: 1",
        "Worker health check is pending",
        "coloured in caret notation",
        "shipped",
        "from a CRI log file",
        "Decode batch. #token: 9",
    ]
    assert df.get_column("tp").to_list() == [3, None, None, 1, 2, None, 3]
    assert df.get_column("ep").to_list()[5:] == [4, 3]
    assert df.get_column("dp").to_list()[6] == 3
    assert df.get_column("level").to_list()[:3] == ["INFO", "INFO", "WARNING"]
    assert df.get_column("level").to_list()[6] == "INFO"
    assert [t.second for t in df.get_column("ts").to_list()] == [1, 2, 3, 4, 5, 6, 7]
    assert df.get_column("ts").to_list()[0].microsecond == 874000


STAMPS = st.sampled_from(
    [
        "[2026-11-20 09:00:00",
        "[2026-11-20 23:59:59",
        "[2026-02-30 09:00:00",  # no such day: no timestamp either way
        "[2026-11-20 09:00:00.123",
        "[2026-11-20 09:00:00,5",
        "[09:00:00",
        "[2026-11-20 09:00:0",
        "[2026-11-2\u0663 09:00:00",  # an Arabic-Indic digit: `\d` takes it, the position test does not
        "[2026/11/20 09:00:00",
        "",
    ]
)
TAGS = st.lists(
    st.sampled_from(
        [" TP0", " TP12", " DP1", " EP7", " PP2", " ATTN_CP3", " MOE_DP4", " TPx", " tp0", "  TP1", " XX9"]
    ),
    max_size=6,
).map("".join)
CLOSE = st.sampled_from(["] ", "]", "]  ", "] \t", " ] ", ""])
LEVEL = st.sampled_from(
    [
        "",
        "INFO: ",
        "INFO:     ",
        "WARNING: ",
        "INFO scheduler.py:123: ",
        "ERROR x:1: ",
        "DEBUG ",
        "CRITICAL",
        "INFO",
    ]
)
MESSAGE = st.sampled_from(
    [
        "Decode batch, #running-req: 4, accept len: 2.1",
        "INFO: nested",
        "WARNINGS",
        "ERRO",
        "CRITICAL: x",
        "I",
        "",
        " leading space",
        "] more brackets]",
        "server_args=ServerArgs(model='m')",
        "é ünïcode ✓",
    ]
)
OTHER = st.sampled_from(
    [
        "EAGLE3_DEBUG[dsv2] aux capture: layer_id=2",
        "Rank 3: Decode batch",
        "[gpu=2] Decode batch",
        "[gpu_id=1] x",
        "INFO:     10.0.0.1:5000 - GET",
        "ERROR: boom",
        "WARNING 11-20 09:00:00 [scheduler.py:88] Prefill is slow",  # vLLM's form: no lead
        "INFO scheduler.py:12: no bracket",
        "Rank x: not a rank",
        "[rank4]:[W208 00:55:32.441635613 socket.cpp:462] [c10d] wait",  # `[`, but no lead
        "[2026-11-20 09:00:00 handler.py:169 INFO] [64444] request",
        "[2026-11-20 09:00:00 TPO] Scheduler hit an exception",
        "Traceback (most recent call last):",
        '  File "x.py", line 3, in f',
        "\x1b[36m[2026-11-20 09:00:00 TP0] coloured\x1b[0m",
        "svc  | [2026-11-20 09:00:00 TP1] wrapped",
        "  5%|#  | 1/20\r[2026-11-20 09:00:00 TP2] after a bar",
        "[2026-11-20 09:00:00] [2026-11-20 09:00:01 TP0] outer stamp",
        "[2026-11-20 09:00:00.5] [2026-11-20 09:00:01 TP0] outer stamp with a fraction",
        "[2026-11-20 09:00:00] [\u0663] an outer stamp before any digit",
        "[2026-11-20 09:00:00] [x] not an outer stamp",
        "ml-h2[2026-11-20 09:00:00 TP0] spliced",
        "[2026-11-20 09:00:00 TP0] Capture cuda graph begin. This can take[2026-11-20 09:00:01 TP3] glued",
        "[2026-11-20 09:00:00 TP0] Receive: obj=GenerateReqInput(text='[2026-11-20 09:00:01 TP3] quoted')",
        "2026-11-20 09:00:00.874 INFO 120984 [ TP0 scheduler.py:415] Decode batch, #running-req: 2",
        "[2026-11-20 09:00:00][scheduler.py:424][INFO]: Prefill batch, #new-seq: 1",
        "[2026-11-20 09:00:00 TP1][scheduler.py:424][WARNING]: tagged",
        "[2026-11-20 09:00:00][not a lead] x",
        "[Router (Rust)] 2026-11-20 09:00:00 - INFO - Worker http://0.0.0.0:31000 health check is pending",
        "^[[0;36m(APIServer pid=31)^[[0;0m INFO 11-20 09:00:00 [api_server.py:946] Starting vLLM API server",
        "[Sidecar abc]: 2026-11-20T09:00:00.672Z 1 stdout: [2026-11-20 09:00:00 TP0] shipped",
        "2026-11-20T09:00:00.123456789Z stdout F [2026-11-20 09:00:00 TP0] cri",
        "[2026-11-20T09:00:00Z] (EngineCore_DP0 pid=3112) ERROR 11-20 09:00:00 [core.py:866] EngineCore failed",
        "(VllmWorker rank=0 pid=1068781) ERROR 11-20 09:00:00 multiproc_executor.py:401] WorkerProc hit",
        "(EngineCore_0 pid=6) (VllmWorker TP0 pid=7) ERROR 11-20 09:00:00 [multiproc_executor.py:596] hit",
        "Nov 20 09:00:00 gpu-1 vllm[8052]: (APIServer pid=8052) INFO 11-20 09:00:00 [api_server.py:1880] up",
        "> - 2026-11-20T09:00:00.700+00:00 ERROR 11-20 09:00:00 async_llm_engine.py:52] a quoted list item",
        "[rank0]: Traceback (most recent call last):",
        "",
    ]
)


@st.composite
def line(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(OTHER)
    return draw(STAMPS) + draw(TAGS) + draw(CLOSE) + draw(LEVEL) + draw(MESSAGE)


# Enough short lines to fill the sample a block's window width is chosen from: the lines after them may
# have longer leads than the window was made for.
PADDING = ["[2026-11-20 09:00:00 TP0] Decode batch, #running-req: 4"] * LEAD_SAMPLE


@given(
    st.lists(st.lists(line(), min_size=1, max_size=30), min_size=1, max_size=4), st.booleans(), st.booleans()
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_lines_read_the_same_both_ways(blocks: list[list[str]], dated: bool, padded: bool) -> None:
    """Several blocks in one process: the windows each block reads are kept for the next."""
    for block in blocks:
        text = "\n".join((PADDING if padded else []) + block) + "\n"
        assert_same_reading(lines_of_text(text), BASE if dated else None)


def test_a_window_that_cuts_a_level_word_leaves_the_line_to_the_pattern() -> None:
    """The window is as wide as the block's first lines ask: a later line with longer tags can have its
    level cut by the window's end (`CR|ITICAL`), and only the whole line tells that it has one."""
    late = "[2026-11-20 09:00:01 DP1 TP2 EP3] CRITICAL scheduler.py:12: boom"
    df = assert_same_reading(lines_of_text("\n".join([*PADDING, late]) + "\n"))
    assert df.get_column("level").to_list()[-1] == "CRITICAL"
    assert df.get_column("_body").to_list()[-1] == "boom"
