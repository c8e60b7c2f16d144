"""Acceptance per position and per request for both engines (analysis/positions.py), the cross-engine
table of `check --json`, the cliff finding and the `check --baseline` gate.

The request lines are written as SGLang's `python/sglang/srt/utils/request_logger.py` (2026, `json.dumps`
of `{"timestamp", "event", "rid", "obj", "out": {"meta_info"}}`) and vLLM's 2026
`--per-request-spec-decode-metrics` responses write them; the counters as vLLM's `vllm/v1/spec_decode/metrics.py`
exposes them; `/server_info` as SGLang's `get_server_info` returns it (`internal_states` per DP rank).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tracelens.engine.ingest import analyze
from tracelens.tables.schema import A, C

TRACELENS = [sys.executable, "-m", "tracelens.cli"]


def _finished(rid: str, stamp: str, histogram: list[int], k: int = 3) -> str:
    verify = sum(histogram)
    accepted = sum(i * n for i, n in enumerate(histogram))
    completion = verify + accepted
    meta = {
        "id": rid,
        "finish_reason": {"type": "length", "length": completion},
        "prompt_tokens": 10,
        "completion_tokens": completion,
        "cached_tokens": 0,
        "e2e_latency": 0.3,
        "spec_accept_rate": accepted / (verify * k),
        "spec_accept_length": completion / verify,
        "spec_accept_token_num": accepted,
        "spec_draft_token_num": verify * k,
        "spec_verify_ct": verify,
        "spec_accept_histogram": histogram,
    }
    event = {
        "timestamp": stamp,
        "event": "request.finished",
        "rid": rid,
        "obj": {"rid": rid},
        "out": {"meta_info": meta},
    }
    return json.dumps(event, ensure_ascii=False)


def _server_log(path: Path, histograms: list[list[int]], accept_len: float = 2.5) -> Path:
    """A speculative SGLang run (EAGLE3, 3 steps, topk 1) with decode lines and its request log inline."""
    lines = [
        "[2026-03-02 10:00:00] server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', "
        "speculative_algorithm='EAGLE3', speculative_num_steps=3, speculative_eagle_topk=1, "
        "speculative_num_draft_tokens=4)"
    ]
    for i in range(12):
        lines.append(
            f"[2026-03-02 10:01:{i:02d} TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, "
            f"accept len: {accept_len:.2f}, accept rate: {accept_len / 4:.2f}, cuda graph: True, "
            "gen throughput (token/s): 400.0, #queue-req: 0"
        )
    for i, hist in enumerate(histograms):
        lines.append(_finished(f"r{i}", f"2026-03-02T10:01:{20 + i:02d}", hist))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _curve(analysis, label_part: str) -> list[float]:
    curve = analysis.spec_curves.filter(pl.col(A.LABEL).str.contains(label_part, literal=True)).sort(
        A.POSITION
    )
    return [round(r, 6) for r in curve.get_column(A.RATE).to_list()]


def test_sglang_positions_from_the_request_histograms(tmp_path: Path) -> None:
    # bin j = verify steps that accepted exactly j drafts; pooled [3, 3, 2, 4] over 12 steps
    log = _server_log(tmp_path / "a.log", [[1, 2, 1, 2], [2, 1, 1, 2]])
    analysis = analyze([log])
    assert _curve(analysis, "a.log") == [round(9 / 12, 6), round(6 / 12, 6), round(4 / 12, 6)]
    curve = analysis.spec_curves
    assert set(curve.get_column(A.ENGINE)) == {"sglang"}
    assert set(curve.get_column(A.BASIS)) == {"request_histograms"}
    figures = analysis.requests.row(0, named=True)
    assert figures[A.REQUESTS] == 2
    # accepted 10 + 9 over 12 verify steps, 36 drafted
    assert figures[A.POOLED_ACCEPT_LEN] == pytest.approx(1 + 19 / 12)
    assert figures[A.POOLED_RATE] == pytest.approx(19 / 36)


def test_histograms_of_different_depths_count_each_position_where_it_was_drafted(tmp_path: Path) -> None:
    # an adaptive run: one request at depth 1 (2 bins), one at depth 3 (4 bins)
    log = _server_log(tmp_path / "a.log", [[4, 4], [1, 1, 1, 1]])
    assert _curve(analyze([log]), "a.log") == [round((4 + 3) / 12, 6), round(2 / 4, 6), round(1 / 4, 6)]


def test_pooled_and_per_request_means_are_both_reported_and_can_rank_runs_apart(tmp_path: Path) -> None:
    # run x: one long request that accepts a lot, three short ones that accept nothing;
    # run y: four middling requests
    x = _server_log(tmp_path / "x.log", [[0, 0, 0, 40], [4, 0, 0, 0], [4, 0, 0, 0], [4, 0, 0, 0]])
    y = _server_log(tmp_path / "y.log", [[2, 2, 2, 2]] * 4)
    figures = {r[A.LABEL]: r for r in analyze([x, y]).requests.iter_rows(named=True)}
    fx, fy = figures["x.log#1"], figures["y.log#1"]
    assert fx[A.POOLED_ACCEPT_LEN] > fy[A.POOLED_ACCEPT_LEN]
    assert fx[A.REQUEST_MEAN_ACCEPT_LEN] < fy[A.REQUEST_MEAN_ACCEPT_LEN]
    assert fx[A.NOT_PAID] == 3 and fy[A.NOT_PAID] == 0
    listed = _check("--json", str(x))
    table = json.loads(listed.stdout)["acceptance"][0]["requests"]
    assert [r["rid"] for r in table["not_paid_requests"]] == ["r1", "r2", "r3"]
    assert table["pooled"]["accept_len"] > table["per_request_mean"]["accept_len"]


def test_a_separate_request_log_folder_joins_the_server_run(tmp_path: Path) -> None:
    log = _server_log(tmp_path / "server.log", [])
    folder = tmp_path / "requests"
    folder.mkdir()
    (folder / "node1_0.log").write_text(
        _finished("q0", "2026-03-02T10:01:05", [0, 0, 4, 4]) + "\n", encoding="utf-8"
    )
    (folder / "node1_1.log").write_text(
        _finished("q1", "2026-03-02T10:01:06", [0, 4, 0, 4]) + "\n", encoding="utf-8"
    )
    analysis = analyze([log, folder])
    assert analysis.requests.get_column(A.LABEL).to_list() == ["server.log#1"]
    assert analysis.requests.item(0, A.REQUESTS) == 2
    assert _curve(analysis, "server.log") == [1.0, round(12 / 16, 6), 0.5]


def _metrics_page(per_pos: list[float], drafts: float) -> str:
    rows = [f'vllm:spec_decode_num_drafts_total{{engine="0",model_name="m"}} {drafts}']
    rows += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="m",position="{i}"}} {v}'
        for i, v in enumerate(per_pos)
    ]
    return "\n".join(rows) + "\n"


def test_vllm_positions_from_counter_snapshots_across_a_restart(tmp_path: Path) -> None:
    page = tmp_path / "metrics.prom"
    # 100 drafts, then 300: +200 over the span the snapshots cover (the first snapshot's totals are from
    # before it); then the server restarts (the counters go back): a run of its own, whose 50 drafts since
    # its start count whole.
    page.write_text(
        _metrics_page([80, 50, 20], 100)
        + _metrics_page([200, 110, 40], 300)
        + _metrics_page([20, 10, 5], 50),
        encoding="utf-8",
    )
    analysis = analyze([page])
    curve = analysis.spec_curves
    assert curve.get_column(A.BASIS).unique().to_list() == ["vllm_counters"]
    assert _curve(analysis, "metrics.prom#0") == [round(120 / 200, 6), round(60 / 200, 6), round(20 / 200, 6)]
    assert _curve(analysis, "metrics.prom#1") == [0.4, 0.2, 0.1]
    # one snapshot alone: the totals since the server started
    alone = tmp_path / "one.prom"
    alone.write_text(_metrics_page([80, 50, 20], 100), encoding="utf-8")
    assert _curve(analyze([alone]), "one.prom") == [0.8, 0.5, 0.2]


def test_vllm_responses_give_the_same_positions_as_their_counters(tmp_path: Path) -> None:
    responses = tmp_path / "responses.jsonl"
    hists = [[2, 3, 1, 4], [5, 0, 3, 2]]
    rows = []
    for i, h in enumerate(hists):
        steps, accepted = sum(h), sum(j * n for j, n in enumerate(h))
        spec = {
            "num_spec_steps": steps,
            "num_draft_tokens": 3 * steps,
            "num_accepted_draft_tokens": accepted,
            "mean_acceptance_length": 1 + accepted / steps,
            "draft_acceptance_rate": accepted / (3 * steps),
            "acceptance_histogram": h,
        }
        rows.append(
            json.dumps(
                {"id": f"cmpl-{i}", "created": 1772445600 + i, "metrics": {"speculative_decoding": spec}}
            )
        )
    responses.write_text("\n".join(rows) + "\n", encoding="utf-8")
    # the same 20 steps as counters: accepted at position p = steps that accepted more than p drafts
    page = tmp_path / "metrics.prom"
    page.write_text(_metrics_page([13, 10, 6], 20), encoding="utf-8")
    analysis = analyze([responses, page])
    from_requests = _curve(analysis, "responses.jsonl")
    from_counters = _curve(analysis, "metrics.prom")
    assert from_requests == from_counters == [0.65, 0.5, 0.3]
    assert set(analysis.spec_curves.get_column(A.ENGINE)) == {"vllm"}


def test_a_position_cliff_is_a_finding(tmp_path: Path) -> None:
    # position 0 accepted 90% of steps, position 1 20%: drafting past position 0 is mostly wasted
    log = _server_log(tmp_path / "a.log", [[1, 7, 1, 1]])
    codes = [f.code for f in analyze([log]).findings]
    assert "spec-position-cliff" in codes
    smooth = _server_log(tmp_path / "b.log", [[2, 2, 2, 4]])
    assert "spec-position-cliff" not in [f.code for f in analyze([smooth]).findings]


def test_the_depth_in_force_from_server_info_snapshots(tmp_path: Path) -> None:
    log = _server_log(tmp_path / "server.log", [])
    info = tmp_path / "server_info.log"
    snapshots = [(5, 3.4), (2, 2.6)]  # adaptive speculation lowered the depth from 5 to 2
    info.write_text(
        "".join(
            f"[2026-03-02 10:01:{30 + i:02d}] "
            + json.dumps(
                {
                    "model_path": "m",
                    "speculative_num_steps": 3,
                    "internal_states": [{"avg_spec_accept_length": length, "speculative_num_steps": depth}],
                }
            )
            + "\n"
            for i, (depth, length) in enumerate(snapshots)
        ),
        encoding="utf-8",
    )
    analysis = analyze([log, info])
    depth = analysis.depth.sort(C.LINE_NO)
    assert depth.get_column(A.LABEL).to_list() == ["server.log#1"] * 2
    assert depth.get_column(A.DEPTH).to_list() == [5, 2]
    assert depth.get_column(A.LAUNCH_DEPTH).to_list() == [3, 3]
    assert depth.get_column(A.ACCEPTANCE_RATE).to_list() == pytest.approx([2.4 / 5, 1.6 / 2])


def test_a_snapshot_joins_a_run_up_to_ten_minutes_after_its_last_line(tmp_path: Path) -> None:
    """The server log's last line is at 10:01:11; a poller's `/server_info` at 10:09 belongs to that
    server (idle, it writes nothing), one a day later, or a request finished then, keeps a run of its own."""
    log = _server_log(tmp_path / "server.log", [])
    info = tmp_path / "server_info.log"
    state = {"internal_states": [{"avg_spec_accept_length": 2.5, "speculative_num_steps": 3}]}
    info.write_text(
        "".join(
            f"[{stamp}] " + json.dumps(state) + "\n"
            for stamp in ("2026-03-02 10:09:00", "2026-03-03 10:09:00")
        ),
        encoding="utf-8",
    )
    late = tmp_path / "requests.log"
    late.write_text(
        _finished("q0", "2026-03-02T10:05:00", [0, 4, 0, 4])
        + "\n"
        + _finished("q1", "2026-03-03T09:00:00", [4, 4])
        + "\n",
        encoding="utf-8",
    )
    analysis = analyze([log, info, late])
    assert analysis.depth.sort(C.TS).get_column(A.LABEL).to_list() == ["server.log#1", "server_info.log#0"]
    counts = dict(analysis.requests.select(A.LABEL, A.REQUESTS).iter_rows())
    assert counts == {"server.log#1": 1, "requests.log#0": 1}


def _check(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    if columns is not None:  # a terminal this wide: the table's rows on one line each
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [*TRACELENS, "check", "--no-cache", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_check_baseline_fails_a_run_whose_position_drops(tmp_path: Path) -> None:
    base = _server_log(tmp_path / "base.log", [[1, 2, 3, 4]] * 3)  # positions 0.9, 0.7, 0.4
    same = _server_log(tmp_path / "same.log", [[1, 2, 4, 3]] * 3)  # 0.9, 0.7, 0.3: 0.10 down, within
    worse = _server_log(tmp_path / "worse.log", [[1, 5, 2, 2]] * 3)  # 0.9, 0.4, 0.2: 0.30 down
    passed = _check("--baseline", "base.log#1", "--json", str(base), str(same))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    payload = json.loads(passed.stdout)
    tables = {row["label"]: row for row in payload["acceptance"]}
    assert tables["same.log#1"]["positions"]["rates"] == [0.9, 0.7, 0.3]
    assert tables["same.log#1"]["engine"] == "sglang"
    assert tables["same.log#1"]["requests"]["pooled"]["rate"] == pytest.approx(19 / 30, abs=1e-4)
    assert tables["same.log#1"]["interval"]["from"].startswith("sglang Decode batch")

    failed = _check("--baseline", "base.log#1", "--json", str(base), str(worse))
    assert failed.returncode == 1, failed.stdout + failed.stderr
    regressed = [f for f in json.loads(failed.stdout)["findings"] if f["code"] == "spec-position-regressed"]
    assert [f["label"] for f in regressed] == ["worse.log#1"]
    assert "position 1" in regressed[0]["message"]

    loose = _check("--baseline", "base.log#1", "--position-margin", "0.35", str(base), str(worse))
    assert loose.returncode == 0, loose.stdout + loose.stderr


def test_the_real_vllm_eagle3_log_has_a_decaying_curve(real_corpus: Path) -> None:
    """The corpus' vLLM 0.24 EAGLE-3 log: `Per-position acceptance rate: a, b, c, d, e` lines (k = 5)."""
    path = real_corpus / "063_vllm-0.24-eagle3-llama31-8b-awq-specdecoding-metrics-2026.log"
    analysis = analyze([path])
    curve = analysis.spec_curves.sort(A.POSITION)
    rates = curve.get_column(A.RATE).to_list()
    assert len(rates) == 5 and rates == sorted(rates, reverse=True)
    assert set(curve.get_column(A.BASIS)) == {"vllm_metrics_lines"}
    # the mean acceptance length is 1 + the sum of the per-position rates, within the intervals' weighting
    mean_len = analysis.runs.filter(pl.col(A.LABEL) == curve.item(0, A.LABEL)).item(0, A.MEAN_ACCEPT_LEN)
    assert abs((1 + sum(rates)) - mean_len) < 0.1


