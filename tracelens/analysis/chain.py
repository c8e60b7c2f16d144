"""The failure chain of each run: which of its lines are failure events (`catalog`), which one is the
cause and what it explains.

Every line that carries text (messages, foreign-format lines, unparsed lines, each line of a traceback)
is matched against the failure catalog; an exception line of a traceback that no entry knows is a
fatal event of its own. The cause is the run's earliest fatal event (in time: a newest-first log is
read from its end); without one, its earliest error, then its earliest consequence. What the cause sets
off (a parent's EOFError, sigquit, other ranks' timeouts) is listed as explained by it. A graceful stop
(SIGTERM, Ctrl-C, draining) ends the chain: what follows it is the stop, not a failure.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracelens.analysis.catalog import FAILURES, HANG, Failure, Weight
from tracelens.analysis.chain_events import (
    CLIENT,
    CODE,
    CUT,
    FRONT_CUT,
    GENERIC,
    NEXT,
    NOISE,
    RANK,
    STAGE,
    TEXT,
    WARNED,
    events,
)
from tracelens.analysis.startup import STOPPED_AT
from tracelens.tables.frames import Tables, collect, largest
from tracelens.tables.schema import C, T

_PRIORITY = {Weight.FATAL: 0, Weight.ERROR: 1, Weight.CONSEQUENCE: 2}
_BY_CODE = {f.code: f for f in FAILURES}
MAX_EXPLAINED = 4
SERVED_ON = dt.timedelta(minutes=1)  # serving this long after a failure: the failure stopped nothing
SERVED_ON_REQUESTS = 3  # or answering this many requests after it
# vLLM's stats line after a failure counts the interval the failure fell in (printed every 5 s by V0, 10 s
# by V1, the API server's logger going on a moment after its engine died): within this, its work was the
# engine's at the failure.
STATS_AFTER = dt.timedelta(seconds=30)
_KIND, _COUNT, _RANKS = "_kind", "_count", "_ranks"  # columns the reduced events add (`_reduce`)
# Exception classes that say nothing beyond a catalog entry's name: not added to it.
PLAIN_EXCEPTIONS = frozenset(
    {
        "RuntimeError",
        "Exception",
        "ValueError",
        "AssertionError",
        "TypeError",
        "OSError",
        "KeyError",
        "IndexError",
        "AttributeError",
        "OutOfMemoryError",
        "SystemError",
        "DistBackendError",
    }
)


@dataclass
class Chain:
    """One run's failure chain."""

    code: str | None = None  # the cause's catalog code, `exception` for an unknown one, None: no cause
    name: str = ""  # the cause in words
    component: str = ""
    weight: Weight | None = None
    line: int | None = None  # the cause's line
    ts: dt.datetime | None = None  # its time, when the line (or its traceback's head) has one
    text: str = ""  # the cause's line text
    ranks: list[int] = field(default_factory=list)
    count: int = 0  # lines of the cause's kind in the run
    fix: str | None = None
    explains: list[str] = field(default_factory=list)  # names of what the cause set off
    explained_lines: list[int] = field(default_factory=list)
    since: dt.datetime | None = None  # when a hang began (its frozen heartbeat)
    stop_line: int | None = None  # the graceful stop's line
    exception: str | None = None  # the exception class a catalog cause was raised as
    detail: tuple[str, int] | None = None  # an earlier error of the cause's component: name, line
    went_on: bool = False  # the run served on after its fatal-looking cause (`_went_on`)
    hangs: bool = False  # the cause says the serving loop stopped (`Failure.hangs`): the run hung
    # `serving`, `start-up`, or `idle` (a vLLM engine whose stats lines around the cause count no work):
    # what the run was doing when the cause struck (`_phase`, `_stats_phase`)
    phase: str = ""
    step: str = ""  # a start-up's step, in words (`during weight loading`): frames', else the log's milestone
    after_stop: int = 0  # failure lines after the graceful stop (the stop's noise)
    noise: set[int] = field(default_factory=set)  # records (traceback heads) that are noise as a whole
    notes: set[str] = field(default_factory=set)  # codes of the run's notes (`router-log`, `nccl-warn`)
    client: str | None = None  # the first failure of a client's traceback in the stream (not the server's)

    forward: bool = True  # False for a newest-first log

    def is_noise(self, line: int) -> bool:
        """Whether a fault at ``line`` is no failure: noise, or after the graceful stop."""
        if line in self.noise:
            return True
        if self.stop_line is None:
            return False
        return line > self.stop_line if self.forward else line < self.stop_line


