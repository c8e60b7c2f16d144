"""The text store of live lines (`live.store.TextStore`): the newest lines read right after a
copytruncate emptied their file, before the follower handed over the copy."""

from __future__ import annotations

import os
from pathlib import Path

from tracelens.live.store import GONE, RECENT_BYTES, TextStore
from tracelens.sources.generation import FileGeneration


def _lines(prefix: str, count: int) -> bytes:
    return "".join(f"{prefix} line {i:07d}\n" for i in range(count)).encode()


def test_the_newest_lines_read_right_after_a_truncation_keep_their_text(tmp_path: Path) -> None:
    """A copytruncate may empty the file, and the writer fill it again, between the follower's read and
    a view's (or the soak's tally's) read of those lines: the file then holds other bytes there."""
    path = tmp_path / "server.log"
    before = _lines("before", 2000)
    path.write_bytes(before)
    fd = os.open(path, os.O_RDONLY)
    store = TextStore()
    try:
        generation = FileGeneration.of(str(path), fd)
        start = store.append(before, generation, 0)
        with path.open("r+b") as fh:  # truncated and written past the old end: no size change seen
            fh.truncate(0)
            fh.write(_lines("after!", 2100))
        assert store.read(start, len(before)) == before
        line = len(before) // 2000
        assert store.line(start + 5 * line, line) == "before line 0000005"
    finally:
        store.close()
        os.close(fd)


def test_only_the_newest_bytes_stay_in_memory(tmp_path: Path) -> None:
    """Older lines are read back from their file (so a truncation there shows, as before), and what is
    kept is bounded: at most RECENT_BYTES besides the newest append."""
    path = tmp_path / "server.log"
    chunk = _lines("x", 1000)  # about 16 KB
    count = 3 * RECENT_BYTES // len(chunk)
    path.write_bytes(chunk * count)
    fd = os.open(path, os.O_RDONLY)
    store = TextStore()
    try:
        generation = FileGeneration.of(str(path), fd)
        for i in range(count):
            store.append(chunk, generation, i * len(chunk))
        assert store.held_in_memory() < RECENT_BYTES + len(chunk)
        generation.gone = True  # truncated with no copy found: the old text is no longer there
        assert store.read(0, 20) == GONE.encode()
        newest = (count - 1) * len(chunk)
        assert store.read(newest, len(chunk)) == chunk
    finally:
        store.close()
        os.close(fd)