def test_the_report_draws_the_curves_the_request_lengths_and_the_depth(tmp_path: Path) -> None:
    import re

    from tracelens.report import write_report

    base = _server_log(tmp_path / "base.log", [[1, 2, 3, 4], [6, 2, 1, 1], [0, 1, 2, 7]])
    vllm = tmp_path / "metrics.prom"
    vllm.write_text(_metrics_page([80, 50, 20], 100), encoding="utf-8")
    info = tmp_path / "server_info.log"
    info.write_text(
        "".join(
            f"[2026-03-02 10:01:{30 + i:02d}] "
            + json.dumps({"internal_states": [{"avg_spec_accept_length": 2.5, "speculative_num_steps": d}]})
            + "\n"
            for i, d in enumerate((3, 2))
        ),
        encoding="utf-8",
    )
    written = write_report(analyze([base, vllm, info]), tmp_path / "r.html")
    assert {"curves", "request-lengths", "depth"} <= set(written.plots)
    page = written.path.read_text(encoding="utf-8")
    data = re.search(r'<script type="application/json" id="tl-data">(.*?)</script>', page, re.S)
    assert data is not None
    plots = {p["key"]: p["figure"] for p in json.loads(data.group(1))["plots"]}
    names = sorted(trace["name"] for trace in plots["curves"]["data"])
    assert names == ["base.log#1 (sglang, request histograms)", "metrics.prom#0 (vllm, vllm counters)"]
    assert [t["name"] for t in plots["depth"]["data"]] == ["base.log#1 (sglang server_info)"]


