"""The parsers keep polars' regex cache for their regexes (`parsers/literals.py` says why).

polars compiles a literal `str.contains(..., literal=True)` or `str.find(..., literal=True)` into its
per-thread cache of 32 regexes, as a regex of the escaped text. With the parsers' forty-odd literal tests
beside their patterns, that cache evicted every pattern before its next use and a steady parse compiled
15 regexes per block. So no parser may test a literal that way: `literals.has_literal` tests it with
Aho-Corasick. The check runs in a fresh interpreter whose polars records such calls from the moment
the parsers are imported (expressions built once at import or in a `functools.cache` count too), then
parses every sample log (whole and in small blocks) and the real corpus where present.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import ROOT, SAMPLE_LOGS, real_corpus_files

_RECORDER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from polars.expr.string import ExprStringNameSpace

    parsers = str(Path(sys.argv[1]) / "tracelens" / "parsers")
    calls = []

    def recording(name):
        method = getattr(ExprStringNameSpace, name)

        def wrapper(self, pattern, *args, **kwargs):
            if kwargs.get("literal") or (args and args[0] is True and name == "contains"):
                frame = sys._getframe(1)
                while frame is not None and "polars" in frame.f_code.co_filename:
                    frame = frame.f_back
                if frame is not None and frame.f_code.co_filename.startswith(parsers):
                    calls.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {name}({pattern!r})")
            return method(self, pattern, *args, **kwargs)

        setattr(ExprStringNameSpace, name, wrapper)

    for name in ("contains", "find"):
        recording(name)

    from tracelens.parsers.pipeline import parse_lines
    from tracelens.sizes import DEFAULT_BLOCK_BYTES
    from tracelens.sources.files import block_lines, iter_blocks

    small = 64 << 10  # the sample logs in small blocks too: a block's first lines take other paths
    for path in sys.argv[2:]:
        sizes = (DEFAULT_BLOCK_BYTES, small) if Path(path).parent.name == "sample_logs" else (DEFAULT_BLOCK_BYTES,)
        for block_bytes in sizes:
            for block in iter_blocks(Path(path), block_bytes):
                parse_lines(block_lines(block))
    print(json.dumps(sorted(set(calls))))
    """
)


def test_no_parser_sends_a_literal_through_the_regex_cache() -> None:
    logs = [str(p) for p in sorted(SAMPLE_LOGS.glob("*.log")) + real_corpus_files()]
    assert logs
    done = subprocess.run(
        [sys.executable, "-c", _RECORDER, str(ROOT), *logs],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    calls = json.loads(done.stdout.strip().splitlines()[-1])
    assert calls == [], (
        "literal tests that fill polars' regex cache (use literals.has_literal):\n" + "\n".join(calls)
    )
