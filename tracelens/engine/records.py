"""Dataclasses read from JSON and checked on the way: the engine's manifest and journal are files that
a user, another tracelens or a killed run may have left in any state, so every field is checked against
its type hint before the engine trusts it. A field that does not fit is a `RecordError` naming where it
is (``manifest.tasks['3f2a'].units[0].start``), never a KeyError or TypeError deep in a commit.

The hints this reads are the plain ones the records use: str, int, float, bool, None, list[X],
tuple[X, Y], dict[str, X], unions of those, another dataclass, and bare ``list`` (anything in a list).
Keys a record does not name are ignored; a missing field without a default is an error.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar, get_args, get_origin, get_type_hints

R = TypeVar("R")


class RecordError(ValueError):
    """A JSON value that does not fit its record."""


_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}


def _found(value: object) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return _JSON_NAMES.get(type(value), type(value).__name__)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def from_json(cls: type[R], value: object, where: str = "") -> R:
    """``value`` (from `json.loads`) as a ``cls``, a dataclass; a `RecordError` if it does not fit."""
    return typing.cast(R, _load(cls, value, where or cls.__name__))


def _load(tp: Any, value: object, where: str) -> Any:
    origin = get_origin(tp)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _load_record(tp, value, where)
    if origin in (typing.Union, types.UnionType):
        arms = get_args(tp)
        if value is None and type(None) in arms:
            return None
        errors = []
        for arm in arms:
            if arm is type(None):
                continue
            try:
                return _load(arm, value, where)
            except RecordError as exc:
                errors.append(exc)
        raise errors[0] if len(errors) == 1 else RecordError(f"{where}: unexpected {_found(value)}")
    if tp is Any or tp is object:
        return value
    if tp is list or origin is list:
        _expect(isinstance(value, list), value, "a list", where)
        assert isinstance(value, list)
        (item,) = get_args(tp) or (Any,)
        return [_load(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        arms = get_args(tp)
        _expect(isinstance(value, list) and len(value) == len(arms), value, f"a list of {len(arms)}", where)
        assert isinstance(value, list)
        return tuple(_load(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(arms, value, strict=True)))
    if tp is dict or origin is dict:
        _expect(isinstance(value, dict), value, "an object", where)
        assert isinstance(value, dict)
        _, item = get_args(tp) or (str, Any)
        return {k: _load(item, v, f"{where}[{k!r}]") for k, v in value.items()}
    if tp is bool:
        _expect(isinstance(value, bool), value, "a boolean", where)
    elif tp is int:
        _expect(isinstance(value, int) and not isinstance(value, bool), value, "an integer", where)
    elif tp is float:
        _expect(isinstance(value, int | float) and not isinstance(value, bool), value, "a number", where)
    elif tp is str:
        _expect(isinstance(value, str), value, "a string", where)
    elif tp is type(None):
        _expect(value is None, value, "null", where)
    else:  # a hint this reader does not know is a bug here, not in the file
        raise TypeError(f"records cannot read {tp!r} ({where})")
    return value


def _load_record(cls: type, value: object, where: str) -> Any:
    _expect(isinstance(value, dict), value, "an object", where)
    assert isinstance(value, dict)
    hints = _hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in value:
            kwargs[f.name] = _load(hints[f.name], value[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise RecordError(f"{where}.{f.name} is missing")
    return cls(**kwargs)


def _expect(ok: bool, value: object, wanted: str, where: str) -> None:
    if not ok:
        raise RecordError(f"{where} should be {wanted}, not {_found(value)}")
