"""One set of facts about a run: whether it drafts, with what, and against which baseline, decided once
by the analysis (`analysis.speculation`, `compare.pick_baselines`) and read by every view. A log that
starts after the server args still shows a drafting server by its accept len; `compare` says why a
speedup is missing; a baseline of another model is refused."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest
from test_cli import run

from tracelens.analysis.summary import summarize
from tracelens.engine.ingest import analyze
from tracelens.live.status import run_status
from tracelens.report import render_html
from tracelens.tables.schema import A, C

START = dt.datetime(2026, 11, 20, 10, 0, 0)


def server_log(
    path: Path,
    *,
    model: str = "/models/DeepSeek-V3",
    speculative: bool = True,
    args: bool = True,
    batch_sizes: tuple[int, int] = (1, 8),
    decode_lines: int = 240,
    seed: int = 3,
) -> Path:
    """One server start (its `server_args` line unless ``args`` is false) and ``decode_lines`` decode
    lines a second apart, with an accept len when ``speculative``, at batch sizes in ``batch_sizes``."""
    stamp = lambda s: (START + dt.timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")  # noqa: E731
    spec = (
        "speculative_algorithm='EAGLE3', speculative_draft_model_path='/models/draft', "
        "speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, "
        if speculative
        else ""
    )
    lines = []
    if args:
        lines.append(
            f"[{stamp(0)}] server_args=ServerArgs(model_path='{model}', tp_size=1, {spec}port=30000)"
        )
    lines.append(f"[{stamp(5)}] The server is fired up and ready to roll!")
    rng = np.random.default_rng(seed)
    low, high = batch_sizes
    for i in range(decode_lines):
        accept = f"accept len: {2.5 + 0.2 * rng.standard_normal():.2f}, " if speculative else ""
        speed = (120 if speculative else 80) + 5 * rng.standard_normal()
        lines.append(
            f"[{stamp(10 + i)} TP0] Decode batch, #running-req: {rng.integers(low, high + 1)}, #token: 1000, "
            f"token usage: 0.02, {accept}cuda graph: True, gen throughput (token/s): {speed:.2f}, "
            "#queue-req: 0, "
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_run_with_an_accept_len_but_no_server_args_drafts_in_every_view(tmp_path: Path) -> None:
    server_log(tmp_path / "tail.log", args=False)
    server_log(tmp_path / "plain.log", args=False, speculative=False)
    analysis = analyze([tmp_path])
    runs = {r[A.LABEL]: r for r in analysis.runs.to_dicts()}
    assert runs["tail.log#0"][A.SPECULATIVE] and runs["tail.log#0"][A.SPECULATIVE_FROM] == "decode lines"
    assert not runs["plain.log#0"][A.SPECULATIVE] and runs["plain.log#0"][A.SPECULATIVE_FROM] is None
    assert runs["tail.log#0"][C.SPEC_ALGORITHM] is None  # the algorithm is not made up
    summary = {r["label"]: r for r in summarize(analysis)["runs"]}
    assert summary["tail.log#0"]["speculative"]["seen_in"] == "decode lines"
    assert summary["plain.log#0"]["speculative"] is None
    rows = run("summary", str(tmp_path), "--no-cache").stdout.split("tail.log#0")
    assert "│ none " in rows[0].split("plain.log#0")[1] and "speculative (algorithm not" in rows[1]
    page, _ = render_html(analysis)
    card = page.split('<span class="label">tail.log#0</span>', 1)[1].split("</article>", 1)[0]
    assert "no speculative decoding" not in card and "speculative (algorithm not logged" in card
    live = run_status(analysis, str(tmp_path / "tail.log"))
    assert live.speculative == "speculative (algorithm not logged)"
    compared = run("compare", str(tmp_path), "--no-cache").stdout
    assert "no speculation" in compared.split("plain.log#0")[1].split("tail.log#0")[0]
    assert "speculative; no baseline: the log does not name the model" in compared


def _notes(analysis) -> dict[str, str | None]:
    return dict(analysis.runs.select(A.LABEL, A.SPEEDUP_NOTE).iter_rows())


def test_compare_says_why_a_speedup_is_missing(tmp_path: Path) -> None:
    server_log(tmp_path / "base.log", speculative=False, batch_sizes=(1, 4))
    server_log(tmp_path / "fast.log", batch_sizes=(1, 4))
    server_log(tmp_path / "big.log", batch_sizes=(16, 20))
    server_log(tmp_path / "llama.log", model="/models/Llama-3.1-8B")
    analysis = analyze([tmp_path])
    speedups = dict(analysis.runs.select(A.LABEL, A.SPEEDUP).iter_rows())
    assert speedups["fast.log#1"] is not None and speedups["fast.log#1"] > 1
    assert _notes(analysis) == {
        "base.log#1": "the baseline",
        "big.log#1": "no batch size shared with base.log#1",
        "fast.log#1": None,
        "llama.log#1": "no baseline: no run of /models/Llama-3.1-8B without speculative decoding",
    }
    text = run("compare", str(tmp_path), "--no-cache").stdout
    assert "EAGLE3 s3 k1 d4; no batch size shared with base.log#1" in text
    page, _ = render_html(analysis)
    card = page.split('<span class="label">big.log#1</span>', 1)[1].split("</article>", 1)[0]
    assert "no speedup" in card and "no batch size shared with" in card
    # named, the baseline is still one of its model's: the other model's run is not measured against it
    named = analyze([tmp_path], baseline="base.log#1")
    assert _notes(named)["llama.log#1"] == "a different model from base.log#1 (/models/DeepSeek-V3)"
    assert dict(named.runs.select(A.LABEL, A.SPEEDUP).iter_rows())["llama.log#1"] is None


@pytest.mark.parametrize("command", ["compare", "check", "report"])
def test_an_explicit_baseline_of_another_model_is_refused(tmp_path: Path, command: str) -> None:
    server_log(tmp_path / "base.log", speculative=False)
    server_log(tmp_path / "llama.log", model="/models/Llama-3.1-8B")
    done = run(command, "base.log", "llama.log", "--no-cache", "--baseline", "base.log#1", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith("tracelens: error: --baseline base.log#1 serves /models/DeepSeek-V3")
    assert "llama.log#1: /models/Llama-3.1-8B" in done.stderr
    assert not (tmp_path / "report.html").exists()


def test_the_summary_json_says_what_decided_it(tmp_path: Path) -> None:
    server_log(tmp_path / "spec.log")
    payload = json.loads(run("summary", str(tmp_path), "--json", "--no-cache").stdout)
    (spec,) = [r["speculative"] for r in payload["runs"] if r["run"] == 1]
    assert spec["algorithm"] == "EAGLE3" and spec["seen_in"] == "server args" and spec["num_steps"] == 3