def _direction(tables: Tables) -> dict[tuple[str, int], int]:
    """-1 for a run whose lines are newest first (its first timed line is later than its last)."""
    timed = tables.scan(T.LINES).filter(pl.col(C.TS).is_not_null())
    # the first and last timed line of each run, then their times: a sort of every line's time per run
    # would hold the whole table
    bounds = collect(
        timed.group_by(C.SOURCE, C.RUN).agg(
            pl.col(C.LINE_NO).min().alias("a"), pl.col(C.LINE_NO).max().alias("b")
        )
    )
    ends = bounds.unpivot(["a", "b"], index=[C.SOURCE, C.RUN], value_name=C.LINE_NO)
    times = collect(
        timed.join(
            ends.select(C.SOURCE, C.RUN, C.LINE_NO).lazy(), on=[C.SOURCE, C.RUN, C.LINE_NO], how="semi"
        ).select(C.SOURCE, C.RUN, C.LINE_NO, C.TS)
    )
    at = {(s, r, n): ts for s, r, n, ts in times.iter_rows()}
    return {(s, r): -1 for s, r, a, b in bounds.iter_rows() if at[(s, r, a)] > at[(s, r, b)]}


def _vllm_runs(tables: Tables) -> set[tuple[str, int]]:
    """The runs whose lines are vLLM's (its `INFO MM-DD hh:mm:ss [file.py:N]` lines, a foreign format
    here) and that print no SGLang server args: their fixes are said in vLLM's flags. An SGLang run with
    vLLM lines mixed in (two servers' output in one file) stays SGLang's."""
    rows = tables.scan(T.FOREIGN).filter(pl.col(C.FORMAT) == "vllm").select(C.SOURCE, C.RUN).unique()
    sglang = tables.scan(T.SERVER_ARGS).select(C.SOURCE, C.RUN).unique()
    vllm = rows.join(sglang, on=[C.SOURCE, C.RUN], how="anti")
    return {(str(s), int(r)) for s, r in collect(vllm).iter_rows()}


