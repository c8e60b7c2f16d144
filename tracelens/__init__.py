"""tracelens: SGLang server logs in, answers out.

`tracelens.analyze(paths)` parses logs and returns an `Analysis` (polars frames and findings); it is
imported lazily so that `import tracelens` stays cheap and pulls in no view library.
"""

from __future__ import annotations

from tracelens.lazy import lazy_names

__version__ = "0.1.0"
__all__ = ["Analysis", "Expectations", "__version__", "analyze"]


__getattr__ = lazy_names(
    __name__, {"analyze": ".engine.ingest", "Analysis": ".analysis", "Expectations": ".analysis"}
)
