"""vLLM's spec-decoding metrics lines of every era give a run its acceptance, in the headline too: V0's
counters since the server's start read as intervals, its acceptance length derived, V1's first layouts'
rate without a length."""

from __future__ import annotations

import polars as pl
import pytest
from test_chain import only
from test_detectors import run
from test_idle_gaps import fed_in_blocks

from tracelens.analysis.vllm_metrics import intervals
from tracelens.engine.ingest import parse_text
from tracelens.tables.names import VLLM_V0_METRICS
from tracelens.tables.schema import A, C, T

V0_START = "INFO 10-16 19:00:00 api_server.py:495] vLLM API server version 0.6.3"


def v0_line(minute: int, rate: float, accepted: int, drafted: int, emitted: int, k: int = 3) -> str:
    """vLLM V0's line (vllm/engine/metrics.py), its counts the server's since it started."""
    return (
        f"INFO 10-16 19:{minute:02d}:47 metrics.py:367] Speculative metrics: Draft acceptance rate: {rate:.3f}, "
        f"System efficiency: 0.598, Number of speculative tokens: {k}, Number of accepted tokens: {accepted}, "
        f"Number of draft tokens: {drafted}, Number of emitted tokens: {emitted}."
    )


def v0_stats(minute: int, running: int = 4) -> str:
    return (
        f"INFO 10-16 19:{minute:02d}:40 metrics.py:351] Avg prompt throughput: 120.0 tokens/s, Avg generation "
        f"throughput: 80.0 tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache "
        "usage: 3.0%, CPU KV cache usage: 0.0%."
    )


def test_a_healthy_v0_draft_gives_the_headline_its_acceptance_length_and_rate() -> None:
    # the real counts of a vLLM 0.6.3 issue's line, and the server's totals a minute before
    lines = [V0_START, v0_stats(4), v0_line(4, 0.640, 4200, 6561, 5220), v0_stats(5)]
    lines.append(v0_line(5, 0.642, 8547, 13311, 10616))
    analysis = run(lines)
    verdict = only(analysis)
    assert verdict.status == "healthy", verdict.headline
    # intervals: 5220 emitted over 6561 / 3 steps (2.39), then 5396 over 6750 / 3 (2.40); the rate is
    # accepted over drafted of both, 8547 / 13311 (the server's own total), not the mean of its lines
    assert verdict.headline.startswith("runs well: accept len 2.39, acceptance 64%"), verdict.headline
    (row,) = analysis.runs.select(A.MEAN_ACCEPT_LEN, A.MEAN_ACCEPTANCE_RATE, A.SPEC_TOKENS).rows()
    assert row[0] == pytest.approx((5220 / 2187 + 5396 / 2250) / 2)
    assert row[1] == pytest.approx(8547 / 13311)
    assert row[2] == 3


def test_mid_2024_v0_lines_with_a_doubled_word_give_medusa_s_useless_draft_its_figures() -> None:
    # vLLM 0.5.x printed `Number of draft tokens tokens:` (a real Medusa run with 16 heads)
    doubled = (
        "INFO 07-24 04:00:{s} metrics.py:316] Speculative metrics: Draft acceptance rate: 0.000, System "
        "efficiency: 0.059, Number of speculative tokens: 16, Number of accepted tokens: 0, Number of draft "
        "tokens tokens: {d}, Number of emitted tokens tokens: {e}."
    )
    lines = [doubled.format(s=31, d=42272, e=2642), doubled.format(s=36, d=51056, e=3191)]
    verdict = only(run(lines))
    assert verdict.status == "broken", verdict.headline
    assert verdict.causes == ["acceptance-useless"]
    assert "acceptance 0.0% over 16 speculative tokens, accept len 1.00" in verdict.headline


def test_v1_s_first_layouts_give_a_rate_without_a_length() -> None:
    # March-April 2025: no acceptance length printed, and none derivable without the number of drafts
    lines = [
        "INFO 04-02 18:03:31 [loggers.py:80] Speculative metrics: Draft acceptance rate: 0.500, Number of "
        "accepted tokens: 60, Number of draft tokens: 120, ",
        "INFO 04-02 18:03:41 [metrics.py:53] SpecDecoding metrics: Draft acceptance rate: 30.0%, Accepted: "
        "30 tokens, Drafted: 100 tokens",
        "INFO 04-02 18:03:41 [loggers.py:116] Engine 000: Avg prompt throughput: 10.0 tokens/s, Avg generation "
        "throughput: 50.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache "
        "hit rate: 0.0%",
    ]
    analysis = run(lines)
    verdict = only(analysis)
    # each line counts its own interval (V1): 90 of 220 drafted tokens accepted
    assert analysis.runs.item(0, A.MEAN_ACCEPTANCE_RATE) == pytest.approx(90 / 220)
    assert analysis.runs.item(0, A.MEAN_ACCEPT_LEN) is None
    assert "acceptance 41%" in verdict.headline, verdict.headline


