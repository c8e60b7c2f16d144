"""The layers hold: the import-linter contracts in pyproject.toml pass on the tree, a wrong import
makes them fail (in a copy of the package with the import planted), and a fresh interpreter that uses
the headless core finds no view library loaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.timeout(300)

LINT = Path(sys.executable).parent / "lint-imports"


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    lint = LINT if LINT.exists() else Path(shutil.which("lint-imports") or "lint-imports")
    # The copy comes first on the path, so the contracts are checked against it, not the installed tree.
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(lint)], cwd=root, env=env, capture_output=True, text=True, timeout=200)


def test_the_contracts_are_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout
    assert result.stdout.count("KEPT") == 2


PLANTED = [
    # (module file, the wrong import, the contract it breaks)
    ("engine/plan.py", "import textual", "The headless core imports no view library"),
    ("analysis/runs.py", "import plotly", "The headless core imports no view library"),
    ("sources/tail.py", "import rich", "The headless core imports no view library"),
    ("analysis/runs.py", "import tracelens.report", "Layers"),
    ("parsers/batch.py", "from tracelens.analysis import findings", "Layers"),
    ("tables/frames.py", "import tracelens.sources.files", "Layers"),
    ("report/page.py", "from tracelens.cli import render", "Layers"),
    # siblings are independent: each way between the two of a layer breaks it
    ("analysis/runs.py", "import tracelens.parsers", "Layers"),
    ("parsers/batch.py", "import tracelens.analysis.runs", "Layers"),
    ("live/session.py", "import tracelens.report", "Layers"),
    ("report/page.py", "from tracelens.live import status", "Layers"),
    ("engine/task.py", "import tracelens.formatting", "Layers"),
    ("formatting.py", "import tracelens.engine", "Layers"),
    ("sizes.py", "import tracelens.lazy", "Layers"),
]


@pytest.mark.parametrize(("module", "line", "contract"), PLANTED, ids=[f"{m}: {i}" for m, i, _ in PLANTED])
def test_a_wrong_import_breaks_the_build(tmp_path: Path, module: str, line: str, contract: str) -> None:
    shutil.copytree(ROOT / "tracelens", tmp_path / "tracelens", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = tmp_path / "tracelens" / module
    planted.write_text(planted.read_text() + f"\n{line}  # planted by the test\n")
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    broken = result.stdout.split("Broken contracts", 1)[-1]
    assert contract in broken, result.stdout
    assert module.replace("/", ".").removesuffix(".py") in broken, result.stdout


def test_a_live_session_runs_without_a_view_library_loaded() -> None:
    code = """
import sys
from tracelens.live import LiveSession, command_spec
from tracelens.live import status  # noqa: F401
from tracelens.sources import replay, ssh, tail  # noqa: F401
import tracelens.analysis, tracelens.engine.ingest
session = LiveSession([command_spec("printf 'a\\\\nb\\\\n'")], interval=0.1)
session.start()
import time
deadline = time.monotonic() + 30
while not session.all_ended and time.monotonic() < deadline:
    time.sleep(0.02)
assert session.wait_idle(30)
session.stop()
views = ("textual", "plotly", "rich", "typer", "jinja2")
loaded = sorted(m for m in sys.modules if m.split(".")[0] in views)
print("view modules:", loaded)
assert not loaded
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_module_is_over_600_lines() -> None:
    """Small modules with one job each: a module that grows past 600 lines is split by concern."""
    sizes = {p: len(p.read_text().splitlines()) for p in (ROOT / "tracelens").rglob("*.py")}
    sizes |= {p: len(p.read_text().splitlines()) for p in (ROOT / "sample_logs").rglob("*.py")}
    assert not {str(p.relative_to(ROOT)): n for p, n in sizes.items() if n > 600}
