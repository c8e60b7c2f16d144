"""The diagnosis on the sample story: findings, acceptance, speedup, incidents, startup."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import polars as pl
import pytest

from tracelens import analyze
from tracelens.analysis import Analysis, Expectations
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.folding import fold_repeats
from tracelens.tables.schema import A, C

from conftest import SAMPLE_LOGS

STORY = ["baseline_tp8.log", "eagle3_embed_capture.log", "eagle3_fixed.log", "sweep_and_crash.log"]


@pytest.fixture(scope="module")
def story() -> Analysis:
    return analyze([SAMPLE_LOGS / n for n in STORY], Expectations(expect_aux=3, hidden_size=7168))


def run_row(analysis: Analysis, label: str) -> dict:
    (row,) = analysis.runs.filter(pl.col(A.LABEL) == label).to_dicts()
    return row


def codes(analysis: Analysis, label: str) -> set[str]:
    return {f.code for f in analysis.findings if f.label == label}


def test_embed_capture_run_is_diagnosed(story: Analysis) -> None:
    found = codes(story, "eagle3_embed_capture.log#1")
    assert {"embed-capture-unexpected", "acceptance-low", "slower-than-baseline"} <= found
    embed = next(f for f in story.findings if f.code == "embed-capture-unexpected")
    assert embed.evidence and "layer_id=-1" in embed.evidence[0].text
    assert embed.evidence[0].where.startswith(str(SAMPLE_LOGS / "eagle3_embed_capture.log") + ":")
    row = run_row(story, "eagle3_embed_capture.log#1")
    assert row[A.MEAN_ACCEPTANCE_RATE] == pytest.approx(0.19, abs=0.02)


def test_fixed_run_is_clean_with_47_percent_acceptance(story: Analysis) -> None:
    assert codes(story, "eagle3_fixed.log#1") == set()
    row = run_row(story, "eagle3_fixed.log#1")
    assert row[A.MEAN_ACCEPTANCE_RATE] == pytest.approx(0.47, abs=0.02)
    assert row[A.SPEEDUP] == pytest.approx(94 / 90, abs=0.03)
    assert row[A.SPEEDUP_LOW] <= row[A.SPEEDUP] <= row[A.SPEEDUP_HIGH]
    assert row[A.BASELINE] == "baseline_tp8.log#1"
    assert row[A.ACCEPT_RATE_DEFINITION] == "(accept_len-1)/(num_draft_tokens-1)"


def test_crash_is_one_incident_on_eight_ranks(story: Analysis) -> None:
    crash = story.incidents.filter(pl.col(C.COMPONENT) == "Scheduler")
    assert crash.height == 1
    assert crash.item(0, A.RANKS).to_list() == list(range(8))
    assert crash.item(0, C.EXCEPTION_TYPE) == "torch.OutOfMemoryError"
    assert not run_row(story, "sweep_and_crash.log#3")[A.ENDED_CLEANLY]
    errors = {f.code for f in story.errors}
    assert errors == {"fault-oom", "fault-sigquit"}


def test_clean_runs_have_no_error_findings(story: Analysis) -> None:
    crashed = {"sweep_and_crash.log#3"}
    assert all(f.label in crashed for f in story.errors)


def test_startup_phases_and_time_to_ready(story: Analysis) -> None:
    phases = story.startup.filter(pl.col(A.LABEL) == "eagle3_fixed.log#1")
    names = set(phases.get_column(A.PHASE_NAME))
    assert {
        "distributed init",
        "weight load (target)",
        "weight load (draft)",
        "graph capture (target)",
        "graph capture (draft)",
        "KV cache",
        "warm-up",
    } <= names
    load = phases.filter(pl.col(A.PHASE_NAME) == "weight load (target)").item(0, A.DURATION_S)
    assert 540 <= load <= 720
    baseline = run_row(story, "baseline_tp8.log#1")
    assert 600 <= baseline[A.TIME_TO_READY_S] <= 780
    # the fixed run starts after two earlier starts of the same model: their mean is its expectation
    fixed = run_row(story, "eagle3_fixed.log#1")
    assert fixed[A.EXPECTED_TIME_TO_READY_S] is not None


def test_series_combines_nothing_without_dp_and_marks_warmup(story: Analysis) -> None:
    fixed = story.series.filter(pl.col(A.LABEL) == "eagle3_fixed.log#1")
    assert fixed.height == 1044  # one row per decode line: no DP tags, nothing combined
    assert set(fixed.get_column(A.STAGE)) == {"warmup", "steady"}
    assert fixed.get_column(A.ROLLING_MEDIAN).is_not_null().all()


def test_dp_attention_lines_are_averaged_not_summed() -> None:
    analysis = analyze([SAMPLE_LOGS / "era_2025_dp_attention.log"])
    series = analysis.series
    raw = analysis.tables["batches"].filter(pl.col(C.PHASE) == "decode")
    per_rank = raw.group_by(C.DP).len().get_column("len")
    # one row per round: the k-th line of each DP rank; DP2 printed one line more than the others, a
    # round the other ranks have not printed yet, left out (counting it would drop throughput 4x)
    assert series.height == per_rank.min() == per_rank.max() - 1
    assert series.filter(pl.col(A.DP_RANKS) == 4).height == per_rank.min()
    # the first round follows the prefills that found nothing running: its throughput counts the idle
    # start (`acceptance.after_idle`), so the sum is checked on the first round that has one
    ordered = series.sort(C.LINE_NO).with_row_index("k")
    k, row = next((r["k"], r) for r in ordered.iter_rows(named=True) if r[C.GEN_THROUGHPUT] is not None)
    nth = raw.sort(C.LINE_NO).group_by(C.DP).agg(pl.all().get(k))
    assert row[C.ACCEPT_LEN] == pytest.approx(nth.get_column(C.ACCEPT_LEN).mean())
    assert row[C.GEN_THROUGHPUT] == pytest.approx(nth.get_column(C.GEN_THROUGHPUT).sum())
    assert row[C.RUNNING_REQ] == nth.get_column(C.RUNNING_REQ).sum()


def test_config_diff_names_what_changed(story: Analysis) -> None:
    diff = story.diff("sweep_and_crash.log#1", "sweep_and_crash.log#3")
    changed = dict(zip(diff[C.KEY], zip(diff[A.VALUE_A], diff[A.VALUE_B], strict=True), strict=True))
    assert changed["speculative_num_steps"] == ("2", "5")
    assert changed["speculative_num_draft_tokens"] == ("3", "6")


def test_explicit_baseline_must_exist() -> None:
    from tracelens.errors import InputError

    with pytest.raises(InputError, match="is not a run here"):
        analyze([SAMPLE_LOGS / "eagle3_fixed.log"], baseline="nope.log#1")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tracelens.cli", *args], capture_output=True, text=True, timeout=180
    )


def test_check_gates_ci_with_exit_codes() -> None:
    fixed = str(SAMPLE_LOGS / "eagle3_fixed.log")
    embed = str(SAMPLE_LOGS / "eagle3_embed_capture.log")
    assert cli("check", fixed, "-q").returncode == 0
    bad = cli("check", embed, "--embed-capture", "no", "-q")
    assert bad.returncode == 1
    assert "ERROR   embed-capture-unexpected" in bad.stdout
    # The verdict comes first, before any detail; the capture is what the debug lines printed.
    assert bad.stdout.startswith("BROKEN     eagle3_embed_capture.log#1: the draft is fed layers")
    assert "captured for the draft: the embedding output, the output of layer 2" in bad.stdout
    assert cli("check", embed, "--embed-capture", "maybe").returncode == 2
    result = cli("check", embed, "--expect-aux", "3", "--embed-capture", "no", "--json")
    data = json.loads(result.stdout)
    assert data["errors"] == 1
    assert data["findings"][0]["evidence"][0]["where"].startswith(embed)
    (verdict,) = data["verdicts"]
    assert {k: verdict[k] for k in ("run", "status", "causes", "explains")} == {
        "run": "eagle3_embed_capture.log#1",
        "status": "broken",
        "causes": ["embed-capture-unexpected"],
        "explains": ["acceptance-low"],
    }
    assert "remove" not in verdict["fix"] and "eagle_aux_hidden_state_layer_ids" in verdict["fix"]
    # The first evidence line is the one that shows the configured layer ids.
    assert "layer_ids=[-1, 2, 30]" in verdict["evidence"][0]["text"]


def test_compare_and_sql_commands() -> None:
    logs = [str(SAMPLE_LOGS / n) for n in ("baseline_tp8.log", "eagle3_fixed.log")]
    result = cli("compare", *logs, "-q")
    assert result.returncode == 0, result.stderr
    assert "1.0" in result.stdout and "baseline_tp8.log#1" in result.stdout
    query = "select run, count(*) as n from batches where phase = 'decode' group by run"
    result = cli("sql", query, logs[1], "--csv", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["run,n", "1,1044"]
    bad = cli("sql", "select nope from batches", logs[1], "-q")
    assert bad.returncode == 2 and bad.stderr.startswith("tracelens: error: SQL:")


def test_summary_json_gains_acceptance_and_findings() -> None:
    result = cli("summary", "--json", str(SAMPLE_LOGS / "eagle3_embed_capture.log"))
    (run,) = [r for r in json.loads(result.stdout)["runs"] if r["decode_lines"]]
    assert run["acceptance_rate"]["mean"] == pytest.approx(0.19, abs=0.02)
    assert run["findings"] >= 2


def test_a_parsed_dataset_analyses_like_its_logs(tmp_path) -> None:
    logs = [SAMPLE_LOGS / "baseline_tp8.log", SAMPLE_LOGS / "eagle3_embed_capture.log"]
    out = tmp_path / "dataset"
    assert cli("parse", *map(str, logs), "-o", str(out), "-q").returncode == 0
    from_logs = analyze(logs)
    from_dataset = analyze([out])
    assert [(f.code, f.label) for f in from_dataset.findings] == [
        (f.code, f.label) for f in from_logs.findings
    ]
    assert from_dataset.runs.select(A.LABEL, A.MEAN_ACCEPT_LEN).equals(
        from_logs.runs.select(A.LABEL, A.MEAN_ACCEPT_LEN)
    )
    result = cli("check", str(out), "--embed-capture", "no", "-q")
    assert result.returncode == 1 and "embed-capture-unexpected" in result.stdout


def test_a_folded_range_over_days_says_its_dates() -> None:
    def stall(day: int) -> Finding:
        at = dt.datetime(2026, 12, day, 0, 0, 1)
        return Finding(Severity.INFO, "startup-stall", "a.log", 0, "a.log#0", at, "no log line for 86398 s")

    (days,) = fold_repeats([stall(1), stall(2), stall(3)])
    assert days.message.endswith("(3 times, 2026-12-01 00:00:01 to 2026-12-03 00:00:01)"), days.message
    one_day = [stall(1), stall(1)]
    one_day[1].ts = dt.datetime(2026, 12, 1, 0, 5, 1)
    (same,) = fold_repeats(one_day)
    assert same.message.endswith("(2 times, 00:00:01 to 00:05:01)"), same.message
