"""A block's buffer is never resized while a view of it may live. A view (numpy's `frombuffer`, an Arrow
`py_buffer`) can outlive the function that took it: a sampling profiler, as every Dask worker runs,
holds the frames it saw with their locals, and a bytearray with a live export cannot be resized
(`BufferError: Existing exports of data: object cannot be re-sized`, one `--executor dask-local` run in
six). Here a profile hook keeps every frame that returns, which is the worst such profiler, on every call:
reading blocks and scanning ranges must work and give what they give without it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from tracelens.engine.ranges import scan_range
from tracelens.sources.files import blocks_from_stream

from conftest import SAMPLE_LOGS


@contextmanager
def frames_kept() -> Iterator[list[FrameType]]:
    kept: list[FrameType] = []

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "return":
            kept.append(frame)

    sys.setprofile(hook)
    try:
        yield kept
    finally:
        sys.setprofile(None)
        kept.clear()


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "big.log"
    log.write_bytes((SAMPLE_LOGS / "sweep_and_crash.log").read_bytes() * 4)
    return log


def _blocks(log: Path) -> list[tuple[int, int, bytes]]:
    with log.open("rb") as fh:  # a plain file: read into bytearrays, cut in place
        return [
            (b.first_line_no, b.start_offset, bytes(b.data)) for b in blocks_from_stream(fh, "x", 64 << 10)
        ]


@pytest.mark.parametrize(
    "read", [_blocks, lambda log: scan_range(str(log), 0, log.stat().st_size, chunk=64 << 10)]
)
def test_reading_survives_views_kept_alive_by_a_profiler(tmp_path: Path, read: Callable[[Path], Any]) -> None:
    log = _log(tmp_path)
    want = read(log)
    with frames_kept() as kept:
        got = read(log)
        assert kept  # the hook held the frames, and the views in them
    assert got == want
