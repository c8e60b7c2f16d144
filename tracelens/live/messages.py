"""What the live session and its worker process say to each other over the worker's pipes: one frozen
record per kind of message, pickled across the process boundary (`worker.send`/`worker.receive`). A
receiver matches on the type; nothing is dispatched on a string tag or read by position.

Parent to worker: `WorkerConfig` (first, once), then `ParseRequested`, `AnalysisRequested` and at the
end `StopRequested`. Worker to parent: first, of each source a dataset holds up to a cut, its lines
before the cut as the log index keeps them (`LinesBeforeCut`, in slices, the last with none); then
`RowsParsed` (once per `ParseRequested`, with or without rows),
`ParseFailed`, `Analysed` or `NotAnalysed` (at most every `interval` s), `AnalysisSent` (the answer to
an `AnalysisRequested`). `WorkerEnded` never crosses the pipe: the client hands it to a caller waiting
for an answer when the worker is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tracelens.live.window import WINDOW_LINES

if TYPE_CHECKING:
    import numpy as np

    from tracelens.analysis import Analysis, Finding
    from tracelens.analysis.expectations import Expectations
    from tracelens.analysis.training import TrainingInputs
    from tracelens.live.seed import Cut
    from tracelens.live.status import Snapshot
    from tracelens.parsers import ParseOptions


# ----- parent to worker -----


@dataclass(frozen=True)
class WorkerConfig:
    """The first message: what every source is called and how it is parsed, and how to analyse."""

    labels: list[str]
    options: list[ParseOptions]
    expectations: Expectations | None
    baseline: str | None
    stall_seconds: float
    interval: float
    window_lines: int = WINDOW_LINES  # per source, the newest lines an update analyses (`window.LiveTables`)
    # by label, sources a dataset holds up to a cut: parsed from there, the rest read from it (`live.seed`)
    cuts: dict[str, Cut] = field(default_factory=dict)
    # the training to compare the runs with and where their configs are looked up (`--training`)
    training: TrainingInputs | None = None
    # by label, the lines before a cut the log index does not hold (its scroll-back): not sent back
    index_skip: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ParseRequested:
    """Parse ``data``, the next lines of source number ``source`` (``final``: the source has ended).
    ``seq`` numbers the requests; the `RowsParsed` that answers says it back."""

    seq: int
    source: int
    first_line: int
    offset: int  # of ``data`` in the source's stream
    data: bytes
    final: bool


@dataclass(frozen=True)
class AnalysisRequested:
    """Send the newest full `Analysis` (answered by an `AnalysisSent` with the same ``request``)."""

    request: int


@dataclass(frozen=True)
class StopRequested:
    """Stop reading: the worker finishes what it holds and ends."""


ToWorker = WorkerConfig | ParseRequested | AnalysisRequested | StopRequested


# ----- worker to parent -----


@dataclass(frozen=True)
class RowsParsed:
    """`ParseRequested` number ``seq`` (and those before it) is handled. ``count`` lines from
    ``first_line`` were parsed (0 when the lines are held back for the next block, or lost to a failed
    parse); ``columns`` are the log index's (`index.parsed_columns`), ``decode`` the newest decode
    line's figures (`status.newest_decode`). The rows stay in the worker: the screen's process
    needs only these (a 6 MiB block of decode lines: 1 MiB with them, 17 MiB more with its tables)."""

    seq: int
    source: int
    first_line: int = 0
    count: int = 0
    columns: dict[str, np.ndarray] | None = None
    decode: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class LinesBeforeCut:
    """Lines before source ``source``'s cut, read from the dataset for the log index (their byte offsets
    and lengths and `index.parsed_columns`, in line order), or None: all were sent. A slice is about
    30 bytes a line; the worker reads them, so the screen's process never holds a dataset read."""

    source: int
    columns: dict[str, np.ndarray] | None


@dataclass(frozen=True)
class ParseFailed:
    """A batch of lines could not be parsed; its rows are lost for the tables (the lines stay in the log
    view)."""

    reason: str


@dataclass(frozen=True)
class Analysed:
    """Analysis number ``count`` covers every parse request up to ``through``."""

    through: int
    count: int
    findings: list[Finding]
    snapshot: Snapshot
    seconds: float  # the analysis took


@dataclass(frozen=True)
class NotAnalysed:
    """No analysis for the requests up to ``through``: nothing to analyse (``reason`` None), or it
    failed."""

    through: int
    reason: str | None


@dataclass(frozen=True)
class AnalysisSent:
    """The answer to `AnalysisRequested` ``request``: the newest analysis (None before the first) and how
    many analyses ran so far."""

    request: int
    count: int
    analysis: Analysis | None


FromWorker = LinesBeforeCut | RowsParsed | ParseFailed | Analysed | NotAnalysed | AnalysisSent


@dataclass(frozen=True)
class WorkerEnded:
    """The worker ended before it answered (never sent over the pipe)."""

    reason: str