def chains(tables: Tables) -> dict[tuple[str, int], Chain]:
    """The failure chain of every run that has a failure event or a graceful stop."""
    found = events(tables)
    if not found.height:
        return {}
    backwards = _direction(tables)
    # a speculative metrics line counts drafts made for requests: serving (vLLM prints no batch lines)
    serving = _span(
        tables.scan(T.BATCHES).select(C.SOURCE, C.RUN, C.LINE_NO),
        tables.scan(T.SPEC_METRICS).select(C.SOURCE, C.RUN, C.LINE_NO),
        tables.scan(T.LIFECYCLE).filter(pl.col(C.EVENT).is_in(["ready", "uvicorn_running"])),
    )
    starting = _span(tables.scan(T.LIFECYCLE).filter(pl.col(C.EVENT) != "shutdown"))
    # the last sign of serving: a batch, a speculative metrics line, a request answered 200 (vLLM
    # prints no batch lines)
    answered = tables.scan(T.HTTP).filter((pl.col(C.STATUS) == 200) & (pl.col(C.METHOD) == "POST"))
    progress = pl.concat(
        [
            tables.scan(T.BATCHES).select(C.SOURCE, C.RUN, C.TS),
            tables.scan(T.SPEC_METRICS).select(C.SOURCE, C.RUN, C.TS),
            answered.select(C.SOURCE, C.RUN, C.TS),
        ],
        how="vertical_relaxed",
    )
    last_batch = {
        (s, r): ts
        for s, r, ts in collect(progress.group_by(C.SOURCE, C.RUN).agg(pl.col(C.TS).max())).iter_rows()
        if ts is not None
    }
    # uvicorn's access lines carry no time: the line of the run's last few answered requests instead
    last_few = largest(answered, [C.SOURCE, C.RUN], C.LINE_NO, SERVED_ON_REQUESTS)
    answers = {
        (s, r): n
        for s, r, n, count in last_few.group_by(C.SOURCE, C.RUN)
        .agg(pl.col(C.LINE_NO).min(), pl.len())
        .iter_rows()
        if count == SERVED_ON_REQUESTS
    }
    ready = {
        (s, r): n
        for s, r, n in collect(
            tables.scan(T.LIFECYCLE)
            .filter(pl.col(C.EVENT) == "ready")
            .group_by(C.SOURCE, C.RUN)
            .agg(pl.col(C.LINE_NO).max())
        ).iter_rows()
    }
    noise = _noise_records(found)
    vllm = _vllm_runs(tables)
    marks = _milestones(tables)
    stats = _stats_lines(tables, vllm)
    out: dict[tuple[str, int], Chain] = {}
    for (source, run), group in _reduce(found).group_by(C.SOURCE, C.RUN, maintain_order=True):
        key = (str(source), int(run))
        engine = "vllm" if key in vllm else "sglang"  # the fix in the flags of the engine that printed it
        out[key] = _chain(
            group, backwards.get(key, 1), serving.get(key), starting.get(key), engine, stats.get(key, [])
        )
        _step_from_milestones(out[key], marks.get(key, []))
        # a ready line counts only after a start-up failure: a log that joins two servers' excerpts
        # holds the second one's ready line after the first one's crash
        became_ready = ready.get(key, 0) if out[key].phase not in ("serving", "idle") else 0
        _went_on(out[key], last_batch.get(key), max(answers.get(key, 0), became_ready) or None)
        out[key].noise = noise.get(key, set())
    return out


# One vLLM stats line: its line, time, and whether it counts work (requests running or waiting, tokens
# generated or prefilled: `parsers/vllm_stats.py` makes the others phase `idle`).
StatsLine = tuple[int, dt.datetime | None, bool]


def _stats_lines(tables: Tables, vllm: set[tuple[str, int]]) -> dict[tuple[str, int], list[StatsLine]]:
    """The engine stats lines of each vLLM run (its batch lines are those), in line order."""
    if not vllm:
        return {}
    # only the vLLM runs' rows leave the scan: an SGLang run beside them may hold millions of batch lines
    runs = pl.DataFrame(list(vllm), schema={C.SOURCE: pl.String, C.RUN: pl.Int32}, orient="row")
    rows = collect(
        tables.scan(T.BATCHES)
        .join(runs.lazy(), on=[C.SOURCE, C.RUN], how="semi")
        .select(C.SOURCE, C.RUN, C.LINE_NO, C.TS, (pl.col(C.PHASE) != "idle").alias("_busy"))
        .sort(C.SOURCE, C.RUN, C.LINE_NO)
    )
    out: dict[tuple[str, int], list[StatsLine]] = {}
    for source, run, line, ts, busy in rows.iter_rows():
        out.setdefault((source, run), []).append((line, ts, bool(busy)))
    return out


def _stats_phase(line: int, ts: dt.datetime | None, forward: bool, stats: list[StatsLine]) -> str | None:
    """What a vLLM engine was doing at a failure on ``line``, as its stats lines say (vLLM prints no other
    sign of serving): `serving` when the last line before it counts work, or the first after it does
    (that line counts the interval the failure fell in) within `STATS_AFTER`; `idle` when they count
    none; None without a stats line before or right after it."""
    before = [s for s in stats if (s[0] < line if forward else s[0] > line)]
    after = [s for s in stats if (s[0] > line if forward else s[0] < line)]
    last = (before[-1] if forward else before[0]) if before else None
    first = (after[0] if forward else after[-1]) if after else None
    if first is not None and ts is not None and first[1] is not None and abs(first[1] - ts) > STATS_AFTER:
        first = None
    if (last is not None and last[2]) or (first is not None and first[2]):
        return "serving"
    return "idle" if last is not None or first is not None else None


