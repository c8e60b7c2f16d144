"""What the user names as a source, and the follower that reads it.

    server.log                       a local file (followed across rotation and truncation)
    HOST:/path  USER@HOST:/path      a file on another machine, through ssh
    ssh://USER@HOST:PORT/path        the same with a port
    -                                standard input
    replay:FILE?speed=N              a recorded log at its original pace times N
    http://HOST:PORT?every=N         a server's /metrics and /server_info, polled every N seconds (5)
    server.log.gz  logs.tar.gz       a compressed log, or each log in an archive (`ARCHIVE:MEMBER`):
                                     read once to its end (`expand_recorded`), then ended
    --cmd "kubectl logs -f POD"      a command's output (an option, not a source argument)

An existing local path always wins, so a file whose name holds a colon is still a file.
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tracelens.errors import InputError
from tracelens.sources.ssh import RemoteTarget
from tracelens.sources.streams import is_stream

FILE = "file"
SSH = "ssh"
COMMAND = "cmd"
STDIN = "stdin"
REPLAY = "replay"
RECORDED = "recorded"  # a compressed file or an archive member: read once to its end
HTTP = "http"  # a server's metrics endpoints, polled


@dataclass(frozen=True)
class SourceSpec:
    kind: str
    label: str
    path: str | None = None
    target: RemoteTarget | None = None
    command: str | None = None
    speed: float = 1.0
    member: str | None = None  # RECORDED: the archive member (None: the compressed file itself)
    mtime: float | None = None  # RECORDED: the file's or member's modification time (its base date)
    every: float = 5.0  # HTTP: seconds between two polls

    def follower(self, **options: Any):
        """A follower object with `run(emit, stop)` for this source."""
        if self.kind == FILE and self.path and is_stream(_mode(self.path)):
            from tracelens.sources.command import PipeFollower

            return PipeFollower(self.path, self.label)
        if self.kind == FILE:
            from tracelens.sources.tail import FileFollower

            return FileFollower(self.path or "", self.label, **options)
        if self.kind == SSH:
            from tracelens.sources.ssh import SshFollower

            assert self.target is not None
            return SshFollower(self.target, self.label, **options)
        if self.kind == COMMAND:
            from tracelens.sources.command import CommandFollower

            return CommandFollower(self.command or "", self.label)
        if self.kind == STDIN:
            from tracelens.sources.command import StreamFollower

            return StreamFollower(options.get("fd", 0), self.label)
        if self.kind == HTTP:
            from tracelens.sources.metrics_http import MetricsFollower

            return MetricsFollower(self.path or "", self.label, self.every)
        if self.kind == RECORDED:
            from tracelens.sources.recorded import RecordedFollower

            return RecordedFollower(self.path or "", self.member, self.label, **options)
        from tracelens.live.pace import replay_schedule
        from tracelens.sources.replay import ReplayFollower

        return ReplayFollower(self.path or "", replay_schedule, self.speed, self.label)


def _mode(path: str) -> int:
    """The `st_mode` of ``path``, that of a regular file when it is not there (yet): followed as a file."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return stat.S_IFREG


def parse_spec(text: str) -> SourceSpec:
    """Read one source argument; an unusable one is an `InputError` (one line, exit 2)."""
    if not text:
        raise InputError("an empty source name")
    if text == "-":
        return SourceSpec(STDIN, "stdin")
    if text.startswith("replay:"):
        return _replay(text)
    if text.startswith("ssh://"):
        return _ssh_url(text)
    if text.startswith(("http://", "https://")):
        return _http(text)
    if os.path.exists(text):
        return _local(text)
    host, sep, path = text.partition(":")
    if sep and host and path and "/" not in host:
        user, at, name = host.rpartition("@")
        return _remote(RemoteTarget(name if at else host, path, user if at else None), text)
    return _local(text)


