"""Hangs by silence: a server that had work in hand (requests running or queued at its last batch line, or
a request received after it) and made no progress while its log went on.

A serving SGLang scheduler prints a batch line every few dozen steps, seconds apart even at one token a
second. So when the last batch line shows requests running and the log goes on for minutes with no
batch line and no request finished (health checks, new requests arriving, the operator's Ctrl-C), the
scheduler stopped there: the hang began at that line. A log that ends right after it proves nothing
(an excerpt, or a server killed at once) and is no hang; neither is an idle server (nothing running).
"""

from __future__ import annotations

import polars as pl

from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, Kind, T, W

# Five minutes without a batch line while requests run: forty decode steps take under a minute even at
# one token a second, so the scheduler is not merely slow.
SERVING_HANG_SECONDS = 300.0

CLOCK_JUMP_S = 86_400.0  # a day of silence is a clock artefact (mixed dated and time-only lines)


def hangs(tables: Tables, threshold_s: float = SERVING_HANG_SECONDS) -> pl.DataFrame:
    """source, run, ts (when the hang began), line_no (the line it began at), pending_reqs (requests
    running or queued then, or received after), duration_s (from then to the run's last timed line), and
    line_after (the first line past ``threshold_s`` of silence) of each run that hung while serving."""
    out_schema = pl.Schema(
        {
            C.SOURCE: pl.String(),
            C.RUN: pl.Int32(),
            C.TS: pl.Datetime("us"),
            C.LINE_NO: pl.Int64(),
            A.PENDING_REQS: pl.Int64(),
            A.DURATION_S: pl.Float64(),
            A.LINE_AFTER: pl.Int64(),
        }
    )
    # each run's last timed batch line: its line number first (an aggregate the streaming engine keeps
    # small), then that row alone
    timed = tables.scan(T.BATCHES).filter(pl.col(C.TS).is_not_null())
    ends = collect(timed.group_by(RUN_KEY).agg(pl.col(C.LINE_NO).max()))
    last = collect(
        timed.join(ends.lazy(), on=[*RUN_KEY, C.LINE_NO], how="semi")
        .select(
            *RUN_KEY,
            C.LINE_NO,
            C.TS,
            (pl.col(C.RUNNING_REQ).fill_null(0) + pl.col(C.QUEUE_REQ).fill_null(0)).alias(A.PENDING_REQS),
        )
        .unique(RUN_KEY, keep="first")
    )
    if not last.height:
        return pl.DataFrame(schema=out_schema)
    # a request received after the last batch line is work in hand too
    received = collect(
        tables.scan(T.REQUESTS)
        .filter((pl.col(C.EVENT) == "received") & pl.col(C.TS).is_not_null())
        .select(*RUN_KEY, pl.col(C.LINE_NO).alias(W.MARK), pl.col(C.TS).alias(W.SINCE))
    )
    late = (
        received.join(last.select(*RUN_KEY, C.LINE_NO, C.TS), on=RUN_KEY)
        .filter(pl.col(W.MARK) > pl.col(C.LINE_NO))
        .sort(W.MARK)
        .group_by(RUN_KEY)
        .agg(pl.col(W.MARK).first(), pl.col(W.SINCE).first(), pl.len().alias(W.N))
    )
    work = (
        last.join(late, on=RUN_KEY, how="left")
        .with_columns(
            # busy at the last batch: the hang began there; idle: at the first request received after it
            pl.when(pl.col(A.PENDING_REQS) > 0).then(pl.col(C.TS)).otherwise(pl.col(W.SINCE)).alias(W.SINCE),
            pl.when(pl.col(A.PENDING_REQS) > 0)
            .then(pl.col(C.LINE_NO))
            .otherwise(pl.col(W.MARK))
            .alias(W.MARK),
            pl.when(pl.col(A.PENDING_REQS) > 0)
            .then(pl.col(A.PENDING_REQS) + pl.col(W.N).fill_null(0))
            .otherwise(pl.col(W.N))
            .alias(A.PENDING_REQS),
        )
        .filter(pl.col(W.SINCE).is_not_null())
        .select(*RUN_KEY, W.SINCE, W.MARK, A.PENDING_REQS, pl.col(C.LINE_NO).alias(W.LAST_BATCH))
    )
    if not work.height:
        return pl.DataFrame(schema=out_schema)
    # the run's timed lines after the work mark: only the tail of each run is read
    first_mark = work.get_column(W.MARK).min()  # a bound the scan reads row groups by: the tails only
    tail = collect(
        tables.scan(T.LINES)
        .filter(
            (pl.col(C.LINE_NO) > first_mark) & pl.col(C.TS).is_not_null() & (pl.col(C.KIND) != Kind.BLANK)
        )
        .select(*RUN_KEY, C.LINE_NO, C.TS)
        .join(work.lazy(), on=RUN_KEY)
        .filter(pl.col(C.LINE_NO) > pl.col(W.MARK))
        .group_by(RUN_KEY)
        .agg(
            pl.col(C.TS).max().alias(W.UNTIL),
            pl.col(C.TS).min().alias(W.EARLIEST),
            pl.col(C.LINE_NO)
            .filter(pl.col(C.TS) > pl.col(W.SINCE).first() + pl.duration(microseconds=int(threshold_s * 1e6)))
            .min()
            .alias(A.LINE_AFTER),
        )
    )
    # a request that finished after the mark is progress: the batch lines were only not shown
    finished = collect(
        tables.scan(T.REQUESTS)
        .filter(pl.col(C.EVENT) == "finished")
        .select(*RUN_KEY, pl.col(C.LINE_NO).alias(W.FINISHED_AT))
    )
    done = (
        finished.join(work.select(*RUN_KEY, W.MARK), on=RUN_KEY)
        .filter(pl.col(W.FINISHED_AT) > pl.col(W.MARK))
        .select(RUN_KEY)
        .unique()
    )
    return (
        work.join(tail, on=RUN_KEY)
        .join(done, on=RUN_KEY, how="anti")
        .with_columns(((pl.col(W.UNTIL) - pl.col(W.SINCE)).dt.total_microseconds() / 1e6).alias(A.DURATION_S))
        .filter(
            pl.col(A.LINE_AFTER).is_not_null()
            & pl.col(A.DURATION_S).is_between(threshold_s, CLOCK_JUMP_S, closed="none")
            # a line timed before the hang's start came from another clock (a client's, another
            # timezone's): the silence cannot be measured
            & (pl.col(W.EARLIEST) >= pl.col(W.SINCE))
        )
        .select(
            pl.col(C.SOURCE),
            pl.col(C.RUN),
            pl.col(W.SINCE).cast(pl.Datetime("us")).alias(C.TS),
            pl.col(W.MARK).alias(C.LINE_NO),
            pl.col(A.PENDING_REQS).cast(pl.Int64),
            A.DURATION_S,
            pl.col(A.LINE_AFTER).cast(pl.Int64),
        )
        .cast(out_schema)
    )
