"""SGLang's `gen throughput (token/s)` is the tokens made since the previous decode line over the time
since then: after an idle gap (no request running) the first decode line's figure holds the idle
seconds (a few tok/s where 80 are served). Such a line's round has no throughput in the series (its
accept len stands), so the run's means and rolling medians leave it out; the rule is the server's own
state (a batch line with `#running-req: 0` since the rank's previous decode line), in the whole series,
a run read in pieces and the live running figures alike."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest

from tracelens import analyze
from tracelens.analysis.acceptance import after_idle
from tracelens.engine.ingest import parse_text
from tracelens.live.running import RunningFigures
from tracelens.tables.frames import Tables
from tracelens.tables.schema import A, C, T, W

START = dt.datetime(2025, 9, 3, 18, 30, 0)


def _stamp(at: float, tp: bool = True) -> str:
    return f"[{(START + dt.timedelta(seconds=at)).strftime('%Y-%m-%d %H:%M:%S')}{' TP0' if tp else ''}]"


def _chat_log(requests: int = 12) -> tuple[str, list[int]]:
    """A server answering one chat request at a time with idle seconds between them (the form of a
    user's log: a prefill that finds nothing running, then decode lines 40 tokens apart at ~82 tok/s,
    the first of which counts the idle gap), and the line numbers of those first decode lines."""
    lines = [f"{_stamp(0)} The server is fired up and ready to roll!"]
    first_after_gap: list[int] = []
    at, last_decode = 5.0, 0.0
    for i in range(requests):
        at += 20.0 + 3 * (i % 4)  # the idle gap before the request
        lines.append(
            f"{_stamp(at)} Prefill batch. #new-seq: 1, #new-token: 103, #cached-token: 1, token usage: 0.00, "
            "#running-req: 0, #queue-req: 0, "
        )
        for k in range(3):
            at += 0.49
            tput = 40 / (at - last_decode) if k == 0 else 81.0 + (i + k) % 3
            last_decode = at
            if k == 0:
                first_after_gap.append(len(lines) + 1)
            lines.append(
                f"{_stamp(at)} Decode batch. #running-req: 1, #token: {137 + 40 * k}, token usage: 0.00, "
                f"cuda graph: True, gen throughput (token/s): {tput:.2f}, #queue-req: 0, "
            )
        lines.append(
            f'{_stamp(at, tp=False)} INFO:     127.0.0.1:35262 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
        )
    return "\n".join(lines) + "\n", first_after_gap


def test_the_first_decode_line_after_an_idle_gap_is_left_out_of_the_steady_throughput(tmp_path: Path) -> None:
    text, first_after_gap = _chat_log()
    path = tmp_path / "chat.log"
    path.write_text(text)
    analysis = analyze([path])
    series = analysis.series
    idle = series.filter(pl.col(C.GEN_THROUGHPUT).is_null()).get_column(C.LINE_NO).to_list()
    assert idle == first_after_gap
    assert series.get_column(C.GEN_THROUGHPUT).min() > 80
    assert series.get_column(A.TPUT_ROLLING_MEDIAN).min() > 80
    mean = analysis.runs.item(0, A.MEAN_GEN_THROUGHPUT)
    assert 81 <= mean <= 83, mean  # the served speed; with the idle lines it read about 55


def test_a_short_run_without_steady_rounds_leaves_its_idle_lines_out_too(tmp_path: Path) -> None:
    # no ready line and four decode lines: every round is warm-up, and the run's figure is still the
    # speed served, not the idle gaps' (a pasted excerpt is often this short)
    text, _ = _chat_log(requests=2)
    path = tmp_path / "short.log"
    path.write_text("".join(line for line in text.splitlines(keepends=True) if "fired up" not in line))
    analysis = analyze([path])
    assert set(analysis.series.get_column(A.STAGE)) == {"warmup"}
    assert 81 <= analysis.runs.item(0, A.MEAN_GEN_THROUGHPUT) <= 83


def test_each_dp_rank_is_judged_by_its_own_lines_and_pieces_carry_the_gap() -> None:
    # DP1 goes idle (its prefill finds nothing running) while DP0 keeps decoding: only DP1's next decode
    # line counts the gap; read in pieces cut anywhere, the flags are those of the whole
    rows = [
        ("decode", 0, 4),
        ("decode", 1, 2),
        ("prefill", 1, 0),
        ("decode", 0, 4),
        ("decode", 1, 1),
        ("decode", 1, 1),
        ("prefill", 0, 0),
        ("prefill", 0, 0),
        ("decode", 1, 1),
        ("decode", 0, 1),
    ]
    batches = pl.DataFrame(
        {
            C.SOURCE: ["s"] * len(rows),
            C.RUN: pl.Series([1] * len(rows), dtype=pl.Int32),
            C.LINE_NO: list(range(1, len(rows) + 1)),
            C.PHASE: [phase for phase, _, _ in rows],
            C.DP: [dp for _, dp, _ in rows],
            C.RUNNING_REQ: [running for _, _, running in rows],
        }
    )
    whole, _ = after_idle(batches)
    flagged = whole.filter(pl.col(W.AFTER_IDLE)).get_column(C.LINE_NO).to_list()
    assert flagged == [5, 10]
    for cut in range(1, len(rows)):
        first, carried = after_idle(batches.head(cut))
        second, _ = after_idle(batches.slice(cut), carried)
        assert (
            pl.concat([first, second]).get_column(W.AFTER_IDLE).to_list()
            == whole.get_column(W.AFTER_IDLE).to_list()
        ), cut


def fed_in_blocks(tables: Tables, lines: int, block: int) -> RunningFigures:
    """The live running figures of ``tables`` (of ``lines`` lines) fed ``block`` lines at a time, as a live
    session parses them."""
    names = (T.LIFECYCLE, T.BATCHES, T.DEBUG, T.SPEC_METRICS)
    figures = RunningFigures()
    for start in range(1, lines + 1, block):
        within = pl.col(C.LINE_NO).is_between(start, start + block, closed="left")
        figures.add(Tables({name: tables[name].filter(within) for name in names}))
    return figures


@pytest.mark.parametrize("block", [5, 13])
def test_the_live_running_figures_leave_the_same_lines_out(tmp_path: Path, block: int) -> None:
    # fed a few lines at a time, as a live session parses them: the batch analysis' figure
    text, _ = _chat_log()
    path = tmp_path / "chat.log"
    path.write_text(text)
    expected = analyze([path]).runs.item(0, A.MEAN_GEN_THROUGHPUT)
    tables = parse_text(text, "chat.log")
    figures = fed_in_blocks(tables, text.count("\n"), block)
    batches = tables[T.BATCHES]
    means = figures.means((batches.item(0, C.SOURCE), batches.item(0, C.RUN)), None)
    assert means is not None
    assert means[A.MEAN_GEN_THROUGHPUT] == pytest.approx(expected, rel=1e-9)
    assert 81 <= expected <= 83
