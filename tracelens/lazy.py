"""Names a package exports but imports on first use (PEP 562), so that importing one of its modules, or
a command that needs one name, does not load the whole package: `tracelens parse` loads neither the
analysis nor the live stack. Imports nothing of tracelens, so every layer may use it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_names(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for ``package``: each name of ``homes`` is read from its module (a name
    relative to the package, such as ``.result``) when first asked for, then kept in the package."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(home, package), name)
        namespace[name] = value  # looked up once
        return value

    return __getattr__