def test_follow_reports_the_positions_engine_and_basis(tmp_path: Path) -> None:
    """`follow --json` (the live status the TUI's acceptance panel shows) on a compressed log, which it
    reads to its end and then exits."""
    import gzip

    log = _server_log(tmp_path / "a.log", [[1, 2, 3, 4], [2, 1, 1, 2]])
    packed = tmp_path / "a.log.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    done = subprocess.run(
        [*TRACELENS, "follow", "--json", str(packed)], capture_output=True, text=True, env=env, timeout=180
    )
    assert done.returncode == 0, done.stderr
    stats = [
        e
        for e in map(json.loads, done.stdout.splitlines())
        if e.get("event") == "stats" and e.get("positions")
    ]
    assert stats, done.stdout[-2000:]
    last = stats[-1]
    assert (last["engine"], last["positions_basis"], last["requests"]) == ("sglang", "request_histograms", 2)
    assert last["positions"] == [13 / 16, 10 / 16, 6 / 16]  # pooled bins [3, 3, 4, 6]
    assert last["acceptance"].startswith("per position 81% 62% 38% (sglang, request histograms)")


def test_sglang_gauges_are_taken_as_they_are_and_normalised_by_the_depth_in_force(tmp_path: Path) -> None:
    """`sglang:spec_accept_length` / `sglang:spec_accept_rate` (`python/sglang/srt/metrics/collector.py`,
    one series per rank), the newest snapshot's, beside a `/server_info` saying the depth in force."""
    page = tmp_path / "sglang.prom"
    rows = []
    for length in ((2.0, 2.2), (2.8, 3.2)):  # two snapshots of two TP ranks' gauges
        for rank, value in enumerate(length):
            rows.append(
                f'sglang:spec_accept_length{{engine_type="unified",model_name="m",tp_rank="{rank}"}} {value}'
            )
            rows.append(
                f'sglang:spec_accept_rate{{engine_type="unified",model_name="m",tp_rank="{rank}"}} {value / 5}'
            )
    rows.append(
        json.dumps({"internal_states": [{"avg_spec_accept_length": 3.0, "speculative_num_steps": 4}]})
    )
    page.write_text("\n".join(rows) + "\n", encoding="utf-8")
    done = _check("--json", str(page))
    gauges = json.loads(done.stdout)["acceptance"][0]["gauges"]
    assert gauges["engine"] == "sglang"
    assert gauges["accept_len"] == pytest.approx(3.0)  # the newest snapshot, mean over the ranks
    assert gauges["logged_rate"] == pytest.approx(0.6)
    assert gauges["rate"] == pytest.approx((3.0 - 1) / 4)


