"""Progress for long parses: a rich bar (bytes, MB/s, ETA) on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress


def _bar() -> Progress:
    """A transient bar on stderr: bytes done, MB/s, ETA."""
    # Imported here: a quiet or piped run draws no bar (rich.progress costs ~50 ms to import).
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("parsing"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    return Progress(*columns, console=Console(stderr=True), transient=True)


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
