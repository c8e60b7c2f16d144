"""`kill` (SIGTERM) and a closed terminal (SIGHUP) end `follow` and `tui` on an ssh source as Ctrl-C
does: the local ssh and the `tail -F` it ran on the (here: local, real) sshd end, and the terminal
leaves the screen's alternate buffer and mouse modes."""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from live_support import wait_for
from test_live_remote import sshd  # noqa: F401 (a fixture: a real sshd on 127.0.0.1)
from test_tui_tmux import tmux  # noqa: F401 (a fixture: our own tmux server)

pytestmark = pytest.mark.timeout(180)
TRACELENS = [sys.executable, "-m", "tracelens.cli"]


def _ssh_on_path(tmp_path: Path, options: tuple[str, ...]) -> str:
    """A PATH whose `ssh` is the system one with the test server's key and known-hosts options."""
    real = shutil.which("ssh")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    wrapper = folder / "ssh"
    wrapper.write_text(f'#!/bin/sh\nexec {real} {" ".join(shlex.quote(o) for o in options)} "$@"\n')
    wrapper.chmod(0o755)
    return f"{folder}:{os.environ['PATH']}"


def _processes_naming(text: str) -> list[tuple[int, list[str]]]:
    """Processes (other than this one) whose command line mentions ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(text in arg for arg in argv):
            found.append((int(entry.name), argv))
    return found


def _remote_tail_runs(log: Path) -> bool:
    return any(Path(argv[0]).name == "tail" for _, argv in _processes_naming(str(log)))


def _left_running(log: Path) -> list[tuple[int, list[str]]]:
    """The local ssh, the remote shell and the remote tail of ``log`` (not the test's tmux or shell)."""
    return [
        (pid, argv)
        for pid, argv in _processes_naming(str(log))
        if Path(argv[0]).name == "tail" or any("tracelens-following" in a for a in argv)
    ]


def _source(server: dict, log: Path) -> str:
    return f"ssh://{getpass.getuser()}@127.0.0.1:{server['port']}{log}"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_follow_on_ssh_ends_ssh_and_the_remote_tail(sshd: dict, tmp_path: Path, sig: int) -> None:  # noqa: F811
    log = tmp_path / "gpu.log"
    log.write_text("[2026-11-20 10:00:00 TP0] hello\n")
    env = {**os.environ, "PATH": _ssh_on_path(tmp_path, sshd["options"])}
    env.pop("TRACELENS_DEBUG", None)
    proc = subprocess.Popen(
        [*TRACELENS, "follow", _source(sshd, log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert wait_for(lambda: _remote_tail_runs(log), timeout=60), _processes_naming(str(log))
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, stderr
    assert "Traceback" not in stderr
    assert wait_for(lambda: not _left_running(log), timeout=15), _left_running(log)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_tui_on_ssh_restores_the_terminal_and_ends_its_sources(
    sshd: dict,  # noqa: F811
    tmux,  # noqa: F811
    tmp_path: Path,
    sig: int,
) -> None:
    log = tmp_path / "gpu.log"
    log.write_text("[2026-11-20 10:00:00 TP0] hello\n")
    path = _ssh_on_path(tmp_path, sshd["options"])
    command = " ".join(shlex.quote(a) for a in [*TRACELENS, "tui", _source(sshd, log)])
    shell = f"env -u COLUMNS -u LINES PATH={shlex.quote(path)} {command}; echo tracelens-exited-$?; sleep 120"
    tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "tl", shell)

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "tl", check=False).stdout

    def modes() -> str:
        return tmux("display-message", "-p", "-t", "tl", "#{alternate_on} #{mouse_any_flag}").stdout.strip()

    assert wait_for(lambda: _remote_tail_runs(log), timeout=60), screen()
    assert wait_for(lambda: modes() == "1 1", timeout=30), modes()
    # this test's tui, by its source: another tracelens tui on the machine (a second test run) is not it
    (pid,) = [p for p, argv in _processes_naming(str(log)) if "tracelens.cli" in argv and "tui" in argv]
    os.kill(pid, sig)
    assert wait_for(lambda: f"tracelens-exited-{128 + sig}" in screen(), timeout=30), screen()
    assert "Traceback" not in screen()
    assert modes() == "0 0"
    assert wait_for(lambda: not _left_running(log), timeout=15), _left_running(log)
