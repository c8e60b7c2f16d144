"""tracelens: SGLang server logs in, answers out.

`tracelens.analyze(paths)` parses logs and returns an `Analysis` (polars frames and findings); it is
imported lazily so that `import tracelens` stays cheap and pulls in no view library.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Analysis", "Expectations", "__version__", "analyze"]


def __getattr__(name: str) -> Any:
    if name == "analyze":
        from tracelens.engine.ingest import analyze

        return analyze
    if name in ("Analysis", "Expectations"):
        from tracelens import analysis

        return getattr(analysis, name)
    raise AttributeError(f"module 'tracelens' has no attribute {name!r}")
