"""Shared test fixtures: where the sample logs and the team's real corpus live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = ROOT / "sample_logs"
REAL_CORPUS = ROOT.parent / "shared" / "corpus" / "real"


def real_corpus_files() -> list[Path]:
    return sorted(REAL_CORPUS.glob("*.log")) if REAL_CORPUS.is_dir() else []


@pytest.fixture
def real_corpus() -> Path:
    if not REAL_CORPUS.is_dir():
        pytest.skip(
            f"the team's real corpus is absent ({REAL_CORPUS}): it lives in ../shared beside the checkout"
        )
    return REAL_CORPUS


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Commands parse logs into the cache under $XDG_CACHE_HOME: tests (and the commands they start)
    use one of their own, never the user's."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
