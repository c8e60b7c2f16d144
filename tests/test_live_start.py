"""The start of a live session on a file that already holds lines and grows meanwhile: every line is
shown once, in order, and parsed and analysed once.

This is the hand-over that the initial load through the batch engine (issue 10, point 1) must keep: the
existing content is read one way (today: preview, then backfill from the start; later: the engine's
dataset up to the size at start) and the new lines another (the follower), with one cut between them.
A line written across that cut, or while the cut is being made, must be neither lost nor counted twice.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from live_support import source_texts, wait_for

from tracelens.live import LiveSession, parse_spec
from tracelens.tables.schema import C, T

pytestmark = pytest.mark.timeout(120)


def _line(i: int) -> str:
    return (
        f"[2026-11-20 10:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: 1, "
        f"#token: {i}, accept len: 2.{i % 10}0, gen throughput (token/s): 90.00, "
    )


def _start(path: Path) -> LiveSession:
    """A session whose follower previews the tail and then backfills in small blocks, as it does for a
    large log (the thresholds are scaled down so that the test file counts as large)."""
    spec = parse_spec(str(path))
    options = {
        "poll": 0.01,
        "preview_threshold": 50_000,
        "preview_bytes": 8_000,
        "block_bytes": 16_000,
        "preview_grace": 0.05,
    }
    session = LiveSession([spec], interval=0.1, follower_options={spec.label: options})
    session.start()
    return session


def _check_every_line_once(session: LiveSession, expected: list[str]) -> None:
    assert wait_for(lambda: session.index.count() == len(expected), timeout=60)
    assert not wait_for(lambda: session.index.count() > len(expected), timeout=0.3)
    assert source_texts(session) == expected
    assert session.wait_idle(timeout=60)
    analysis = session.analysis
    assert analysis is not None
    batches = analysis.tables[T.BATCHES]
    # one decode batch per line: none lost, none parsed twice across the cut
    assert batches.height == len(expected)
    assert sorted(batches[C.LINE_NO].to_list()) == list(range(1, len(expected) + 1))
    line_nos = analysis.tables[T.LINES][C.LINE_NO].to_list()
    assert line_nos == list(range(1, len(expected) + 1))


def test_a_file_growing_while_the_session_starts_loses_and_repeats_no_line(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    existing = 1500  # about 190 kB: previewed, then read from its start in blocks
    expected = [_line(i) for i in range(existing)]
    path.write_text("".join(line + "\n" for line in expected))
    more = 1500
    started = threading.Event()

    def write_more() -> None:
        # lines keep arriving from before the session starts until after it has connected, in
        # pieces that cut lines in two
        with path.open("a") as fh:
            for i in range(existing, existing + more):
                text = _line(i) + "\n"
                half = len(text) // 2
                fh.write(text[:half])
                fh.flush()
                if i == existing + 10:
                    started.set()
                fh.write(text[half:])
                fh.flush()

    writer = threading.Thread(target=write_more, name="writer")
    writer.start()
    assert started.wait(10)
    session = _start(path)
    try:
        writer.join(60)
        assert not writer.is_alive()
        expected += [_line(i) for i in range(existing, existing + more)]
        _check_every_line_once(session, expected)
    finally:
        session.stop()


def test_a_line_half_written_at_the_start_is_read_once_whole(tmp_path: Path) -> None:
    """The size at start ends inside a line: the cut must be at the last newline before it."""
    path = tmp_path / "server.log"
    existing = 1000
    expected = [_line(i) for i in range(existing + 1)]
    last = expected[-1] + "\n"
    path.write_text("".join(line + "\n" for line in expected[:-1]) + last[:20])
    session = _start(path)
    try:
        assert wait_for(lambda: session.index.count() == existing, timeout=60)
        with path.open("a") as fh:
            fh.write(last[20:])
        _check_every_line_once(session, expected)
    finally:
        session.stop()
