"""Follow a command's output (`--cmd "kubectl logs -f POD"`) or a stream such as stdin (`-`).

The command is the user's own, run by `/bin/sh -c` like `watch` or `entr` do, with stderr merged into
stdout (servers and `docker logs` write their logs to stderr). Reads return whatever the pipe holds, so
a line is passed on as soon as its newline arrives.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading

from tracelens.sources.events import LinesAppended, SourceConnected, SourceEnded
from tracelens.sources.lifeline import GroupGuard
from tracelens.sources.lines import LineCutter
from tracelens.sources.protocol import Emit

READ_BYTES = 1 << 16
WAKE_SECONDS = 0.1


def pump_fd(fd: int, label: str, emit: Emit, stop: threading.Event) -> int:
    """Read ``fd`` until end of stream (or ``stop``), passing on complete lines; returns bytes read.
    The last line is passed on even without its newline."""
    cutter = LineCutter()
    total = 0
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], WAKE_SECONDS)
        if not ready:
            continue
        try:
            data = os.read(fd, READ_BYTES)
        except OSError:
            break
        if not data:
            break
        total += len(data)
        complete = cutter.feed(data)
        if complete:
            emit(LinesAppended(label, complete))
    tail = cutter.flush()
    if tail:
        emit(LinesAppended(label, tail))
    return total


class StreamFollower:
    """Lines of an already open stream (stdin): ends when the writer closes it."""

    def __init__(self, fd: int, label: str = "stdin") -> None:
        self.fd = fd
        self.label = label

    def close(self) -> None:
        """Nothing to end: the stream's writer closes it."""

    def run(self, emit: Emit, stop: threading.Event) -> None:
        emit(SourceConnected(self.label, "reading"))
        pump_fd(self.fd, self.label, emit, stop)
        if not stop.is_set():
            emit(SourceEnded(self.label, "end of input"))


class PipeFollower:
    """Lines of a named pipe (FIFO): opened once (waiting for its writer), read until the writer closes
    it. A pipe cannot seek, so it is never followed as a file is."""

    def __init__(self, path: str, label: str) -> None:
        self.path = path
        self.label = label
        self._open = threading.Event()

    def close(self) -> None:
        """A reader still waiting for a writer is let go: a writer that opens and closes is its end."""
        if not self._open.is_set():
            with contextlib.suppress(OSError):
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))

    def run(self, emit: Emit, stop: threading.Event) -> None:
        fd = os.open(self.path, os.O_RDONLY)  # blocks until a writer opens the pipe
        self._open.set()
        try:
            emit(SourceConnected(self.label, "reading the pipe"))
            pump_fd(fd, self.label, emit, stop)
            if not stop.is_set():
                emit(SourceEnded(self.label, "the pipe's writer closed it"))
        finally:
            os.close(fd)


class CommandFollower:
    """Lines a shell command prints; ends when it exits (its exit status is reported)."""

    def __init__(self, command: str, label: str | None = None) -> None:
        self.command = command
        self.label = label or f"cmd:{command}"
        self.process: subprocess.Popen[bytes] | None = None
        self._guard: GroupGuard | None = None

    def run(self, emit: Emit, stop: threading.Event) -> None:
        try:
            self.process = subprocess.Popen(
                ["/bin/sh", "-c", self.command],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so that stop() ends its children too
            )
        except OSError as exc:
            emit(SourceEnded(self.label, f"could not start: {exc}", failed=True))
            return
        # the command and its children end with tracelens, even at `kill -9`
        self._guard = GroupGuard(self.process.pid)
        assert self.process.stdout is not None
        emit(SourceConnected(self.label, f"pid {self.process.pid}"))
        try:
            pump_fd(self.process.stdout.fileno(), self.label, emit, stop)
        finally:
            self._end(patient=not stop.is_set())
        code = self.process.wait()
        if not stop.is_set():
            emit(SourceEnded(self.label, f"the command exited with status {code}", failed=code != 0))

    def close(self) -> None:
        """End the command (and its children) if it still runs."""
        self._end()

    def _end(self, patient: bool = False) -> None:
        process = self.process
        if process is None:
            return
        try:
            self._stop(process, patient)
        finally:
            if self._guard is not None:
                self._guard.release()

    def _stop(self, process: subprocess.Popen[bytes], patient: bool) -> None:
        if process.stdout is not None:
            process.stdout.close()
        if patient:  # its output ended: give it a moment to exit by itself
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=1)
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
