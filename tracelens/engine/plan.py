"""What a parse run is cut into, as plain data: units (a byte range of a file, or a whole file or
archive), tasks (units one worker parses in order: `engine._tasks` groups them) and the summary a task
sends back (`TaskResult`, never tables). The manifest records them (`manifest.py`), and every run reads
the manifest, an unchanged one too: this module imports neither polars nor the parsers. Where a byte
range may start is `ranges.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.inputs import Input


@dataclass
class ScanResult:
    """Newlines in a byte range and the lines in it that mention `server_args=` (`ranges.scan_range`):
    here, so that the parent, to which a worker sends it, need not import what scans."""

    newlines: int
    candidates: list[bytes] = field(default_factory=list)


@dataclass(frozen=True)
class Unit:
    """A piece of one input to parse in order: bytes [start, end) of a file (end None: to the end), or a
    whole archive. ``first_line`` and ``run_offset`` are the line number and run at ``start``."""

    input: Input
    start: int = 0
    end: int | None = None
    first_line: int = 1
    run_offset: int = 0
    base_date: str | None = None  # ISO date for time-only prefixes

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.end is None

    @property
    def size(self) -> int:
        """Bytes of the input this unit reads."""
        return (self.end if self.end is not None else self.input.size) - self.start


@dataclass(frozen=True)
class TaskSpec:
    """One task: units parsed in order by one worker, which writes its own part files."""

    task_id: str
    units: tuple[Unit, ...]
    root: str  # the dataset (a path or an fsspec URL)
    staging: str  # where this run's new files go, relative to root
    block_bytes: int = DEFAULT_BLOCK_BYTES

    @property
    def size(self) -> int:
        return sum(u.size for u in self.units)


@dataclass
class SourceResult:
    """What a task learnt about one source (or the piece of it in one unit)."""

    source: str
    input: str
    start: int
    end: int  # bytes read up to here
    first_line: int
    run_offset: int
    lines: int = 0
    lines_by_kind: dict[str, int] = field(default_factory=dict)
    server_args: int = 0  # run starts seen
    time_only: bool = False  # time-only prefixes were seen (their day roll-over needs all lines before)
    counters: bool = False  # metrics pages' counters were seen (a restart is told against the pages before)
    spans: list[list] = field(default_factory=list)  # [run, start_line, start_ts_us, end_ts_us, count]
    error: str | None = None


@dataclass
class TaskResult:
    task_id: str
    sources: list[SourceResult]
    files: dict[str, list[str]]  # table (or `_faults_pre`) -> files written, relative to the root
    rows: dict[str, int]  # table (or `_faults_pre`) -> rows written
    bytes_read: int
    digests: dict[str, str] = field(default_factory=dict)  # file written -> its content hash
