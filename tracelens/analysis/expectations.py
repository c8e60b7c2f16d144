"""What the user expects of the EAGLE-3 hidden-state capture, and SGLang's layer-id convention.

Expectations come from flags, a TOML file, or the model configs: the draft's config.json
(`eagle_config.eagle_aux_hidden_state_layer_ids`) and the target's (`num_hidden_layers`, `hidden_size`,
`architectures`).

SGLang's convention (field guide, section 3): the target captures hidden state at index i *before*
layer i runs, so index i holds the output of layer i-1 and index 0 the embedding output. Explicit ids
from the draft config are shifted by +1 (id k -> index k+1 -> the output of layer k; id -1 -> index 0 ->
the embedding). The default when no ids are given is `[2, N//2, N-3]`, used as indices with no shift.
Since 2026 DeepSeek-V2-family targets skip the shift unless the first id is 1.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from tracelens.errors import InputError

_DSV2_ARCHS = ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")


@dataclass(frozen=True)
class Expectations:
    expect_aux: int | None = None  # how many aux hidden states the draft consumes
    hidden_size: int | None = None  # the target's hidden size
    embed_capture: bool | None = None  # whether the draft was trained with an embedding capture
    aux_layer_ids: tuple[int, ...] | None = None  # the draft config's eagle_aux_hidden_state_layer_ids
    num_layers: int | None = None  # the target's num_hidden_layers
    architecture: str | None = None  # the target's architectures[0]

    def merged(self, other: Expectations) -> Expectations:
        """``other``'s values where it has them, else ours."""
        updates = {
            f.name: getattr(other, f.name) for f in fields(other) if getattr(other, f.name) is not None
        }
        return replace(self, **updates)

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))

    def derived(self) -> Expectations:
        """Fill what the layer ids imply: their count, and whether one of them is the embedding."""
        out = self
        ids = self.aux_layer_ids
        if ids is not None:
            if out.expect_aux is None:
                out = replace(out, expect_aux=len(ids))
            if out.embed_capture is None:
                indices = capture_indices(ids, self.num_layers, self.architecture)
                out = replace(out, embed_capture=0 in indices)
        return out


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(f"no such file: {path}") from exc
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path} as JSON: {exc}") from exc


def from_draft_config(path: Path) -> Expectations:
    data = _read_json(path)
    ids = (data.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        ids = data.get("eagle_aux_hidden_state_layer_ids")
    return Expectations(aux_layer_ids=tuple(int(i) for i in ids) if ids is not None else None)


def from_target_config(path: Path) -> Expectations:
    data = _read_json(path)
    archs = data.get("architectures") or [None]
    return Expectations(
        hidden_size=data.get("hidden_size"), num_layers=data.get("num_hidden_layers"), architecture=archs[0]
    )


def from_toml(path: Path) -> Expectations:
    """`[expect]` table (or top level) with keys: aux, hidden_size, embed_capture, aux_layer_ids,
    num_layers, architecture, draft_config, target_config (paths relative to the file)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(f"no such file: {path}") from exc
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read {path} as TOML: {exc}") from exc
    table = data.get("expect", data)
    out = Expectations()
    for key, loader in (("target_config", from_target_config), ("draft_config", from_draft_config)):
        if key in table:
            out = out.merged(loader((path.parent / table[key]).resolve()))
    ids = table.get("aux_layer_ids")
    return out.merged(
        Expectations(
            expect_aux=table.get("aux"),
            hidden_size=table.get("hidden_size"),
            embed_capture=table.get("embed_capture"),
            aux_layer_ids=tuple(ids) if ids is not None else None,
            num_layers=table.get("num_layers"),
            architecture=table.get("architecture"),
        )
    )


def default_layer_ids(num_layers: int) -> tuple[int, ...]:
    return (2, num_layers // 2, num_layers - 3)


def shifts(ids: tuple[int, ...], architecture: str | None) -> bool:
    """Whether explicit ids are shifted by +1 inside the target."""
    if architecture in _DSV2_ARCHS:
        return bool(ids) and ids[0] == 1
    return True


def capture_indices(
    ids: tuple[int, ...] | None, num_layers: int | None, architecture: str | None
) -> tuple[int, ...]:
    """The indices the target captures at (index 0: the embedding output; index i: layer i-1's output)."""
    if ids is None:
        if num_layers is None:
            return ()
        return default_layer_ids(num_layers)
    offset = 1 if shifts(ids, architecture) else 0
    return tuple(i + offset for i in ids)


def describe_capture(ids: tuple[int, ...] | None, num_layers: int | None, architecture: str | None) -> str:
    """In words, which layer outputs the draft will actually receive."""
    indices = capture_indices(ids, num_layers, architecture)
    if not indices:
        return "unknown (no layer ids and no layer count)"
    source = (
        "default ids, not shifted"
        if ids is None
        else (
            "explicit ids, shifted by one"
            if shifts(ids, architecture)
            else "explicit ids, not shifted (DeepSeek-V2 rule)"
        )
    )
    parts = []
    for index in indices:
        if index == 0:
            parts.append("the embedding output")
        elif index < 0:
            parts.append(f"index {index} (invalid)")
        elif num_layers is not None and index > num_layers:
            parts.append(f"index {index} (past the last layer {num_layers - 1})")
        else:
            parts.append(f"the output of layer {index - 1}")
    return f"{', '.join(parts)} ({source})"
