"""What a draft was trained on, read from its training: a SpecForge recipe, a speculators-format draft, a
SpecForge draft config, the trainer's best-checkpoint record, or a folder holding them.

The formats, from the sources (sgl-project/SpecForge at a6b6b02, 2026-08-08):
- a recipe (`examples/configs/*.yaml`, schema `specforge/config/schema.py`): `model.target_model_path`,
  `model.draft_model_config` (a path, relative to where the trainer ran: the repository root),
  `model.aux_hidden_state_layer_ids` (None: the draft config's, else the default), `data.max_length`,
  `training.ttt_length`, `run_id`, `output_dir`;
- the aux ids the trainer captured (`specforge/algorithms/model_providers.py`,
  `resolve_eagle_capture_layers`): the recipe's, else the draft config's
  `eagle_config.eagle_aux_hidden_state_layer_ids`, else `[1, n//2 - 1, n - 4]` for a target of n layers.
  SpecForge hands them to SGLang's `set_eagle3_layers_to_capture` (`offline_capture/sglang_backend/
  capture.py`), so they follow SGLang's convention for explicit ids, the same as a served draft config's;
- the best checkpoint's record `{output_dir}/{run_id}.best_meta.json` (`specforge/training/
  checkpoint.py`): `run_id`, `step`, `score`, `metric` (default `eval/simulated_acc_len`) and `metrics`,
  the evaluation's `eval/per_position_acc` (one accuracy per TTT position) and `eval/simulated_acc_len`
  = a0 + a0*a1 + ... (`specforge/eval/evaluator.py`): the drafted tokens expected to be accepted, without
  the target's own bonus token that a server's accept length counts;
- a speculators-format draft's `config.json` (e.g. huggingface.co/RedHatAI/
  Llama-3.1-8B-Instruct-speculator.eagle3): `speculators_config.verifier.name_or_path` (the target),
  `speculators_config.proposal_methods[].speculative_tokens` (the depth it was made for),
  `eagle_aux_hidden_state_layer_ids` (may be null), `transformer_layer_config.{hidden_size,
  max_position_embeddings, vocab_size}`, `draft_vocab_size`, `norm_before_residual`, `norm_before_fc`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tracelens.errors import InputError
from tracelens.sources.model_files import MAX_BYTES, read_limited
from tracelens.sources.ssh import RemoteTarget

BEST_META = ".best_meta.json"


def trainer_default_ids(num_layers: int) -> tuple[int, ...]:
    """SpecForge's default capture layers for a target of ``num_layers`` layers."""
    return (1, num_layers // 2 - 1, num_layers - 4)


@dataclass(frozen=True)
class DraftFacts:
    """What a draft's config.json says (SpecForge's or speculators' form)."""

    architecture: str | None = None
    aux_ids: tuple[int, ...] | None = None
    hidden_size: int | None = None  # the width of the target's hidden states the draft reads
    vocab_size: int | None = None
    draft_vocab_size: int | None = None
    max_position_embeddings: int | None = None
    verifier: str | None = None  # speculators: the target it was trained for
    speculative_tokens: int | None = None  # speculators: the depth it was made for
    norm_flags: tuple[str, ...] = ()  # norm_before_residual / norm_before_fc / fc_norm set true
    eagle3: bool = False  # an EAGLE-3 draft (reads aux hidden states)


def draft_facts(data: dict[str, Any]) -> DraftFacts:
    """`DraftFacts` of a parsed draft config.json."""
    layer = data.get("transformer_layer_config") or {}
    spec = data.get("speculators_config") or {}
    verifier = (spec.get("verifier") or {}).get("name_or_path") if isinstance(spec, dict) else None
    proposals = spec.get("proposal_methods") if isinstance(spec, dict) else None
    tokens = [p.get("speculative_tokens") for p in proposals or [] if isinstance(p, dict)]
    ids = (data.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        ids = data.get("eagle_aux_hidden_state_layer_ids")
    archs = data.get("architectures") or [None]
    arch = archs[0] if isinstance(archs, list) and archs else None
    kind = str(data.get("speculators_model_type") or arch or "")
    flags = tuple(k for k in ("norm_before_residual", "norm_before_fc", "fc_norm") if data.get(k) is True)
    return DraftFacts(
        architecture=arch,
        aux_ids=_ints(ids),
        hidden_size=_int(data.get("target_hidden_size"))
        or _int(layer.get("hidden_size") or data.get("hidden_size")),
        vocab_size=_int(layer.get("vocab_size") or data.get("vocab_size")),
        draft_vocab_size=_int(data.get("draft_vocab_size")),
        max_position_embeddings=_int(
            layer.get("max_position_embeddings") or data.get("max_position_embeddings")
        ),
        verifier=str(verifier) if verifier else None,
        speculative_tokens=_int(next((t for t in tokens if t), None)),
        norm_flags=flags,
        eagle3="eagle3" in kind.lower() or bool((data.get("eagle_config") or {}).get("use_aux_hidden_state")),
    )


@dataclass(frozen=True)
class Training:
    """What `--training` told: each value None when the input did not say."""

    read: tuple[str, ...] = ()  # the files read, in words
    aux_ids: tuple[int, ...] | None = None  # explicit ids (recipe, else draft config)
    aux_from: str | None = None  # where the explicit ids came from
    ttt_length: int | None = None
    max_length: int | None = None
    target: str | None = None  # the target the draft was trained for
    per_position_acc: tuple[float, ...] | None = None
    simulated_acc_len: float | None = None
    best_step: int | None = None
    draft: DraftFacts | None = None
    draft_file: str | None = None  # the draft config the training used, as read
    specforge: bool = False  # a SpecForge recipe was read: its default ids apply when none are explicit

    def trained_ids(self, num_layers: int | None) -> tuple[tuple[int, ...], str] | None:
        """The ids the trainer captured and where they come from: explicit, else SpecForge's default
        for the target's layer count (when that is known)."""
        if self.aux_ids is not None:
            return self.aux_ids, self.aux_from or "the training"
        if num_layers is not None and self.specforge:
            return trainer_default_ids(num_layers), f"SpecForge's default for a {num_layers}-layer target"
        return None

    def predicted_accept_len(self, steps: int | None) -> float | None:
        """The accept length a server should see at ``steps`` draft steps (chain drafting, topk 1), from
        the evaluation's per-position accuracy: 1 (the target's own token) + a0 + a0*a1 + ...; positions
        past the trained ones add nothing (the draft was never scored there)."""
        if not self.per_position_acc:
            return None
        depth = len(self.per_position_acc) if steps is None else min(steps, len(self.per_position_acc))
        total, cumulative = 1.0, 1.0
        for acc in self.per_position_acc[:depth]:
            cumulative *= acc
            total += cumulative
        return total


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ints(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and all(_int(v) is not None for v in value):
        return tuple(value)
    return None


def _read(path: Path, root: Path) -> str:
    text = read_limited(path, root)
    if text is None:
        raise InputError(
            f"cannot read {path} (missing, not a regular file under {root}, or over {MAX_BYTES} bytes)"
        )
    return text


def _json(path: Path, root: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read(path, root))
    except ValueError as exc:
        raise InputError(f"cannot read {path} as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object")
    return data


def _yaml(path: Path, root: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(_read(path, root))
    except yaml.YAMLError as exc:
        raise InputError(f"cannot read {path} as YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise InputError(f"{path}: not a SpecForge recipe (no model: table)")
    return data


def from_best_meta(data: dict[str, Any], where: str) -> Training:
    given = data.get("metrics")
    metrics: dict[str, Any] = given if isinstance(given, dict) else {}
    acc = metrics.get("eval/per_position_acc")
    per_position = tuple(float(a) for a in acc) if isinstance(acc, list) and acc else None
    simulated = metrics.get("eval/simulated_acc_len")
    if simulated is None and data.get("metric") == "eval/simulated_acc_len":
        simulated = data.get("score")
    return Training(
        read=(f"evaluation {where}",),
        per_position_acc=per_position,
        simulated_acc_len=float(simulated) if isinstance(simulated, int | float) else None,
        best_step=_int(data.get("step")),
        ttt_length=len(per_position) if per_position else None,
    )


def from_draft(data: dict[str, Any], where: str) -> Training:
    facts = draft_facts(data)
    return Training(
        read=(f"draft config {where}",),
        aux_ids=facts.aux_ids,
        aux_from=f"the draft config {where}" if facts.aux_ids is not None else None,
        ttt_length=facts.speculative_tokens,
        target=facts.verifier,
        draft=facts,
        draft_file=where,
    )


def _merge(base: Training, more: Training) -> Training:
    """``base`` with what ``more`` adds (base wins where both say)."""
    updates = {
        name: getattr(more, name)
        for name in Training.__dataclass_fields__
        if name not in ("read", "specforge")
        and getattr(base, name) is None
        and getattr(more, name) is not None
    }
    return replace(base, read=base.read + more.read, specforge=base.specforge or more.specforge, **updates)


def from_recipe(path: Path) -> Training:
    """A SpecForge recipe, its draft config and its best checkpoint's record when they are found
    (relative to the recipe's folder or its parent, where the trainer ran)."""
    data = _yaml(path, path.parent)
    model, run = data.get("model") or {}, data.get("training") or {}
    ids = _ints(model.get("aux_hidden_state_layer_ids"))
    out = Training(
        read=(f"recipe {path}",),
        aux_ids=ids,
        aux_from=f"the recipe's model.aux_hidden_state_layer_ids in {path.name}" if ids is not None else None,
        ttt_length=_int(run.get("ttt_length")),
        max_length=_int((data.get("data") or {}).get("max_length")),
        target=str(model["target_model_path"]) if model.get("target_model_path") else None,
        specforge=True,
    )
    draft = model.get("draft_model_config")
    for base in (path.parent, path.parent.parent):
        if isinstance(draft, str) and (base / draft).is_file():
            out = _merge(out, from_draft(_json(base / draft, base), str(base / draft)))
            break
    run_id, output = data.get("run_id"), data.get("output_dir")
    if isinstance(run_id, str) and isinstance(output, str):
        for base in (path.parent, path.parent.parent):
            meta = base / output / f"{run_id}{BEST_META}"
            if meta.is_file():
                out = _merge(out, from_best_meta(_json(meta, base), str(meta)))
                break
    return out


def load_training(path: Path) -> Training:
    """`--training PATH`: a recipe (.yaml/.yml), a draft config or best-checkpoint record (.json), or a
    folder holding them (and `config.json`, the exported draft)."""
    if path.is_dir():
        out = Training()
        recipes = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
        if len(recipes) > 1:
            raise InputError(f"{path} holds {len(recipes)} recipes; name one: --training {recipes[0]}")
        for recipe in recipes:
            out = _merge(out, from_recipe(recipe))
        for meta in sorted(path.glob(f"*{BEST_META}")):
            out = _merge(out, from_best_meta(_json(meta, path), str(meta)))
        if (path / "config.json").is_file():
            out = _merge(out, from_draft(_json(path / "config.json", path), str(path / "config.json")))
        if not out.read:
            raise InputError(f"{path}: no recipe (*.yaml), config.json or *{BEST_META} in it")
        return out
    if not path.exists():
        raise InputError(f"no such file: {path}")
    if path.suffix in (".yaml", ".yml"):
        return from_recipe(path)
    data = _json(path, path.parent)
    if "metrics" in data or "metric" in data:
        return from_best_meta(data, str(path))
    return from_draft(data, str(path))


@dataclass(frozen=True)
class TrainingInputs:
    """What the analysis is told about the training and where the configs are: ``draft_config`` and
    ``target_config`` are the files the user named (not looked up then); ``discover`` looks the others up
    from the logs' model paths, on this machine or, with ``remote``, on that host over ssh."""

    training: Training | None = None
    discover: bool = True
    draft_config: Path | None = None
    target_config: Path | None = None
    remote: RemoteTarget | None = None
    remote_options: tuple[str, ...] = ()
    # the configs looked up so far, by (name, revision, download_dir): a live session analyses every second and asks
    # once (a config that appears later is seen by the next session)
    found: dict[tuple[str, str | None, str | None], Any] = field(
        default_factory=dict, compare=False, repr=False
    )
