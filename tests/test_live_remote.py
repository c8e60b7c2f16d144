"""The remote tail for real: an OpenSSH server on 127.0.0.1 (own config, host and user keys made here),
a file another process keeps appending to, the connection killed several times, and every line must
arrive exactly once, in order."""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_support import source_texts, ssh_session, wait_for

from tracelens.live import LiveSession
from tracelens.live.spec import SSH, SourceSpec
from tracelens.sources import events as src
from tracelens.sources.ssh import Backoff, RemoteTarget, SshFollower

from conftest import missing

pytestmark = pytest.mark.timeout(180)
SSHD = Path("/usr/sbin/sshd")
LINES = 3000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (sshd's per-connection processes)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry.name))
    return out


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[dict]:
    if not SSHD.exists() or not shutil.which("ssh"):
        missing("openssh-server or openssh-client is absent (apt-get install them; .ci/run does)")
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("host", "user"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys / name)], check=True, timeout=30
        )
    (keys / "authorized_keys").write_text((keys / "user.pub").read_text())
    port = _free_port()
    config = keys / "sshd_config"
    config.write_text(
        f"""Port {port}
ListenAddress 127.0.0.1
HostKey {keys / "host"}
PidFile {keys / "sshd.pid"}
AuthorizedKeysFile {keys / "authorized_keys"}
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin yes
LogLevel ERROR
"""
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
    server = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
    try:
        options = (
            "-i",
            str(keys / "user"),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            f"UserKnownHostsFile={keys / 'known_hosts'}",
        )
        up = wait_for(lambda: _port_open(port), timeout=15)
        assert up, server.stderr.read().decode() if server.poll() is not None else "sshd did not listen"
        yield {"port": port, "options": options, "pid": server.pid}
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


WRITER = """
import sys, time
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "a") as fh:
    for i in range(n):
        fh.write(f"[2026-11-20 10:00:00 TP0] line {i:05d} " + "x" * (i % 50) + "\\n")
        if i % 7 == 0:
            fh.flush()
            time.sleep(0.02)
"""


def test_remote_tail_survives_dropped_connections(sshd: dict, tmp_path: Path) -> None:
    log = tmp_path / "remote dir" / "server's log.log"  # a space and a quote: quoted, not interpreted
    log.parent.mkdir()
    log.write_text("")
    session = ssh_session(sshd, log, 0.2, Backoff(first=0.1, limit=0.5))
    session.start()
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log), str(LINES)])
    try:
        follower: SshFollower = session.followers[0]
        assert wait_for(lambda: session.sources[0].state == src.CONNECTED, timeout=30), session.sources[0]
        kills = 0
        deadline = time.monotonic() + 90
        while kills < 6 and time.monotonic() < deadline:
            seen = session.index.count()
            if not wait_for(lambda s=seen: session.index.count() > s + 50, timeout=10):
                break
            connections = follower.connections
            sessions = _children(sshd["pid"])  # sshd's per-connection processes
            if kills % 2 == 1 and sessions:
                for pid in sessions:  # the server side drops
                    os.kill(pid, signal.SIGKILL)
            else:
                os.kill(follower.process.pid, signal.SIGKILL)  # the client side drops
            kills += 1
            assert wait_for(
                lambda c=connections: follower.connections > c and session.sources[0].state == src.CONNECTED,
                timeout=30,
            )
        writer.wait(timeout=60)
        assert kills >= 3, "the writer finished before the connection could be dropped several times"
        texts = _all_arrived(session, log, LINES)
        assert len(texts) == LINES
        assert [t.split(" line ")[1][:5] for t in texts] == [f"{i:05d}" for i in range(LINES)]
        assert texts == log.read_text().splitlines()[:-1]  # without the end line
        assert session.sources[0].reconnects >= kills
        assert follower.connections >= kills + 1
        assert session.sources[0].staleness(time.monotonic()) is not None
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait(timeout=10)
        session.stop()


