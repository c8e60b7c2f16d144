"""A compressed log or an archive member, read once to its end as a followed source (`tui`, `follow`).

Such a file does not grow: it is decompressed with the batch engine's readers (`logfiles.open_source`,
`archives.open_member`), cut into line-aligned blocks (`files.blocks_from_stream`) and handed over as
`LinesAppended`, then it ends. A stream that breaks (a truncated `.gz`) keeps the lines before the
break and ends failed, saying how far it was read, as the batch commands' "read in part" does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from tracelens.errors import SourceReadError
from tracelens.sizes import FOLLOW_READ_BYTES
from tracelens.sources.archives import open_member
from tracelens.sources.events import LinesAppended, SourceConnected, SourceEnded
from tracelens.sources.files import blocks_from_stream
from tracelens.sources.logfiles import open_source
from tracelens.sources.protocol import Emit

READ_IN_PART = "read in part"
READ_TO_END = "read to its end"


class RecordedFollower:
    """``path`` decompressed (``member`` None), or its member ``member`` (a tar or zip archive)."""

    def __init__(
        self, path: str | Path, member: str | None, label: str, *, block_bytes: int = FOLLOW_READ_BYTES
    ) -> None:
        self.path = Path(path)
        self.member = member
        self.label = label
        self.block_bytes = block_bytes

    def close(self) -> None:
        """Nothing to end: `run` returns when its stop event is set."""

    @contextmanager
    def _open(self) -> Iterator[BinaryIO]:
        if self.member is None:
            with open_source(self.path) as fh:
                yield fh
        else:
            with open_member(self.path, self.member) as fh:
                yield fh

    def run(self, emit: Emit, stop: threading.Event) -> None:
        read = 0
        try:
            with self._open() as fh:
                emit(SourceConnected(self.label, f"reading {self.label} once to its end"))
                for block in blocks_from_stream(fh, self.label, self.block_bytes):
                    if stop.is_set():
                        return
                    # the session keeps what it is handed: bytes, not the reader's bytearray
                    emit(LinesAppended(self.label, bytes(block.data)))
                    read += len(block.data)
        except SourceReadError as exc:
            emit(
                SourceEnded(
                    self.label,
                    f"{READ_IN_PART}: unreadable after {exc.offset:,} bytes ({exc.reason}); "
                    "the lines before the break are kept",
                    failed=True,
                )
            )
            return
        if not stop.is_set():
            emit(SourceEnded(self.label, f"{READ_TO_END} ({read:,} bytes)"))
