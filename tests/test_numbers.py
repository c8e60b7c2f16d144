"""One set of numbers, readable at 80 columns: `summary`, `compare` and `check` read the analysis' per-run
table, and their terminal output keeps to 80 columns without cutting a figure."""

from __future__ import annotations

import io
import math

import polars as pl
import pytest
from rich.console import Console

from tracelens import analyze
from tracelens.analysis import Analysis
from tracelens.analysis.summary import summarize
from tracelens.cli.render import render_comparison, render_findings, render_summary
from tracelens.parsers import ParseOptions
from tracelens.tables.schema import A, C

from conftest import SAMPLE_LOGS


@pytest.fixture(scope="module")
def samples() -> Analysis:
    import datetime as dt

    return analyze([SAMPLE_LOGS], options=ParseOptions(base_date=dt.date(2024, 9, 2)))


def narrow(render, *args) -> list[str]:
    buffer = io.StringIO()
    render(Console(file=buffer, width=80, color_system=None, highlight=False), *args)
    return buffer.getvalue().splitlines()


def same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-3)


def test_summary_and_compare_agree_on_every_sample_run(samples: Analysis) -> None:
    table = {(r[C.SOURCE], r[C.RUN]): r for r in samples.runs.to_dicts()}
    summary = summarize(samples)["runs"]
    checked = 0
    for run in summary:
        row = table.get((run["source"], run["run"]))
        if row is None:  # a run 0 of preamble only: in the summary, not analysed
            continue
        checked += 1
        label = row[A.LABEL]
        assert same(run["accept_len"]["mean"], row[A.MEAN_ACCEPT_LEN]), label
        assert same(run["gen_throughput"]["mean"], row[A.MEAN_GEN_THROUGHPUT]), label
        assert same(run["acceptance_rate"]["mean"], row[A.MEAN_ACCEPTANCE_RATE]), label
        assert run["status"] == row[A.STATUS], label
    assert checked == samples.runs.height
    # The DP-attention run: throughput summed over DP ranks per round in both (not one rank's 153 tok/s).
    dp = next(r for r in summary if r["source"].endswith("era_2025_dp_attention.log"))
    assert dp["gen_throughput"]["mean"] > 400
    # vLLM: the accept len of its metrics lines in both.
    vllm = [r for r in summary if r["source"].endswith("vllm_spec_decode.log")]
    # (its runs are split at each server start; V0's lines of run 1 print no mean acceptance length, it is
    # derived from their emitted tokens; V1's first layout of run 2 prints none and gives none, runs 3-4 do)
    assert [r["accept_len"]["mean"] is not None for r in vllm] == [True, False, True, True]


def test_views_fit_80_columns(samples: Analysis) -> None:
    summary = narrow(render_summary, summarize(samples))
    compare = narrow(render_comparison, samples)
    check = narrow(render_findings, samples)
    for lines in (summary, compare, check):
        assert max(len(line.rstrip()) for line in lines) <= 80
    # Two lines a run, not a column of single characters.
    assert len(summary) <= 2 * len(summarize(samples)["runs"]) + 3
    # The speedup and its interval stay whole.
    assert any("0.61x [0.61-0.61]" in line for line in compare)
    # `check` opens with the verdicts, worst first.
    assert check[0].startswith("BROKEN     eagle3_embed_capture.log#1: ")
    statuses = [line.split()[0] for line in check[: len(samples.verdicts) * 3] if line[:1].isupper()]
    order = ["BROKEN", "DEGRADED", "INCOMPLETE", "HEALTHY"]
    assert statuses == sorted(statuses, key=order.index)


def test_report_cards_and_live_status_show_the_same_numbers(samples: Analysis, tmp_path) -> None:
    import html
    import re

    from tracelens.live.status import run_status
    from tracelens.report import render_html

    page, _ = render_html(samples, "numbers")
    for row in samples.runs.to_dicts():
        start = page.index(f'<span class="label">{html.escape(row[A.LABEL])}</span>')
        card = page[start : page.index("</article>", start)]
        stats = dict((name, value) for value, name in re.findall(r"<b>([^<]*)</b><span>([^<]*)</span>", card))
        tput = row[A.MEAN_GEN_THROUGHPUT]
        accept = row[A.MEAN_ACCEPT_LEN]
        assert stats["tok/s"] == ("-" if tput is None else f"{tput:.1f}"), row[A.LABEL]
        assert stats["accept len"] == ("-" if accept is None else f"{accept:.2f}"), row[A.LABEL]
    # The live screen and `follow` show each source's newest run with the same run means and verdict.
    for source in samples.runs.get_column(C.SOURCE).unique().to_list():
        status = run_status(samples, source)
        row = samples.runs.filter(pl.col(C.SOURCE) == source).sort(C.RUN).row(-1, named=True)
        assert same(status.mean_gen_throughput, row[A.MEAN_GEN_THROUGHPUT]), source
        assert same(status.mean_accept_len, row[A.MEAN_ACCEPT_LEN]), source
        assert status.status == row[A.STATUS], source


def test_one_look_for_a_value_in_every_view() -> None:
    """One rule per look: compact durations (terminal columns, the live screen, `follow`), long ones
    (the report), and the speculative config read the same from the summary's JSON and from a row of
    the runs table; the live screen's words for it come from the same module."""
    from tracelens.formatting import duration, speculative, speculative_of_run, speculative_words

    compact = {0.0: "0s", 45.5: "46s", 89.6: "90s", 90.0: "1m30s", 661.7: "11m01s", 5400.0: "1h30m"}
    for seconds, text in compact.items():
        assert duration(seconds, compact=True) == text, seconds
    assert duration(661.7) == "11 min 02 s" and duration(None) == "-"
    spec = {"algorithm": "EAGLE3", "num_steps": 4, "eagle_topk": 1, "num_draft_tokens": 5}
    # a row of `Analysis.runs`: whether the run drafts is decided once (`runs.with_speculation`)
    row = {
        A.SPECULATIVE: True,
        A.SPECULATIVE_FROM: "server args",
        C.SPEC_ALGORITHM: "EAGLE3",
        C.SPEC_NUM_STEPS: 4,
        C.SPEC_EAGLE_TOPK: 1,
        C.SPEC_NUM_DRAFT_TOKENS: 5,
    }
    assert speculative(spec) == speculative_of_run(row) == "EAGLE3 steps=4 topk=1 draft=5"
    assert speculative(spec, short=True) == speculative_of_run(row, short=True) == "EAGLE3 s4 k1 d5"
    assert speculative(None) == speculative_of_run({C.SPEC_ALGORITHM: None}) == "none"
    assert speculative_words(row) == "EAGLE3 · 4 steps · topk 1 · 5 draft tokens"
