"""Tracebacks that several processes print at once, each line behind its process' wrapper.

When vLLM's workers fail together, Python prints each worker's traceback to its stderr, and vLLM puts
the worker's `(NAME pid=N) ` in front of every line (`processes.py`): the lines of two tracebacks
interleave, and read in file order every frame would join the last head. A line named by a wrapper
continues the traceback of its own process instead: the previous line, the open record and the
segments are taken per process (PROCESS, PID, HOST; lines that no wrapper names are one process of
their own, as before). torch prints each rank's traceback with `[rankN]: ` before every line, which
names no process but the rank (in tp: `processes.py`): an unprefixed line's tp is part of the key, so
ranks that crash together have a traceback each. Only a block with a line a wrapper names or torch's
prefix ranks, or one whose previous block left a process' record open, takes this way.
"""

from __future__ import annotations

import polars as pl

from tracelens.tables.schema import PROCESS_COLUMNS, C, Kind, W

# A process' state at the end of a block: its key (process, pid, host, rank), the head line of its open
# traceback (or None), whether its last line could continue one, whether it was a frame.
Carried = tuple[tuple[str | None, int | None, str | None, int | None, int | None, bool, bool], ...]
NO_PROCESS: tuple[None, None, None, None] = (None, None, None, None)
KEY_LEN = len(NO_PROCESS)
TRACEBACK_START = "Traceback (most recent call last)"
# The processes whose state a block hands on: a log of more (a fleet behind one stream) may join a
# traceback cut by a block's end to the wrong record, as it did before processes were told apart.
MAX_CARRIED = 256
_KEY = [*PROCESS_COLUMNS, W.LINE_RANK]
_OPEN, _PREV_CONT, _PREV_FRAME = W.OPEN_FAULT, W.PREV_CONT, W.PREV_FRAME


def traceback_head() -> pl.Expr:
    """Whether a line is a traceback's `Traceback (most recent call last):` head (indent allowed)."""
    return pl.col(W.CLEAN).str.strip_chars_start().str.starts_with(TRACEBACK_START)


def starts_traceback(prev_cont: pl.Expr) -> pl.Expr:
    """Whether a line starts a traceback of its own, given whether the line before it (in file order,
    or in its process) could continue one (``prev_cont``) and W.AFTER_FRAME: a head that continues
    nothing, or one right after a frame, whose source line it cannot be (a native stack printed
    without source lines, or cut, ends there). Both joins use this one test, so they cannot drift."""
    return traceback_head() & (~prev_cont | pl.col(W.AFTER_FRAME))


def by_process(df: pl.DataFrame, carried: Carried, traceback: pl.Series) -> bool:
    """Whether a block's tracebacks are joined per process: a process other than the unnamed one has
    state from the block before, or some line a wrapper names or ranks may be a traceback's
    (``traceback``, only ever true on lines without SGLang's prefix: their tp is a wrapper's or torch's).
    A block of wrapped lines and no wrapped traceback (a serving vLLM's) reads as before."""
    if any(row[:KEY_LEN] != NO_PROCESS for row in carried):
        return True
    named = df.get_column(C.PID).is_not_null() | df.get_column(C.TP).is_not_null()
    return bool((traceback & named).any())


def _line_rank() -> pl.Expr:
    """The rank part of a line's process key: tp of a line without SGLang's prefix (a wrapper's or
    torch's `[rankN]: `). A prefixed line's is null: its traceback's lines follow it without a prefix."""
    return pl.when(~pl.col(W.PREFIXED)).then(pl.col(C.TP))