def _noise_records(found: pl.DataFrame) -> dict[tuple[str, int], set[int]]:
    """Per run, the records (traceback heads) that are noise or a client's as a whole."""
    noisy = found.filter(pl.col(CODE).is_in(NOISE) | pl.col(CLIENT)).select(C.SOURCE, C.RUN, C.RECORD)
    out: dict[tuple[str, int], set[int]] = {}
    for source, run, record in noisy.unique().iter_rows():
        out.setdefault((source, run), set()).add(int(record))
    return out


def _reduce(found: pl.DataFrame) -> pl.DataFrame:
    """Of each run's events of one kind (code, client or not, and the text of an unknown exception or
    the heartbeat of a failed health check), the first two and the last, with how many there are and
    on which ranks: a log of a million repeated warnings is judged from a few rows."""
    beat = pl.col(TEXT).str.extract(HANG.pattern, 1)
    detail = (
        pl.when(pl.col(CODE) == GENERIC)
        .then(pl.col(TEXT).str.strip_chars())
        .when(pl.col(CODE) == "health-check")
        .then(beat)
        .otherwise(pl.lit(""))
        .fill_null("")
    )
    found = found.with_columns(detail.alias(_KIND))
    key = [C.SOURCE, C.RUN, CODE, CLIENT, _KIND]
    sizes = found.group_by(key).agg(
        pl.len().alias(_COUNT), pl.col(RANK).drop_nulls().unique().sort().alias(_RANKS)
    )
    at = pl.int_range(pl.len()).over(key)
    kept = found.filter((at < 2) | (at == pl.len().over(key) - 1))
    return kept.join(sizes, on=key, how="left", nulls_equal=True).sort(C.SOURCE, C.RUN, C.LINE_NO)


def _went_on(chain: Chain, last_batch: dt.datetime | None, answered_line: int | None) -> None:
    """A fatal event after which the run served on (for a minute, or answering requests) did not stop
    the server (one request's or one thread's failure): it weighs as an error, and the headline says the
    server went on. ``answered_line``: the line of the run's SERVED_ON_REQUESTS-th last answered request
    or of its last ready line, whichever is later (a process that failed cannot become ready after)."""
    if chain.weight != Weight.FATAL or chain.line is None:
        return
    timed = chain.ts is not None and last_batch is not None and last_batch - chain.ts >= SERVED_ON
    answered = chain.forward and answered_line is not None and answered_line > chain.line
    if timed or answered:
        chain.weight = Weight.ERROR
        chain.went_on = True


def _span(*frames: pl.LazyFrame) -> dict[tuple[str, int], tuple[int, int]]:
    """The first and last line of the given lines of each run."""
    lines = pl.concat([f.select(C.SOURCE, C.RUN, C.LINE_NO) for f in frames])
    spans = collect(
        lines.group_by(C.SOURCE, C.RUN).agg(
            pl.col(C.LINE_NO).min().alias("a"), pl.col(C.LINE_NO).max().alias("b")
        )
    )
    return {(s, r): (a, b) for s, r, a, b in spans.iter_rows()}


# Start-up milestones that say a step (the server's arguments say none), in `STOPPED_AT`'s words.
_STEP_MILESTONES = [e for e in STOPPED_AT if e != "server_args"]


def _milestones(tables: Tables) -> dict[tuple[str, int], list[tuple[int, str]]]:
    """Per run, its start-up milestones (line, event) in line order."""
    rows = collect(
        tables.scan(T.LIFECYCLE)
        .filter(pl.col(C.EVENT).is_in(_STEP_MILESTONES))
        .select(C.SOURCE, C.RUN, C.LINE_NO, C.EVENT)
        .sort(C.SOURCE, C.RUN, C.LINE_NO)
    )
    out: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for source, run, line, event in rows.iter_rows():
        out.setdefault((str(source), int(run)), []).append((int(line), str(event)))
    return out


def _step_from_milestones(chain: Chain, marks: list[tuple[int, str]]) -> None:
    """A start-up failure whose frames named no step is in the step of the last milestone before it."""
    if chain.phase != "start-up" or chain.step or chain.line is None or not chain.forward:
        return
    before = [event for line, event in marks if line < chain.line]
    if before:
        chain.step = STOPPED_AT[before[-1]]


