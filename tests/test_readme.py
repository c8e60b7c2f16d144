"""Every fenced Python block of README.md runs, as a script of its own in a fresh folder beside the
sample logs, and prints exactly the ```text block that follows it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_LOGS

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def readme_examples() -> list[tuple[int, str, str | None]]:
    """(line number, code, the text block right after it or None) for each Python block."""
    text = (ROOT / "README.md").read_text()
    blocks = [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in FENCE.finditer(text)]
    out = []
    for i, (line, lang, body) in enumerate(blocks):
        if lang == "python":
            follows = blocks[i + 1] if i + 1 < len(blocks) else None
            out.append((line, body, follows[2] if follows and follows[1] == "text" else None))
    return out


EXAMPLES = readme_examples()


def test_the_readme_has_python_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize(("line", "code", "expected"), EXAMPLES, ids=[f"line{e[0]}" for e in EXAMPLES])
def test_readme_example_prints_what_the_text_says(
    tmp_path: Path, line: int, code: str, expected: str | None
) -> None:
    assert expected is not None, f"README.md line {line}: no ```text block of its output after it"
    (tmp_path / "sample_logs").symlink_to(SAMPLE_LOGS)
    script = tmp_path / "example.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == expected, result.stdout
