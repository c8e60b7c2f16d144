"""The gap from training to serving: SpecForge's real draft configs and recipes (`conftest.SPECFORGE`)
paired with logs made for the purpose (`training_support`), read by `tracelens check` as a user runs it
after a disappointing run, and the configs found from the logs' model paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_detectors import AUX3, run, spec_run
from training_support import (
    DEEPSEEK_V3,
    LLAMA_70B,
    llama_log,
    specforge_config,
    training_folder,
    v3_log,
)
from training_support import (
    write_json as write,
)

from tracelens.analysis import Expectations
from tracelens.analysis.training import Training, TrainingInputs, load_training, trainer_default_ids
from tracelens.engine.ingest import analyze
from tracelens.errors import InputError

from conftest import SPECFORGE

KEY = "eagle_config.eagle_aux_hidden_state_layer_ids"
# A plausible evaluation of a DeepSeek-V3 draft at 74.7% first-position accuracy, as SpecForge logs it.
PER_POSITION = [0.747, 0.62, 0.55, 0.50, 0.46, 0.42, 0.40]


def check(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`tracelens check` as a user runs it; its stdout with the printer's line wrapping undone."""
    done = subprocess.run(
        [sys.executable, "-m", "tracelens.cli", "check", *map(str, args), "--no-cache", "-q"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    if "--json" not in args:
        done.stdout = " ".join(done.stdout.split())
    return done


def story(tmp_path: Path, layers: tuple[int, ...]) -> tuple[Path, Path, Path]:
    """The users' story: DeepSeek-V3 (61 layers, 7168 wide) served with SpecForge's draft config edited
    to [-1, 2, 30], a recipe trained on [2, 30, 58]; the log, the draft config, the recipe."""
    target = write(tmp_path / "models" / "DeepSeek-V3" / "config.json", DEEPSEEK_V3).parent
    draft_config = write(
        tmp_path / "models" / "DeepSeek-V3-EAGLE3" / "config.json",
        specforge_config("deepseek-v3-671b-eagle3.json", eagle_aux_hidden_state_layer_ids=[-1, 2, 30]),
    )
    recipe = training_folder(
        tmp_path / "SpecForge",
        "deepseek-v3-671b-eagle3-online.yaml",
        PER_POSITION,
        aux_hidden_state_layer_ids=[2, 30, 58],
    )
    log = v3_log(tmp_path / "serve.log", str(target), str(draft_config.parent), layers=layers)
    return log, draft_config, recipe


def test_the_users_story_names_the_trained_ids_and_the_file(tmp_path: Path) -> None:
    log, draft_config, recipe = story(tmp_path, layers=(-1, 2, 30))
    done = check(log, "--training", recipe)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("BROKEN serve.log#1: the draft is fed layers it was not trained on")
    fix = f"set {KEY} to [2, 30, 58] in {draft_config} and restart"
    assert fix in done.stdout
    # What was captured follows the debug lines (layers_to_capture=[0, 3, 31]): the embedding among them.
    assert (
        "captured for the draft: the embedding output, the output of layer 2, the output of layer 30"
        in done.stdout
    )
    # The measured gap, from the training's own evaluation (1 + 0.747 + 0.747*0.62 + ... at 5 steps).
    assert "is 64% of the 2.65 the training evaluation predicts at 5 steps" in done.stdout
    # Where each config came from.
    assert (
        f"target config from local path {tmp_path}/models/DeepSeek-V3/config.json (61 layers)" in done.stdout
    )
    assert f"draft config from local path {draft_config} (aux ids [-1, 2, 30])" in done.stdout


def test_without_debug_lines_the_draft_config_is_what_the_server_captures(tmp_path: Path) -> None:
    log, draft_config, recipe = story(tmp_path, layers=())
    data = json.loads(check(log, "--training", recipe, "--json").stdout)
    (verdict,) = data["verdicts"]
    assert verdict["causes"][0] == "training-capture-mismatch"
    assert verdict["fix"] == f"set {KEY} to [2, 30, 58] in {draft_config} and restart"
    (cause,) = [f for f in data["findings"] if f["code"] == "training-capture-mismatch"]
    assert cause["message"].startswith("the draft config has aux ids [-1, 2, 30]: the draft gets ")
    assert "it was trained on [2, 30, 58] (the recipe's model.aux_hidden_state_layer_ids" in cause["message"]
    assert "served 1.7" in cause["message"] and "of it)" in cause["message"]
    assert cause["evidence"][0]["text"].find("server_args=") >= 0
    # What was captured is what the served config gives, never the trained ids the expectations hold.
    found = analyze([log], training=TrainingInputs(load_training(recipe)))
    (captured,) = found.runs.get_column("captured_layers").to_list()
    assert captured.endswith(f", per local path {draft_config}") and "layer 57" not in captured


def test_a_config_without_ids_on_an_80_layer_target(tmp_path: Path) -> None:
    # SpecForge's Llama-3.3-70B draft config lists no aux ids: SGLang falls back to [2, 40, 77].
    target = write(tmp_path / "Llama-3.3-70B-Instruct" / "config.json", LLAMA_70B).parent
    draft = write(tmp_path / "draft" / "config.json", specforge_config("llama3-70B-ealge3.json")).parent
    log = llama_log(tmp_path / "serve.log", str(target), str(draft))
    alone = analyze([log], training=TrainingInputs())
    (fallback,) = [f for f in alone.findings if f.code == "draft-ids-fallback"]
    assert fallback.severity == "warning" and fallback.fix is None  # nothing says what it was trained on
    assert (
        "default [2, 40, 77]: the output of layer 1, the output of layer 39, the output of layer 76"
        in fallback.message
    )
    assert "SpecForge's default [1, 39, 76] names those same layers" in fallback.message
    # SpecForge's own recipe for it, unedited: its default ids name the same layers, no gap.
    trained = analyze(
        [log],
        training=TrainingInputs(load_training(SPECFORGE / "examples" / "llama3.3-70b-eagle3-online.yaml")),
    )
    codes = {f.code for f in trained.findings}
    assert "draft-ids-default-matches" in codes and "training-capture-mismatch" not in codes
    # A draft trained on other layers: the fallback is the cause, the fix writes the trained ids.
    recipe = training_folder(
        tmp_path / "sf", "llama3.3-70b-eagle3-online.yaml", aux_hidden_state_layer_ids=[3, 40, 76]
    )
    other = analyze([log], training=TrainingInputs(load_training(recipe)))
    (cause,) = [f for f in other.findings if f.code == "training-capture-mismatch"]
    assert "no aux ids, so SGLang falls back to its default list" in cause.message
    assert cause.fix == f"set {KEY} to [3, 40, 76] in {draft}/config.json and restart"
    assert other.verdicts[0].fix == cause.fix


def test_ids_off_by_one_are_named_so(tmp_path: Path) -> None:
    target = write(tmp_path / "Llama-3.3-70B-Instruct" / "config.json", LLAMA_70B).parent
    draft = write(
        tmp_path / "draft" / "config.json",
        specforge_config("llama3-70B-ealge3.json", eagle_aux_hidden_state_layer_ids=[2, 40, 77]),
    ).parent
    log = llama_log(tmp_path / "serve.log", str(target), str(draft))
    found = analyze(
        [log],
        training=TrainingInputs(load_training(SPECFORGE / "examples" / "llama3.3-70b-eagle3-online.yaml")),
    )
    (cause,) = [f for f in found.findings if f.code == "aux-ids-off-by-one"]
    assert "every id off by one" in cause.message
    assert cause.fix == f"set {KEY} to [1, 39, 76] in {draft}/config.json and restart"


def test_eagle_with_an_eagle3_draft_and_steps_past_the_training(tmp_path: Path) -> None:
    target = write(tmp_path / "DeepSeek-V3" / "config.json", DEEPSEEK_V3).parent
    draft = write(tmp_path / "d" / "config.json", specforge_config("deepseek-v3-671b-eagle3.json")).parent
    log = v3_log(
        tmp_path / "s.log", str(target), str(draft), algorithm="EAGLE", steps=9, accept=(1.0, 1.01, 1.03)
    )
    found = analyze(
        [log],
        training=TrainingInputs(
            load_training(SPECFORGE / "examples" / "deepseek-v3-671b-eagle3-online.yaml")
        ),
    )
    by_code = {f.code: f for f in found.findings}
    assert by_code["eagle3-draft-as-eagle"].fix == "start the server with --speculative-algorithm EAGLE3"
    assert by_code["steps-beyond-training"].fix == "start the server with --speculative-num-steps 7"
    assert found.verdicts[0].causes[0] == "eagle3-draft-as-eagle"


def test_a_draft_for_another_target_and_of_another_width(tmp_path: Path) -> None:
    target = write(tmp_path / "DeepSeek-V3" / "config.json", DEEPSEEK_V3).parent
    draft = write(tmp_path / "d" / "config.json", specforge_config("qwen3-8b-eagle3.json")).parent
    log = v3_log(tmp_path / "s.log", str(target), str(draft))
    found = analyze(
        [log], training=TrainingInputs(load_training(SPECFORGE / "examples" / "qwen3-8b-eagle3-offline.yaml"))
    )
    codes = {f.code: f for f in found.findings}
    assert "trained for Qwen/Qwen3-8B" in codes["draft-for-another-target"].message
    assert "states it reads) is 4096; the target's is 7168" in codes["draft-hidden-size-mismatch"].message
    assert codes["draft-vocab-mismatch"].severity == "error"


def test_the_aux_count_in_every_debug_line_outweighs_one_nan() -> None:
    # Every debug line shows 2 aux states for a draft that reads 3, one shows norm=nan: the count is the cause.
    two = AUX3.replace("num_aux=3", "num_aux=2")
    nan = "EAGLE3_DEBUG[dsv2] aux capture: layer_id=2 shape=torch.Size([1, 8]) norm=nan"
    verdict = run(spec_run([two] * 180 + [nan], accept=1.3), Expectations(expect_aux=3)).verdicts[0]
    assert verdict.causes[0] == "num-aux-mismatch"
    assert "wrong number of aux hidden states" in verdict.headline
    assert verdict.fix is not None and "dtype" not in verdict.fix


def test_every_specforge_recipe_and_config_reads(tmp_path: Path) -> None:
    recipes = sorted((SPECFORGE / "examples").glob("*.yaml"))
    assert len(recipes) == 64
    eagle = 0
    for recipe in recipes:
        training = load_training(recipe)
        assert training.ttt_length is None or training.ttt_length > 0
        assert training.max_length and training.target, recipe.name
        if "eagle3" in recipe.name:
            eagle += 1
            assert training.draft is not None and training.draft.eagle3, recipe.name
            # explicit ids where the draft config lists them, else the trainer's default for the target
            ids = training.trained_ids(61)
            assert ids is not None and len(ids[0]) == 3
    assert eagle >= 30
    configs = sorted((SPECFORGE / "configs").glob("*.json"))
    assert len(configs) == 45
    for config in configs:
        load_training(config)
    assert load_training(SPECFORGE / "configs" / "deepseek-v3-671b-eagle3.json").aux_ids == (1, 29, 57)


def test_predicted_accept_length_from_the_evaluation() -> None:
    training = Training(per_position_acc=(0.8, 0.5, 0.5))
    assert training.predicted_accept_len(1) == pytest.approx(1.8)
    assert training.predicted_accept_len(3) == pytest.approx(1 + 0.8 + 0.4 + 0.2)
    assert training.predicted_accept_len(9) == training.predicted_accept_len(
        3
    )  # untrained positions add nothing
    assert trainer_default_ids(61) == (1, 29, 57) and trainer_default_ids(80) == (1, 39, 76)


def test_a_speculators_draft_names_its_verifier(tmp_path: Path) -> None:
    # The layout of a speculators-format draft's config.json (as RedHatAI's Llama-3.1-8B speculator's).
    draft = {
        "architectures": ["Eagle3Speculator"],
        "speculators_model_type": "eagle3",
        "draft_vocab_size": 32000,
        "norm_before_residual": True,
        "eagle_aux_hidden_state_layer_ids": None,
        "speculators_config": {
            "algorithm": "eagle3",
            "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
            "verifier": {
                "architectures": ["LlamaForCausalLM"],
                "name_or_path": "meta-llama/Llama-3.1-8B-Instruct",
            },
        },
        "transformer_layer_config": {
            "hidden_size": 4096,
            "max_position_embeddings": 2048,
            "vocab_size": 128256,
        },
    }
    training = load_training(write(tmp_path / "spec" / "config.json", draft).parent)
    assert training.target == "meta-llama/Llama-3.1-8B-Instruct"
    assert training.ttt_length == 3 and training.aux_ids is None
    assert training.draft is not None and training.draft.max_position_embeddings == 2048


def test_bad_training_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("model: [unclosed\n")
    log = spec_log(tmp_path)
    for arg in (tmp_path / "bad.yaml", tmp_path / "missing.yaml", tmp_path / "empty"):
        if arg.name == "empty":
            arg.mkdir()
        done = check(log, "--training", arg)
        assert done.returncode == 2, done.stdout
        assert done.stderr.startswith("tracelens: error: ") and len(done.stderr.splitlines()) == 1
    with pytest.raises(InputError, match="not a SpecForge recipe"):
        (tmp_path / "list.yaml").write_text("- 1\n")
        load_training(tmp_path / "list.yaml")


def spec_log(tmp_path: Path) -> Path:
    log = tmp_path / "hand.log"
    log.write_text("\n".join(spec_run([AUX3])) + "\n")
    return log


def test_discovery_can_be_turned_off(tmp_path: Path) -> None:
    log, _, _ = story(tmp_path, layers=())
    found = {f["code"] for f in json.loads(check(log, "--json").stdout)["findings"]}
    assert {"configs-read", "draft-ids-fallback"} & found == {"configs-read"}
    off = {f["code"] for f in json.loads(check(log, "--no-discover", "--json").stdout)["findings"]}
    assert "configs-read" not in off


def test_the_real_corpus_raises_no_training_gap_alarm(real_corpus: Path) -> None:
    # Logs from other machines: their model paths are not here, so nothing is read and nothing is
    # claimed about the training (a finding of the gap needs a config or a training to stand on).
    gap = {"training-capture-mismatch", "aux-ids-off-by-one", "draft-ids-fallback", "eagle3-draft-as-eagle"}
    for log in sorted(real_corpus.glob("*.log")):
        found = analyze([log], training=TrainingInputs())
        assert not [f.code for f in found.findings if f.code in gap | {"configs-read"}], log.name


def test_an_embedding_captured_against_a_config_of_other_ids_is_said_and_the_fix_names_them() -> None:
    # Debug lines show the embedding captured; the draft config a new user tried lists [1, 39, 76].
    embed = "EAGLE3_DEBUG[dsv2] embed capture: layer_id=-1 shape=torch.Size([1, 8]) norm=10.6"
    analysis = run(spec_run([embed, AUX3], accept=1.4), Expectations(aux_layer_ids=(1, 39, 76)))
    (captured,) = analysis.runs.get_column("captured_layers").to_list()
    assert captured.startswith("the token embedding among them, as the debug lines show (layer_id -1)")
    (verdict,) = analysis.verdicts
    assert verdict.causes[0] == "embed-capture-unexpected"
    assert (
        verdict.fix
        == f"set {KEY} to [1, 39, 76] in /d/config.json (the ids the draft was trained on) and restart"
    )


def safetensors(folder: Path, names: list[str]) -> None:
    """A `model.safetensors` with these tensor names in its header (one float each), as safetensors
    lays a file out: the header's length in 8 bytes, the JSON header, the data."""
    header = {
        n: {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i, n in enumerate(names)
    }
    raw = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw + bytes(4 * len(names)))


def test_a_draft_without_its_vocab_mapping_and_with_norm_flags(tmp_path: Path) -> None:
    target = write(tmp_path / "DeepSeek-V3" / "config.json", DEEPSEEK_V3).parent
    draft = write(tmp_path / "d" / "config.json", specforge_config("deepseek-v3-671b-eagle3.json")).parent
    log = v3_log(tmp_path / "s.log", str(target), str(draft))
    safetensors(draft, ["midlayer.self_attn.q_proj.weight", "fc.weight", "lm_head.weight"])
    (missing,) = [
        f for f in analyze([log], training=TrainingInputs()).findings if f.code == "vocab-mapping-missing"
    ]
    assert missing.severity == "error" and "predicts 32000 of the target's 129280 tokens" in missing.message
    safetensors(draft, ["fc.weight", "lm_head.weight", "d2t", "t2d"])
    assert "vocab-mapping-missing" not in {f.code for f in analyze([log], training=TrainingInputs()).findings}
    # SpecForge's EAGLE-3.1 config for Qwen3-30B-A3B trains with fc_norm
    write(draft / "config.json", specforge_config("qwen3-30B-A3B-eagle3.1.json"))
    (flags,) = [f for f in analyze([log], training=TrainingInputs()).findings if f.code == "draft-norm-flags"]
    assert "sets fc_norm" in flags.message


def test_a_training_folder_of_the_trainer_output(tmp_path: Path) -> None:
    # `--training outputs/RUN/`: the best checkpoint's record alone says the accuracy per position.
    recipe = training_folder(tmp_path, "qwen3-8b-eagle3-offline.yaml", [0.8, 0.6, 0.5])
    output = next((tmp_path / "outputs").iterdir())
    training = load_training(output)
    assert training.per_position_acc == (0.8, 0.6, 0.5) and training.best_step == 9000
    assert training.ttt_length == 3 and training.trained_ids(36) is None  # no recipe: no default to assume
    # the recipe's folder: the recipe, its draft config and the record it points to
    whole = load_training(recipe)
    assert whole.target == "Qwen/Qwen3-8B" and whole.per_position_acc == (0.8, 0.6, 0.5)
    assert whole.ttt_length == 7 and whole.trained_ids(36) == (
        (1, 17, 32),
        "SpecForge's default for a 36-layer target",
    )
