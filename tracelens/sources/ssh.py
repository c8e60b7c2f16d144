"""Follow a file on another machine through the system `ssh` (so `~/.ssh/config`, agents and jump hosts
work), non-interactively, resuming after a dropped connection from the first byte not yet received.

The remote side runs `tail -c +N -F -- PATH` with PATH quoted by `shlex.quote` (the remote shell never
interprets it; a leading `~/` becomes `"$HOME"/`). Bytes of complete lines are counted; after a drop the
follower waits (exponential backoff), reconnects and asks for the byte after the last complete line,
so no line is lost or repeated.

Two things make that count exact across rotation:
- `tail` reports a replaced or truncated file on its stderr, which the remote shell sends into stdout
  (`2>&1`): GNU `tail` flushes its data before it writes a message, so the message sits in the byte
  stream exactly between the old file's last byte and the new file's first, and the count restarts at
  zero there. (On two ssh channels the order was lost: a message read before the old file's last bytes
  counted them into the new file, and the next reconnect skipped that many bytes of it.)
- On reconnect the remote shell first checks that the last bytes received (up to 4 KiB, by their MD5)
  still end at the byte we resume from. If not, the path names another file (rotated while the
  connection was down): the old one is looked for among `PATH.*` and `PATH-*` by those bytes, its rest
  is sent first (`tracelens-rest N` and N bytes), then `tail` starts the new file at its first byte.
  The first lines of stdout say so, before any data, so no log line can pose as them.
- After a rotation that `tail -F` reports while connected, the follower reconnects at once the same
  way: `tail` misses the last write when a copy and truncate fall between two of its reads, and the
  copy still holds it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from tracelens.sources.events import (
    FileRotated,
    FileTruncated,
    LinesAppended,
    SourceConnected,
    SourceDisconnected,
)
from tracelens.sources.lines import LineCutter
from tracelens.sources.protocol import Emit

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
# The first line on stdout, before any data (so no log line can pose as it): the 1-based byte `tail`
# starts at.
START_MARK = b"tracelens-from "
# Before it, when the file was rotated: the number of bytes that follow, the rest of the old file.
REST_MARK = b"tracelens-rest "
# The messages of GNU `tail -F` that mean "the bytes that follow are the start of another file".
ROTATED = (b" has been replaced;  following new file", b" has appeared;  following new file")
TRUNCATED = b": file truncated"
# Other `tail` messages, sent in-band too: a status, never a log line.
STATUS = (b"No such file or directory", b"has become inaccessible", b"Permission denied")
# The last line received is checked on reconnect; a longer one is checked by its last bytes.
ANCHOR_BYTES = 4096
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


def remote_command(path: str, offset: int, anchor: bytes = b"") -> str:
    """The command line the remote shell runs: tail from byte ``offset`` (0-based), path quoted.

    ``anchor`` is the end of what was received from this file (it ends at ``offset``): when the bytes
    before ``offset`` are no longer these, the file was replaced or truncated while the connection was
    down, and `tail` starts at the first byte. Only its length and MD5 go into the command.

    Without a terminal, nothing tells a remote `tail -F` that the connection is gone until it writes
    (and a quiet log may never be written again), so it would stay running on the host. The shell
    therefore reads its standard input, which the local side keeps open and never writes: when the
    connection ends, for any reason, that read ends and the shell ends the `tail`."""
    quoted = '"$HOME"/' + shlex.quote(path[2:]) if path.startswith("~/") else shlex.quote(path)
    start = f"s={offset + 1}; "
    if offset and anchor:
        at, digest = offset - len(anchor) + 1, hashlib.md5(anchor).hexdigest()

        def same(name: str) -> str:  # the bytes before `offset` in file `name` are the anchor
            return f'[ "$(tail -c +{at} -- {name} 2>/dev/null | head -c {len(anchor)} | md5sum)" = "{digest}  -" ]'

        # The path names another file now: the one we were reading is its rotated copy or renamed
        # self (PATH.1, PATH-20261130, ...), found by the same bytes; its rest comes first, counted.
        start += (
            f"if ! {same(quoted)}; then s=1; for f in {quoted}.* {quoted}-*; do "
            f'if [ -f "$f" ] && {same(chr(34) + "$f" + chr(34))}; then '
            f'n=$(($(wc -c <"$f") - {offset})); echo {REST_MARK.decode()}$n; '
            f'tail -c +{offset + 1} -- "$f" | head -c $n; break; fi; done; fi; '
        )
    return (
        f"echo {READY_MARK} >&2; {start}echo {START_MARK.decode()}$s; "
        f"tail -c +$s -F -- {quoted} 2>&1 </dev/null & t=$!; "
        "cat >/dev/null; kill $t 2>/dev/null"
    )


def ssh_base_argv(target: RemoteTarget, ssh: str = "ssh", extra: tuple[str, ...] = ()) -> list[str]:
    """The ssh command line up to the remote command: the follower's options, port, user and host."""
    argv = [ssh, *SSH_OPTIONS, *extra]
    if target.port:
        argv += ["-p", str(target.port)]
    if target.user:
        argv += ["-l", target.user]
    return [*argv, "--", target.host]