def join_by_process(
    df: pl.DataFrame, carried: Carried, shape: pl.Expr, is_frame: pl.Series
) -> tuple[pl.DataFrame, Carried]:
    """``df`` with W.CONT, W.AFTER_FRAME and RECORD, each line's previous line and open record taken
    within its process, and each process' state at the block's end. ``shape``: whether a line could
    continue a traceback, given W.AFTER_FRAME (the pipeline's test); ``is_frame``: each line is a frame."""
    state = pl.DataFrame(
        [list(row) for row in carried],
        schema={
            C.PROCESS: pl.String,
            C.PID: pl.Int64,
            C.HOST: pl.String,
            W.LINE_RANK: pl.Int32,
            _OPEN: pl.Int64,
            _PREV_CONT: pl.Boolean,
            _PREV_FRAME: pl.Boolean,
        },
        orient="row",
    )
    # A line of SGLang's own prefix closes every record, a named process' too (a byte range starts at
    # one: `engine`): the lines after it take no state from before it.
    epoch = pl.col(W.PREFIXED).cum_sum()
    df = (
        df.with_columns(is_frame.alias(W.IS_FRAME), epoch.alias(W.EPOCH), _line_rank().alias(W.LINE_RANK))
        .join(state, on=_KEY, how="left", maintain_order="left", nulls_equal=True)
        .with_columns(
            pl.when(pl.col(W.EPOCH) == 0).then(pl.col(c)).alias(c) for c in (_OPEN, _PREV_CONT, _PREV_FRAME)
        )
    )
    process = [*_KEY, W.EPOCH]
    within = pl.col(W.IS_FRAME).shift(1).over(process)
    df = df.with_columns(within.fill_null(pl.col(_PREV_FRAME).fill_null(False)).alias(W.AFTER_FRAME))
    blank = pl.col(C.KIND) == Kind.BLANK
    df = df.with_columns(shape.alias(W.CONT))
    # a blank line keeps a record open when the next non-blank line continues it, as in file order
    next_is_cont = pl.when(~blank).then(pl.col(W.CONT)).backward_fill().fill_null(False)
    df = df.with_columns((pl.col(W.CONT) | (blank & next_is_cont)).alias(W.CONT))
    prev_cont = pl.col(W.CONT).shift(1).over(process).fill_null(pl.col(_PREV_CONT).fill_null(False))
    breaker = ~pl.col(W.CONT) | starts_traceback(prev_cont)
    df = df.with_columns(breaker.cum_sum().over(process).alias(W.SEGMENT))
    segment = [*process, W.SEGMENT]
    head_kind = pl.col(C.KIND).first().over(segment)
    head_line = pl.col(C.LINE_NO).first().over(segment)
    seen = pl.col(W.SEGMENT) > 0
    record = (
        pl.when(seen & (head_kind == Kind.FAULT) & pl.col(W.CONT))
        .then(head_line)
        .when(~seen & pl.col(_OPEN).is_not_null())
        .then(pl.col(_OPEN))
        .otherwise(pl.col(C.LINE_NO))
    )
    df = df.with_columns(record.alias(C.RECORD), head_kind.alias(W.HEAD_KIND), head_line.alias(W.HEAD_LINE))
    last_epoch = df.get_column(W.EPOCH).max() if df.height else 0
    ends = (
        df.filter(pl.col(W.EPOCH) == last_epoch)
        .group_by(_KEY, maintain_order=True)
        .agg(
            pl.col(C.LINE_NO).last().alias(W.LAST_LINE),
            pl.when(pl.col(W.SEGMENT).last() == 0)
            .then(pl.col(_OPEN).last())
            .when(pl.col(W.HEAD_KIND).last() == Kind.FAULT)
            .then(pl.col(W.HEAD_LINE).last())
            .alias(_OPEN),
            pl.col(W.CONT).last().alias(_PREV_CONT),
            pl.col(W.IS_FRAME).last().alias(_PREV_FRAME),
        )
    )
    # the processes this block did not see keep their state (unless a prefixed line closed their
    # records), the block's newest last
    kept = state.join(ends.select(_KEY), on=_KEY, how="anti", nulls_equal=True)
    if last_epoch:
        kept = kept.clear()
    rows = [*kept.rows(), *ends.sort(W.LAST_LINE).drop(W.LAST_LINE).rows()]
    k = KEY_LEN
    unnamed = [r for r in rows if tuple(r[:k]) == NO_PROCESS] or [(*NO_PROCESS, None, False, False)]
    # a process whose last line neither is nor may continue a traceback has nothing to hand on
    named = [r for r in rows if tuple(r[:k]) != NO_PROCESS and (r[k] is not None or r[k + 1] or r[k + 2])]
    named = named[-MAX_CARRIED:]
    out = df.drop(
        _OPEN, _PREV_CONT, _PREV_FRAME, W.IS_FRAME, W.EPOCH, W.SEGMENT, W.HEAD_KIND, W.HEAD_LINE, W.LINE_RANK
    )
    return out, tuple((*r[:k], r[k], bool(r[k + 1]), bool(r[k + 2])) for r in [*unnamed, *named])
