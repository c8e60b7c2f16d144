"""What a live source or session reports, each a past-tense fact (`LinesAppended`, `FileRotated`).

Followers (`tail`, `remote`, `command`, `replay`) emit the source events from their own threads; the
`LiveSession` turns them into session events for its listeners (the TUI, `tracelens follow`). Events
are plain frozen dataclasses: the TUI wraps them in a Textual message, `follow` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracelens.analysis import Finding
    from tracelens.live.status import Snapshot
    from tracelens.live.store import FileGeneration
    from tracelens.tables import Tables


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


# ----- session events -----


@dataclass(frozen=True)
class LinesIndexed:
    """New lines are in the log index (text readable, kind not yet known)."""

    source: str
    count: int


@dataclass(frozen=True)
class LinesParsed:
    """New lines were parsed: ``tables`` holds their rows (not finalized); ``newest_decode`` the
    (accept len, gen throughput) of the newest decode line among them (`status.newest_decode`)."""

    source: str
    first_line: int
    count: int
    tables: Tables
    newest_decode: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class PreviewShown:
    source: str
    count: int


@dataclass(frozen=True)
class SourceStateChanged:
    """A source's connection state or progress changed (see `LiveSession.sources`)."""

    source: str
    state: str
    detail: str = ""


@dataclass(frozen=True)
class AnalysisUpdated:
    """A new analysis of everything seen so far: its ``findings`` (all of them; ``new_findings`` were
    not in the previous one) and what the screen shows (``snapshot``). The full `Analysis`, with every
    table, stays in the worker process: `LiveSession.analysis` fetches it when read."""

    findings: list[Finding]
    snapshot: Snapshot
    new_findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    withdrawn: list[Finding] = field(default_factory=list)  # in the previous analysis, not in this one


@dataclass(frozen=True)
class SessionFailed:
    """An internal error in the session's threads (shown, never a traceback on the screen)."""

    message: str
    extra: dict[str, Any] = field(default_factory=dict)