def _phase(
    line: int, forward: bool, serving: tuple[int, int] | None, starting: tuple[int, int] | None
) -> str:
    """`serving` when the run served (a batch, a ready line) before ``line``, `start-up` when it was
    starting, empty when the log shows neither."""

    def before(span: tuple[int, int] | None) -> bool:
        return span is not None and (span[0] < line if forward else span[1] > line)

    return "serving" if before(serving) else "start-up" if before(starting) else ""


def _stalled(line: int, forward: bool, serving: tuple[int, int] | None) -> bool:
    """Whether the run had served before ``line`` and served no more after it."""
    if serving is None:
        return False
    first, last = serving if forward else (-serving[1], -serving[0])
    at = line if forward else -line
    return first < at and last < at


def _precedence(row: dict[str, object]) -> tuple[int, bool, bool]:
    """The order causes are picked in: by weight; among fatal events, a traceback cut before its
    exception line after every named one (it names nothing: a named event it follows is its cause),
    and a timeout waiting on another process after the others (its peer's failure, when it shows, is
    the cause)."""
    code = str(row[CODE])
    entry = _failure(code)
    return _PRIORITY[_weight(code)], bool(row.get(CUT)), bool(entry and entry.waits)


def _carried(wrapper: dict[str, object], live: list[dict[str, object]]) -> dict[str, object]:
    """The named error a wrapper failure carries in its own traceback (the NPU error in the failed
    warm-up request's answer), else the wrapper."""
    carried = (
        r
        for r in live
        if r is not wrapper
        and r.get(C.RECORD) == wrapper.get(C.RECORD)
        and (f := _failure(str(r[CODE]))) is not None
        and not f.wraps
        and f.weight in (Weight.FATAL, Weight.ERROR)
    )
    return next(carried, wrapper)


# How many lines after a failure its trailer may name the cause: NCCL's exception line, its
# `ncclUnhandledCudaError: ...` line, `Last error:`, then the CUDA error.
_TRAILER_LINES = 4


def _trailed(failure: dict[str, Any], live: list[dict[str, Any]], direction: int) -> dict[str, Any]:
    """The named fatal event in the lines right after ``failure`` (its trailer's), else ``failure``."""
    at = int(failure[C.LINE_NO])
    trailed = (
        r
        for r in live
        if r[CODE] != failure[CODE]
        and not r.get(CUT)
        and _weight(str(r[CODE])) == Weight.FATAL
        and 0 < (int(r[C.LINE_NO]) - at) * direction <= _TRAILER_LINES
    )
    return next(trailed, failure)


def _failure(code: str) -> Failure | None:
    return _BY_CODE.get(code)


def _weight(code: str) -> Weight:
    if code == FRONT_CUT:  # an engine client's cut traceback: what the engine's failure set off
        return Weight.CONSEQUENCE
    entry = _failure(code)
    return entry.weight if entry else Weight.FATAL