def test_an_unreachable_host_is_retried_and_shown(tmp_path: Path, sshd: dict) -> None:
    closed = _free_port()  # nothing listens there
    target = RemoteTarget("127.0.0.1", "/var/log/x.log", getpass.getuser(), closed)
    spec = SourceSpec(SSH, target.label, target=target)
    session = LiveSession(
        [spec],
        follower_options={
            spec.label: {"extra_options": sshd["options"], "backoff": Backoff(first=0.1, limit=0.2)}
        },
    )
    session.start()
    try:
        assert wait_for(lambda: session.sources[0].reconnects >= 2, timeout=30)
        assert session.sources[0].state == src.RECONNECTING
        assert "refused" in session.sources[0].detail.lower() or "status 255" in session.sources[0].detail
    finally:
        session.stop()


END = "[2026-11-20 10:00:00 TP0] the end of what the test writes"


def _all_arrived(session: LiveSession, log: Path, lines: int) -> list[str]:
    """The source's lines once all ``lines`` written have arrived, and nothing more may come: a last line
    is written after them and waited for (one stream, in order: once it is in, everything written before
    it is, a line sent twice too), then left out."""
    with log.open("a") as fh:
        fh.write(END + "\n")
    assert wait_for(lambda: session.index.count() > lines and source_texts(session)[-1] == END, timeout=60)
    return source_texts(session)[:-1]


def _numbered(first: int, count: int) -> str:
    return "".join(f"[2026-11-20 10:00:00 TP0] line {i:05d}\n" for i in range(first, first + count))


@pytest.mark.parametrize("rotation", ["rename", "copytruncate"])
def test_a_rotation_while_the_connection_is_down_loses_nothing(
    sshd: dict, tmp_path: Path, rotation: str
) -> None:
    """The log is written and rotated while ssh is down, and the new file grows past the byte where the
    old one was left: resuming at that byte of the new file would skip its first lines and the old
    file's last ones; the rest of the old file (found by name and content) comes first, then the new."""
    log = tmp_path / "server.log"
    log.write_text(_numbered(0, 200))
    session = ssh_session(sshd, log, 0.2, Backoff(first=2.0, limit=2.0))
    session.start()
    try:
        follower: SshFollower = session.followers[0]
        assert wait_for(lambda: session.index.count() >= 200, timeout=30)
        connections = follower.connections
        os.kill(follower.process.pid, signal.SIGKILL)
        assert wait_for(lambda: session.sources[0].state == src.RECONNECTING, timeout=10)
        with log.open("a") as fh:
            fh.write(_numbered(200, 30))
        if rotation == "rename":
            log.rename(tmp_path / "server.log.1")
        else:
            shutil.copy(log, tmp_path / "server.log.1")
            with log.open("r+") as fh:
                fh.truncate(0)
        with log.open("a") as fh:  # more bytes than the old file had
            fh.write(_numbered(230, 400))
        assert wait_for(lambda: follower.connections > connections, timeout=30)
        texts = _all_arrived(session, log, 630)
        assert [t.split(" line ")[1] for t in texts] == [f"{i:05d}" for i in range(630)]
    finally:
        session.stop()


def test_tail_messages_in_the_stream_are_told_from_log_lines() -> None:
    """`tail`'s messages come in the byte stream (2>&1): a status is taken out (even inside a partial
    line), a log line that mentions tail stays, and a rotation restarts the count, or, with bytes of the
    old file received, ends the connection so that the next one reads the old file's rest."""
    follower = SshFollower(RemoteTarget("h", "/l/s.log"))
    got: list = []
    stream = (
        b"a tail: of a log line\n"
        b"half a li"
        b"tail: '/l/s.log' has become inaccessible: No such file or directory\n"
        b"ne\n"
    )
    assert "inaccessible" in follower._take(stream, got.append)
    assert b"".join(e.data for e in got) == b"a tail: of a log line\nhalf a line\n"
    assert follower.offset == len(b"a tail: of a log line\nhalf a line\n")
    follower._take(b"last\ntail: /l/s.log: file truncated\nnew 1\n", got.append)
    assert follower.resume_now and got[-1].data == b"last\n"  # `new 1` comes again, after the rest
    fresh = SshFollower(RemoteTarget("h", "/l/s.log"))
    fresh._take(b"tail: '/l/s.log' has appeared;  following new file\nnew 1\n", got.append)
    assert not fresh.resume_now and isinstance(got[-2], src.FileRotated) and fresh.offset == len(b"new 1\n")