def ssh_argv(
    target: RemoteTarget, offset: int, ssh: str = "ssh", extra: tuple[str, ...] = (), anchor: bytes = b""
) -> list[str]:
    return [*ssh_base_argv(target, ssh, extra), remote_command(target.path, offset, anchor)]


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
        self.anchor = b""  # the end of those bytes (at most ANCHOR_BYTES), checked on reconnect
        self.resume_now = False  # the file was rotated: reconnect at once to read the old one's rest
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
            if self.resume_now:
                self.resume_now = False
                continue
            delay = self.backoff.next()
            emit(SourceDisconnected(self.label, reason, delay))
            stop.wait(delay)

    def _connect_once(self, emit: Emit, stop: threading.Event) -> str:
        argv = ssh_argv(self.target, self.offset, self.ssh, self.extra_options, self.anchor)
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
        header: bytes | None = b""  # the first stdout line, until it is complete; then None
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
                            if line.strip() == READY_MARK:
                                continue
                            last_error = line.strip() or last_error
                        continue
                    if header is not None:  # what a login script prints before it is not the file's
                        header += data
                        rest = self._header(header, emit)
                        if rest is None:
                            continue
                        data = rest
                        header = None
                        connected = True
                    message = self._take(cutter.feed(data), emit)
                    last_error = message or last_error
                    if self.resume_now:  # the rest of the old file is read by a new connection
                        open_fds = []
                        break
        finally:
            self._end(process)
        if connected and time.monotonic() - started > 5:
            self.backoff.reset()
        code = process.returncode
        # The partial line is dropped: the next connection asks for it again from its first byte.
        return last_error or f"ssh exited with status {code}"

    def _header(self, header: bytes, emit: Emit) -> bytes | None:
        """Read the remote shell's first lines: the rest of a rotated file if any, then where `tail`
        starts. Returns the data after them, or None while they are incomplete."""
        at = min((i for i in (header.find(REST_MARK), header.find(START_MARK)) if i >= 0), default=-1)
        if at < 0 or b"\n" not in header[at:]:
            return None
        first, data = header[at:].split(b"\n", 1)
        if first.startswith(REST_MARK):
            size = int(first[len(REST_MARK) :].strip() or b"0")
            if len(data) < size or START_MARK not in data[size:]:
                return None
            rest = LineCutter()
            self._lines(rest.feed(data[:size]) + rest.flush(), emit)
            data = data[size:]
            first, data = data[data.find(START_MARK) :].split(b"\n", 1)
        start = int(first[len(START_MARK) :].strip() or b"1") - 1
        if start != self.offset:
            emit(FileRotated(self.label, "the file was replaced (rotated)"))
            self.offset, self.anchor = start, b""
        emit(SourceConnected(self.label, f"from byte {self.offset}"))
        return data

    def _take(self, complete: bytes, emit: Emit) -> str:
        """Emit the complete lines, counting their bytes; `tail`'s in-band messages restart the count
        (rotation) or are returned as a status, never shown as log lines."""
        if not complete:
            return ""
        if b"tail: " not in complete:  # the usual chunk: no message in it
            self._lines(complete, emit)
            return ""
        status = ""
        rest = complete
        while rest:
            at = rest.find(b"tail: ")
            if at < 0:
                break
            end = rest.index(b"\n", at) + 1
            line_start = rest.rfind(b"\n", 0, at) + 1
            body = rest[at:end].rstrip(b"\n")
            kind = self._message_kind(body)
            if kind is None:  # a log line that mentions tail
                self._lines(rest[:end], emit)
                rest = rest[end:]
                continue
            self._lines(rest[:line_start], emit)
            text = body.decode("utf-8", "replace")
            if kind == "status":  # taken out of the stream; a partial line around it stays whole
                status = text
                rest = rest[line_start:at] + rest[end:]
                continue
            if self.offset:
                # `tail` may have missed the old file's last bytes (a copy and truncate between two
                # of its reads): a new connection reads them from the copy, then this file from its
                # start. What follows here is dropped: it comes again.
                self.resume_now = True
                return text
            if at > line_start:  # the old file held one line, without a newline: completed
                self._lines(rest[line_start:at] + b"\n", emit)
            self.offset, self.anchor = 0, b""
            emit(FileRotated(self.label, text) if kind == "rotated" else FileTruncated(self.label))
            rest = rest[end:]
        self._lines(rest, emit)
        return status

    def _message_kind(self, body: bytes) -> str | None:
        if body.endswith(ROTATED):
            return "rotated"
        if body.endswith(TRUNCATED):
            return "truncated"
        if any(word in body for word in STATUS):
            return "status"
        return None

    def _lines(self, complete: bytes, emit: Emit) -> None:
        if complete:
            self.offset += len(complete)
            self.anchor = (self.anchor[-ANCHOR_BYTES:] + complete[-ANCHOR_BYTES:])[-ANCHOR_BYTES:]
            emit(LinesAppended(self.label, complete))

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