def test_check_prints_whose_figure_each_rate_is_and_keeps_vllm_rows_off_sglang_runs(tmp_path: Path) -> None:
    log = _server_log(tmp_path / "server.log", [[1, 2, 3, 4]])
    responses = tmp_path / "vllm.jsonl"  # created inside the SGLang run's span, yet vLLM's
    spec = {
        "num_spec_steps": 4,
        "num_draft_tokens": 12,
        "num_accepted_draft_tokens": 6,
        "acceptance_histogram": [1, 1, 1, 1],
    }
    responses.write_text(
        json.dumps({"id": "cmpl-x", "created": 1772445661, "metrics": {"speculative_decoding": spec}}) + "\n"
    )
    done = _check(str(log), str(responses), columns=160)
    assert done.returncode == 0, done.stderr
    table = done.stdout[done.stdout.index("acceptance (rate: accepted / drafted") :]
    rows = [line for line in table.splitlines() if "│" in line]
    assert any("server.log#1" in r and "sglang Decode batch lines" in r and "50%" in r for r in rows)
    assert any("sglang per-request metrics, pooled" in r and "67%" in r for r in rows)  # 20 / 30
    assert any("vllm.jsonl#0" in r and "vllm per-request metrics, pooled" in r and "50%" in r for r in rows)
    assert any("vllm request histograms, per position" in r and "75% 50% 25%" in r for r in rows)


