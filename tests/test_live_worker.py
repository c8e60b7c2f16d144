"""The live session's parser and analyser run in a worker process of lower priority; the log view
never depends on it: when it dies, lines are still indexed and shown, and the failure is reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from live_support import Recorder, view_texts, wait_for

from tracelens.live import LiveSession, parse_spec
from tracelens.live import events as ev
from tracelens.sources.files import block_lines, line_spans
from tracelens.sources.protocol import Block
from tracelens.tables.schema import C, T

pytestmark = pytest.mark.timeout(90)

DECODE = "[2026-11-20 10:00:{s:02d} TP0] Decode batch, #running-req: 1, #token: 9, accept len: 2.50, gen throughput (token/s): 90.00, "


def _session(path: Path) -> LiveSession:
    spec = parse_spec(str(path))
    return LiveSession([spec], interval=0.1, follower_options={spec.label: {"poll": 0.01}})


def test_parsing_and_analysis_run_in_a_lower_priority_process(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("".join(DECODE.format(s=i) + "\n" for i in range(20)))
    session = _session(path)
    recorder = Recorder()
    session.subscribe(recorder)
    session.start()
    try:
        worker = session._worker
        assert worker is not None and worker.process.pid != os.getpid()
        assert os.getpriority(os.PRIO_PROCESS, worker.process.pid) > os.getpriority(os.PRIO_PROCESS, 0)
        assert wait_for(lambda: session.analyses >= 1) and session.wait_idle()
        parsed = recorder.of(ev.LinesParsed)
        assert sum(e.count for e in parsed) == 20
        assert parsed[-1].newest_decode == (2.5, 90.0)
        assert session.index.kinds(session.index.order()).tolist() == [session_kind("batch")] * 20
        assert session.analysis is not None and session.analysis.tables[T.BATCHES].height == 20
        assert session.snapshot.lines == 20
    finally:
        session.stop()
    assert worker.process.poll() is not None  # stopped with the session


def session_kind(kind: str) -> int:
    from tracelens.live.index import KIND_CODES

    return KIND_CODES[kind]


def test_when_the_worker_dies_lines_are_still_shown_and_the_failure_reported(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text(DECODE.format(s=0) + "\n")
    session = _session(path)
    recorder = Recorder()
    session.subscribe(recorder)
    session.start()
    try:
        assert wait_for(lambda: session.analyses >= 1)
        before = session.analysis
        assert before is not None
        session._worker.process.kill()
        assert wait_for(lambda: bool(recorder.of(ev.SessionFailed)))
        assert "parser's process ended" in recorder.of(ev.SessionFailed)[0].message
        with path.open("a") as fh:
            fh.write("after the worker died\n")
        assert wait_for(lambda: session.index.count() == 2)
        assert view_texts(session)[-1] == "after the worker died"
        assert session.wait_idle()
        assert session.analysis is before  # the last one fetched, without waiting for a dead worker
    finally:
        session.stop()


def test_a_dead_worker_never_makes_the_sender_wait(tmp_path: Path) -> None:
    """Lines sent after the worker died are dropped at once, even past the queue's byte bound: the
    pump, which also feeds the log view, must not wait for a process that is gone."""
    import threading

    from tracelens.live.messages import WorkerConfig
    from tracelens.live.worker import WorkerClient
    from tracelens.parsers import ParseOptions

    config = WorkerConfig(["a"], [ParseOptions()], None, None, 900.0, 0.1)
    ended = threading.Event()
    client = WorkerClient(config, lambda message: None, lambda reason: ended.set(), max_bytes=10)
    try:
        client.process.kill()
        assert ended.wait(20) and client.gone

        def send() -> None:  # past the 10-byte bound: would wait forever if not dropped
            for seq in range(1, 6):
                client.parse(seq, 0, seq, 0, b"x" * 100 + b"\n", False)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        sender.join(timeout=20)
        assert not sender.is_alive()
    finally:
        client.close()


@given(st.lists(st.sampled_from([b"a", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b" "]), max_size=60))
def test_the_pump_cuts_lines_where_the_parser_does(pieces: list[bytes]) -> None:
    """The pump indexes lines with `line_spans` (numpy only); the worker parses `block_lines` frames of
    the same bytes: both must agree on every line's offset and length."""
    data = b"".join(pieces)
    starts, lengths = line_spans(data)
    frame = block_lines(Block("x", 1, 0, data))
    assert starts.tolist() == frame.get_column(C.BYTE_OFFSET).to_list()
    assert lengths.tolist() == frame.get_column(C.BYTE_LEN).to_list()
