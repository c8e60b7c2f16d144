"""Findings: what a user can act on, with its severity, run, time and the evidence lines."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

MAX_EVIDENCE = 5  # lines a finding cites


class Severity(StrEnum):
    """How sure a finding is that something is wrong. A `StrEnum`: JSON and printed text show its value."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


SEVERITIES = tuple(Severity)  # the most severe first


class Status(StrEnum):
    """A run's verdict (`verdicts`). A `StrEnum`: JSON, the `runs` table and printed text show its value.
    Defined here beside `Severity`, so that the views' styles (`formatting`) need not load the verdicts."""

    BROKEN = "broken"
    DEGRADED = "degraded"
    INCOMPLETE = "incomplete"
    HEALTHY = "healthy"


@dataclass(frozen=True)
class Evidence:
    """One log line that supports a finding (its text is read lazily from the source file)."""

    source: str
    line_no: int
    text: str = ""
    shown: str = ""  # the source's name as the user typed it, when that is not `source`

    @property
    def where(self) -> str:
        """`PATH:LINE`, the path as the user typed it: what `tracelens explain` takes."""
        return f"{self.shown or self.source}:{self.line_no}"


@dataclass
class Finding:
    severity: Severity
    code: str  # stable identifier, e.g. "embed-capture-unexpected"
    source: str
    run: int
    label: str  # the run's display name
    ts: dt.datetime | None
    message: str  # plain words
    evidence: list[Evidence] = field(default_factory=list)
    count: int = 1  # repeats folded into this finding (analysis.folding)
    last_ts: dt.datetime | None = None  # the last repeat's time, when count > 1
    # The concrete change that removes this cause (`set ... to [2, 30, 58] in /m/config.json`), when the
    # detector knows it; a verdict whose cause has one shows it as its fix.
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if data["fix"] is None:
            del data["fix"]  # the JSON layout of a finding without one is unchanged
        data["ts"] = self.ts.isoformat(sep=" ") if self.ts else None
        data["last_ts"] = self.last_ts.isoformat(sep=" ") if self.last_ts else None
        data["evidence"] = [{"where": e.where, "text": e.text} for e in self.evidence]
        return data


def severity_rank(severity: Severity) -> int:
    """0 for the most severe."""
    return SEVERITIES.index(severity)


def sort_findings(findings: list[Finding], role: Callable[[str], int] = lambda code: 0) -> list[Finding]:
    """Grouped by run, the most severe first, then by causal ``role`` (causes before the symptoms they
    explain), then in time order."""
    far = dt.datetime.max
    return sorted(
        findings,
        key=lambda f: (f.source, f.run, severity_rank(f.severity), role(f.code), f.ts or far, f.code),
    )
