"""The queues of a PD-disaggregated pair, judged by each node's role: a queue of requests that only grows
to the log's end while the node has no other work means the hand-off between the two nodes stopped.

SGLang prints each node's queue on its own batch lines (`scheduler_metrics_mixin`): a prefill node its
bootstrap queue (`#prealloc-req` on its prefill lines: requests whose KV waits for the decode side to take
it), a decode node its pre-allocation queue (`#prealloc-req` on its decode lines, with `#transfer-req`:
requests waiting to get their KV from the prefill side). A working pair empties either queue in
milliseconds. The role is read from the line itself (only that mode prints the field), so an excerpt
without the server's arguments is judged the same.
"""

from __future__ import annotations

import polars as pl

from tracelens.analysis.detectors.context import Context
from tracelens.analysis.findings import Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import C, T

PD_STUCK_LINES = 5  # batch lines: a trend, not two samples
PD_STUCK_MIN = 16  # requests held at the end: more than a handshake in progress
# A decode node whose KV pool is this full holds its queue for memory: load, not a stopped hand-off.
PD_DECODE_FULL = 0.9
_PD_RANK = [*RUN_KEY, C.DP, C.TP]
PD_STUCK_FIX = (
    "the decode side takes no request: check that the decode node is up and reaches this one on the "
    "bootstrap port (--disaggregation-bootstrap-port), that the router pairs the two, and the decode "
    "node's log (its pre-allocation queue, a full KV pool, transfer errors)"
)
PD_DECODE_STUCK_FIX = (
    "no request gets its KV from the prefill side: check that the prefill node is up and that this node "
    "reaches it on its bootstrap port (--disaggregation-bootstrap-port), the transfer backend and its "
    "devices (--disaggregation-transfer-backend, --disaggregation-ib-device), and the prefill node's log "
    "(its bootstrap queue, transfer errors)"
)


def _growing_tails(rows: pl.DataFrame, *extra: pl.Expr) -> pl.DataFrame:
    """Per rank of ``rows`` (batch lines with PREALLOC_REQ, in line order), the stretch after the queue's
    last drop, when it spans PD_STUCK_LINES lines or more, ends higher than it began and at PD_STUCK_MIN or
    more: the queue only grew to the log's end. ``extra``: aggregations of the stretch to keep."""
    ranked = rows.with_columns(pl.col(C.DP, C.TP).fill_null(-1)).sort(C.LINE_NO)
    drop = pl.col(C.PREALLOC_REQ).diff().over(_PD_RANK) < 0
    since = pl.when(drop).then(pl.col(C.LINE_NO)).otherwise(0).cum_max().over(_PD_RANK)
    return (
        ranked.with_columns(since.alias("since"))
        .filter(pl.col(C.LINE_NO) >= pl.col("since"))
        .group_by(_PD_RANK, maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col(C.PREALLOC_REQ).first().alias("first"),
            pl.col(C.PREALLOC_REQ).last().alias("last"),
            pl.col(C.LINE_NO).first().alias("from_line"),
            pl.col(C.LINE_NO).last().alias("to_line"),
            pl.col(C.TS).first().alias("since_ts"),
            *extra,
        )
        .filter(
            (pl.col("n") >= PD_STUCK_LINES)
            & (pl.col("last") >= PD_STUCK_MIN)
            & (pl.col("last") > pl.col("first"))
        )
    )


def _findings(ctx: Context, tails: pl.DataFrame, code: str, said: str, fix: str) -> list[Finding]:
    """One finding per run: its first stuck rank's. ``said``: the headline's words before the figures."""
    out = []
    for row in tails.unique(RUN_KEY, keep="first", maintain_order=True).to_dicts():
        found = ctx.finding(
            Severity.ERROR,
            code,
            row[C.SOURCE],
            row[C.RUN],
            row["since_ts"],
            f"{said.format(last=row['last'])} ({row['first']} -> {row['last']}). Its queue (#prealloc-req) grew over {row['n']} "
            "batch lines and handed none off",
            [row["from_line"], row["to_line"]],
        )
        found.fix = fix
        out.append(found)
    return out


def pd_bootstrap_stuck(ctx: Context) -> list[Finding]:
    """A prefill node whose bootstrap queue grows to the log's end with nothing left to prefill (no
    request waits in #queue-req: the node is not busy, its finished requests are not taken)."""
    rows = collect(
        ctx.tables.scan(T.BATCHES)
        .filter((pl.col(C.PHASE) == "prefill") & pl.col(C.PREALLOC_REQ).is_not_null())
        .select(*_PD_RANK, C.LINE_NO, C.TS, C.PREALLOC_REQ, pl.col(C.QUEUE_REQ).fill_null(0))
    )
    if not rows.height:
        return []
    tails = _growing_tails(rows, pl.col(C.QUEUE_REQ).last().alias("queued")).filter(pl.col("queued") == 0)
    said = "prefill node stuck: {last} requests wait for the decode side"
    return _findings(ctx, tails, "pd-bootstrap-stuck", said, PD_STUCK_FIX)


def pd_decode_stuck(ctx: Context) -> list[Finding]:
    """A decode node whose pre-allocation queue grows to the log's end while none of it reaches decoding:
    no request is in transfer at the end, the running batch never grows over the stretch, and the KV
    pool has room (a full pool holds the queue for memory: that is load)."""
    usage = pl.coalesce(C.TOKEN_USAGE, C.FULL_TOKEN_USAGE).fill_null(0.0).alias("_usage")
    rows = collect(
        ctx.tables.scan(T.BATCHES)
        .filter((pl.col(C.PHASE) == "decode") & pl.col(C.PREALLOC_REQ).is_not_null())
        .select(
            *_PD_RANK,
            C.LINE_NO,
            C.TS,
            C.PREALLOC_REQ,
            pl.col(C.TRANSFER_REQ).fill_null(0),
            pl.col(C.RUNNING_REQ).fill_null(0),
            usage,
        )
    )
    if not rows.height:
        return []
    tails = _growing_tails(
        rows,
        pl.col(C.TRANSFER_REQ).last().alias("moving"),
        (pl.col(C.RUNNING_REQ).diff().max().fill_null(0) > 0).alias("took"),
        pl.col("_usage").last().alias("usage"),
    ).filter((pl.col("moving") == 0) & ~pl.col("took") & (pl.col("usage") < PD_DECODE_FULL))
    said = "decode node stuck: {last} requests wait for KV from the prefill side"
    return _findings(ctx, tails, "pd-decode-stuck", said, PD_DECODE_STUCK_FIX)
