"""From a frame of lines to typed tables: peel the prefix, route each line to its kind with cheap
literal tests, join multi-line records, number the runs, then let each kind's parser fill its table.

`parse_lines` is pure apart from the `ParseState` it takes and returns, which carries what one block
must know about the previous one (the current run, an open traceback or wrapped `server_args`, the
clock for time-only prefixes). Blocks of a source parsed in order give the same tables as the whole
source at once; `finalize` (parsers/finalize.py) then joins what straddled blocks.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from functools import cache

import polars as pl

from tracelens.parsers.batch import parse_batches
from tracelens.parsers.bench_serving import parse_benchmarks
from tracelens.parsers.debug import parse_debug
from tracelens.parsers.endpoint_metrics import parse_endpoint_metrics
from tracelens.parsers.faults import parse_faults
from tracelens.parsers.foreign import formats_of, parse_foreign
from tracelens.parsers.glued import keep_same_kind, own_rows, split_glued
from tracelens.parsers.http import parse_http
from tracelens.parsers.kinds import ROUTES, Route
from tracelens.parsers.lifecycle import parse_lifecycle
from tracelens.parsers.literals import has_literal
from tracelens.parsers.prefix import add_prefix_columns
from tracelens.parsers.process_records import (
    KEY_LEN,
    NO_PROCESS,
    Carried,
    by_process,
    join_by_process,
    starts_traceback,
    traceback_head,
)
from tracelens.parsers.processes import add_process_columns
from tracelens.parsers.requests import parse_requests
from tracelens.parsers.restarts import Counters, is_comment, restart_rows
from tracelens.parsers.spec_metrics import (
    VLLM_STARTS,
    parse_spec_metrics,
    vllm_timestamps,
)
from tracelens.tables.exceptions import EXCEPTION_NAME
from tracelens.tables.first_match import first_match
from tracelens.tables.frames import PARTS, Tables
from tracelens.tables.schema import (
    COMMON_COLUMNS,
    KIND_TABLE,
    PROCESS_COLUMNS,
    C,
    Kind,
    T,
    W,
    conform,
    discard,
    empty,
    project,
)

# Lines that continue a traceback: indented frames (or frames whose indentation a paste lost),
# chained-exception banners, the final `SomeError: message`, and caret markers.
CONTINUATION_PATTERN = (
    r"^(?:\s+\S|File \"|Traceback \(most recent call last\)|During handling of the above exception"
    rf"|The above exception was the direct cause|(?:{EXCEPTION_NAME})(?::|$)|[\^~]+\s*$"
    # multi-line exception messages: CUDA's advice, c10d's C++ frames, SGLang's numbered hints
    r"|CUDA kernel errors might be|For debugging consider passing|Compile with `TORCH_USE_CUDA_DSA`"
    r"|Exception raised from |frame #\d+: |Possible solutions:|\d+\. |Open an issue on GitHub)"
)
# The line after a `File "...", line N, in f` frame is its source line, even when a paste lost the indent.
FRAME_PATTERN = r"^\s*File \"[^\"]*\", line \d+"
# How SGLang's `server_args=...` line, which starts a run and may be hard-wrapped, begins its message.
SERVER_ARGS_HEAD = "server_args="
_SECONDS_PER_DAY = 86_400
_HALF_DAY = _SECONDS_PER_DAY // 2

_PARSERS = {
    Kind.BATCH: parse_batches,
    Kind.DEBUG: parse_debug,
    Kind.LIFECYCLE: parse_lifecycle,
    Kind.HTTP: parse_http,
    Kind.FAULT: parse_faults,
    Kind.SPEC_METRICS: parse_spec_metrics,
    Kind.BENCHMARK: parse_benchmarks,
    Kind.REQUEST: parse_requests,
    Kind.ENDPOINT_METRIC: parse_endpoint_metrics,
    Kind.FOREIGN: parse_foreign,
}


@dataclass(frozen=True)
class ParseOptions:
    """How to read lines. ``base_date`` dates time-only prefixes (SGLang before v0.3.4) and gives the
    year of vLLM's `MM-DD HH:MM:SS` prefix: the date of the first line (``--date``), or, when
    ``base_date_is_end``, a date at or after the last line (the file's modification time)."""

    base_date: dt.date | None = None
    base_date_is_end: bool = False


@dataclass(frozen=True)
class ParseState:
    """What the next block of the same source needs to know about the lines before it."""

    run: int = 0
    open_fault: int | None = None  # head line_no of a traceback that may continue
    open_args: int | None = None  # head line_no of a server_args record not yet closed
    prev_cont: bool = False  # the previous line could continue a traceback
    prev_frame: bool = False  # the previous line was a `File "...", line N` frame
    # the same, per process that a wrapper names (`process_records`): open_fault, prev_cont, prev_frame
    # above are the unnamed lines'
    processes: Carried = ()
    last_secs: int | None = None  # time of day of the last time-only prefix
    day_offset: int = 0  # midnights crossed so far by time-only prefixes
    counters: Counters = field(
        default_factory=Counters
    )  # the metrics pages' counters (`restarts`): one going back is a restart

    def open_records(self) -> list[int]:
        """The head lines of the records the next block may continue."""
        named = [head for *_, head, _, _ in self.processes if head is not None]
        return [n for n in (self.open_fault, self.open_args, *named) if n is not None]


def _alternation(literals: tuple[str, ...], anchored: bool) -> str:
    """One regex for many literals: a single pass over the text instead of one per literal."""
    body = "|".join(re.escape(lit) for lit in literals)
    return f"^(?:{body})" if anchored else body


# Routes tested on every line; the rest are tested only on the lines these leave. Batch and debug
# lines are most of a busy log, and first-match order is the same however the chain is cut.
_BULK_ROUTES = 2


@cache
def route_expr(routes: tuple[Route, ...]) -> pl.Expr:
    """The kind of each line, first match in ``routes`` order after the blank test, from literal tests
    only (foreign formats are recognised afterwards, on the few lines no route took), `unparsed` when
    none holds. Kept once built: the chain is some 200 expression nodes, and building it cost a block
    about 0.5 ms."""
    cases = [(_blank(), pl.lit(Kind.BLANK)), *((_route_test(route), pl.lit(route.kind)) for route in routes)]
    return first_match(cases, pl.lit(Kind.UNPARSED, dtype=pl.String))


@cache
def _bulk_routes() -> tuple[list[pl.Expr], pl.Expr]:
    """The bulk routes' tests, one boolean column each, and the chain that picks a kind from those
    columns. Two selects, not one: a session block's 43,000 lines take 2.7-3.7 ms so, and 4.1-4.9 with
    the tests inside the chain (least and median of 30 alternate passes)."""
    routes = ROUTES[:_BULK_ROUTES]
    names = [f"{W.ROUTE_TEST}{i}" for i in range(len(routes))]
    tests = [_route_test(route).alias(name) for route, name in zip(routes, names, strict=True)]
    chain = first_match(
        ((pl.col(name), pl.lit(route.kind)) for route, name in zip(routes, names, strict=True)),
        pl.lit(None, dtype=pl.String),
    )
    return tests, chain


def add_kinds(df: pl.DataFrame) -> pl.DataFrame:
    """Add KIND (and FORMAT for foreign lines) to a frame with prefix columns. The bulk routes run on
    every line, the others on the lines left: a chain of `when`s evaluates every test on every row.
    The blank test runs on the lines left only: the bulk routes' literals have visible characters, and the
    message they are tested on is part of the line, so a line they take is never blank."""
    tests, chain = _bulk_routes()
    kind = df.select(tests).select(chain).to_series()
    left = kind.is_null()
    if left.any():
        idx = left.arg_true()
        rest = df.select(pl.col(W.CLEAN, W.BODY, W.PREFIXED).gather(idx))
        kind = kind.scatter(idx, rest.select(route_expr(ROUTES[_BULK_ROUTES:])).to_series())
    return _add_foreign(df.with_columns(kind.alias(C.KIND)))


_FEW_STARTS = 4


def _route_test(route: Route) -> pl.Expr:
    tests: list[pl.Expr] = []
    if len(route.starts) <= _FEW_STARTS:  # a few `starts_with` cost less than one anchored regex
        tests.extend(pl.col(W.BODY).str.starts_with(start) for start in route.starts)
    else:
        tests.append(pl.col(W.BODY).str.contains(_alternation(route.starts, anchored=True)))
    if route.contains:
        tests.append(pl.col(W.CLEAN).str.contains(_alternation(route.contains, anchored=False)))
    test = pl.any_horizontal(*tests) if tests else pl.lit(True)
    if route.prefixed is not None:
        test = test & (pl.col(W.PREFIXED) == route.prefixed)
    return test


def _add_foreign(df: pl.DataFrame) -> pl.DataFrame:
    """Add FORMAT for unprefixed lines no route took, and make them `foreign` when a format matches.
    Only those rows are tested: the format patterns never run on the bulk of SGLang lines."""
    candidates = (df.get_column(C.KIND) == Kind.UNPARSED) & ~df.get_column(W.PREFIXED)
    formats = pl.repeat(None, df.height, dtype=pl.String, eager=True).alias(C.FORMAT)
    if candidates.any():
        idx = candidates.arg_true()
        formats = formats.scatter(idx, formats_of(df.get_column(W.CLEAN).gather(idx)))
    kind = pl.when(pl.col(C.FORMAT).is_not_null()).then(pl.lit(Kind.FOREIGN)).otherwise(pl.col(C.KIND))
    return df.with_columns(formats).with_columns(kind.alias(C.KIND))


def parse_lines(
    lines: pl.DataFrame, state: ParseState | None = None, options: ParseOptions | None = None
) -> tuple[Tables, ParseState]:
    """Parse one block of lines of one source (columns as made by `sources.files.block_lines`)."""
    tables, state, _ = parse_block(lines, state, options, final=True)
    return tables, state


def parse_block(
    lines: pl.DataFrame, state: ParseState | None, options: ParseOptions | None, final: bool
) -> tuple[Tables, ParseState, int]:
    """`parse_lines` for a block that may not be the last of its source: returns also how many of its
    trailing lines were held back (not parsed) and must be fed again at the start of the next block.

    Why: a blank line belongs to a traceback when the next non-blank line continues it, so trailing
    blank lines cannot be read before the next block is seen; a metrics page's `# HELP`/`# TYPE` lines
    start a run with the sample after them when its counter went back (`restarts`). Holding them back
    makes the tables independent of where blocks are cut."""
    state = state or ParseState()
    options = options or ParseOptions()
    df = add_process_columns(add_prefix_columns(split_glued(lines), options.base_date))
    held = 0 if final else _trailing_held_lines(df)
    if held:
        if held == df.height:
            return Tables({}), state, held
        df = df.head(df.height - held)
    df, state = _roll_days(df, state, options)
    df = vllm_timestamps(df, options.base_date, options.base_date_is_end)
    df = keep_same_kind(add_kinds(df))
    df, state = _join_tracebacks(df, state)
    df, state = _join_wrapped_args(df, state)
    df, state = _number_runs(df, state)
    return _fill_tables(df), state, held


def _blank() -> pl.Expr:
    # `\S` stops at the first visible character; stripping would copy every line first.
    return ~pl.col(W.CLEAN).str.contains(r"\S")


def _trailing_held_lines(df: pl.DataFrame) -> int:
    """How many lines at the end of the block are blank or a metrics page's `#` comments (read with the
    sample after them: `restarts`). Tested from the end in growing tails: a block nearly always ends with
    a line that is neither, and then one line is tested, not the block."""
    tail = 1
    while True:
        tail = min(tail, df.height)
        kept = df.tail(tail).select(~(_blank() | is_comment(pl.col(W.CLEAN)))).to_series().arg_true()
        if len(kept):
            return tail - (int(kept[-1]) + 1)
        if tail == df.height:
            return tail
        tail *= 16


def _roll_days(df: pl.DataFrame, state: ParseState, options: ParseOptions) -> tuple[pl.DataFrame, ParseState]:
    """Time-only prefixes have no date: each time the clock goes back by more than half a day, a
    midnight has passed."""
    clock = df.get_column(W.UNDATED_TIME)
    # Nearly every block has no time-only stamp: a null count (kept by Arrow), not the roll.
    if options.base_date is None or clock.null_count() == len(clock):
        return df, state
    only_time = pl.col(W.UNDATED_TIME).is_not_null()
    secs = (
        pl.col(W.UNDATED_TIME).str.slice(0, 2).cast(pl.Int64) * 3600
        + pl.col(W.UNDATED_TIME).str.slice(3, 2).cast(pl.Int64) * 60
        + pl.col(W.UNDATED_TIME).str.slice(6, 2).cast(pl.Int64)
    )
    timed = df.with_columns(pl.when(only_time).then(secs).alias(W.SECS))
    prev = pl.col(W.SECS).forward_fill().shift(1, fill_value=state.last_secs)
    timed = timed.with_columns(((pl.col(W.SECS) < prev - _HALF_DAY).fill_null(False)).cum_sum().alias(W.DAYS))
    days = timed.get_column(W.DAYS)
    shifted = timed.with_columns(
        pl.when(only_time)
        .then(pl.col(C.TS) + pl.duration(days=pl.col(W.DAYS) + state.day_offset))
        .otherwise(pl.col(C.TS))
        .alias(C.TS)
    )
    last = timed.get_column(W.SECS).drop_nulls()
    new_state = replace(
        state,
        last_secs=int(last[-1]) if len(last) else state.last_secs,
        day_offset=state.day_offset + (int(days[-1]) if len(days) else 0),
    )
    return shifted.drop(W.SECS, W.DAYS), new_state


def _join_tracebacks(df: pl.DataFrame, state: ParseState) -> tuple[pl.DataFrame, ParseState]:
    """Give traceback continuation lines the kind and record of the fault line they follow."""
    blank = pl.col(C.KIND) == Kind.BLANK
    is_frame, continues = _on_unprefixed(df, (FRAME_PATTERN, CONTINUATION_PATTERN))
    shape = ~pl.col(W.PREFIXED) & (pl.col(C.FORMAT).is_null()) & (continues | pl.col(W.AFTER_FRAME))
    if by_process(df, state.processes, continues | is_frame):
        return _join_by_process(df, state, shape, is_frame)
    df = df.with_columns(is_frame.shift(1, fill_value=state.prev_frame).alias(W.AFTER_FRAME))
    df = df.with_columns(shape.alias(W.CONT))
    # Blank lines inside a traceback (chained exceptions, interleaved ranks) keep the record open when
    # the next non-blank line continues it.
    next_is_cont = pl.when(~blank).then(pl.col(W.CONT)).backward_fill().fill_null(False)
    df = df.with_columns((pl.col(W.CONT) | (blank & next_is_cont)).alias(W.CONT))
    if state.open_fault is None and not df.get_column(W.CONT).any():
        return _no_continuations(df, state, is_frame)
    prev_cont = pl.col(W.CONT).shift(1, fill_value=state.prev_cont)
    breaker = ~pl.col(W.CONT) | starts_traceback(prev_cont)
    df = df.with_columns(breaker.cum_sum().alias(W.SEGMENT))
    head_kind = pl.col(C.KIND).first().over(W.SEGMENT)
    head_line = pl.col(C.LINE_NO).first().over(W.SEGMENT)
    first_breaker_seen = pl.col(W.SEGMENT) > 0
    # Lines before the block's first breaker continue whatever the previous block left open.
    record = (
        pl.when(first_breaker_seen & (head_kind == Kind.FAULT) & pl.col(W.CONT))
        .then(head_line)
        .when(~first_breaker_seen & pl.lit(state.open_fault is not None))
        .then(pl.lit(state.open_fault, dtype=pl.Int64))
        .otherwise(pl.col(C.LINE_NO))
    )
    df = df.with_columns(record.alias(C.RECORD))
    df = df.with_columns(_frame_source_line_is_code()).with_columns(
        pl.when(pl.col(C.RECORD) != pl.col(C.LINE_NO))
        .then(pl.lit(Kind.FAULT))
        .otherwise(pl.col(C.KIND))
        .alias(C.KIND)
    )
    if df.height == 0:
        return discard(df, W.SEGMENT, W.AFTER_FRAME), state
    last_frame = bool(is_frame[-1])
    last = df.row(-1, named=True)
    if last[W.SEGMENT] == 0:  # the whole block continued the previous one
        open_fault = state.open_fault
    else:
        seg = df.filter(pl.col(W.SEGMENT) == last[W.SEGMENT])
        open_fault = seg.item(0, C.LINE_NO) if seg.item(0, C.KIND) == Kind.FAULT else None
    return discard(df, W.SEGMENT, W.AFTER_FRAME), replace(
        state, open_fault=open_fault, prev_cont=bool(last[W.CONT]), prev_frame=last_frame
    )


def _join_by_process(
    df: pl.DataFrame, state: ParseState, shape: pl.Expr, is_frame: pl.Series
) -> tuple[pl.DataFrame, ParseState]:
    """`_join_tracebacks` for a block whose lines a wrapper names by process (`process_records`)."""
    unnamed = (*NO_PROCESS, state.open_fault, state.prev_cont, state.prev_frame)
    carried = (unnamed, *(row for row in state.processes if row[:KEY_LEN] != NO_PROCESS))
    df, carried = join_by_process(df, carried, shape, is_frame)
    df = df.with_columns(_frame_source_line_is_code()).with_columns(
        pl.when(pl.col(C.RECORD) != pl.col(C.LINE_NO))
        .then(pl.lit(Kind.FAULT))
        .otherwise(pl.col(C.KIND))
        .alias(C.KIND)
    )
    (*_, open_fault, prev_cont, prev_frame), *named = carried
    state = replace(
        state, open_fault=open_fault, prev_cont=prev_cont, prev_frame=prev_frame, processes=tuple(named)
    )
    return discard(df, W.AFTER_FRAME), state


def _on_unprefixed(df: pl.DataFrame, patterns: tuple[str, ...]) -> list[pl.Series]:
    """Whether each of ``patterns`` (anchored at a line's start) matches each line's clean text, tested on
    the lines without SGLang's prefix only, in one pass: a prefixed line starts with `[` or `Rank `,
    which no traceback pattern takes, and prefixed lines are most of a log."""
    tests = [pl.col(W.CLEAN).str.contains(pattern).alias(str(i)) for i, pattern in enumerate(patterns)]
    return _tested_where(df, ~df.get_column(W.PREFIXED), tests)


def _tested_where(df: pl.DataFrame, rows: pl.Series, tests: list[pl.Expr]) -> list[pl.Series]:
    """Each boolean test evaluated on the ``rows`` of ``df`` only, False on the others: a test that can
    hold on few lines costs those lines, not the block."""
    if rows.all():
        return df.select(tests).get_columns()

    def none() -> pl.Series:  # a new one each time: `scatter` writes in place
        return pl.repeat(False, df.height, dtype=pl.Boolean, eager=True)

    if not rows.any():
        return [none() for _ in tests]
    idx = rows.arg_true()
    columns = list(dict.fromkeys(name for test in tests for name in test.meta.root_names()))
    read = project(df, *columns).filter(rows).select(tests)  # only the columns the tests read are copied
    return [none().scatter(idx, column) for column in read.get_columns()]


def _frame_source_line_is_code() -> pl.Expr:
    """A frame's source line (`raise RuntimeError(f"NCCL error: ...")`) is code, never a fault of its
    own, even in a traceback whose head was not in the log. A traceback's head is no source line: a
    stack printed without them (a native one's `File "<unknown>", line 0` frames) or cut ends there."""
    return (
        pl.when(
            pl.col(W.AFTER_FRAME) & ~pl.col(W.PREFIXED) & (pl.col(C.KIND) == Kind.FAULT) & ~traceback_head()
        )
        .then(pl.lit(Kind.UNPARSED))
        .otherwise(pl.col(C.KIND))
        .alias(C.KIND)
    )


def _no_continuations(
    df: pl.DataFrame, state: ParseState, is_frame: pl.Series
) -> tuple[pl.DataFrame, ParseState]:
    """`_join_tracebacks` for the common block where no line continues a record: each line is its own
    record, and the segment bookkeeping (a window over every line) is skipped."""
    df = df.with_columns(pl.col(C.LINE_NO).alias(C.RECORD)).with_columns(_frame_source_line_is_code())
    if df.height == 0:
        return discard(df, W.AFTER_FRAME), state
    last_frame = bool(is_frame[-1])
    open_fault = int(df.item(-1, C.LINE_NO)) if df.item(-1, C.KIND) == Kind.FAULT else None
    return discard(df, W.AFTER_FRAME), replace(
        state, open_fault=open_fault, prev_cont=False, prev_frame=last_frame
    )


def _join_wrapped_args(df: pl.DataFrame, state: ParseState) -> tuple[pl.DataFrame, ParseState]:
    """A terminal can hard-wrap the one-line `server_args=...`: unprefixed lines that follow an unclosed
    one belong to it until the closing bracket. There is one such line per server start, so a short
    Python scan over those few heads is cheap."""
    heads: list[int] = []
    lifecycle = df.get_column(C.KIND) == Kind.LIFECYCLE
    if lifecycle.any():  # most blocks have no lifecycle line, so no head: nothing more is read
        rows = lifecycle.arg_true()
        heads = (
            pl.DataFrame([rows.alias(W.ROW), df.get_column(W.BODY).gather(rows)])
            .filter(pl.col(W.BODY).str.starts_with(SERVER_ARGS_HEAD))  # first: the end tests run on few
            .filter(
                ~pl.col(W.BODY).str.strip_chars_end().str.ends_with(")")
                & ~pl.col(W.BODY).str.strip_chars_end().str.ends_with("}")
            )
            .get_column(W.ROW)
            .to_list()
        )
    starts: list[tuple[int, int | None]] = [(i + 1, None) for i in heads]
    if state.open_args is not None:
        starts.insert(0, (0, state.open_args))
    if not starts:
        return df, state
    prefixed = df.get_column(W.PREFIXED).to_list()
    text = df.get_column(W.CLEAN).to_list()
    line_nos = df.get_column(C.LINE_NO).to_list()
    joined_rows: list[int] = []
    joined_heads: list[int] = []
    open_args = None
    for start, carried in starts:
        head = carried if carried is not None else line_nos[start - 1]
        i = start
        closed = False
        while i < len(text) and not prefixed[i] and not closed:
            joined_rows.append(i)
            joined_heads.append(head)
            closed = text[i].rstrip().endswith((")", "}"))
            i += 1
        if i == len(text) and not closed:
            open_args = head
    if joined_rows:
        members = pl.DataFrame(
            {W.ROW: joined_rows, W.ARGS_HEAD: joined_heads}, schema={W.ROW: pl.UInt32, W.ARGS_HEAD: pl.Int64}
        )
        df = (
            df.with_row_index(W.ROW)
            .join(members, on=W.ROW, how="left")
            .with_columns(
                pl.coalesce(pl.col(W.ARGS_HEAD), pl.col(C.RECORD)).alias(C.RECORD),
                pl.when(pl.col(W.ARGS_HEAD).is_not_null())
                .then(pl.lit(Kind.LIFECYCLE))
                .otherwise(pl.col(C.KIND))
                .alias(C.KIND),
            )
            .drop(W.ROW, W.ARGS_HEAD)
        )
    return df, replace(state, open_args=open_args)


def run_start_expr() -> pl.Expr:
    """A line that starts a run: SGLang's `server_args=` line, or vLLM's `vLLM API server version` (its
    banner's `version X.Y.Z` in newer releases, `vLLM server version X.Y.Z, serving model M` with the logo
    off)."""
    sglang = (pl.col(C.KIND) == Kind.LIFECYCLE) & pl.col(W.BODY).str.starts_with(SERVER_ARGS_HEAD)
    vllm = (
        (pl.col(C.KIND) == Kind.FOREIGN)
        & (pl.col(C.FORMAT) == "vllm")
        & has_literal(pl.col(W.BODY), *VLLM_STARTS)
    )
    return sglang | vllm


def _number_runs(df: pl.DataFrame, state: ParseState) -> tuple[pl.DataFrame, ParseState]:
    """Each server start (`run_start_expr`, or a metrics page whose counters went back: `restarts`)
    starts a new run; lines before the first one are run 0."""
    # Only lifecycle and foreign lines can start a run, a handful per block: they alone are tested.
    candidates = df.get_column(C.KIND).is_in([Kind.LIFECYCLE, Kind.FOREIGN])
    (starts,) = _tested_where(df, candidates, [(pl.col(C.RECORD) == pl.col(C.LINE_NO)) & run_start_expr()])
    restarted, counters = restart_rows(df, state.counters)
    if counters is not state.counters:
        state = replace(state, counters=counters)
    if restarted:
        starts = starts.scatter(restarted, True)
    if not starts.any():
        return df.with_columns(pl.lit(state.run, dtype=pl.Int32).alias(C.RUN)), state
    df = df.with_columns((starts.cum_sum() + state.run).cast(pl.Int32).alias(C.RUN))
    last_run = int(df.item(-1, C.RUN)) if df.height else state.run
    return df, replace(state, run=last_run)


# Columns of a parsed block that no kind's parser reads (the lines table and `unparsed` take them from the
# whole block).
_NOT_PARSED = (C.TEXT, C.BYTE_OFFSET, C.BYTE_LEN, W.UNDATED_TIME, W.GPU, W.CONT)


def _fill_tables(df: pl.DataFrame) -> Tables:
    """Run each kind's parser on its heads; a line its parser cannot read becomes a message (prefixed)
    or unparsed, so that every line lands in exactly one table."""
    heads = pl.col(C.RECORD) == pl.col(C.LINE_NO)
    tables: dict[str, pl.DataFrame] = {}
    # The parsers' rows, without the columns no parser reads: partitioning copies every column it is given.
    parsed = discard(df, *_NOT_PARSED)
    is_head = df.get_column(C.RECORD) == df.get_column(C.LINE_NO)
    by_kind = (parsed if is_head.all() else parsed.filter(is_head)).partition_by(C.KIND, as_dict=True)
    failed: list[pl.Series] = []
    for kind, parse in _PARSERS.items():
        rows = by_kind.get((kind,))
        # An absent kind costs nothing: a parser's fixed cost is many small polars calls per block.
        table = parse(rows) if rows is not None else empty(_table_of(kind))
        tables[_table_of(kind)] = table
        if rows is not None and table.height < rows.height:  # lines its parser could not read
            got = table.get_column(C.LINE_NO)
            failed.append(rows.get_column(C.LINE_NO).filter(~rows.get_column(C.LINE_NO).is_in(got.implode())))
    if failed:
        fallback = pl.when(pl.col(W.PREFIXED)).then(pl.lit(Kind.MESSAGE)).otherwise(pl.lit(Kind.UNPARSED))
        df = df.with_columns(
            pl.when(pl.col(C.LINE_NO).is_in(pl.concat(failed).implode()) & heads)
            .then(fallback)
            .otherwise(pl.col(C.KIND))
            .alias(C.KIND)
        )
    # Most blocks have neither messages nor unparsed lines: a test of the kinds costs a tenth of the two
    # filters and selects of every column that would find no row.
    kinds = df.get_column(C.KIND)
    tables[T.MESSAGES] = (
        conform(
            T.MESSAGES,
            df.filter((pl.col(C.KIND) == Kind.MESSAGE) & heads).select(
                *COMMON_COLUMNS, *PROCESS_COLUMNS, C.LEVEL, C.LOGGER, pl.col(W.BODY).alias(C.MESSAGE)
            ),
        )
        if (kinds == Kind.MESSAGE).any()
        else empty(T.MESSAGES)
    )
    tables[T.UNPARSED] = (
        conform(T.UNPARSED, df.filter(pl.col(C.KIND) == Kind.UNPARSED).select(C.SOURCE, C.LINE_NO, C.TEXT))
        if (kinds == Kind.UNPARSED).any()
        else empty(T.UNPARSED)
    )
    tables[T.LINES] = conform(T.LINES, own_rows(df))
    # Record pieces (server_args heads and every continuation line) are joined by `finalize.finalize`,
    # after all blocks are in, because a record can straddle blocks.
    part = _is_part(df, is_head)
    tables[PARTS] = (df.filter(part) if part.any() else df.clear()).select(
        C.SOURCE,
        C.RUN,
        C.RECORD,
        C.LINE_NO,
        C.KIND,
        pl.when(heads).then(pl.col(W.BODY)).otherwise(pl.col(W.CLEAN)).alias(C.TEXT),
    )
    return Tables(tables)


def _is_part(df: pl.DataFrame, head: pl.Series) -> pl.Series:
    """Whether each line is a record piece: a line that is not its record's head (``head``: whether each
    line heads its record), or a `server_args` head. Only lifecycle heads (a few per block, or none) have
    their message tested."""
    part = ~head
    lifecycle_heads = head & (df.get_column(C.KIND) == Kind.LIFECYCLE)
    if lifecycle_heads.any():
        idx = lifecycle_heads.arg_true()
        is_args = df.select(pl.col(W.BODY).gather(idx).str.starts_with(SERVER_ARGS_HEAD)).to_series()
        part = part.scatter(idx.filter(is_args), True)
    return part


def _table_of(kind: str) -> str:
    return KIND_TABLE[kind]
