"""Which regexes a block makes polars run, and how many distinct ones: polars keeps the last 32 it
compiled, per thread, so a block that ran more would compile every one again each block. A literal
`contains` or `find` counts too: polars compiles it into the same cache as a regex of the escaped text
(shown as ``literal:TEXT``; a literal `replace` or `count_matches` does not; `parsers/literals.py`).

    python bench/regexes.py LOG [--blocks 4]

Parses the first ``--blocks`` 3 MiB blocks of LOG as a worker does, and reads the patterns off the
expressions each eager call executes (their serialized plan: `contains`, `extract`, `extract_all`,
`extract_groups`, `count_matches`, `replace` and `find`, and literal `contains` and `find`). Prints, per block, the
regex calls and the distinct patterns; then the last block's patterns, most used first. A process's
first block also runs the patterns that build its memos (windows, templates); the later ones show what
a block costs in steady state.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["POLARS_MAX_THREADS"] = "1"  # before polars is imported: a worker runs one thread

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracelens.parsers import pipeline
from tracelens.sources.files import block_lines, iter_blocks

_REGEX_FUNCTIONS = {"Contains", "Extract", "ExtractAll", "ExtractGroups", "CountMatches", "Replace", "Find"}
# Literal calls polars compiles into its regex cache all the same (checked with a uprobe on the builder).
_CACHED_LITERALS = {"Contains", "Find"}
_seen: list[str] = []


def _patterns(node: Any) -> None:
    """Append the regex patterns of a serialized expression to `_seen`."""
    if isinstance(node, list):
        for item in node:
            _patterns(item)
        return
    if not isinstance(node, dict):
        return
    call = node.get("Function")
    function = call.get("function") if isinstance(call, dict) else None
    string = function.get("StringExpr") if isinstance(function, dict) else None
    if isinstance(string, dict):
        ((name, options),) = string.items()
        literal = isinstance(options, dict) and bool(options.get("literal"))
        if name in _REGEX_FUNCTIONS and (not literal or name in _CACHED_LITERALS):
            if isinstance(options, dict) and "pat" in options:  # extract_groups keeps its pattern here
                _seen.append(options["pat"])
            else:
                inputs = call["input"] if isinstance(call, dict) else [{}, {}]
                text = inputs[1].get("Literal", {}).get("Scalar", {}).get("String", "<not a literal>")
                _seen.append(f"literal:{text}" if literal else text)
    for value in node.values():
        _patterns(value)


def _traced(method: Callable[..., Any]) -> Callable[..., Any]:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        args = tuple(list(a) if hasattr(a, "__next__") else a for a in args)  # generators: read once
        for arg in (*args, *kwargs.values()):
            for expr in arg if isinstance(arg, list | tuple) else (arg,):
                if isinstance(expr, pl.Expr):
                    _patterns(json.loads(expr.meta.serialize(format="json")))
        return method(self, *args, **kwargs)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--blocks", type=int, default=4)
    args = parser.parse_args()
    # Series methods run as one-column selects (`select_seq`), so these see every call.
    for name in ("select", "with_columns", "filter", "select_seq", "with_columns_seq"):
        setattr(pl.DataFrame, name, _traced(getattr(pl.DataFrame, name)))
    for name in ("select", "with_columns", "filter"):
        setattr(pl.LazyFrame, name, _traced(getattr(pl.LazyFrame, name)))
    frames = []
    for block in iter_blocks(args.log, 3 << 20):
        frames.append(block_lines(block))
        if len(frames) >= args.blocks:
            break
    state = None
    counts: Counter[str] = Counter()
    for i, frame in enumerate(frames):
        _seen.clear()
        _, state, _ = pipeline.parse_block(frame, state, None, final=False)
        counts = Counter(_seen)
        print(f"block {i}: {len(_seen)} regex calls, {len(counts)} distinct patterns")
    print("the last block's patterns, most used first:")
    for pattern, n in counts.most_common():
        print(f"  {n:3d}  {pattern[:110]}")


if __name__ == "__main__":
    main()
