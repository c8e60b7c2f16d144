"""Progress for long parses: a rich bar (bytes, MB/s, ETA) on a terminal, nothing otherwise."""

from __future__ import annotations

import sys
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

from tracelens.sources import compression_of


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
    columns = (
        TextColumn("parsing"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("parse", total=total)
        yield lambda _source, nbytes: bar.advance(task, nbytes)
