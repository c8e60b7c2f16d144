"""Verdicts: each causal rule of `RULES` on a small hand-made log that shows its cause and symptom, and
the statuses a run without a rule gets (degraded, incomplete, healthy)."""

from __future__ import annotations

import pytest
from test_detectors import AUX3, decode, run, server_args, spec_run, stamp

from tracelens.analysis import Analysis, Expectations
from tracelens.analysis.training import TrainingInputs
from tracelens.analysis.verdicts import RULES, STATUSES, Verdict

from conftest import SPECFORGE

EMBED = "EAGLE3_DEBUG[dsv2] embed capture: layer_id=-1 shape=torch.Size([1, 8]) norm=10.6"
IDS = "EAGLE3_DEBUG[dsv2] set aux layers: layer_ids=[-1, 2, 30], layers_to_capture=[0, 3, 31]"
NAN = "EAGLE3_DEBUG[dsv2] aux capture: layer_id=2 shape=torch.Size([1, 8]) norm=nan"
TWO_AUX = AUX3.replace("num_aux=3", "num_aux=2")


def crash(at: float) -> list[str]:
    """A scheduler traceback ending in the shape error a two-aux capture gives the draft's fc layer."""
    return [
        f"{stamp(at)} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sglang/srt/models/llama_eagle3.py", line 120, in forward',
        "    hidden_states = self.fc(hidden_states)",
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (1x16384 and 24576x8192)",
        f"{stamp(at + 1, '')} Received sigquit from a child process. It usually means the child failed.",
    ]


def only(analysis: Analysis) -> Verdict:
    (verdict,) = analysis.verdicts
    return verdict


# One case per rule: the log, the expectations, and the causes and explained symptoms the verdict names.
CASES = {
    "capture-layers": (
        spec_run([IDS, EMBED, AUX3], accept=1.4),
        None,
        ["embed-capture-unexpected"],
        ["acceptance-low"],
    ),
    "aux-shape": (
        spec_run([TWO_AUX], n_decode=5) + crash(200),
        Expectations(expect_aux=3),
        ["num-aux-mismatch"],
        ["fault-exception", "fault-sigquit"],
    ),
    "invalid-norms": (spec_run([NAN, AUX3], accept=1.02), None, ["norm-invalid"], ["acceptance-useless"]),
    # SpecForge's EAGLE-3 draft config served with --speculative-algorithm EAGLE: accept len 1.00
    "training-gap": (
        [line.replace("'EAGLE3'", "'EAGLE'") for line in spec_run([], accept=1.0)],
        None,
        ["eagle3-draft-as-eagle"],
        ["acceptance-useless"],
    ),
    # vLLM drafting 15 tokens a step whose last 10 positions accept nothing: a tuning, not a breakage
    "spec-depth": (
        [
            "INFO 05-01 14:24:50 [metrics.py:101] SpecDecoding metrics: Mean acceptance length: 2.37, Accepted: "
            "89 tokens, Drafted: 975 tokens, Per-position acceptance rate: 0.600, 0.385, 0.215, 0.108, 0.062"
            + ", 0.000"
            * 10
        ],
        None,
        ["spec-depth-wasted"],
        ["acceptance-low"],
    ),
}
# The status each rule gives when its cause explains a symptom.
STATUS = {"spec-depth": "degraded"}
# What the analysis is told besides the expectations, for the cases that need it.
INPUTS = {
    "training-gap": TrainingInputs(draft_config=SPECFORGE / "configs" / "deepseek-v3-671b-eagle3.json"),
}


