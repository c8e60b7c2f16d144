"""Source names, ssh command lines (paths quoted, never interpreted), `--cmd`, stdin and replay."""

from __future__ import annotations

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from live_support import Recorder, source_texts, wait_for

from tracelens.errors import InputError
from tracelens.live import LiveSession, command_spec, parse_spec
from tracelens.live import events as ev
from tracelens.live.pace import replay_schedule
from tracelens.sources import events as src
from tracelens.sources.ssh import RemoteTarget, remote_command, ssh_argv
from tracelens.tables.schema import T

from conftest import SAMPLE_LOGS

pytestmark = pytest.mark.timeout(90)
TRACELENS = [sys.executable, "-m", "tracelens.cli"]


@pytest.mark.parametrize(
    ("text", "kind", "host", "user", "port", "path"),
    [
        ("gpu1:/var/log/sglang.log", "ssh", "gpu1", None, None, "/var/log/sglang.log"),
        ("me@gpu1:/var/log/sglang.log", "ssh", "gpu1", "me", None, "/var/log/sglang.log"),
        ("ssh://me@gpu1:2222/var/log/s.log", "ssh", "gpu1", "me", 2222, "/var/log/s.log"),
        ("gpu1:logs/s.log", "ssh", "gpu1", None, None, "logs/s.log"),
    ],
)
def test_remote_names(text: str, kind: str, host: str, user: str | None, port: int | None, path: str) -> None:
    spec = parse_spec(text)
    assert spec.kind == kind
    assert spec.target == RemoteTarget(host, path, user, port)
    assert spec.label == text


