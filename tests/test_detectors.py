"""Each detector on a small hand-made log, including the edge cases: no debug lines at all, one decode
line, no server args, an empty input."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from tracelens.analysis import Analysis, Expectations, analyze_tables
from tracelens.analysis.expectations import capture_indices, describe_capture, from_draft_config, from_toml
from tracelens.engine.ingest import parse_text
from tracelens.tables.schema import A, C

START = dt.datetime(2026, 1, 1, 10, 0, 0)


def stamp(seconds: float, tags: str = " TP0") -> str:
    return f"[{(START + dt.timedelta(seconds=seconds)):%Y-%m-%d %H:%M:%S}{tags}]"


def server_args(at: float, spec: bool = True, steps: int = 4, draft: str = "/d") -> str:
    algo = "'EAGLE3'" if spec else "None"
    path = f"'{draft}'" if spec else "None"
    ndt = steps + 1 if spec else None
    return (
        f"{stamp(at, '')} server_args=ServerArgs(model_path='/m', tp_size=1, dp_size=1, "
        f"speculative_algorithm={algo}, speculative_draft_model_path={path}, speculative_num_steps={steps if spec else None}, "
        f"speculative_eagle_topk={1 if spec else None}, speculative_num_draft_tokens={ndt}, disable_cuda_graph=False)"
    )


def decode(at: float, accept: float | None = 2.5, tput: float = 90.0, running: int = 1) -> str:
    acc = f"accept len: {accept:.2f}, " if accept is not None else ""
    return (
        f"{stamp(at)} Decode batch, #running-req: {running}, #token: 100, token usage: 0.01, {acc}"
        f"gen throughput (token/s): {tput:.2f}, #queue-req: 0, "
    )


def run(lines: list[str], expect: Expectations | None = None, **kwargs) -> Analysis:
    return analyze_tables(parse_text("\n".join(lines) + "\n", "hand.log"), expect, **kwargs)


def codes(analysis: Analysis) -> dict[str, str]:
    return {f.code: f.severity for f in analysis.findings}


def spec_run(debug: list[str], n_decode: int = 30, accept: float = 2.5, t0: float = 0.0) -> list[str]:
    body = [server_args(t0), f"{stamp(t0 + 5, '')} The server is fired up and ready to roll!"]
    body += [f"{stamp(t0 + 6)} {d}" for d in debug]
    body += [decode(t0 + 100 + i, accept) for i in range(n_decode)]
    return body


AUX3 = "EAGLE3_DEBUG[dsv2] forward end: num_aux=3, shapes=[torch.Size([1, 8]), torch.Size([1, 8]), torch.Size([1, 8])]"


def test_aux_count_against_expectation_and_within_run() -> None:
    two = AUX3.replace("num_aux=3", "num_aux=2")
    assert codes(run(spec_run([AUX3, two]), Expectations(expect_aux=3)))["num-aux-mismatch"] == "error"
    assert codes(run(spec_run([AUX3, two])))["num-aux-changed"] == "warning"
    assert "num-aux-mismatch" not in codes(run(spec_run([AUX3]), Expectations(expect_aux=3)))


def test_shapes_between_sites_and_concatenated_width() -> None:
    other = "EAGLE3_DEBUG[logits] FULL cat: num_items=3, shapes=[torch.Size([1, 4]), torch.Size([1, 4]), torch.Size([1, 4])]"
    assert "shapes-inconsistent" in codes(run(spec_run([AUX3, other])))
    wide = "EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 16]) norm=5.0"
    found = codes(run(spec_run([AUX3, wide]), Expectations(expect_aux=3, hidden_size=8)))
    assert found["concat-width-mismatch"] == "error"
    right = "EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 24]) norm=5.0"
    assert "concat-width-mismatch" not in codes(
        run(spec_run([AUX3, right]), Expectations(expect_aux=3, hidden_size=8))
    )


def test_half_a_decode_step_does_not_read_as_inconsistent_shapes() -> None:
    # Live, an analysis may see the first site of a step at batch 2 before the second site prints it.
    cat = "EAGLE3_DEBUG[logits] FULL cat: num_items=3, shapes=[torch.Size([1, 8]), torch.Size([1, 8]), torch.Size([1, 8])]"
    half = AUX3.replace("[1, 8]", "[2, 8]")
    assert "shapes-inconsistent" not in codes(run(spec_run([AUX3, cat] * 5 + [half])))


def test_embed_capture_against_expectation() -> None:
    embed = "EAGLE3_DEBUG[dsv2] embed capture: layer_id=-1 shape=torch.Size([1, 8]) norm=10.6"
    assert codes(run(spec_run([embed, AUX3])))["embed-capture-unexpected"] == "warning"
    assert (
        codes(run(spec_run([embed, AUX3]), Expectations(embed_capture=False)))["embed-capture-unexpected"]
        == "error"
    )
    assert codes(run(spec_run([AUX3]), Expectations(embed_capture=True)))["embed-capture-missing"] == "error"
    assert codes(run(spec_run([embed, AUX3]), Expectations(embed_capture=True))) == {}
    states = run(spec_run([embed]), Expectations(embed_capture=False)).embed
    assert states.get_column(A.EMBED_STATE).to_list() == ["unexpected"]


def test_expectation_from_draft_layer_ids_derives_the_embed_capture(tmp_path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"eagle_config": {"eagle_aux_hidden_state_layer_ids": [2, 30, 58]}}')
    expect = from_draft_config(config).derived()
    assert (expect.expect_aux, expect.embed_capture) == (3, False)
    toml = tmp_path / "expect.toml"
    toml.write_text('[expect]\ndraft_config = "config.json"\nhidden_size = 7168\n')
    assert from_toml(toml).derived().hidden_size == 7168


def test_layer_id_convention_in_words() -> None:
    assert capture_indices((-1, 2, 30), 61, None) == (0, 3, 31)
    assert capture_indices(None, 61, None) == (2, 30, 58)
    assert capture_indices((2, 30, 58), 61, "DeepseekV3ForCausalLM") == (2, 30, 58)
    assert capture_indices((1, 30, 58), 61, "DeepseekV3ForCausalLM") == (2, 31, 59)
    assert describe_capture((-1, 2, 30), 61, None).startswith("the embedding output, the output of layer 2")


def test_layer_ids_invalid_and_convention() -> None:
    bad = "EAGLE3_DEBUG[dsv2] set aux layers: layer_ids=[-2, 5, 5]"
    found = codes(run(spec_run([bad])))
    assert found["layer-ids-invalid"] == "error"
    past = codes(run(spec_run([]), Expectations(aux_layer_ids=(2, 30, 70), num_layers=61)))
    assert past["layer-ids-invalid"] == "error"
    default = codes(run(spec_run([]), Expectations(aux_layer_ids=(2, 30, 58), num_layers=61)))
    assert default["layer-ids-convention"] == "info"


def test_norms_invalid_and_outliers() -> None:
    nan = "EAGLE3_DEBUG[dsv2] aux capture: layer_id=2 shape=torch.Size([1, 8]) norm=nan"
    assert codes(run(spec_run([nan])))["norm-invalid"] == "error"
    usual = [
        f"EAGLE3_DEBUG[dsv2] aux capture: layer_id=2 shape=torch.Size([1, 8]) norm={10 + i % 3 * 0.1:.2f}"
        for i in range(30)
    ]
    spike = "EAGLE3_DEBUG[dsv2] aux capture: layer_id=2 shape=torch.Size([1, 8]) norm=900.0"
    assert codes(run(spec_run([*usual, spike])))["norm-outlier"] == "warning"
    assert "norm-outlier" not in codes(run(spec_run(usual)))


def test_truncated_debug_line() -> None:
    analysis = run(spec_run(["EAGLE3_DEBUG[eagle"]))
    assert codes(analysis)["debug-truncated"] == "warning"


def test_acceptance_useless_low_and_regressed() -> None:
    assert codes(run(spec_run([], accept=1.02)))["acceptance-useless"] == "error"
    assert codes(run(spec_run([], accept=1.4)))["acceptance-low"] == "warning"
    good_then_bad = spec_run([], accept=2.8) + spec_run([], accept=1.6, t0=1000)
    assert codes(run(good_then_bad))["acceptance-regressed"] == "warning"
    assert codes(run(spec_run([], accept=2.8))) == {}


def test_acceptance_step_inside_a_run() -> None:
    lines = [
        server_args(0),
        *(decode(10 + i, 2.8) for i in range(40)),
        *(decode(60 + i, 1.9) for i in range(40)),
    ]
    analysis = run(lines)
    assert codes(analysis)["accept-len-step"] == "warning"
    change = analysis.changes.row(0, named=True)
    assert change[A.BEFORE] == pytest.approx(2.8) and change[A.AFTER] == pytest.approx(1.9)


def test_speedup_and_slower_than_baseline() -> None:
    base = [server_args(0, spec=False), *(decode(20 + i, None, 90.0 + i % 2) for i in range(40))]
    spec = [server_args(500), *(decode(520 + i, 1.7, 55.0 + i % 2) for i in range(40))]
    analysis = run(base + spec)
    row = analysis.runs.filter(pl.col(C.RUN) == 2).row(0, named=True)
    assert row[A.BASELINE] == "hand.log#1"
    assert row[A.SPEEDUP] == pytest.approx(55.5 / 90.5, rel=0.01)
    assert codes(analysis)["slower-than-baseline"] == "warning"


def test_startup_stall_and_slow_start() -> None:
    lines = [
        server_args(0, spec=False),
        f"{stamp(1)} Load weight begin. avail mem=78.00 GB",
        f"{stamp(800)} Load weight end. type=X, avail mem=10.00 GB, mem usage=60.00 GB.",
        f"{stamp(810, '')} The server is fired up and ready to roll!",
        decode(1020, None),
    ]
    analysis = run(lines, stall_seconds=600)
    stall = next(f for f in analysis.findings if f.code == "startup-stall")
    assert "799 s" in stall.message and stall.evidence[0].line_no == 3
    assert "startup-stall" not in codes(run(lines))  # default: a quarter hour
    phases = analysis.startup.get_column(A.PHASE_NAME).to_list()
    assert phases == ["weight load (target)"]


def test_rank_tracebacks_fold_into_one_incident() -> None:
    lines = [server_args(0, spec=False)]
    for rank in range(4):
        lines += [
            f"{stamp(50, f' TP{rank}')} Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/x/scheduler.py", line 1, in run',
            "    boom()",
            "RuntimeError: NCCL error: unhandled",
        ]
    lines.append(f"{stamp(51, '')} Received sigquit from a child process. It usually means the child failed.")
    analysis = run(lines)
    crash = analysis.incidents.filter(pl.col(C.COMPONENT) == "Scheduler")
    assert crash.height == 1 and crash.item(0, A.RANKS).to_list() == [0, 1, 2, 3]
    assert crash.item(0, C.EXCEPTION_TYPE) == "RuntimeError"
    assert codes(analysis)["fault-exception"] == "error" and codes(analysis)["fault-sigquit"] == "error"


def test_vllm_per_position_cliff() -> None:
    line = (
        "INFO 06-01 10:00:00 [metrics.py:53] SpecDecoding metrics: Mean acceptance length: 2.51, Accepted "
        "throughput: 30.10 tokens/s, Drafted throughput: 60.00 tokens/s, Accepted: 301 tokens, Drafted: 600 "
        "tokens, Per-position acceptance rate: 0.812, 0.703, 0.195, Avg Draft acceptance rate: 50.2%"
    )
    analysis = run([line, line])
    assert codes(analysis)["spec-position-cliff"] == "warning"
    assert analysis.spec_curves.get_column(A.RATE).to_list() == pytest.approx([0.812, 0.703, 0.195])


def test_edge_cases_do_not_break_the_analysis() -> None:
    no_debug = run(spec_run([]))
    assert no_debug.embed.get_column(A.EMBED_STATE).to_list() == ["no debug lines"]
    one_line = run([server_args(0), decode(10, 2.5)])
    assert one_line.series.height == 1 and one_line.changes.height == 0
    no_args = run([decode(10 + i, 2.5) for i in range(5)])
    assert no_args.runs.height == 1 and no_args.runs.item(0, C.SPEC_ALGORITHM) is None
    assert no_args.findings == []
    empty = analyze_tables(parse_text("", "empty.log"))
    assert empty.runs.height == 0 and empty.findings == []
