"""Progress for long parses: a rich bar (bytes, MB/s, ETA) on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from tracelens.sources.files import compression_of


def _bar() -> Progress:
    """A transient bar on stderr: bytes done, MB/s, ETA."""
    columns = (
        TextColumn("parsing"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    return Progress(*columns, console=Console(stderr=True), transient=True)


@contextmanager
def byte_progress(files: list[Path], enabled: bool = True) -> Iterator[Callable[[str, int], None] | None]:
    """Yield a callback(source, bytes) that advances a bar over all ``files``, or None when disabled or
    when stderr is not a terminal. Compressed inputs make the total unknown (bytes are counted after
    decompression), so the bar then shows progress without an ETA."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    compressed = any(compression_of(f) for f in files)
    total = None if compressed else sum(f.stat().st_size for f in files)
    with _bar() as bar:
        task = bar.add_task("parse", total=total)
        yield lambda _source, nbytes: bar.advance(task, nbytes)


@contextmanager
def engine_progress(quiet: bool = False) -> Iterator[Callable[[int, int], None] | None]:
    """A callback(bytes done, bytes in total) for the batch engine: a rich bar with bytes, MB/s and ETA
    on a terminal; one plain line every few seconds otherwise (logs of CI jobs, `nohup`); nothing when
    ``quiet``."""
    if quiet:
        yield None
        return
    if sys.stderr.isatty():
        with _bar() as bar:
            task = bar.add_task("parse", total=None)

            def advance(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield advance
        return
    yield _PlainProgress()


class _PlainProgress:
    """`parsed 512.0 of 1024.0 MB (50%), 95.1 MB/s, about 5 s left` on stderr, at most every 2 s."""

    def __init__(self, every: float = 2.0) -> None:
        self.started = time.monotonic()
        self.last = 0.0
        self.every = every

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every and done < total:
            return
        self.last = now
        elapsed = max(now - self.started, 1e-9)
        rate = done / elapsed
        left = f", about {(total - done) / rate:.0f} s left" if rate > 0 and done < total else ""
        share = f" ({100 * done / total:.0f}%)" if total else ""
        print(
            f"parsed {done / 1e6:.1f} of {total / 1e6:.1f} MB{share}, {rate / 1e6:.1f} MB/s{left}",
            file=sys.stderr,
            flush=True,
        )
