"""The log being written: timed records that interleave ranks when sorted, and the uvicorn lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .dialects import Dialect


@dataclass
class Log:
    """One output file's records, kept with their times so that ranks interleave when sorted."""

    dialect: Dialect
    start: datetime
    tp_size: int = 8
    dp_size: int = 1
    records: list[tuple[float, int, str | None, str]] = field(default_factory=list)

    def emit(self, t: float, tag: str | None, text: str | None) -> None:
        """Add a record at ``t`` seconds; tag None means no prefix, "" the main process."""
        if text is not None:
            self.records.append((t, len(self.records), tag, text))

    def main(self, t: float, text: str | None) -> None:
        self.emit(t, "", text)

    def rank(self, t: float, rank: int, text: str | None) -> None:
        self.emit(t, self.tag(rank), text)

    def raw(self, t: float, text: str) -> None:
        self.emit(t, None, text)

    def tag(self, rank: int) -> str:
        return self.dialect.tag(rank, self.tp_size, self.dp_size)

    def at(self, t: float) -> datetime:
        return self.start + timedelta(seconds=t)

    def stamped(self) -> list[tuple[datetime, str]]:
        """Records in time order (ties keep insertion order) with their prefixes."""
        ordered = sorted(self.records, key=lambda record: (record[0], record[1]))
        return [
            (self.at(t), text if tag is None else self.dialect.prefix(self.at(t), tag) + text)
            for t, _, tag, text in ordered
        ]

    def lines(self) -> list[str]:
        return [line for _, line in self.stamped()]


def http(log: Log, t: float, text: str) -> None:
    """A uvicorn line (level text, no rank tag)."""
    log.emit(t, "" if log.dialect.uvicorn_prefixed else None, f"INFO:     {text}")


def access(log: Log, t: float, client: str, request: str) -> None:
    http(log, t, f'{client} - "{request} HTTP/1.1" 200 OK')


def as_text(lines: Sequence[str], newline: str = "\n") -> str:
    return newline.join(lines) + newline