def test_drafting_deeper_than_is_accepted_is_a_tuning_with_its_depth(tmp_path: Path) -> None:
    # vLLM at 15 speculative tokens whose positions 6-15 accept nothing (steady decay, no cliff)
    rates = "0.600, 0.385, 0.215, 0.108, 0.062" + ", 0.000" * 10
    vllm = tmp_path / "vllm.log"
    vllm.write_text(
        "(APIServer pid=1) INFO 05-01 14:24:50 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: "
        "2.37, Accepted throughput: 8.90 tokens/s, Drafted throughput: 97.50 tokens/s, Accepted: 89 tokens, "
        f"Drafted: 975 tokens, Per-position acceptance rate: {rates}, Avg Draft acceptance rate: 9.1%\n",
        encoding="utf-8",
    )
    (verdict,) = analyze([vllm]).verdicts
    assert verdict.status == "degraded", verdict.headline
    assert verdict.causes == ["spec-depth-wasted"]
    assert "9% of drafted tokens" in verdict.headline  # the rate vLLM's counts give: 89 / 975
    assert verdict.fix == 'draft 5 tokens a step: set "num_speculative_tokens": 5 in --speculative-config'
    # SGLang, 3 steps: requests accept 0 or 1 drafts, never 2 or 3
    sglang = analyze([_server_log(tmp_path / "s.log", [[10, 10, 0, 0]] * 3)])
    (found,) = [f for f in sglang.findings if f.code == "spec-depth-wasted"]
    assert found.message.startswith("drafted tokens 2-3 of 3 are accepted less than 5% of the time")
    assert found.fix and "--speculative-num-steps 1" in found.fix
    # a tail that still pays is no finding
    paying = analyze([_server_log(tmp_path / "p.log", [[2, 2, 2, 4]])])
    assert "spec-depth-wasted" not in [f.code for f in paying.findings]