def test_every_rule_has_a_case() -> None:
    assert sorted(CASES) == sorted(rule.name for rule in RULES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_ties_the_cause_to_its_symptom(name: str) -> None:
    lines, expect, causes, explains = CASES[name]
    verdict = only(run(lines, expect, training=INPUTS.get(name)))
    assert verdict.status == STATUS.get(name, "broken")
    assert verdict.causes == causes
    assert verdict.explains == explains
    assert verdict.fix
    assert verdict.evidence


def test_causes_listed_before_the_symptoms_they_explain() -> None:
    # With no expectations both are warnings; the capture that explains the low acceptance comes first.
    analysis = run(spec_run([EMBED, AUX3], accept=1.4))
    codes = [f.code for f in analysis.findings]
    assert codes.index("embed-capture-unexpected") < codes.index("acceptance-low")


def test_wrong_layer_ids_against_the_draft_config_give_the_fix_and_the_ids_line() -> None:
    expect = Expectations(aux_layer_ids=(2, 30, 58)).derived()
    verdict = only(run(spec_run([IDS, EMBED, AUX3], accept=1.4), expect))
    assert verdict.status == "broken"
    assert verdict.causes[0] == "layer-ids-mismatch"
    assert "acceptance-low" in verdict.explains
    assert verdict.fix is not None
    assert verdict.fix.startswith(
        "the server captures layers [-1, 2, 30]; the draft was trained on [2, 30, 58]: set"
    )
    # Line 3 of the log is the first debug line, the one that prints layer_ids=[-1, 2, 30].
    assert verdict.evidence[0].line_no == 3


def test_regressed_acceptance_is_explained_by_the_capture_of_the_later_run() -> None:
    good = spec_run([AUX3], accept=2.8)
    bad = spec_run([EMBED, AUX3], accept=1.7, t0=1000)
    analysis = run(good + bad)
    worst = analysis.verdicts[0]
    assert (worst.label, worst.status) == ("hand.log#2", "broken")
    assert "acceptance-regressed" in worst.explains
    assert analysis.verdicts[1].status == "healthy"


def test_concat_width_explains_the_crash() -> None:
    wide = "EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 16]) norm=5.0"
    verdict = only(
        run(spec_run([AUX3, wide], n_decode=5) + crash(200), Expectations(expect_aux=3, hidden_size=8))
    )
    assert verdict.status == "broken"
    assert "concat-width-mismatch" in verdict.causes
    assert "fault-exception" in verdict.explains


def test_a_shape_error_crash_names_the_aux_count_the_draft_takes_without_any_config() -> None:
    # The story's run 3: two aux states captured, the draft's fc layer takes three.
    two = "EAGLE3_DEBUG[dsv2] forward end: num_aux=2, shapes=[torch.Size([1, 8]), torch.Size([1, 8])]"
    lines = spec_run([two], n_decode=5) + crash(200)
    lines = [line.replace("(1x16384 and 24576x8192)", "(1x16 and 24x8)") for line in lines]
    verdict = only(run(lines))
    assert verdict.status == "broken"
    assert verdict.causes == ["aux-count-vs-draft"]
    assert verdict.explains == ["fault-exception", "fault-sigquit"]
    assert verdict.fix is not None and "hands the draft 2 aux hidden states; it expects 3" in verdict.fix


def test_symptom_without_cause_is_degraded() -> None:
    verdict = only(run(spec_run([], accept=1.4)))
    assert verdict.status == "degraded"
    assert verdict.causes == [] and verdict.explains == []
    assert "no cause found" in verdict.headline
    assert verdict.evidence


def test_crash_with_no_rule_is_broken_by_the_fault_itself() -> None:
    verdict = only(run(spec_run([AUX3], n_decode=5) + crash(200)))
    assert verdict.status == "broken"
    # the earliest fatal event is the cause (an exception no catalog entry knows); the sigquit after it
    # is what it explains
    assert verdict.causes == ["exception"]
    assert verdict.explains == ["SIGQUIT from a child process"]
    assert verdict.headline.startswith("crashed while serving: RuntimeError: mat1 and mat2 shapes")


def test_incomplete_and_healthy_runs() -> None:
    starting = [server_args(0), f"{stamp(5, '')} The server is fired up and ready to roll!"]
    assert only(run(starting)).status == "incomplete"
    healthy = only(run([*spec_run([AUX3]), decode(500)]))
    assert healthy.status == "healthy"
    assert healthy.headline.startswith("runs well: accept len 2.50")


def test_verdicts_worst_first_and_on_the_runs_frame() -> None:
    analysis = run(spec_run([AUX3]) + spec_run([NAN, AUX3], accept=1.02, t0=1000))
    assert [v.status for v in analysis.verdicts] == ["broken", "healthy"]
    assert all(v.status in STATUSES for v in analysis.verdicts)
    statuses = dict(analysis.runs.select("label", "status").iter_rows())
    assert statuses == {"hand.log#1": "healthy", "hand.log#2": "broken"}