def test_v0_counters_become_intervals_and_start_over_when_they_go_back() -> None:
    rows = [
        (1, VLLM_V0_METRICS, 1, 5, 1),  # the server's first counts
        (2, VLLM_V0_METRICS, 1, 15, 3),  # 10 more drafted, none accepted
        (3, VLLM_V0_METRICS, 3, 6, 4),  # fewer than before: the server started over
        (4, "vllm_v1", 7, 9, None),  # V1 counts its interval already
    ]
    frame = pl.DataFrame(
        {
            C.SOURCE: ["a.log"] * 4,
            C.RUN: [1] * 4,
            C.LINE_NO: [r[0] for r in rows],
            C.LAYOUT: [r[1] for r in rows],
            C.ACCEPTED: [r[2] for r in rows],
            C.DRAFTED: [r[3] for r in rows],
            C.EMITTED: [r[4] for r in rows],
            C.NUM_SPEC_TOKENS: [5, 5, 3, None],
            C.ACCEPTANCE_RATE: [0.2, 0.067, 0.5, 0.778],
            C.MEAN_ACCEPTANCE_LENGTH: [1.0, 1.0, 2.0, 3.1],
        }
    )
    got = intervals(frame.reverse())  # in any order: a run's lines are put in line order
    assert got.get_column(C.DRAFTED).to_list() == [5, 10, 6, 9]
    assert got.get_column(C.ACCEPTED).to_list() == [1, 0, 3, 7]
    assert got.get_column(C.ACCEPTANCE_RATE).to_list() == pytest.approx([0.2, 0.0, 0.5, 0.778])
    # emitted / (drafted / k): 1 / 1, 2 / 2, 4 / 2; V1's as printed
    assert got.get_column(C.MEAN_ACCEPTANCE_LENGTH).to_list() == pytest.approx([1.0, 1.0, 2.0, 3.1])
    assert intervals(frame.lazy()).collect().equals(intervals(frame))


def test_a_draft_that_accepts_nothing_is_broken_in_every_v1_layout() -> None:
    positions = ", ".join(["0.000"] * 16)
    current = (
        "(APIServer pid=1) INFO 07-24 04:00:{s} [metrics.py:96] SpecDecoding metrics: Mean acceptance length: "
        "1.00, Accepted throughput: 0.00 tokens/s, Drafted throughput: 4227.20 tokens/s, Accepted: 0 tokens, "
        f"Drafted: 42272 tokens, Per-position acceptance rate: {positions}, Avg Draft acceptance rate: 0.0%"
    )
    verdict = only(run([current.format(s=31), current.format(s=41)]))
    assert verdict.status == "broken", verdict.headline
    # k is the count of the per-position rates
    assert "acceptance 0.0% over 16 speculative tokens, accept len 1.00" in verdict.headline
    early = "INFO 04-02 18:03:{s} [metrics.py:53] SpecDecoding metrics: Draft acceptance rate: {r}%, Accepted: {a} tokens, Drafted: 400 tokens"
    verdict = only(run([early.format(s=31, r="0.0", a=0), early.format(s=41, r="0.5", a=2)]))
    assert verdict.status == "broken", verdict.headline
    assert verdict.headline == "the target rejects almost every drafted token (acceptance 0.2%)"


def test_nan_in_the_logits_is_a_finding_in_vllm_s_lines_of_either_engine() -> None:
    for lead in (
        "WARNING 05-01 10:00:{s} sampler.py:120]",
        "(EngineCore_DP0 pid=9) WARNING 05-01 10:00:{s} [sampler.py:120]",
    ):
        lines = [
            f"{lead.format(s=s)} Detected errors during sampling! NaN in the logits." for s in range(10, 24)
        ]
        verdict = only(run(lines))
        assert verdict.status == "degraded", verdict.headline
        assert verdict.headline.startswith("NaN in the logits during sampling (sampling, 14 times)")


@pytest.mark.parametrize("block", [3, 7])
def test_the_live_running_figure_of_a_v0_run_is_the_batch_analysis(block: int) -> None:
    # fed a few lines at a time, as a live session parses them: V0's intervals cross the parses
    lines = [V0_START, v0_stats(4), v0_line(4, 0.640, 4200, 6561, 5220), v0_stats(5)]
    lines += [v0_line(5, 0.642, 8547, 13311, 10616), v0_line(6, 0.650, 9400, 14500, 11700)]
    text = "\n".join(lines) + "\n"
    expected = run(lines).runs.item(0, A.MEAN_ACCEPT_LEN)
    tables = parse_text(text, "hand.log")
    figures = fed_in_blocks(tables, len(lines), block)
    metrics = tables[T.SPEC_METRICS]
    means = figures.means((metrics.item(0, C.SOURCE), metrics.item(0, C.RUN)), None)
    assert means is not None
    assert means[A.MEAN_ACCEPT_LEN] == pytest.approx(expected, rel=1e-9)
    # three intervals: 5220 / 2187, 5396 / 2250, 1084 / 396.33
    assert expected == pytest.approx((5220 / 2187 + 5396 / 2250 + 1084 / (1189 / 3)) / 3)
