"""Logs, configs and training folders made for the training-gap tests, the way `sample_logs` makes its
logs (its generator writes them), beside SpecForge's real draft configs and recipes (`conftest.SPECFORGE`),
which are read in place and, where a story needs a change, copied with that one change."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from conftest import ROOT, SPECFORGE

if str(ROOT) not in sys.path:  # the generator is the checkout's `sample_logs` package
    sys.path.insert(0, str(ROOT))

from sample_logs.config import Server, Spec, Workload
from sample_logs.dialects import Dialect
from sample_logs.log import Log, as_text
from sample_logs.models import V3, V3_EAGLE3, llama
from sample_logs.traffic import single_run

# The target configs SpecForge's corpus lacks (it holds drafts only): the fields a target's
# config.json has that the checks read, with the published models' values.
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "model_type": "deepseek_v3",
    "num_hidden_layers": 61,
    "hidden_size": 7168,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
}
LLAMA_70B = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 80,
    "hidden_size": 8192,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


def write_json(path: Path, data: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path


def specforge_config(name: str, **eagle: Any) -> dict[str, Any]:
    """A SpecForge draft config from the corpus, with ``eagle`` set in its eagle_config."""
    data = json.loads((SPECFORGE / "configs" / name).read_text())
    if eagle:
        data.setdefault("eagle_config", {}).update(eagle)
    return data


def training_folder(folder: Path, recipe: str, per_position: list[float] | None = None, **model: Any) -> Path:
    """A folder laid out as SpecForge's checkout after a run: `examples/RECIPE` (the corpus recipe with
    ``model`` keys set), `configs/` (the corpus configs) and, with ``per_position``, the best
    checkpoint's `{output_dir}/{run_id}.best_meta.json` as `training/checkpoint.py` writes it."""
    shutil.copytree(SPECFORGE / "configs", folder / "configs")
    data = yaml.safe_load((SPECFORGE / "examples" / recipe).read_text())
    data["model"].update(model)
    path = folder / "examples" / recipe
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    if per_position is not None:
        total, cumulative = 0.0, 1.0
        for acc in per_position:
            cumulative *= acc
            total += cumulative
        metrics = {
            "eval/avg_loss": 1.9,
            "eval/avg_acc": per_position[0],
            "eval/per_position_acc": per_position,
            "eval/simulated_acc_len": total,
        }
        meta = {"run_id": data["run_id"], "step": 9000, "score": total, "metric": "eval/simulated_acc_len"}
        write_json(
            folder / data["output_dir"] / f"{data['run_id']}.best_meta.json", {**meta, "metrics": metrics}
        )
    return path


def v3_log(
    path: Path,
    target: str,
    draft: str,
    *,
    layers: tuple[int, ...] = (),
    steps: int = 5,
    accept: tuple[float, float, float] = (1.6, 1.7, 1.8),
    algorithm: str = "EAGLE3",
) -> Path:
    """A DeepSeek-V3 EAGLE-3 run serving from ``target`` and ``draft`` (names as the log prints them);
    ``layers`` turns on the hand-added debug prints of those aux ids."""
    srv = Server(
        target=replace(V3, path=target, load_seconds=60.0),
        spec=Spec(algorithm, replace(V3_EAGLE3, path=draft), num_steps=steps, topk=1, draft_tokens=steps + 1),
        kv_pool_gb=6.2,
        max_running=48,
        pid=4242,
        seed=7,
    )
    log = Log(Dialect(), datetime(2026, 11, 20, 10, 41, 52))
    work = Workload(minutes=3, step_rate=30.0, accept=accept)
    path.write_text(as_text(single_run(log, srv, work, seed=11, layers=layers).lines()))
    return path


def llama_log(path: Path, target: str, draft: str, *, steps: int = 5, accept=(1.0, 1.05, 1.1)) -> Path:
    """A Llama-3.3-70B EAGLE-3 run (80 layers), no debug prints."""
    model = llama(target, 131.0, 2 * 80 * 8 * 128 * 2, 30, 90.0)
    srv = Server(
        target=model,
        spec=Spec("EAGLE3", replace(V3_EAGLE3, path=draft), num_steps=steps, topk=1, draft_tokens=steps + 1),
        pid=5151,
        seed=9,
    )
    log = Log(Dialect(), datetime(2026, 11, 21, 9, 0, 0))
    path.write_text(
        as_text(single_run(log, srv, Workload(minutes=3, step_rate=40.0, accept=accept), seed=13).lines())
    )
    return path
