"""Following local files: growth, rename rotation, copytruncate, a large file's tail first, and the
incremental parse giving the same tables as a batch parse."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import polars as pl
import pytest
from live_support import Recorder, source_texts, view_texts, wait_for

from tracelens.engine.ingest import parse_paths
from tracelens.live import LiveSession, parse_spec
from tracelens.live import events as ev
from tracelens.live.store import RECENT_BYTES
from tracelens.tables.frames import Tables
from tracelens.tables.schema import C, T

from conftest import SAMPLE_LOGS

pytestmark = pytest.mark.timeout(90)


def _line(i: int) -> str:
    return f"[2026-11-20 10:00:{i % 60:02d} TP0] Decode batch, #running-req: 1, #token: {i}, accept len: 2.{i % 10}0, gen throughput (token/s): 90.00, "


def _session(path: Path, **options) -> LiveSession:
    spec = parse_spec(str(path))
    session = LiveSession([spec], interval=0.1, follower_options={spec.label: {"poll": 0.01, **options}})
    session.start()
    return session


def test_a_growing_file_is_followed_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("")
    session = _session(path)
    try:
        written = []
        with path.open("a") as fh:
            for i in range(50):
                fh.write(_line(i) + "\n")
                fh.flush()
                written.append(_line(i))
                if i % 10 == 0:
                    n = len(written)
                    assert wait_for(lambda n=n: session.index.count() == n)
            # a partial line waits for its newline
            fh.write("[2026-11-20 10:01:00 TP0] half")
            fh.flush()
        assert wait_for(lambda: session.index.count() == 50)
        assert not wait_for(lambda: session.index.count() > 50, timeout=0.3)
        with path.open("a") as fh:
            fh.write(" and the rest\n")
        assert wait_for(lambda: session.index.count() == 51)
        assert view_texts(session) == [*written, "[2026-11-20 10:01:00 TP0] half and the rest"]
        assert session.wait_idle()
        assert session.analysis is not None
        assert session.analysis.tables[T.BATCHES].height == 50
    finally:
        session.stop()


def test_rename_rotation_loses_and_repeats_nothing(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("")
    session = _session(path)
    recorder = Recorder()
    session.subscribe(recorder)
    expected = []
    try:
        n = 0
        for generation in range(3):
            with path.open("a") as fh:
                for _ in range(40):
                    fh.write(f"line {n}\n")
                    expected.append(f"line {n}")
                    n += 1
                fh.flush()
                if generation < 2:
                    # the writer keeps writing to the renamed file for a moment, as real ones do
                    os.rename(path, tmp_path / f"server.log.{generation + 1}")
                    for _ in range(5):
                        fh.write(f"line {n}\n")
                        expected.append(f"line {n}")
                        n += 1
                    fh.flush()
            path.touch()
            # rotations are minutes apart in life: let the follower see each one before the next
            assert wait_for(lambda g=generation: session.sources[0].rotations == min(g + 1, 2))
        assert wait_for(lambda: session.index.count() == len(expected))
        assert source_texts(session) == expected
        assert wait_for(lambda: session.sources[0].rotations == 2)
        # text of lines from rotated files is still readable (the old descriptors are kept)
        assert session.index.text(0) == "line 0"
    finally:
        session.stop()


def test_copytruncate_resumes_from_the_start(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("")
    session = _session(path)
    try:
        # more than the store keeps in memory after the first lines, so that they are read back from the
        # file: they are read first, on their own (the newest read is kept in memory whole, and one read of
        # every line, when the follower came late, kept the first ones there too)
        first, before = 100, 2 * RECENT_BYTES // len("before 0000000\n")
        with path.open("a") as fh:  # O_APPEND, as loggers open their files
            for i in range(before):
                fh.write(f"before {i:07d}\n")
                if i + 1 == first:
                    fh.flush()
                    assert wait_for(lambda: session.index.count() == first)
            fh.flush()
            assert wait_for(lambda: session.index.count() == before)
            os.truncate(path, 0)
            assert wait_for(lambda: session.sources[0].truncations == 1)
            for i in range(20):
                fh.write(f"after {i}\n")
            fh.flush()
        assert wait_for(lambda: session.index.count() == before + 20)
        texts = source_texts(session)
        assert texts[before:] == [f"after {i}" for i in range(20)]
        # the first lines' text went with the truncation; the view says so instead of showing wrong text
        assert "truncated" in texts[0]
        assert texts[before - 1] == f"before {before - 1:07d}"  # the newest are still in memory
    finally:
        session.stop()


def test_a_truncation_rewritten_past_the_cursor_between_two_looks_is_seen(tmp_path: Path) -> None:
    """logrotate's copytruncate while the writer keeps writing: by the follower's next look the file
    may be longer than where it stopped, so its size does not show the truncation; the bytes before
    the cursor do."""
    path = tmp_path / "server.log"
    path.write_text("")
    session = _session(path, poll=0.5)
    try:
        with path.open("a") as fh:
            for i in range(30):
                fh.write(f"before {i}\n")
            fh.flush()
            assert wait_for(lambda: session.index.count() == 30)
            os.truncate(path, 0)
            for i in range(60):  # more bytes than before the truncation, written within one look
                fh.write(f"after the truncation {i}\n")
            fh.flush()
        assert wait_for(lambda: session.index.count() == 90)
        assert session.sources[0].truncations == 1
        assert source_texts(session)[30:] == [f"after the truncation {i}" for i in range(60)]
    finally:
        session.stop()


def test_a_large_file_shows_its_tail_first_then_reads_everything(tmp_path: Path) -> None:
    path = tmp_path / "big.log"
    lines = [_line(i) for i in range(3000)]
    path.write_text("\n".join(lines) + "\n")
    recorder = Recorder()
    spec = parse_spec(str(path))
    session = LiveSession(
        [spec],
        interval=0.1,
        follower_options={
            spec.label: {
                "poll": 0.01,
                "preview_threshold": 10_000,
                "preview_bytes": 5_000,
                "block_bytes": 20_000,
            }
        },
    )
    session.subscribe(recorder)
    session.start()
    try:
        assert wait_for(lambda: bool(recorder.of(ev.PreviewShown)))
        preview = recorder.of(ev.PreviewShown)[0]
        assert 0 < preview.count < 100
        assert wait_for(lambda: session.index.previews[0] is None and session.index.count() == 3000)
        assert source_texts(session) == lines
        assert session.sources[0].backfill is None
    finally:
        session.stop()


def _comparable(tables: Tables) -> dict[str, pl.DataFrame]:
    out = {}
    for name in (T.LINES, T.BATCHES, T.FAULTS, T.DEBUG, T.LIFECYCLE, T.RUNS):
        frame = tables[name].drop(C.SOURCE)
        out[name] = frame.sort(frame.columns[:3]) if frame.height else frame
    return out


def test_lines_written_in_any_pieces_parse_like_the_whole_file(tmp_path: Path) -> None:
    """A traceback or a blank line cut by a write boundary comes out as a batch parse reads it."""
    original = SAMPLE_LOGS / "sweep_and_crash.log"
    data = original.read_bytes()
    path = tmp_path / "sweep_and_crash.log"
    path.write_bytes(b"")
    session = _session(path)
    rng = random.Random(7)

    def writer() -> None:
        at = 0
        with path.open("ab") as fh:
            while at < len(data):
                step = rng.choice([1, 7, 100, 4096, 65536])
                fh.write(data[at : at + step])
                fh.flush()
                at += step

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join(timeout=60)
    try:
        total = data.count(b"\n")
        assert wait_for(lambda: session.index.count() == total, timeout=60)
        assert session.wait_idle(timeout=60)
        live = session.analysis.tables  # finalize() of everything the worker parsed
        batch = parse_paths([path])
        for name, frame in _comparable(batch).items():
            assert _comparable(live)[name].equals(frame), name
    finally:
        session.stop()
