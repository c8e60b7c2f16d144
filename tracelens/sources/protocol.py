"""The two ways a source hands over its lines, and what the drivers expect of them.

- A finite source (a file, plain or compressed, or an archive member) is read as an iterator of
  `Block`s: line-aligned slices that carry their place in the source (first line number, byte offset).
  The batch engine's tasks and the in-memory `ingest` drive them (`files.iter_blocks`,
  `files.blocks_from_stream`).
- A followed source (`tail`, `ssh`, `command`, `replay`) is a `Follower`: the live session runs it on a
  thread of its own, and it reports what happens as events (`events`), complete lines in
  `LinesAppended`. The session numbers those lines and cuts them into the same `Block`s for its
  parser, so both drivers feed the parsers alike.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tracelens.sources.events import SourceEvent

# A block's bytes: a plain file's block is the bytearray it was read into, cut at its last newline in
# place rather than copied (`files.blocks_from_stream`); nothing changes a block's bytes once made.
BlockBytes = bytes | bytearray


@dataclass(frozen=True)
class Block:
    """A line-aligned slice of one source."""

    source: str
    first_line_no: int  # 1-based number of the block's first line
    start_offset: int  # byte offset of the block in the (decompressed) source
    data: BlockBytes


# A follower reports through this callback, from its own thread.
Emit = Callable[[SourceEvent], None]


class Follower(Protocol):
    """A followed source. `run` reads until ``stop`` is set or the source ends (it then emits
    `SourceEnded`); `close` ends what `run` waits on (a child process, a connection) from another
    thread."""

    label: str

    def run(self, emit: Emit, stop: threading.Event) -> None: ...

    def close(self) -> None: ...
