"""Follow a file on another machine through the system `ssh` (so `~/.ssh/config`, agents and jump hosts
work), non-interactively, resuming after a dropped connection from the first byte not yet received.

The remote side runs `tail -c +N -F -- PATH` with PATH quoted by `shlex.quote` (the remote shell never
interprets it; a leading `~/` becomes `"$HOME"/`). Bytes of complete lines are counted; after a drop the
follower waits (exponential backoff), reconnects and asks for the byte after the last complete line,
so no line is lost or repeated. When the remote `tail` reports that the file was replaced or truncated
(on stderr) the count restarts at zero for the new file; that boundary is only as exact as the order in
which ssh delivers stdout and stderr, so a rotation during heavy writing may repeat or drop a line.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tracelens.live.events import (
    FileRotated,
    FileTruncated,
    LinesAppended,
    SourceConnected,
    SourceDisconnected,
    SourceEvent,
)
from tracelens.live.lines import LineCutter

Emit = Callable[[SourceEvent], None]

SSH_OPTIONS = (
    "-o",
    "BatchMode=yes",  # never ask for a password or a host key: fail and retry instead
    "-o",
    "ServerAliveInterval=5",
    "-o",
    "ServerAliveCountMax=3",  # a silent peer is dropped after ~15 s
    "-o",
    "ConnectTimeout=10",
    "-T",
)
# Printed on stderr by the remote shell before `tail` starts: the connection is up and logged in.
READY_MARK = "tracelens-following"
READ_BYTES = 1 << 16
WAKE_SECONDS = 0.1


@dataclass(frozen=True)
class RemoteTarget:
    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def label(self) -> str:
        who = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        if port:
            return f"ssh://{who}{self.host}{port}{self.path}"
        return f"{who}{self.host}:{self.path}"


def remote_command(path: str, offset: int) -> str:
    """The command line the remote shell runs: tail from byte ``offset`` (0-based), path quoted.

    Without a terminal, nothing tells a remote `tail -F` that the connection is gone until it writes
    (and a quiet log may never be written again), so it would stay running on the host. The shell
    therefore reads its standard input, which the local side keeps open and never writes: when the
    connection ends, for any reason, that read ends and the shell ends the `tail`."""
    quoted = '"$HOME"/' + shlex.quote(path[2:]) if path.startswith("~/") else shlex.quote(path)
    return (
        f"echo {READY_MARK} >&2; tail -c +{offset + 1} -F -- {quoted} </dev/null & t=$!; "
        "cat >/dev/null; kill $t 2>/dev/null"
    )


def ssh_argv(target: RemoteTarget, offset: int, ssh: str = "ssh", extra: tuple[str, ...] = ()) -> list[str]:
    argv = [ssh, *SSH_OPTIONS, *extra]
    if target.port:
        argv += ["-p", str(target.port)]
    if target.user:
        argv += ["-l", target.user]
    return [*argv, "--", target.host, remote_command(target.path, offset)]


@dataclass
class Backoff:
    first: float = 0.5
    limit: float = 15.0
    current: float = field(default=0.0, init=False)

    def next(self) -> float:
        self.current = self.first if not self.current else min(self.current * 2, self.limit)
        return self.current

    def reset(self) -> None:
        self.current = 0.0


class SshFollower:
    def __init__(
        self,
        target: RemoteTarget,
        label: str | None = None,
        *,
        ssh: str = "ssh",
        extra_options: tuple[str, ...] = (),
        backoff: Backoff | None = None,
    ) -> None:
        self.target = target
        self.label = label or target.label
        self.ssh = ssh
        self.extra_options = extra_options
        self.backoff = backoff or Backoff()
        self.offset = 0  # bytes of complete lines received from the current remote file
        self.process: subprocess.Popen[bytes] | None = None
        self.connections = 0

    def close(self) -> None:
        """End the current ssh connection, if any (`run` returns once its stop event is set)."""
        if self.process is not None:
            self._end(self.process)

    def run(self, emit: Emit, stop: threading.Event) -> None:
        while not stop.is_set():
            reason = self._connect_once(emit, stop)
            if stop.is_set():
                break
            delay = self.backoff.next()
            emit(SourceDisconnected(self.label, reason, delay))
            stop.wait(delay)

    def _connect_once(self, emit: Emit, stop: threading.Event) -> str:
        argv = ssh_argv(self.target, self.offset, self.ssh, self.extra_options)
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,  # kept open, never written: the remote shell's lifeline
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return f"could not run {self.ssh}: {exc}"
        self.process = process
        self.connections += 1
        assert process.stdout is not None and process.stderr is not None
        out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
        cutter = LineCutter()
        errors = LineCutter()
        last_error = ""
        connected = False
        started = time.monotonic()
        open_fds = [out_fd, err_fd]
        try:
            while open_fds and not stop.is_set():
                ready, _, _ = select.select(open_fds, [], [], WAKE_SECONDS)
                for fd in ready:
                    data = os.read(fd, READ_BYTES)
                    if not data:
                        open_fds.remove(fd)
                        continue
                    if fd == err_fd:
                        for line in errors.feed(data).decode("utf-8", "replace").splitlines():
                            if line.strip() == READY_MARK and not connected:
                                connected = True
                                emit(SourceConnected(self.label, f"from byte {self.offset}"))
                                continue
                            last_error = line.strip() or last_error
                            self._on_remote_message(line, cutter, emit)
                        continue
                    complete = cutter.feed(data)
                    if complete:
                        self.offset += len(complete)
                        emit(LinesAppended(self.label, complete))
        finally:
            self._end(process)
        if connected and time.monotonic() - started > 5:
            self.backoff.reset()
        code = process.returncode
        # The partial line is dropped: the next connection asks for it again from its first byte.
        return last_error or f"ssh exited with status {code}"

    def _on_remote_message(self, line: str, cutter: LineCutter, emit: Emit) -> None:
        """`tail -F` says on stderr when the file was replaced or truncated: count from zero again."""
        if "has been replaced" in line or "has appeared" in line:
            self.offset = 0
            cutter.pending = b""
            emit(FileRotated(self.label, line.strip()))
        elif "file truncated" in line:
            self.offset = 0
            cutter.pending = b""
            emit(FileTruncated(self.label))

    def _end(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()