def _chain(
    group: pl.DataFrame,
    direction: int,
    serving: tuple[int, int] | None,
    starting: tuple[int, int] | None,
    engine: str = "sglang",
    stats: list[StatsLine] | None = None,
) -> Chain:
    """One run's chain from its events (in line order); its fix in ``engine``'s flags; ``stats``: a vLLM
    run's stats lines (`_stats_lines`)."""
    rows = group.to_dicts()
    chain = Chain()
    chain.notes = {str(r[CODE]) for r in rows if _weight(r[CODE]) == Weight.NOTE}
    clients = [r for r in rows if r[CLIENT] and _weight(r[CODE]) in _PRIORITY]
    chain.client = str(clients[0][TEXT]).strip() if clients else None
    # a newest-first log prints a traceback's exception line above its head: no traceback there is cut
    rows = [r for r in rows if not r[CLIENT] and not (direction < 0 and r.get(CUT))]
    chain.forward = direction > 0
    ordered = rows if direction > 0 else rows[::-1]
    stop = next((r for r in ordered if _weight(r[CODE]) == Weight.SHUTDOWN), None)
    # A stop after a process had already failed (a crash's teardown prints `Shutting down` too) is no
    # graceful stop: the chain goes on past it.
    stopping = ordered[: ordered.index(stop)] if stop is not None else []
    if any(_weight(r[CODE]) in (Weight.FATAL, Weight.CONSEQUENCE) for r in stopping):
        stop = None
    if stop is not None:
        chain.stop_line = stop[C.LINE_NO]
        cut = ordered.index(stop)
        chain.after_stop = sum(1 for r in ordered[cut:] if _weight(r[CODE]) in _PRIORITY)
        ordered = ordered[:cut]
    live = [r for r in ordered if _weight(r[CODE]) in _PRIORITY]
    # Failed health checks the server recovered from (batches after them), or before it served at all
    # (start-up 503s), are no failure.
    live = [r for r in live if r[CODE] != "health-check" or _stalled(r[C.LINE_NO], direction > 0, serving)]
    # what is a hang only while serving (vLLM's broadcast waits) is a slow step at start-up (a compile)
    live = [
        r
        for r in live
        if not ((f := _failure(r[CODE])) and f.serving_only)
        or _phase(r[C.LINE_NO], direction > 0, serving, None) == "serving"
    ]
    if not live:
        return chain
    cause = min(live, key=_precedence)  # the first of the best weight
    wrapper = cause
    if (entry := _failure(str(cause[CODE]))) is not None and entry.wraps:
        cause = _carried(cause, live)
    elif entry is not None and entry.trailer:
        cause = _trailed(cause, live, direction)
    code = cause[CODE]
    entry = _failure(code)
    hang = _hang(live) if cause[CODE] == "health-check" else None
    if hang is not None:
        cause, chain.since = hang
        code, entry = HANG.code, HANG
    # A cause first seen as a warning (c10d's `[W...] waitForInput ... timed out`) is stated best by its
    # exception line when one follows (`DistStoreError: wait timeout`): that line and text are shown;
    # the order stays the first event's.
    warned = bool(cause.get(WARNED))
    stated = (r for r in live if r[CODE] == code and _EXCEPTION_TYPE.match(str(r[TEXT]).strip()))
    shown = next(stated, cause) if warned else cause
    text = str(shown[TEXT]).strip()
    chain.code = code
    chain.hangs = bool(entry and entry.hangs)
    chain.weight = _weight(code)
    chain.line = shown[C.LINE_NO]
    chain.ts = cause[C.TS] if isinstance(cause[C.TS], dt.datetime) else None
    chain.text = text
    if text.endswith(":") and shown.get(NEXT):
        text = f"{text} {str(shown[NEXT]).strip()}"
    chain.name = entry.name if entry else _short(text)
    kind = _EXCEPTION_TYPE.match(text)
    if entry is not None and kind is not None and kind.group(1).rsplit(".", 1)[-1] not in PLAIN_EXCEPTIONS:
        chain.exception = kind.group(1).rsplit(".", 1)[-1]
    chain.component = entry.component if entry else (cause[C.COMPONENT] or "Python")
    chain.fix = entry.fix_for(engine) if entry else None
    chain.ranks = list(cause[_RANKS] or [])
    chain.count = int(cause[_COUNT])
    # a traceback's own frames say it best (a start-up's step too); else a vLLM engine's stats lines
    # around the cause; else what the log showed before the cause
    stage = str(cause.get(STAGE) or "")
    chain.step = "" if stage in ("", "serving", "start-up") else stage
    chain.phase = (
        "start-up"
        if chain.step
        else stage
        or _stats_phase(cause[C.LINE_NO], chain.ts, direction > 0, stats or [])
        or _phase(cause[C.LINE_NO], direction > 0, serving, starting)
    )
    # the engine's own word that its start failed (vLLM prints no start-up milestones)
    if not chain.phase and any(_START_FAILED.search(str(r[TEXT])) for r in ordered):
        chain.phase = "start-up"
    before = ordered[: ordered.index(cause)] if cause in ordered else []
    if cause.get(CUT):
        # a traceback that names nothing is best told by the last error or note before it (the NCCL
        # WARN that the rank's connect failed)
        told = [r for r in before if _weight(r[CODE]) in (Weight.ERROR, Weight.NOTE) and _failure(r[CODE])]
        if told:
            chain.detail = (_BY_CODE[told[-1][CODE]].name, int(told[-1][C.LINE_NO]))
    elif entry is not None and chain.weight == Weight.FATAL:
        # an error or note of the same component before the fatal event is its detail (the NCCL WARN
        # before an NCCL error, the failed transfers before the transfer engine gives up)
        detail = next(
            (
                r
                for r in before
                if (f := _failure(r[CODE])) is not None
                and f.component == entry.component
                and f.weight in (Weight.ERROR, Weight.NOTE)
            ),
            None,
        )
        if detail is not None:
            chain.detail = (_BY_CODE[detail[CODE]].name, int(detail[C.LINE_NO]))
    at = live.index(cause)
    # what the cause explains: what follows it, and what came before it only because of it (a
    # consequence, a timeout waiting on the process that failed)
    earlier = [
        r for r in live[:at] if _weight(r[CODE]) == Weight.CONSEQUENCE or _precedence(r)[2] or r is wrapper
    ]
    seen: dict[str, int] = {}
    for r in [*earlier, *live[at + 1 :]]:
        # a cut traceback is the cause's own, or another's unnamed; an engine client's is what followed
        if r[CODE] == code or (r.get(CUT) and r[CODE] != FRONT_CUT):
            continue
        other = _failure(r[CODE])
        name = other.name if other else _short(str(r[TEXT]).strip(), 60)
        seen.setdefault(name, r[C.LINE_NO])
    chain.explains = list(seen)[:MAX_EXPLAINED]
    chain.explained_lines = list(seen.values())[:MAX_EXPLAINED]
    return chain


