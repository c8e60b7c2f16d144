"""Shared test fixtures: where the sample logs and the team's real corpus live."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_LOGS = ROOT / "sample_logs"
REAL_CORPUS = ROOT.parent / "shared" / "corpus" / "real"
# SpecForge's draft configs (configs/*.json) and training recipes (examples/*.yaml), unedited
SPECFORGE = ROOT.parent / "shared" / "corpus" / "specforge"


def real_corpus_files() -> list[Path]:
    return sorted(REAL_CORPUS.glob("*.log")) if REAL_CORPUS.is_dir() else []


@pytest.fixture
def real_corpus() -> Path:
    if not real_corpus_files():
        state = "holds no .log files" if REAL_CORPUS.is_dir() else "is absent"
        missing(f"the team's real corpus {state} ({REAL_CORPUS}): it lives in ../shared beside the checkout")
    return REAL_CORPUS


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Commands parse logs into the cache under $XDG_CACHE_HOME: tests (and the commands they start)
    use one of their own, never the user's."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))


def missing(reason: str) -> None:
    """Skip a test whose tool or data is absent here; under CI=true fail instead, so that a CI without
    Chromium, sshd, tmux or the corpus cannot go green by skipping what matters."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def as_nobody() -> list[str]:
    """The command prefix that takes away root's right to read anything (tests run as root in CI):
    setpriv to user `nobody`. Empty when not root, where chmod alone makes a file unreadable."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        missing("running as root without setpriv: cannot make a file unreadable")
    prefix = [str(setpriv), "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import tracelens"], capture_output=True, cwd="/")
    if probe.returncode != 0:
        pytest.skip("user nobody cannot read this checkout's virtualenv (a private home folder)")
    return prefix


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs mounted by the test (CI runs as root): a small disk to fill, or to make read-only
    (`mount -o remount,ro`)."""
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        missing("mounting a tmpfs needs root and mount(8)")
    point = tmp_path / "mnt"
    point.mkdir()
    done = subprocess.run(
        [str(mount), "-t", "tmpfs", "-o", "size=3m", "tracelens-test", str(point)], capture_output=True
    )
    if done.returncode != 0:
        missing(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


# The test files whose tests start real processes and wait on them (servers, browsers, terminals, worker
# pools, a wheel build, long budgets): marked `slow`, so that `make test-fast` (`-m "not slow"`, in
# parallel with pytest-xdist) leaves them to `make test`, which runs everything.
SLOW_FILES = frozenset(
    {
        "test_contracts.py",
        "test_dataset_lock.py",
        "test_engine_faults.py",
        "test_fuzz.py",
        "test_install.py",
        "test_live_load.py",
        "test_live_recorded.py",
        "test_live_remote.py",
        "test_live_scrollback.py",
        "test_live_signals.py",
        "test_live_sources.py",
        "test_live_start.py",
        "test_live_tail.py",
        "test_live_worker.py",
        "test_real_corpus.py",
        "test_report_browser.py",
        "test_soak.py",
        "test_tui_pilot.py",
        "test_tui_snapshot.py",
        "test_tui_tmux.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
