"""Server starts: each phase with its span, time to ready, expected time to ready, and stalls.

Ranks load in parallel, so a phase spans from its first rank's begin to its last rank's end. With
speculative decoding the draft model loads after the target: per rank, the first weight-load pair is
the target's and the second the draft's.
"""

from __future__ import annotations

import polars as pl

from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import A, C, Kind, W

# (phase, begin event, end event, target filter for graph capture)
_PAIRS: tuple[tuple[str, str, str, str | None], ...] = (
    ("distributed init", "dist_init_begin", "dist_init_end", None),
    ("graph capture (target)", "graph_capture_begin", "graph_capture_end", "target"),
    ("graph capture (draft)", "graph_capture_begin", "graph_capture_end", "draft"),
)


def _span(events: pl.DataFrame, phase: str, begin: pl.Expr, end: pl.Expr) -> pl.DataFrame:
    return (
        events.group_by(RUN_KEY)
        .agg(pl.col(C.TS).filter(begin).min().alias(A.START), pl.col(C.TS).filter(end).max().alias(A.END))
        .filter(pl.col(A.START).is_not_null() & pl.col(A.END).is_not_null())
        .with_columns(pl.lit(phase).alias(A.PHASE_NAME))
    )


def phases(lifecycle: pl.DataFrame) -> pl.DataFrame:
    """source, run, phase, start, end, duration_s: one row per phase seen in a run."""
    ev = pl.col(C.EVENT)
    parts = []
    for phase, begin, end, target in _PAIRS:
        tgt = pl.lit(True) if target is None else (pl.col(C.TARGET) == target)
        parts.append(_span(lifecycle, phase, (ev == begin) & tgt, (ev == end) & tgt))
    # weight load: pair begins and ends per rank in order; pair 0 = target, pair 1 = draft
    loads = lifecycle.filter(ev.is_in(["weight_load_begin", "weight_load_end"])).with_columns(
        pl.int_range(pl.len()).over(*RUN_KEY, C.TP, C.EVENT).alias(W.LOAD_PAIR)
    )
    for pair, phase in ((0, "weight load (target)"), (1, "weight load (draft)")):
        one = loads.filter(pl.col(W.LOAD_PAIR) == pair)
        parts.append(_span(one, phase, ev == "weight_load_begin", ev == "weight_load_end"))
    first_end = (
        lifecycle.filter(ev == "weight_load_end").group_by(RUN_KEY).agg(pl.col(C.TS).min().alias(A.START))
    )
    kv = lifecycle.filter(ev == "kv_cache_allocated").group_by(RUN_KEY).agg(pl.col(C.TS).max().alias(A.END))
    parts.append(first_end.join(kv, on=RUN_KEY).with_columns(pl.lit("KV cache").alias(A.PHASE_NAME)))
    serving = (
        lifecycle.filter(ev.is_in(["uvicorn_running", "server_process_started"]))
        .group_by(RUN_KEY)
        .agg(pl.col(C.TS).min().alias(A.START))
    )
    ready = ready_times(lifecycle).rename({C.TS: A.END})
    parts.append(serving.join(ready, on=RUN_KEY).with_columns(pl.lit("warm-up").alias(A.PHASE_NAME)))
    cols = [*RUN_KEY, A.PHASE_NAME, A.START, A.END]
    out = pl.concat([p.select(cols) for p in parts], how="vertical_relaxed")
    return out.with_columns(
        ((pl.col(A.END) - pl.col(A.START)).dt.total_microseconds() / 1e6).alias(A.DURATION_S)
    ).sort(*RUN_KEY, A.START)


def ready_times(lifecycle: pl.DataFrame) -> pl.DataFrame:
    """source, run, ts of the first `The server is fired up and ready to roll!` of each run."""
    return lifecycle.filter(pl.col(C.EVENT) == "ready").group_by(RUN_KEY).agg(pl.col(C.TS).min())