def _hang(live: list[dict[str, object]]) -> tuple[dict[str, object], dt.datetime | None] | None:
    """The first of the failed health checks that repeat one heartbeat (the scheduler froze there), and
    when that heartbeat was: the line's time less the seconds between the check's start and the beat."""
    for first in live:
        beat = _BEAT.search(str(first[TEXT]))
        if first[CODE] != "health-check" or beat is None or int(str(first[_COUNT])) < 2:
            continue
        ts, tic = first[C.TS], _TIC.search(str(first[TEXT]))
        since = (
            _beat_time(beat.group(1), tic.group(1) if tic else None, ts)
            if isinstance(ts, dt.datetime)
            else None
        )
        return first, since
    return None


def _beat_time(beat: str, tic: str | None, ts: dt.datetime) -> dt.datetime | None:
    """When the last heartbeat was. A time of day (2025 on: `09:44:42`) is taken on the failing line's
    date (the day before when it is later than the line); a Unix time (`1733299970.45`) as the line's
    time less the seconds between the heartbeat and the check's start (no timezone needed)."""
    if ":" in beat:
        hours, minutes, seconds = (int(float(p)) for p in [*beat.split(":"), "0", "0"][:3])
        at = ts.replace(hour=hours % 24, minute=minutes % 60, second=seconds % 60, microsecond=0)
        return at - dt.timedelta(days=1) if at > ts else at
    if tic is None or ":" in tic:
        return None
    return ts - dt.timedelta(seconds=max(0.0, float(tic) - float(beat)))


_BEAT = re.compile(HANG.pattern)
# An engine saying that its start failed (vLLM's `EngineCore failed to start.`, `Engine core
# initialization failed`, `WorkerProc initialization failed`; SGLang's `scheduler died during
# initialization`): whatever failed in that run failed while it started.
_START_FAILED = re.compile(r"failed to start\b|initialization failed|died during initialization")
_EXCEPTION_TYPE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Timeout\w*))\b")
_TIC = re.compile(r"tic start time: ([0-9][0-9:.]*[0-9])")


def ranks_text(ranks: list[int]) -> str:
    """`rank 3`, `ranks 0-7`, `ranks 0, 2, 3`; empty for none."""
    if not ranks:
        return ""
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"ranks {ranks[0]}-{ranks[-1]}"
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
