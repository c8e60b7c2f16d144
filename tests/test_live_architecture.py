"""The headless core (parsers, analysis, live sessions) never imports Textual: the import-linter
contract in pyproject.toml, and a fresh interpreter that uses the core and finds no Textual loaded."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.timeout(120)


def test_import_linter_contract_is_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    if not lint.exists():
        lint = Path(shutil.which("lint-imports") or "lint-imports")
    result = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "KEPT" in result.stdout and "BROKEN" not in result.stdout


def test_a_live_session_runs_without_textual_loaded() -> None:
    code = """
import sys
from tracelens.live import LiveSession, command_spec
from tracelens.live import printer, replay, remote, status, tail  # noqa: F401
import tracelens.analysis, tracelens.ingest
session = LiveSession([command_spec("printf 'a\\\\nb\\\\n'")], interval=0.1)
session.start()
import time
deadline = time.monotonic() + 30
while not session.all_ended and time.monotonic() < deadline:
    time.sleep(0.02)
assert session.wait_idle(30)
session.stop()
loaded = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
print("textual modules:", loaded)
assert not loaded
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stdout + result.stderr
