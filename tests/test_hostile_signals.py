"""Nothing is left behind when tracelens dies, whatever signal ends it: the parse pool's workers (and
their fork server) and a followed command with its children end with their parent. Real processes,
real signals to the parent alone (as `kill PID` or the OOM killer send them), the process tree read
from /proc before the signal and waited on after it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

pytestmark = pytest.mark.timeout(300)
TRACELENS = [sys.executable, "-m", "tracelens.cli"]
SIGNALS = [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> set[int]:
    tree = _children()
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    """The ones still running (a zombie has ended: it waits only for its parent to reap it)."""
    running = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            running.add(pid)
    return running


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"after {timeout:.0f} s: {what}")
        time.sleep(0.05)


def _big_log(folder: Path, megabytes: int = 120) -> Path:
    """A log that keeps two workers busy for a few seconds."""
    one = (SAMPLE_LOGS / "eagle3_fixed.log").read_bytes()
    path = folder / "big.log"
    with path.open("wb") as out:
        for _ in range(megabytes * 1_000_000 // len(one) + 1):
            out.write(one)
    return path


def _killed_leaves_nothing(args: list[str], sig: int, least: int, cwd: Path) -> None:
    proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tree: set[int] = set()
    try:
        wait_until(
            lambda: len(alive(descendants(proc.pid))) >= least or proc.poll() is not None,
            120,
            f"{least} processes under {args[3]} to start",
        )
        assert proc.poll() is None, "it ended before it could be killed (make its input bigger)"
        tree = alive(descendants(proc.pid))
        os.kill(proc.pid, sig)
        proc.wait(timeout=60)
        wait_until(lambda: not alive(tree), 30, f"processes outlived tracelens: {sorted(alive(tree))}")
    finally:
        for pid in alive(descendants(proc.pid) | tree):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        assert proc.stderr is not None
        proc.stderr.close()


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_killed_parse_leaves_no_worker(tmp_path: Path, sig: int) -> None:
    log = _big_log(tmp_path)
    # the fork server and two workers (and the resource tracker)
    _killed_leaves_nothing([*TRACELENS, "parse", "-j", "2", "-q", str(log), "-o", "out"], sig, 3, tmp_path)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_killed_check_leaves_no_worker(tmp_path: Path, sig: int) -> None:
    log = _big_log(tmp_path)
    _killed_leaves_nothing([*TRACELENS, "check", "--no-cache", "-q", str(log)], sig, 3, tmp_path)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_killed_follow_ends_the_command_and_its_children(tmp_path: Path, sig: int) -> None:
    # A compound command: the shell stays, a parent of the sleep (a sleep alone would be exec'd).
    command = f"cat {SAMPLE_LOGS / 'era_2024_gpu.log'}; sleep 3600; echo never"
    args = [*TRACELENS, "follow", "--no-cache", "--cmd", command]
    _killed_leaves_nothing(args, sig, 3, tmp_path)  # the live worker, the shell, its sleep