def time_to_ready(runs: pl.DataFrame, lifecycle: pl.DataFrame) -> pl.DataFrame:
    """source, run, time_to_ready_s and the expected time from earlier starts of the same model."""
    ready = ready_times(lifecycle)
    out = runs.select(*RUN_KEY, C.MODEL, C.START_TS).join(ready, on=RUN_KEY, how="left")
    out = out.with_columns(
        ((pl.col(C.TS) - pl.col(C.START_TS)).dt.total_microseconds() / 1e6).alias(A.TIME_TO_READY_S)
    )
    # Expected: the mean of this model's earlier starts (in time order across sources).
    out = out.sort(C.START_TS, nulls_last=True).with_columns(
        (pl.col(A.TIME_TO_READY_S).cum_sum().over(C.MODEL) - pl.col(A.TIME_TO_READY_S).fill_null(0)).alias(
            W.SUM
        ),
        (pl.col(A.TIME_TO_READY_S).is_not_null().cast(pl.Int64).cum_sum().over(C.MODEL)).alias(W.N),
    )
    earlier = pl.col(W.N) - pl.col(A.TIME_TO_READY_S).is_not_null().cast(pl.Int64)
    expected = pl.when(earlier > 0).then(pl.col(W.SUM) / earlier)
    return out.select(*RUN_KEY, A.TIME_TO_READY_S, expected.alias(A.EXPECTED_TIME_TO_READY_S))


def _maybe_loading(runs: pl.DataFrame, ready: pl.DataFrame) -> pl.Expr:
    """A superset of the lines while loading, on the lines' own columns, so that a dataset's scan skips
    the row groups of every run's serving time (the join with ``ready`` then keeps the exact rows):
    lines up to the latest ready time, and every line of a run number that some source never got ready
    in (``runs``: every source and run the lines hold)."""
    latest = ready.get_column(W.READY).max() if ready.height else None
    if latest is None:
        return pl.lit(True)
    unready = runs.select(RUN_KEY).join(ready, on=RUN_KEY, how="anti").get_column(C.RUN).unique()
    return (pl.col(C.TS) <= latest).fill_null(True) | pl.col(C.RUN).is_in(unready.implode())


CLOCK_JUMP_S = 86_400.0


def stalls(
    lines: pl.DataFrame | pl.LazyFrame, runs: pl.DataFrame, lifecycle: pl.DataFrame, threshold_s: float
) -> pl.DataFrame:
    """Gaps longer than ``threshold_s`` between consecutive timed lines while a run is loading (from its
    start to ready, or to its last line when it never got ready): source, run, ts (gap start), line_no
    (first line after the gap), duration_s. ``runs``: every source and run of the lines (the runs
    table)."""
    ready = ready_times(lifecycle).rename({C.TS: W.READY})
    # Lines before ready only, chosen inside the query: a dataset's lines are never all in memory.
    timed = collect(
        lines.lazy()
        .filter(_maybe_loading(runs, ready))
        .filter(pl.col(C.TS).is_not_null() & (pl.col(C.KIND) != Kind.BLANK))
        .select(*RUN_KEY, C.LINE_NO, C.TS)
        .join(ready.lazy(), on=RUN_KEY, how="left")
        .filter(pl.col(W.READY).is_null() | (pl.col(C.TS) <= pl.col(W.READY)))
    ).sort(*RUN_KEY, C.LINE_NO)
    gap = (pl.col(C.TS) - pl.col(C.TS).shift(1).over(RUN_KEY)).dt.total_microseconds() / 1e6
    return (
        timed.with_columns(gap.alias(A.DURATION_S), pl.col(C.TS).shift(1).over(RUN_KEY).alias(W.FROM))
        # A gap of a day or more between two lines of a start-up is a clock artefact, not a stall: a
        # log that mixes dated lines with time-only or year-less ones (whose date is guessed from the
        # file) jumps by whole days where nothing was silent.
        .filter((pl.col(A.DURATION_S) > threshold_s) & (pl.col(A.DURATION_S) < CLOCK_JUMP_S))
        .select(*RUN_KEY, pl.col(W.FROM).alias(C.TS), C.LINE_NO, A.DURATION_S)
    )


# Where an unfinished log stopped, by its last start-up event (a verdict's words).
STOPPED_AT = {
    "server_args": "right after the server's arguments",
    "dist_init_begin": "during distributed init",
    "dist_init_end": "after distributed init",
    "weight_load_begin": "during weight loading",
    "weight_load_end": "after weight loading",
    "kv_cache_allocated": "while setting up the memory pool",
    "memory_pool_end": "after the memory pool was set up",
    "capacity": "after the memory pool was set up",
    "graph_capture_begin": "during CUDA graph capture",
    "graph_capture_end": "after CUDA graph capture",
    "server_process_started": "during warm-up",
    "app_startup": "during warm-up",
    "uvicorn_running": "during warm-up",
}
