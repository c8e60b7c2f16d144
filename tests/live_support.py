"""Helpers for the live tests: run a session, wait with a bound, read what the log view holds."""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from pathlib import Path

from tracelens.live import LiveSession
from tracelens.live.spec import SSH, SourceSpec
from tracelens.sources.ssh import Backoff, RemoteTarget


def wait_for(condition: Callable[[], bool], timeout: float = 20.0, step: float = 0.02) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass (never an unbounded loop)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def view_texts(session: LiveSession) -> list[str]:
    """Every line the log view would show, in order, read back from the session's store."""
    index = session.index
    return [index.text(int(k)) for k in index.order()]


def source_texts(session: LiveSession, source: int = 0) -> list[str]:
    index = session.index
    lines = index.lines[source]
    return [lines.store.line(int(lines.offset.data[i]), int(lines.length.data[i])) for i in range(lines.held)]


class Recorder:
    """A session listener that keeps every event."""

    def __init__(self) -> None:
        self.events: list[object] = []

    def __call__(self, event: object) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list:
        return [e for e in self.events if isinstance(e, kind)]


def ssh_session(sshd: dict, log: Path, interval: float, backoff: Backoff, **kwargs) -> LiveSession:
    """A live session (not started) following ``log`` over the test's real sshd (the `sshd` fixture)."""
    target = RemoteTarget("127.0.0.1", str(log), getpass.getuser(), sshd["port"])
    spec = SourceSpec(SSH, target.label, target=target)
    return LiveSession(
        [spec],
        interval=interval,
        **kwargs,
        follower_options={spec.label: {"extra_options": sshd["options"], "backoff": backoff}},
    )
