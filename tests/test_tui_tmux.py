"""`tracelens tui` in a real terminal: it runs in tmux, keys are sent, the screen is read; once on a local
file, once at 80x24 on a log followed over the real sshd of the remote tests."""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from live_support import wait_for
from test_live_remote import sshd  # noqa: F401 (the fixture: an OpenSSH server on 127.0.0.1)
from tui_support import TRACEBACK, append, decode, write_start

from tracelens import analyze

from conftest import SAMPLE_LOGS, missing

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


def start(tmux, command: str, width: int = 80, height: int = 24) -> None:
    """A tmux session `tl` of ``width`` x ``height`` running ``command``."""
    tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "tl", command)
    # a detached session takes the size of the newest client, and capture-pane is one (80x24): fix it
    tmux("set-option", "-t", "tl", "window-size", "manual")
    tmux("resize-window", "-t", "tl", "-x", str(width), "-y", str(height))


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
    start(tmux, f"cd {shlex.quote(str(tmp_path))} && env -u COLUMNS -u LINES {exports} {command}", 150, 45)

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


def test_an_ended_broken_run_stays_reachable_over_ssh_at_80x24(tmux, tmp_path: Path, sshd: dict) -> None:  # noqa: F811
    """Run 1 of a log read over ssh is broken; runs 2 and 3 start the server again. At 80x24 run 1's
    verdict stays on the strip and its fix on the screen, `s` moves between the runs and `v` shows the
    fix whole."""
    broken = (SAMPLE_LOGS / "eagle3_embed_capture.log").read_text()
    fixed = (SAMPLE_LOGS / "eagle3_fixed.log").read_text()
    log = tmp_path / "server.log"
    log.write_text(broken)
    # `ssh` on the PATH is the real client with the test server's key and known-hosts file
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    options = " ".join(shlex.quote(o) for o in sshd["options"])
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.quote(shutil.which("ssh") or "ssh")} {options} "$@"\n')
    wrapper.chmod(0o755)
    source = f"ssh://{getpass.getuser()}@127.0.0.1:{sshd['port']}{log}"
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "tracelens.cli", "tui", source])
    path = f"{bin_dir}:{os.environ.get('PATH', '')}"
    start(
        tmux, f"cd {shlex.quote(str(tmp_path))} && env -u COLUMNS -u LINES PATH={shlex.quote(path)} {command}"
    )

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "tl", check=False).stdout

    def strip() -> list[str]:
        return [
            line
            for line in screen().splitlines()
            if "server.log#" in line and ("BROKEN" in line or "HEALTHY" in line)
        ]

    assert wait_for(lambda: any("BROKEN" in line and "#1" in line for line in strip()), timeout=90), screen()
    for runs in (2, 3):  # two more starts, each read before the next
        with log.open("a") as fh:
            fh.write(fixed)
        assert wait_for(lambda runs=runs: len(strip()) == runs, timeout=90), screen()
    assert wait_for(lambda: any("#3" in line and "HEALTHY" in line for line in strip()), timeout=60), screen()
    lines = strip()
    assert "BROKEN" in lines[0] and "#1 (ended)" in lines[0] and lines[0].lstrip().startswith("▶")
    assert all(len(line.rstrip()) <= 80 for line in screen().splitlines())
    # run 1's fix (the one `check` derives from the whole log) is on the screen, its first words at least
    fix = next(v for v in analyze([log]).verdicts if v.run == 1).fix
    assert fix
    assert "fix " in screen() and " ".join(fix.split()[:3]) in screen()
    tmux("send-keys", "-t", "tl", "s")
    assert wait_for(lambda: any(line.lstrip().startswith("▶") and "#2" in line for line in strip())), screen()
    tmux("send-keys", "-t", "tl", "s")
    assert wait_for(lambda: any(line.lstrip().startswith("▶") and "#3" in line for line in strip())), screen()
    tmux("send-keys", "-t", "tl", "s")
    assert wait_for(lambda: any(line.lstrip().startswith("▶") and "#1" in line for line in strip())), screen()
    tmux("send-keys", "-t", "tl", "v")
    # the verdict screen says the fix whole (wrapped in its box: compared without spaces)
    assert wait_for(lambda: bare(fix) in bare(" ".join(boxed("fix:", screen()))), timeout=20), screen()
    tmux("send-keys", "-t", "tl", "Escape")
    assert wait_for(lambda: "fix:" not in screen(), timeout=20), screen()
    tmux("send-keys", "-t", "tl", "q")
    assert wait_for(lambda: tmux("has-session", "-t", "tl", check=False).returncode != 0, timeout=20), (
        screen()
    )


def bare(text: str) -> str:
    return "".join(c for c in text if not c.isspace())


def boxed(mark: str, screen: str) -> list[str]:
    """The rows of the box (a modal screen) whose row holds ``mark``, between its borders."""
    lines = screen.splitlines()
    row = next((line for line in lines if mark in line), None)
    if row is None:
        return []
    at = row.index(mark)
    left, right = row.rfind("│", 0, at), row.find("│", at)
    return [line[left + 1 : right] for line in lines]
