"""How numbers, durations, the speculative config and severities look, in one place for every view (the
CLI, the report, the TUI): the same value reads the same everywhere.

Pure functions from values to strings, and the tables of style names the terminal views colour with.
A missing value (`None`) shows as `-`. Severities and statuses are `StrEnum`s (`analysis.Severity`,
`analysis.Status`): a member and its string value (a status read back from the `runs` table) look up
the same style.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any

from tracelens.analysis.findings import Severity, Status
from tracelens.analysis.speculation import LINES, speculative_spec
from tracelens.tables.names import A, C

MISSING = "-"

# ----------------------------------------------------------------------------- log text on a terminal

# Log text is untrusted: a line may carry escape sequences that set the window title, write the
# clipboard (OSC 52), move the cursor or clear the screen when printed to a terminal. Whole sequences
# are removed (CSI with its parameters, OSC/DCS/APC/PM/SOS up to their terminator or the text's end,
# two-byte ESC forms), then any other C0 or C1 control (a lone CR overwrites the line, BS erases it)
# and the bidirectional overrides that reorder what the eye reads. Tab and newline stay. Linear: every
# repetition stops at a character the next part cannot take.
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"  # CSI
    r"|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC, DCS, SOS, PM, APC: to BEL or ST
    r"|\x1b[ -/]*[0-~]?"  # two-byte forms (ESC 7, ESC c, charset selections) and a lone ESC
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


def terminal_text(text: str) -> str:
    """``text`` from a log as it may be printed to a terminal: escape sequences and control characters
    removed (tab and newline kept). The one function every terminal view passes log text through."""
    return _SEQUENCE.sub("", text) if _SEQUENCE.search(text) else text


# ----------------------------------------------------------------------------- numbers


def number(value: float | None, digits: int = 2, suffix: str = "") -> str:
    """`2.88`, with ``digits`` decimals (and a unit ``suffix``)."""
    return MISSING if value is None else f"{value:.{digits}f}{suffix}"


def percent(value: float | None) -> str:
    """A share as a whole percentage: 0.472 -> `47%`."""
    return MISSING if value is None else f"{value:.0%}"


def whose_rate(value: float | None, engine: str | None, place: str | None = None) -> str:
    """A normalised acceptance rate with the engine whose figure it is, and where it came from when that
    is not the run's decode or metrics lines: `47% sglang`, `52% sglang requests`, `- sglang /metrics
    gauges` (an accept len with no depth to normalise it by)."""
    if place and place not in LINES and engine:
        return f"{percent(value)} {engine} {place}"
    return percent(value) if value is None or not engine else f"{percent(value)} {engine}"


def megabytes(n_bytes: float, digits: int = 1, width: int = 0) -> str:
    """A size in MB (10^6 bytes) with thousands separators: `1,234.5 MB` (right-aligned in ``width``)."""
    return f"{n_bytes / 1e6:{width},.{digits}f} MB"


def significant(value: float) -> str:
    """Three significant digits, for values of any size (norms of hidden states): `10.6`, `1.23e+04`."""
    return f"{value:.3g}"


def speedup(value: float | None, low: float | None = None, high: float | None = None) -> str:
    """`1.05x`, with its interval when both ends are known: `1.05x [0.98-1.12]`."""
    if value is None:
        return MISSING
    return f"{value:.2f}x{speedup_interval(low, high, lead=' ')}"


def speedup_interval(low: float | None, high: float | None, lead: str = "") -> str:
    """`[0.98-1.12]` (after ``lead``), or nothing when an end is unknown."""
    return "" if low is None or high is None else f"{lead}[{low:.2f}-{high:.2f}]"


# ----------------------------------------------------------------------------- time


def timestamp(value: dt.datetime | None) -> str:
    """A log's instant to the second, as its lines print it: `2025-03-02 10:00:05`."""
    return MISSING if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def duration(seconds: float | None, compact: bool = False, missing: str = MISSING) -> str:
    """A duration a person reads at a glance: `45 s`, `3 min 05 s`, `2 h 03 min`; with ``compact``
    (terminal columns) `45s`, `3m05s`, `2h03m`, as the live screen and `follow` say how long a server
    took to start."""
    if seconds is None:
        return missing
    if compact:
        seconds = max(0.0, seconds)
        if seconds < 90:
            return f"{seconds:.0f}s"
        minutes, secs = divmod(int(seconds), 60)
        if minutes < 90:
            return f"{minutes}m{secs:02d}s"
        return f"{minutes // 60}h{minutes % 60:02d}m"
    total = round(seconds)
    if total < 120:
        return f"{total} s"
    if total < 7200:
        return f"{total // 60} min {total % 60:02d} s"
    return f"{total // 3600} h {total % 3600 // 60:02d} min"


def ago(seconds: float | None) -> str:
    """How long since a source last sent something: `live`, `42s ago`, `3m ago`."""
    if seconds is None:
        return "no data yet"
    if seconds < 1:
        return "live"
    if seconds < 120:
        return f"{seconds:.0f}s ago"
    return f"{seconds / 60:.0f}m ago"


# ----------------------------------------------------------------------------- speculative config

# (summary JSON key, long name, short name)
_SPEC_NAMES = (("num_steps", "steps", "s"), ("eagle_topk", "topk", "k"), ("num_draft_tokens", "draft", "d"))


def speculative(spec: Mapping[str, Any] | None, short: bool = False) -> str:
    """The speculative config of the summary's JSON (`algorithm`, `num_steps`, `eagle_topk`,
    `num_draft_tokens`, `seen_in`): `EAGLE3 steps=4 topk=1 draft=5`, with ``short`` `EAGLE3 s4 k1 d5`
    (for 80 columns); `none` without speculative decoding. A run that drafts by its stats lines
    without server args to name the algorithm is `speculative (algorithm not logged; seen in the decode
    lines)`, with ``short`` `speculative`."""
    if not spec:
        return "none"
    if not spec.get("algorithm"):
        seen = spec.get("seen_in")
        return "speculative" if short else f"speculative (algorithm not logged; seen in the {seen})"
    parts = [str(spec["algorithm"])]
    for key, name, brief in _SPEC_NAMES:
        value = spec.get(key)
        if value is not None:
            parts.append(f"{brief}{value}" if short else f"{name}={value}")
    return " ".join(parts)


def speculative_words(run: Mapping[str, Any]) -> str | None:
    """The speculative config in words, as the live screen's header and `follow` show a run:
    `EAGLE3 · 4 steps · topk 1 · 5 draft tokens`; None without speculative decoding."""
    algo = run.get(C.SPEC_ALGORITHM)
    if not algo:
        return "speculative (algorithm not logged)" if run.get(A.SPECULATIVE) else None
    parts = [str(algo)]
    for column, unit in (
        (C.SPEC_NUM_STEPS, "steps"),
        (C.SPEC_EAGLE_TOPK, "topk"),
        (C.SPEC_NUM_DRAFT_TOKENS, "draft tokens"),
    ):
        value = run.get(column)
        if value is not None:
            parts.append(f"topk {value}" if unit == "topk" else f"{value} {unit}")
    return " · ".join(parts)


def speculative_of_run(run: Mapping[str, Any], short: bool = False) -> str:
    """`speculative` of a row of `Analysis.runs`."""
    return speculative(speculative_spec(run), short=short)


# ----------------------------------------------------------------------------- severity and status

SEVERITY_STYLE: dict[str, str] = {
    Severity.ERROR: "bold red",
    Severity.WARNING: "yellow",
    Severity.INFO: "cyan",
}
"""severity -> rich style of its word in the terminal (the report's CSS has `sev-<severity>` classes)."""

STATUS_STYLE: dict[str, str] = {
    Status.BROKEN: "bold red",
    Status.DEGRADED: "yellow",
    Status.INCOMPLETE: "cyan",
    Status.HEALTHY: "green",
}
"""a run's status -> rich style of its word in running text."""

STATUS_BADGE_STYLE: dict[str, str] = {
    Status.BROKEN: "bold white on red",
    Status.DEGRADED: "bold black on yellow",
    Status.INCOMPLETE: "cyan",
    Status.HEALTHY: "green",
}
"""a run's status -> rich style of its badge (the TUI's verdict strip: the word on a coloured ground)."""


def severity_tag(severity: str) -> str:
    """The severity as the terminal views lead a finding's line with: `WARNING`, `ERROR  `."""
    return f"{severity.upper():7}"


def status_tag(status: str) -> str:
    """The status as `check` leads a verdict's line with: `BROKEN     ` (eleven columns: the longest,
    `INCOMPLETE`, keeps a space before the run's label)."""
    return f"{status.upper():10} "


def clip_words(
    text: str, width: int, lines: int = 1, first: int | None = None, ellipsis: str = "…"
) -> list[str]:
    """``text`` in at most ``lines`` lines of ``width`` characters (the first ``first``, when a lead
    stands before it), broken and cut at word boundaries: the last line ends in ``ellipsis`` when words
    were left out (a word longer than its line is cut inside). The views cut a sentence so, never
    mid-word, with the whole of it one key away."""
    words = text.split()
    out: list[str] = []
    room = 0
    while words and len(out) < lines:
        room = max(first if first is not None and not out else width, len(ellipsis) + 1)
        line = ""
        while words and len(line) + bool(line) + len(words[0]) <= room:
            line += (" " if line else "") + words.pop(0)
        if not line:  # one word wider than a line
            line, words[0] = words[0][:room], words[0][room:]
        out.append(line)
    if words:
        last = out[-1]
        while len(last) > room - len(ellipsis) and " " in last:
            last = last.rsplit(" ", 1)[0]
        out[-1] = last[: room - len(ellipsis)].rstrip(" ,;:") + ellipsis
    return out


# (header, column, digits) of the client-side benchmark table, in `compare` and the report
BENCH_COLUMNS = (
    ("requests", A.BENCH_REQUESTS, 0),
    ("accept len (client)", A.BENCH_ACCEPT_LENGTH, 2),
    ("accept len (server)", A.MEAN_ACCEPT_LEN, 2),
    ("out tok/s (client)", A.BENCH_OUTPUT_THROUGHPUT, 1),
    ("tok/s (server)", A.MEAN_GEN_THROUGHPUT, 1),
    ("req/s", A.BENCH_REQUEST_THROUGHPUT, 2),
    ("TTFT ms", A.BENCH_MEAN_TTFT_MS, 1),
    ("TPOT ms", A.BENCH_MEAN_TPOT_MS, 2),
    ("ITL ms", A.BENCH_MEAN_ITL_MS, 2),
    ("E2E ms", A.BENCH_MEAN_E2E_MS, 1),
)


def acceptance_words(
    positions: tuple[float, ...],
    basis: str | None,
    engine: str | None,
    depth: int | None = None,
    requests: int = 0,
    request_rate: float | None = None,
    served: tuple[float | None, float | None, str] | None = None,
) -> str:
    """A run's per-position acceptance, what its metrics endpoint serves (``served``: accept len, the
    normalised rate, where from), the depth in force and its requests' pooled normalised rate, each saying
    whose figure it is: `per position 81% 50% 20% (vllm, vllm counters) · accept len 2.60, rate 40%
    (sglang server_info) · depth 4 · 40 requests: rate 52% (sglang)`. Empty when the run has none."""
    parts = []
    if positions:
        whose = ", ".join(w for w in (engine, (basis or "").replace("_", " ")) if w)
        parts.append(
            "per position " + " ".join(percent(r) for r in positions) + (f" ({whose})" if whose else "")
        )
    if served is not None:
        length, rate, whence = served
        parts.append(f"accept len {number(length)}, rate {percent(rate)} ({whence})")
    if depth is not None:
        parts.append(f"depth {depth}")
    if requests:
        parts.append(
            f"{requests} requests: rate {percent(request_rate)}" + (f" ({engine})" if engine else "")
        )
    return " · ".join(parts)