def test_summary_and_compare_say_whose_lines_each_rate_comes_from(tmp_path: Path, real_corpus: Path) -> None:
    """The run's mean normalised rate: SGLang's decode lines (recomputed from accept len and the depth)
    or vLLM's metrics lines (accepted / drafted), named in `summary` (text and JSON), `compare` and the
    report's cards."""
    sglang = _server_log(tmp_path / "a.log", [])
    vllm = real_corpus / "063_vllm-0.24-eagle3-llama31-8b-awq-specdecoding-metrics-2026.log"
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}

    def run(*args: str) -> str:
        done = subprocess.run(
            [*TRACELENS, *args, "--no-cache", str(sglang), str(vllm)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    runs = {r["label"]: r for r in json.loads(run("summary", "--json"))["runs"]}
    assert runs["a.log#1"]["acceptance_rate_engine"] == "sglang"
    assert runs["a.log#1"]["acceptance_from"] == "decode lines"
    engines = {r["acceptance_rate_engine"] for label, r in runs.items() if label.startswith("063_")}
    assert engines == {None, "vllm"}  # its preamble run has no rate
    assert {r["acceptance_from"] for label, r in runs.items() if label.startswith("063_")} == {
        None,
        "metrics lines",
    }
    compared = run("compare")
    assert "50% sglang" in compared and re.search(r"\d+% vllm", compared)
    from tracelens.report import write_report

    page = write_report(analyze([sglang, vllm]), tmp_path / "r.html").path.read_text(encoding="utf-8")
    assert "acceptance (sglang)" in page and "acceptance (vllm)" in page


def test_summary_and_compare_take_a_run_without_lines_from_its_other_places(tmp_path: Path) -> None:
    """A run with no decode or metrics lines: its accept len and rate from vLLM's counters, else its
    requests, else SGLang's gauges, else `/server_info`, each named where the rate is shown."""
    requests = tmp_path / "requests.log"  # pooled [3, 3, 2, 4] over 12 steps: 19 of 36 drafts
    requests.write_text(
        _finished("r0", "2026-03-02T10:01:20", [1, 2, 1, 2])
        + "\n"
        + _finished("r1", "2026-03-02T10:01:21", [2, 1, 1, 2])
        + "\n",
        encoding="utf-8",
    )
    counters = tmp_path / "vllm.prom"  # +200 drafts, positions 0.6, 0.3, 0.1: 1.0 of 3 per draft
    counters.write_text(
        _metrics_page([80, 50, 20], 100) + _metrics_page([200, 110, 40], 300), encoding="utf-8"
    )
    gauges = tmp_path / "sglang.prom"  # the gauge with the depth in force of a /server_info after it
    state = {"internal_states": [{"avg_spec_accept_length": 3.0, "speculative_num_steps": 4}]}
    gauges.write_text(
        'sglang:spec_accept_length{engine_type="unified",model_name="m",tp_rank="0"} 2.6\n'
        + json.dumps(state)
        + "\n",
        encoding="utf-8",
    )
    info = tmp_path / "info.log"
    info.write_text(json.dumps(state) + "\n", encoding="utf-8")
    idle = tmp_path / "plain.prom"  # a server that does not draft exports the gauge as 0
    idle.write_text('sglang:spec_accept_length{engine_type="unified",model_name="m",tp_rank="0"} 0.0\n')
    sources = [str(p) for p in (requests, counters, gauges, info, idle)]
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    env["COLUMNS"] = "200"

    def run(*args: str) -> str:
        done = subprocess.run(
            [*TRACELENS, *args, "--no-cache", *sources], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    runs = {r["label"]: r for r in json.loads(run("summary", "--json"))["runs"]}
    got = {
        label: (
            r["accept_len"]["mean"],
            r["acceptance_rate"]["mean"],
            r["acceptance_rate_engine"],
            r["acceptance_from"],
        )
        for label, r in runs.items()
    }
    assert got == {
        "requests.log#0": (round(1 + 19 / 12, 4), round(19 / 36, 4), "sglang", "requests"),
        "vllm.prom#0": (2.0, round(1 / 3, 4), "vllm", "/metrics counters"),
        "sglang.prom#0": (2.6, 0.4, "sglang", "/metrics gauges"),
        "info.log#0": (3.0, 0.5, "sglang", "/server_info"),
        "plain.prom#0": (None, None, None, None),
    }
    assert runs["requests.log#0"]["speculative"]["seen_in"] == "requests"
    assert runs["plain.prom#0"]["speculative"] is None
    compared = run("compare")
    for words in (
        "53% sglang requests",
        "33% vllm /metrics counters",
        "40% sglang /metrics gauges",
        "50% sglang /server_info",
    ):
        assert words in compared, compared
    assert "53% sglang requests" in run("summary")
    # check's table: vLLM's counters are vLLM's figures, though the run has no vLLM line
    table = {e["label"]: e for e in json.loads(_check("--json", *sources).stdout)["acceptance"]}
    assert (table["vllm.prom#0"]["engine"], table["vllm.prom#0"]["interval"]) == ("vllm", None)
    from tracelens.report import write_report

    page = write_report(analyze([Path(s) for s in sources]), tmp_path / "r.html").path.read_text(
        encoding="utf-8"
    )
    for words in (
        "acceptance (sglang requests)",
        "acceptance (vllm /metrics counters)",
        "53% sglang requests",
    ):
        assert words in page


def test_check_prints_the_depth_timeline_of_an_adaptive_run(tmp_path: Path) -> None:
    """`--speculative-adaptive` moves the depth in force: check's table has a row per stretch at one depth,
    its first and last snapshot and the rate against that depth (the mean of its snapshots)."""
    log = _server_log(tmp_path / "server.log", [])  # launched at depth 3
    info = tmp_path / "server_info.log"
    polls = [(5, 3.4), (5, 3.2), (2, 2.6), (2, 2.4), (2, 2.5), (4, 3.0)]
    info.write_text(
        "".join(
            f"[2026-03-02 10:01:{30 + i:02d}] "
            + json.dumps(
                {"internal_states": [{"avg_spec_accept_length": length, "speculative_num_steps": depth}]}
            )
            + "\n"
            for i, (depth, length) in enumerate(polls)
        ),
        encoding="utf-8",
    )
    spans = json.loads(_check("--json", str(log), str(info)).stdout)["acceptance"][0]["depth_spans"]
    assert [(s["depth"], s["from"], s["to"], s["snapshots"]) for s in spans] == [
        (5, "2026-03-02 10:01:30", "2026-03-02 10:01:31", 2),
        (2, "2026-03-02 10:01:32", "2026-03-02 10:01:34", 3),
        (4, "2026-03-02 10:01:35", "2026-03-02 10:01:35", 1),
    ]
    assert [s["rate"] for s in spans] == pytest.approx([2.3 / 5, 1.5 / 2, 2.0 / 4], abs=1e-4)
    done = _check(str(log), str(info), columns=200)
    rows = [line for line in done.stdout.splitlines() if "/server_info, depth" in line]
    assert len(rows) == 3, done.stdout
    assert "depth 5 in force, launched at 3: 2026-03-02 10:01:30 to 10:01:31 (2 snapshots)" in rows[0]
    assert "3.30" in rows[0] and "46%" in rows[0]
    assert "depth 2 in force" in rows[1] and "2.50" in rows[1] and "75%" in rows[1]
    assert "depth 4 in force, launched at 3: 2026-03-02 10:01:35 (1 snapshot)" in rows[2] and "50%" in rows[2]


def _received(rid: str, stamp: str) -> str:
    return json.dumps({"timestamp": stamp, "event": "request.received", "rid": rid, "obj": {"rid": rid}})


def test_a_source_of_only_requests_or_snapshots_is_judged_by_what_it_shows(tmp_path: Path) -> None:
    """No server line: a request log, saved snapshots or vLLM responses are not a server that never
    decoded ("incomplete: no decode yet"); their verdict says what they show."""
    requests = tmp_path / "requests.log"
    requests.write_text(
        _received("r0", "2026-03-05T10:00:00")
        + "\n"
        + _finished("r0", "2026-03-05T10:01:20", [1, 2, 1, 2])
        + "\n"
    )
    snapshots = tmp_path / "snapshots.prom"
    state = {"internal_states": [{"avg_spec_accept_length": 3.0, "speculative_num_steps": 4}]}
    snapshots.write_text(
        'sglang:spec_accept_length{engine_type="unified",model_name="m",tp_rank="0"} 2.6\n'
        + json.dumps(state)
        + "\n"
    )
    waiting = tmp_path / "waiting.log"  # requests received, none finished yet
    waiting.write_text(
        _received("w0", "2026-03-05T11:00:00") + "\n" + _received("w1", "2026-03-05T11:00:01") + "\n"
    )
    aborted = tmp_path / "aborted.log"
    row = json.loads(_finished("a0", "2026-03-05T12:00:00", [4, 0, 0, 0]))
    row["out"]["meta_info"]["finish_reason"] = {"type": "abort"}
    aborted.write_text(json.dumps(row) + "\n")
    plain = tmp_path / "plain.prom"  # a server that does not draft
    plain.write_text('sglang:num_running_reqs{engine_type="unified",model_name="m",tp_rank="0"} 3.0\n')
    verdicts = {
        v.label: (v.status, v.headline)
        for v in analyze([requests, snapshots, waiting, aborted, plain]).verdicts
    }
    assert verdicts == {
        "requests.log#0": (
            "healthy",
            "a request log: 1 request(s) finished, accept len 2.67, rate 56% (sglang requests); no server lines",
        ),
        "snapshots.prom#0": (
            "healthy",
            "snapshots of /metrics or /server_info: accept len 2.60, rate 40% (sglang /metrics gauges), "
            "depth 4 in force; no server lines",
        ),
        "waiting.log#0": (
            "incomplete",
            "a request log: 2 request(s) received, none finished in it; no server lines",
        ),
        "aborted.log#0": (
            "degraded",
            "a request log: all 1 finished request(s) were aborted, accept len 1.00, rate 0% (sglang requests); "
            "no server lines",
        ),
        "plain.prom#0": (
            "healthy",
            "snapshots of /metrics or /server_info: no request and no acceptance figure; no server lines",
        ),
    }
    # a request log whose rows joined a server run: said so, and the server run judged by its lines
    log = _server_log(tmp_path / "server.log", [])
    folder = tmp_path / "requests"
    folder.mkdir()
    (folder / "node1_0.log").write_text(_finished("q0", "2026-03-02T10:01:05", [0, 0, 4, 4]) + "\n")
    joined = {v.label: (v.status, v.headline) for v in analyze([log, folder]).verdicts}
    assert joined["node1_0.log#0"] == (
        "healthy",
        "a request log: its rows joined server.log#1; no server lines",
    )
    assert joined["server.log#1"][1].startswith("runs well: accept len 2.50")
    # a server whose lines show no decode (a log level above INFO) while its request log shows requests
    # finished: it served, said so (it read "ready, but served no request in the log")
    quiet = tmp_path / "quiet.log"
    quiet.write_text(
        "\n".join(
            [
                *log.read_text().splitlines()[:1],
                "[2026-03-02 10:00:30] The server is fired up and ready to roll!",
            ]
        )
        + "\n"
    )
    served = {v.label: (v.status, v.headline) for v in analyze([quiet, folder]).verdicts}
    assert served["quiet.log#1"] == (
        "healthy",
        "its request log: 1 request(s) finished, accept len 3.50, rate 83% (sglang requests); no decode line in the log",
    )
