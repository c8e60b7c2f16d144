"""What a live session reports to its listeners, each a past-tense fact (`LinesParsed`,
`AnalysisUpdated`). A session also passes on its sources' events (`tracelens.sources.events`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracelens.analysis import Finding
    from tracelens.live.status import Snapshot


@dataclass(frozen=True)
class LinesIndexed:
    """New lines are in the log index (text readable, kind not yet known)."""

    source: str
    count: int


@dataclass(frozen=True)
class LinesParsed:
    """New lines were parsed (their rows are the worker's: `LiveSession.analysis` has them);
    ``newest_decode`` the (accept len, gen throughput) of the newest decode line among them
    (`status.newest_decode`)."""

    source: str
    first_line: int
    count: int
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
    not in the previous one, ``updated`` were, saying something else now: a count, ranks, a time range;
    ``withdrawn`` were and are no more, each matched by `kept.finding_id`) and what the screen shows
    (``snapshot``). The full `Analysis`, with every table, stays in the worker process:
    `LiveSession.analysis` fetches it when read."""

    findings: list[Finding]
    snapshot: Snapshot
    new_findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    withdrawn: list[Finding] = field(default_factory=list)  # in the previous analysis, not in this one
    updated: list[Finding] = field(default_factory=list)  # in both, changed


@dataclass(frozen=True)
class SessionFailed:
    """An internal error in the session's threads (shown, never a traceback on the screen)."""

    message: str
    extra: dict[str, Any] = field(default_factory=dict)
