"""Smoke test in a real terminal: `tracelens tui` runs in tmux, keys are sent, the screen is read."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from live_support import wait_for
from tui_support import TRACEBACK, append, decode, write_start

from conftest import missing

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def tmux(tmp_path: Path):
    if not shutil.which("tmux"):
        missing("tmux is absent (apt-get install tmux; .ci/run installs it)")
    socket = tmp_path / "tmux.sock"

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", str(socket), "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            timeout=20,
            check=check,
        )

    yield run
    run("kill-server", check=False)  # our own server, by its socket


def test_tui_in_a_real_terminal(tmux, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    write_start(log)
    command = " ".join(
        shlex.quote(a)
        for a in [
            sys.executable,
            "-m",
            "tracelens.cli",
            "tui",
            str(log),
            "--report",
            str(tmp_path / "r.html"),
        ]
    )
    env = {"TRACELENS_DEBUG": "1"}
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    tmux(
        "new-session",
        "-d",
        "-x",
        "150",
        "-y",
        "45",
        "-s",
        "tl",
        # COLUMNS/LINES inherited from the test runner would override the terminal size
        f"cd {shlex.quote(str(tmp_path))} && env -u COLUMNS -u LINES {exports} {command}",
    )

    # a detached session takes the size of the newest client, and capture-pane is one (80x24): fix it
    tmux("set-option", "-t", "tl", "window-size", "manual")
    tmux("resize-window", "-t", "tl", "-x", "150", "-y", "45")

    def screen() -> str:
        result = tmux("capture-pane", "-p", "-t", "tl", check=False)
        return result.stdout

    assert wait_for(lambda: "server.log#1" in screen() and "ready" in screen(), timeout=60), screen()
    assert "accept len 2.54" in screen()
    append(log, decode(60, 3.33), *TRACEBACK)
    assert wait_for(lambda: "accept len: 3.33" in screen(), timeout=30), screen()
    assert wait_for(lambda: "fault-oom" in screen(), timeout=30), screen()
    tmux("send-keys", "-t", "tl", "?")
    assert wait_for(lambda: "tracelens tui: keys" in screen(), timeout=20), screen()
    tmux("send-keys", "-t", "tl", "Escape")
    assert wait_for(lambda: "tracelens tui: keys" not in screen(), timeout=20), screen()
    tmux("send-keys", "-t", "tl", "/")
    assert wait_for(lambda: "search (regex)" in screen(), timeout=20), screen()
    tmux("send-keys", "-t", "tl", "-l", "Load weight begin")
    tmux("send-keys", "-t", "tl", "Enter")
    assert wait_for(lambda: "search /Load weight begin/" in screen() and "paused" in screen(), timeout=20), (
        screen()
    )
    tmux("send-keys", "-t", "tl", "q")
    assert wait_for(lambda: tmux("has-session", "-t", "tl", check=False).returncode != 0, timeout=20), (
        screen()
    )
