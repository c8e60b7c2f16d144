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

import difflib
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


def _config(path: Path) -> dict[str, Any]:
    data = _read_json(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: a model config is a JSON object, got {type(data).__name__}")
    return data


def _wrong(path: Path, key: str, wanted: str, value: Any) -> InputError:
    return InputError(f"{path}: {key} wants {wanted}, got {value!r} ({type(value).__name__})")


def _positive(path: Path, key: str, value: Any) -> int | None:
    """A count read from a file (hidden size, layers, aux states): a whole number of at least 1, as the
    flags that set it want; zero or less would judge a healthy run broken."""
    if value is None:
        return None
    if not _has_type(value, "an integer") or value < 1:
        raise _wrong(path, key, "a whole number of at least 1", value)
    return int(value)


def from_draft_config(path: Path) -> Expectations:
    data = _config(path)
    inner = data.get("eagle_config")
    if inner is not None and not isinstance(inner, dict):
        raise _wrong(path, "eagle_config", "an object", inner)
    ids = (inner or {}).get("eagle_aux_hidden_state_layer_ids")
    if ids is None:
        ids = data.get("eagle_aux_hidden_state_layer_ids")
    if ids is not None and not _has_type(ids, "a list of integers"):
        raise _wrong(path, "eagle_aux_hidden_state_layer_ids", "a list of integers", ids)
    return Expectations(aux_layer_ids=tuple(int(i) for i in ids) if ids is not None else None)


def from_target_config(path: Path) -> Expectations:
    data = _config(path)
    archs = data.get("architectures") or [None]
    if not isinstance(archs, list) or not (archs[0] is None or isinstance(archs[0], str)):
        raise _wrong(path, "architectures", "a list of names", archs)
    return Expectations(
        hidden_size=_positive(path, "hidden_size", data.get("hidden_size")),
        num_layers=_positive(path, "num_hidden_layers", data.get("num_hidden_layers")),
        architecture=archs[0],
    )


# The keys of an expectations file and the TOML type each wants (bool is not an integer here).
_TOML_KEYS: dict[str, str] = {
    "aux": "an integer",
    "hidden_size": "an integer",
    "embed_capture": "true or false",
    "aux_layer_ids": "a list of integers",
    "num_layers": "an integer",
    "architecture": "a string",
    "draft_config": "a path (a string)",
    "target_config": "a path (a string)",
}


def _has_type(value: Any, wanted: str) -> bool:
    if wanted == "an integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if wanted == "true or false":
        return isinstance(value, bool)
    if wanted == "a list of integers":
        return isinstance(value, list) and all(_has_type(v, "an integer") for v in value)
    return isinstance(value, str)


def _check_toml(path: Path, data: dict[str, Any], table: Any) -> None:
    """A misspelt key or a value of the wrong type is an error naming it, never silently ignored."""
    if not isinstance(table, dict):
        raise InputError(f"{path}: [expect] must be a table, got {table!r}")
    keys = list(table) + [k for k in data if k != "expect" and table is not data]
    for key in keys:
        if key not in _TOML_KEYS:
            close = difflib.get_close_matches(key.replace("-", "_").lower(), list(_TOML_KEYS), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise InputError(f"{path}: unknown key {key!r} ({hint}known: {', '.join(_TOML_KEYS)})")
    for key, wanted in _TOML_KEYS.items():
        if key in table and not _has_type(table[key], wanted):
            value = table[key]
            raise InputError(
                f"{path}: {key} wants {wanted}, got {value!r} ({type(value).__name__}); "
                f"for example {key} = {_EXAMPLES[wanted]}"
            )


_EXAMPLES = {
    "an integer": "3",
    "true or false": "true",
    "a list of integers": "[1, 29, 57]",
    "a string": '"LlamaForCausalLM"',
    "a path (a string)": '"config.json"',
}


def from_toml(path: Path) -> Expectations:
    """`[expect]` table (or top level) with keys: aux, hidden_size, embed_capture, aux_layer_ids,
    num_layers, architecture, draft_config, target_config (paths relative to the file)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InputError(f"no such file: {path}") from exc
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read {path} as TOML: {exc}") from exc
    table = data.get("expect", data)
    _check_toml(path, data, table)
    out = Expectations()
    for key, loader in (("target_config", from_target_config), ("draft_config", from_draft_config)):
        if key in table:
            out = out.merged(loader((path.parent / table[key]).resolve()))
    ids = table.get("aux_layer_ids")
    return out.merged(
        Expectations(
            expect_aux=_positive(path, "aux", table.get("aux")),
            hidden_size=_positive(path, "hidden_size", table.get("hidden_size")),
            embed_capture=table.get("embed_capture"),
            aux_layer_ids=tuple(ids) if ids is not None else None,
            num_layers=_positive(path, "num_layers", table.get("num_layers")),
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
    return describe_indices(indices, num_layers, source)


def describe_indices(indices: tuple[int, ...], num_layers: int | None, source: str) -> str:
    """In words, what capture ``indices`` hand the draft (index 0: the embedding output; index i: the
    output of layer i-1), and in brackets where they come from."""
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