def expand_recorded(spec: SourceSpec) -> list[SourceSpec]:
    """A local file that is compressed or an archive, as the sources `check` reads in it: the file
    itself, or each log member labelled `ARCHIVE:MEMBER` (`Input.source_name`), each read once to its
    end. Any other spec is returned as it is. An archive that lists no log is an `InputError`."""
    if spec.kind != FILE or not spec.path or not os.path.isfile(spec.path):
        return [spec]
    from tracelens.sources.archives import log_members
    from tracelens.sources.inputs import FILE as PLAIN
    from tracelens.sources.inputs import Input, container_of
    from tracelens.sources.logfiles import compression_of

    path = Path(spec.path)
    try:
        compression, container = compression_of(path), container_of(path)
        mtime = path.stat().st_mtime
    except OSError as exc:
        raise InputError(f"cannot read {spec.path}: {exc.strerror or exc}") from exc
    item = Input(str(path), container, compression, 0, mtime)
    if container == PLAIN:
        if compression is None:
            return [spec]
        return [SourceSpec(RECORDED, item.source_name(), path=item.path, mtime=mtime)]
    members, broken = log_members(path)
    if not members:
        why = (
            f"unreadable ({broken})"
            if broken is not None
            else "holds no log files (*.log, *.txt, *.out, *.err)"
        )
        raise InputError(f"the {container} archive {spec.path} {why}")
    # a listing cut short by a break: the member it broke in says "read in part" when it is read
    return [
        SourceSpec(RECORDED, item.source_name(name), path=item.path, member=name, mtime=when)
        for name, when in members
    ]


def command_spec(command: str) -> SourceSpec:
    if not command.strip():
        raise InputError("--cmd wants a command, got an empty string")
    return SourceSpec(COMMAND, f"cmd:{command}", command=command)


def _local(text: str) -> SourceSpec:
    path = Path(text)
    if path.is_dir():
        raise InputError(f"{text} is a folder: name the log file to follow")
    if not path.exists() and not path.parent.is_dir():
        raise InputError(f"no such file or folder: {text}")
    if path.exists() and not os.access(path, os.R_OK):
        raise InputError(f"permission denied: {text}")
    return SourceSpec(FILE, text, path=text)


def _remote(target: RemoteTarget, label: str) -> SourceSpec:
    if not target.host or target.host.startswith("-"):
        raise InputError(f"not a host name: {target.host!r}")
    if not target.path:
        raise InputError(f"no remote path in {label!r}")
    return SourceSpec(SSH, label, target=target)


def _ssh_url(text: str) -> SourceSpec:
    try:
        url = urlsplit(text)
        port = url.port
    except ValueError as exc:
        raise InputError(f"cannot read {text!r} as ssh://USER@HOST:PORT/path ({exc})") from exc
    if not url.hostname or not url.path or url.path == "/":
        raise InputError(f"expected ssh://USER@HOST:PORT/path, got {text!r}")
    return _remote(RemoteTarget(url.hostname, url.path, url.username, port), text)


def _query_number(
    query: str, key: str, default: float, where: str, unit: str = "", finite: bool = False
) -> float:
    """The one number a source's ``?key=N`` query may give (above 0), ``default`` without a query; any
    other key, or a value that is not such a number, is an `InputError` naming ``where``."""
    if not query:
        return default
    values = parse_qs(query)
    unknown = set(values) - {key}
    if unknown:
        raise InputError(
            f"{where}: knows only ?{key}={unit.upper() or 'N'}, got {', '.join(sorted(unknown))}"
        )
    try:
        value = float(values[key][-1])
    except (KeyError, ValueError) as exc:
        raise InputError(
            f"{where}: {key} must be a number{f' of {unit}' if unit else ''}, got {query!r}"
        ) from exc
    if not value > 0 or math.isnan(value) or (finite and math.isinf(value)):
        raise InputError(f"{where}: {key} must be above 0{f' {unit}' if unit else ''}, got {value:g}")
    return value


def _replay(text: str) -> SourceSpec:
    rest = text.removeprefix("replay:")
    path, _, query = rest.partition("?")
    speed = _query_number(query, "speed", 1.0, "replay")
    if not Path(path).is_file():
        raise InputError(f"replay: no such file: {path}")
    return SourceSpec(REPLAY, f"replay:{path}", path=path, speed=speed)


def _http(text: str) -> SourceSpec:
    """`http://HOST:PORT[?every=SECONDS]`: the server's base address, its endpoints polled."""
    try:
        url = urlsplit(text)
        url.port  # noqa: B018 - reading it checks it
    except ValueError as exc:
        raise InputError(f"cannot read {text!r} as http://HOST:PORT ({exc})") from exc
    if not url.hostname or url.path not in ("", "/"):
        raise InputError(
            f"expected http://HOST:PORT (the server's /metrics and /server_info are polled), got {text!r}"
        )
    every = _query_number(url.query, "every", 5.0, text, unit="seconds", finite=True)
    base = f"{url.scheme}://{url.netloc}"
    return SourceSpec(HTTP, base, path=base, every=every)
