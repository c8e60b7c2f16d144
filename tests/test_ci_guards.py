"""The guards of the tests themselves: the corpus is looked for only in ../shared beside the checkout;
an empty corpus folder skips its tests with a reason; under CI=true a missing corpus fails the run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

CORPUS_TESTS = ("test_real_corpus.py", "test_accounting.py")


def _checkout_with_empty_corpus(tmp_path: Path) -> Path:
    """A checkout beside a `shared/corpus/real` that exists and is empty."""
    checkout = tmp_path / "checkout"
    (checkout / "tests").mkdir(parents=True)
    for name in ("conftest.py", *CORPUS_TESTS):
        shutil.copy(ROOT / "tests" / name, checkout / "tests" / name)
    (checkout / "sample_logs").symlink_to(ROOT / "sample_logs")
    (tmp_path / "shared" / "corpus" / "real").mkdir(parents=True)
    return checkout


def _pytest(checkout: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_an_empty_corpus_folder_skips_with_a_reason(tmp_path: Path) -> None:
    checkout = _checkout_with_empty_corpus(tmp_path)
    result = _pytest(checkout, None)
    assert result.returncode == 0, result.stdout[-3000:]
    assert " failed" not in result.stdout and " error" not in result.stdout, result.stdout[-3000:]
    assert f"holds no .log files ({tmp_path / 'shared' / 'corpus' / 'real'})" in result.stdout


def test_under_ci_a_missing_corpus_fails(tmp_path: Path) -> None:
    checkout = _checkout_with_empty_corpus(tmp_path)
    result = _pytest(checkout, "true")
    assert result.returncode == 1, result.stdout[-3000:]
    assert "CI=true and the team's real corpus holds no .log files" in result.stdout
