"""A sample line of a kind and the fields its row must hold: knowledge kept as data beside the routes
(`parsers/kinds.py`, `parsers/request_kinds.py`), every one a test (`tests/test_kinds.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Sample:
    """A real-shaped line and (a subset of) the fields its table row must hold."""

    line: str
    fields: dict[str, Any] = field(default_factory=dict)
