"""A plain file steps back over its partial last line instead of carrying it (`files.blocks_from_stream`):
the blocks must be the very blocks a stream that cannot step back is cut into, since `evidence` rows
depend on where blocks end."""

from __future__ import annotations

import io
import random
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from tracelens.sources.files import block_lines, blocks_from_stream


class _Unseekable(io.RawIOBase):
    def __init__(self, data: bytes) -> None:
        self.inner = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray) -> int:  # type: ignore[override]
        got = self.inner.read(len(buf))
        buf[: len(got)] = got
        return len(got)


def _blocks(fh: io.IOBase, block: int, start: int, limit: int | None) -> list[tuple[int, int, bytes]]:
    return [
        (b.first_line_no, b.start_offset, b.data) for b in blocks_from_stream(fh, "s", block, start, 1, limit)
    ]  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(6))
def test_plain_files_are_cut_as_streams_are(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    lines = [b"x" * rnd.choice((0, 1, 5, 40, 300)) + rnd.choice((b"\n", b"\r\n")) for _ in range(400)]
    data = b"".join(lines) + (b"tail without newline" if seed % 2 else b"")
    path = tmp_path / "a.log"
    path.write_bytes(data)
    for block in (1, 7, 64, 1000, 1 << 16):
        start = rnd.randrange(len(data) // 2) if seed > 1 else 0
        limit = rnd.randrange(len(data)) if seed > 3 else None
        with path.open("rb") as fh:
            fh.seek(start)
            plain = _blocks(fh, block, start, limit)
        stream = io.BufferedReader(_Unseekable(data[start:]))
        assert plain == _blocks(stream, block, start, limit)
        assert b"".join(b for _, _, b in plain) == data[start : None if limit is None else start + limit]


def test_a_block_keeps_its_newlines_for_the_split(tmp_path: Path) -> None:
    path = tmp_path / "a.log"
    path.write_bytes(b"a\nbb\r\n\nccc")
    with path.open("rb") as fh:
        frames = [block_lines(b) for b in blocks_from_stream(fh, "s", 4)]
    texts = [t for f in frames for t in f.get_column("text").to_list()]
    assert texts == ["a", "bb", "", "ccc"]


def test_a_small_file_is_read_into_a_buffer_of_its_size(tmp_path: Path) -> None:
    """A block's buffer is zero-filled before the read, so a small file read with a big block size must
    not get one of that size (a 14 KB log in a 6 MiB buffer took 3.4 ms against 0.006): at most what is
    left of the file, and a byte more to see it grew. A pipe, whose size says nothing, is read whole."""
    path = tmp_path / "small.log"
    text = b"".join(
        b"[2026-11-20 10:00:%02d TP0] Decode batch, #running-req: 1\n" % (i % 60) for i in range(200)
    )
    path.write_bytes(text)
    tracemalloc.start()
    try:
        with path.open("rb") as fh:
            blocks = list(blocks_from_stream(fh, "small.log", block_bytes=1 << 30))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert b"".join(b.data for b in blocks) == text
    assert peak < 4 * len(text) + (1 << 20), f"{peak} bytes at the peak for a {len(text)}-byte file"
    with subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE) as cat:
        assert cat.stdout is not None
        piped = list(blocks_from_stream(cat.stdout, "pipe", block_bytes=4 << 10))
    assert b"".join(b.data for b in piped) == text and len(piped) > 1
