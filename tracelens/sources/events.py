"""What a followed source reports, each a past-tense fact (`LinesAppended`, `FileRotated`).

Followers (`tail`, `ssh`, `command`, `replay`) emit these from their own threads through an `Emit`
callback (see `tracelens.sources.protocol`); the live session turns them into session events for its
listeners. Events are plain frozen dataclasses: the TUI wraps them in a Textual message, `follow`
prints them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tracelens.sources.generation import FileGeneration


# Connection states a source can be in, as shown in the header.
CONNECTING = "connecting"
CONNECTED = "connected"
RECONNECTING = "reconnecting"
ENDED = "ended"
FAILED = "failed"


@dataclass(frozen=True)
class SourceEvent:
    source: str  # the source's label


@dataclass(frozen=True)
class LinesAppended(SourceEvent):
    """Complete lines arrived (``data`` ends with a newline, except the last bytes of an ended source).
    ``origin`` is set when the bytes are also readable in place (a local file at ``origin_offset``)."""

    data: bytes
    origin: FileGeneration | None = None
    origin_offset: int = 0


@dataclass(frozen=True)
class TailPreviewed(SourceEvent):
    """The last lines of a large file, read first so that the screen has something to show while the
    whole file is read from its start (they arrive again, in order, as `LinesAppended`)."""

    data: bytes
    origin: FileGeneration
    origin_offset: int


@dataclass(frozen=True)
class BackfillProgressed(SourceEvent):
    """Bytes of the file's existing content read so far, out of ``total``."""

    done: int
    total: int


@dataclass(frozen=True)
class SourceConnected(SourceEvent):
    detail: str = ""


@dataclass(frozen=True)
class SourceDisconnected(SourceEvent):
    """The connection dropped; a new attempt follows after ``retry_in`` seconds."""

    reason: str
    retry_in: float


@dataclass(frozen=True)
class FileRotated(SourceEvent):
    """The path now names a new file (rename rotation); the old one was read to its end first."""

    detail: str = ""


@dataclass(frozen=True)
class FileTruncated(SourceEvent):
    """The file shrank under the cursor (copytruncate); reading resumed from its start."""

    size: int = 0


@dataclass(frozen=True)
class SourceEnded(SourceEvent):
    """No more lines will come (stdin closed, the command exited, the replay finished, or it failed)."""

    reason: str
    failed: bool = False