def test_local_replay_stdin_and_command_names(tmp_path: Path) -> None:
    odd = tmp_path / "a:b.log"  # an existing file wins over HOST:PATH
    odd.write_text("x\n")
    assert parse_spec(str(odd)).kind == "file"
    assert parse_spec(str(tmp_path / "not-yet.log")).kind == "file"  # its folder exists: it may appear
    assert parse_spec("-").kind == "stdin"
    replay = parse_spec(f"replay:{SAMPLE_LOGS / 'wrappers.log'}?speed=20")
    assert (replay.kind, replay.speed) == ("replay", 20.0)
    assert command_spec("kubectl logs -f pod").label == "cmd:kubectl logs -f pod"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("/no/such/folder/x.log", "no such file or folder"),
        ("replay:/no/such.log", "no such file"),
        (f"replay:{SAMPLE_LOGS / 'wrappers.log'}?speed=0", "above 0"),
        (f"replay:{SAMPLE_LOGS / 'wrappers.log'}?pace=2", r"knows only \?speed"),
        ("ssh://gpu1", "expected ssh://"),
        ("-oProxyCommand=x:/p", "not a host name"),
    ],
)
def test_bad_sources_are_input_errors(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_spec(text)


def test_remote_paths_are_quoted_never_interpreted() -> None:
    evil = "/var/log/x; rm -rf / $(reboot) `id` 'q'.log"
    command = remote_command(evil, 41)
    # the remote shell sees exactly one argument after `--`, equal to the path
    words = shlex.split("tail " + command.split("; tail ", 1)[1].rsplit(" 2>&1 </dev/null & ", 1)[0])
    assert words == ["tail", "-c", "+$s", "-F", "--", evil] and "s=42; " in command
    # on reconnect, the bytes before the resume point are checked (length and MD5; never the log text)
    checked = remote_command(evil, 41, b"x\n")
    assert f"tail -c +40 -- {shlex.quote(evil)} 2>/dev/null | head -c 2 | md5sum" in checked
    digest = hashlib.md5(b"x\n").hexdigest()
    assert f'= "{digest}  -" ]; then s=1; for f in {shlex.quote(evil)}.* {shlex.quote(evil)}-*; do' in checked
    home = remote_command("~/logs/a b.log", 0)
    assert "-- \"$HOME\"/'logs/a b.log' 2>&1 </dev/null & " in home
    argv = ssh_argv(RemoteTarget("gpu1", evil, "me", 2222), 0)
    assert argv[:2] == ["ssh", "-o"] and "BatchMode=yes" in argv
    assert argv[argv.index("--") + 1] == "gpu1"
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-l") + 1] == "me"


def test_a_command_is_followed_until_it_exits(tmp_path: Path) -> None:
    script = 'for i in 1 2 3; do echo "out $i"; echo "err $i" >&2; sleep 0.05; done; printf \'no newline\''
    spec = command_spec(script)
    recorder = Recorder()
    session = LiveSession([spec], interval=0.1)
    session.subscribe(recorder)
    session.start()
    try:
        assert wait_for(lambda: session.all_ended)
        assert session.wait_idle()
        texts = source_texts(session)
        assert sorted(texts[:-1]) == sorted(["out 1", "err 1", "out 2", "err 2", "out 3", "err 3"])
        assert texts[-1] == "no newline"
        ended = recorder.of(ev.SourceStateChanged)[-1]
        assert ended.state == src.ENDED and "status 0" in ended.detail
    finally:
        session.stop()


def test_a_failing_command_is_reported() -> None:
    session = LiveSession([command_spec("echo oops; exit 3")], interval=0.1)
    session.start()
    try:
        assert wait_for(lambda: session.all_ended)
        assert session.sources[0].state == src.FAILED
        assert "status 3" in session.sources[0].detail
    finally:
        session.stop()


def test_stopping_ends_a_running_command() -> None:
    session = LiveSession([command_spec("echo start; sleep 60")], interval=0.1)
    session.start()
    assert wait_for(lambda: session.index.count() == 1)
    follower = session.followers[0]
    session.stop()
    assert follower.process.poll() is not None


def test_follow_reads_stdin_and_prints_json_findings() -> None:
    data = (SAMPLE_LOGS / "sweep_and_crash.log").read_bytes()
    result = subprocess.run(
        [*TRACELENS, "follow", "--json", "-"], input=data, capture_output=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.decode().splitlines()]
    codes = {e["code"] for e in events if e["event"] == "finding"}
    assert {"fault-oom", "fault-sigquit"} <= codes
    stats = [e for e in events if e["event"] == "stats" and e["run"] == 3]
    assert stats[-1]["phase"] == "crashed"
    assert stats[-1]["verdict"] == {
        "run": stats[-1]["label"],
        "status": "broken",
        "headline": stats[-1]["headline"],
        "fix": stats[-1]["fix"],
    }
    # the earlier runs stay in the stream: each one's last stats say it ended, with its verdict
    ended = {e["run"]: e for e in events if e["event"] == "stats" and e["ended"]}
    assert set(ended) == {1, 2} and all(e["verdict"]["status"] for e in ended.values())
    # Every event carries the time it was emitted.
    assert all(e.get("at") for e in events)
    first = {k: v for k, v in events[0].items() if k != "at"}
    assert first == {"event": "source", "source": "stdin", "state": "connected", "detail": "reading"}
    # The run's figures and verdict are those of the per-run table `summary` and `compare` read.
    from tracelens import analyze

    run3 = analyze([SAMPLE_LOGS / "sweep_and_crash.log"]).runs.filter(pl.col("run") == 3).row(0, named=True)
    assert stats[-1]["mean_gen_throughput"] == pytest.approx(run3["mean_gen_throughput"])
    assert stats[-1]["mean_accept_len"] == pytest.approx(run3["mean_accept_len"])
    assert stats[-1]["status"] == run3["status"] == "broken"


def test_follow_retracts_a_finding_a_newer_analysis_withdrew() -> None:
    import datetime as dt

    from tracelens.analysis import Finding, Severity
    from tracelens.cli.printer import FollowPrinter
    from tracelens.live.messages import Analysed
    from tracelens.live.status import Snapshot

    session = LiveSession([command_spec("true")])
    lines: list[str] = []
    session.subscribe(FollowPrinter(lines.append, as_json=True))
    half = Finding(
        Severity.WARNING,
        "shapes-inconsistent",
        "s.log",
        1,
        "s.log#1",
        dt.datetime(2026, 1, 1),
        "sites disagree",
    )
    # as the worker says them
    session._from_worker(Analysed(10, 1, [half], Snapshot(), 0.0))
    session._from_worker(Analysed(20, 2, [], Snapshot(), 0.0))
    session._from_worker(Analysed(30, 3, [half], Snapshot(), 0.0))
    events = [json.loads(line) for line in lines]
    assert [(e["event"], e["code"]) for e in events] == [
        ("finding", "shapes-inconsistent"),
        ("retract", "shapes-inconsistent"),
        ("finding", "shapes-inconsistent"),
    ]


def test_follow_cmd_prints_text(tmp_path: Path) -> None:
    log = SAMPLE_LOGS / "eagle3_embed_capture.log"
    result = subprocess.run(
        [*TRACELENS, "follow", "--cmd", f"cat {shlex.quote(str(log))}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "embed-capture-unexpected" in result.stdout
    assert "accept len 1.7" in result.stdout


def test_follow_without_sources_is_exit_2() -> None:
    result = subprocess.run([*TRACELENS, "follow"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "name at least one source" in result.stderr


def test_replay_keeps_the_pace_of_the_timestamps() -> None:
    data, chunks = replay_schedule(SAMPLE_LOGS / "era_2026_comma.log")
    assert chunks[0][0] == 0.0
    times = [c[0] for c in chunks]
    assert times == sorted(times) and times[-1] > 60  # the log spans minutes
    assert b"".join(data[s:e] for _, s, e in chunks) == data


def test_replay_at_high_speed_delivers_the_whole_log() -> None:
    log = SAMPLE_LOGS / "era_2026_comma.log"
    session = LiveSession([parse_spec(f"replay:{log}?speed=100000")], interval=0.1)
    session.start()
    try:
        assert wait_for(lambda: session.all_ended)
        assert session.wait_idle()
        assert source_texts(session) == log.read_text().splitlines()
        assert session.analysis is not None and session.analysis.tables[T.BATCHES].height > 0
    finally:
        session.stop()


def test_several_sources_are_merged_by_time(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("".join(f"[2026-11-20 10:00:{s:02d}] a {s}\n" for s in range(0, 20, 2)))
    b.write_text("".join(f"[2026-11-20 10:00:{s:02d}] b {s}\n" for s in range(1, 20, 2)))
    session = LiveSession([parse_spec(str(a)), parse_spec(str(b))], interval=0.1)
    session.start()
    try:
        assert session.wait_idle()
        order = session.index.order()
        texts = [session.index.text(int(k)) for k in order]
        assert [t.split("] ")[1] for t in texts] == [f"{'ab'[s % 2]} {s}" for s in range(20)]
        assert {session.index.label(int(k)) for k in order} == {str(a), str(b)}
    finally:
        session.stop()
