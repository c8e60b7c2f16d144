"""Acceptance per request and per position, for both engines, from every place they put it
(docs/acceptance.md states each definition).

- Per position: the probability that the draft token at position i (0 = the first drafted token) is
  accepted, from vLLM's `Per-position acceptance rate:` lines (weighted by each interval's drafts), its
  `..._num_accepted_tokens_per_pos_total{position}` counters over `..._num_drafts_total`, or the requests'
  acceptance histograms (SGLang's `spec_accept_histogram`, vLLM's `acceptance_histogram`; bin j = verify
  steps that accepted exactly j drafts): P(accepted > i) over the verify steps of the run's requests, each
  position counted over the requests whose histogram reaches it. A run's curve is taken from the most exact
  basis it has: counters, then histograms, then lines.
- Per request: the acceptance length (tokens per verify step, the bonus token included) and the normalised
  rate (accepted draft tokens / drafted tokens, vLLM's definition and (accept len - 1) / k for a chain of
  k), pooled over the run's tokens and as a mean of per-request figures, with percentiles and the requests
  where speculation did not pay.
- Depth: `/server_info` snapshots give the depth in force (adaptive speculation); their rate is computed
  against that depth, not the launch-time one.

A request log or snapshot in a source of its own (a folder of per-rank request logs beside the server
log) has no server start: its rows join the run of another source whose time span holds them (up to
`LATE_ROW` after its last line).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from tracelens.analysis.runs import RUN_KEY
from tracelens.analysis.speculation import FROM_COUNTERS, FROM_GAUGES, FROM_REQUESTS, FROM_SERVER_INFO
from tracelens.tables.names import SERVER_INFO_ACCEPT
from tracelens.tables.schema import A, C, W

SGLANG = "sglang"
VLLM = "vllm"
# Where a figure came from, by exactness: counted totals first.
BASIS_COUNTERS = "vllm_counters"
BASIS_HISTOGRAMS = "request_histograms"
BASIS_LINES = "vllm_metrics_lines"
BASES = (BASIS_COUNTERS, BASIS_HISTOGRAMS, BASIS_LINES)
# A request did not pay for its drafting when it kept fewer than 1.5 tokens per verify step: a verify
# step plus its draft passes costs a plain decode step and more (the draft's k passes, the verify of k+1
# tokens), so below half an accepted draft token per step it ran no faster than decoding without a draft.
NOT_PAID_ACCEPT_LEN = 1.5
PERCENTILES = (0.1, 0.5, 0.9)
LENGTH_BIN = 0.5  # the width of a bin of the per-request acceptance-length histogram, in tokens
# How long after a run's last line a request log's or snapshot's row of another source still joins it: a
# serving server logs every few seconds and a poller asks every few; ten minutes of silence is an idle
# server at most, and a row later than that may be another server's (docs/acceptance.md).
LATE_ROW = dt.timedelta(minutes=10)

# vLLM's rows, which never join an SGLang run (`attach`)
VLLM_REQUEST = pl.col(C.LAYOUT) == "vllm_response"
VLLM_METRIC = pl.col(C.METRIC_NAME).str.starts_with("vllm:")
_SGLANG_LENGTH = "sglang:spec_accept_length"
_SGLANG_RATE = "sglang:spec_accept_rate"
_DRAFTS = "vllm:spec_decode_num_drafts_total"
_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
_POSITION_SCHEMA = pl.Schema(
    {
        C.SOURCE: pl.String(),
        C.RUN: pl.Int32(),
        A.POSITION: pl.Int64(),
        A.RATE: pl.Float64(),
        A.ENGINE: pl.String(),
        A.BASIS: pl.String(),
        A.SAMPLES: pl.Int64(),
    }
)


def attach(rows: pl.DataFrame, runs: pl.DataFrame, vllm: pl.Expr) -> pl.DataFrame:
    """``rows`` (source, run, ts, ...) with those of a run without a server start (no model known: a
    request log or snapshot on its own) moved to the run of another source whose span holds their time:
    the latest start before it, up to `LATE_ROW` after that run's last line. Rows no run holds keep their
    own, and so do vLLM's (``vllm`` tells them): the runs with a known model are SGLang's (`server_args=`)."""
    started = runs.filter(pl.col(C.MODEL).is_not_null() & pl.col(C.START_TS).is_not_null())
    own = runs.filter(pl.col(C.MODEL).is_null()).select(RUN_KEY)
    if not rows.height or not started.height or not own.height:
        return rows
    loose = (
        rows.with_row_index(W.ROW)
        .join(own, on=RUN_KEY, how="semi")
        .filter(pl.col(C.TS).is_not_null() & ~vllm.fill_null(False))
    )
    if not loose.height:
        return rows
    # an idle server writes no line while its poller asks on: a row up to `LATE_ROW` after a run's last
    # line still belongs to it; a later one cannot be told from another server's and keeps its own run
    spans = started.select(
        pl.col(C.SOURCE).alias(W.TO_SOURCE),
        pl.col(C.RUN).alias(W.TO_RUN),
        C.START_TS,
        (pl.coalesce(C.END_TS, C.START_TS) + LATE_ROW).alias(C.END_TS),
    ).sort(C.START_TS)
    found = (
        loose.select(W.ROW, C.SOURCE, C.TS)
        .sort(C.TS)
        .join_asof(spans, left_on=C.TS, right_on=C.START_TS, strategy="backward")
        .filter((pl.col(W.TO_SOURCE) != pl.col(C.SOURCE)) & (pl.col(C.TS) <= pl.col(C.END_TS)))
        .select(W.ROW, W.TO_SOURCE, W.TO_RUN)
    )
    # in the rows' order: `verdict_inputs.record_facts` reads each row's run before and after side by side
    moved = rows.with_row_index(W.ROW).join(found, on=W.ROW, how="left", maintain_order="left")
    return moved.with_columns(
        pl.coalesce(W.TO_SOURCE, C.SOURCE).alias(C.SOURCE),
        pl.coalesce(W.TO_RUN, C.RUN).cast(pl.Int32).alias(C.RUN),
    ).drop(W.ROW, W.TO_SOURCE, W.TO_RUN)


def _finished(requests: pl.DataFrame) -> pl.DataFrame:
    """Finished requests that speculated, with accepted, verify steps, drafted and their engine."""
    hist = pl.col(C.SPEC_ACCEPT_HISTOGRAM)
    from_hist_accepted = hist.list.eval(pl.element() * pl.int_range(pl.len())).list.sum()
    verify = pl.coalesce(C.SPEC_VERIFY_CT, hist.list.sum())
    depth = hist.list.len() - 1
    out = requests.filter(pl.col(C.EVENT) == "finished").with_columns(
        verify.alias(W.VERIFY),
        pl.coalesce(C.SPEC_ACCEPTED_TOKENS, from_hist_accepted).alias(W.ACCEPTED),
        pl.when(pl.col(C.LAYOUT) == "vllm_response")
        .then(pl.lit(VLLM))
        .otherwise(pl.lit(SGLANG))
        .alias(A.ENGINE),
    )
    # drafted: as logged, else verify steps times the depth the histogram has bins for (k + 1 bins)
    drafted = pl.coalesce(C.SPEC_DRAFT_TOKENS, pl.when(depth > 0).then(pl.col(W.VERIFY) * depth))
    out = out.with_columns(drafted.alias(W.DRAFTED))
    return out.filter(pl.col(W.VERIFY) > 0)


def request_figures(requests: pl.DataFrame) -> pl.DataFrame:
    """Per run: requests, pooled and per-request acceptance length and normalised rate, percentiles of
    the per-request length, requests that did not pay (`NOT_PAID_ACCEPT_LEN`), and the engine."""
    done = _finished(requests)
    length = pl.coalesce(C.SPEC_ACCEPT_LENGTH, 1 + pl.col(W.ACCEPTED) / pl.col(W.VERIFY))
    rate = pl.col(W.ACCEPTED) / pl.col(W.DRAFTED)
    done = done.with_columns(length.alias(W.LENGTH), rate.alias(W.RATE))
    return (
        done.group_by(RUN_KEY)
        .agg(
            pl.len().alias(A.REQUESTS),
            pl.col(A.ENGINE).first(),
            (1 + pl.col(W.ACCEPTED).sum() / pl.col(W.VERIFY).sum()).alias(A.POOLED_ACCEPT_LEN),
            pl.col(W.LENGTH).mean().alias(A.REQUEST_MEAN_ACCEPT_LEN),
            (pl.col(W.ACCEPTED).sum() / pl.col(W.DRAFTED).sum()).alias(A.POOLED_RATE),
            pl.col(W.RATE).mean().alias(A.REQUEST_MEAN_RATE),
            *(
                pl.col(W.LENGTH).quantile(q, "linear").alias(f"{A.ACCEPT_LEN_P}{round(q * 100)}")
                for q in PERCENTILES
            ),
            (pl.col(W.LENGTH) < NOT_PAID_ACCEPT_LEN).sum().cast(pl.Int64).alias(A.NOT_PAID),
        )
        .sort(RUN_KEY)
    )


def request_lengths(requests: pl.DataFrame) -> pl.DataFrame:
    """source, run, rid, accept len, rate, paid (a row per finished request that speculated)."""
    done = _finished(requests)
    length = pl.coalesce(C.SPEC_ACCEPT_LENGTH, 1 + pl.col(W.ACCEPTED) / pl.col(W.VERIFY))
    return done.select(
        *RUN_KEY,
        C.RID,
        C.TS,
        A.ENGINE,
        length.alias(C.ACCEPT_LEN),
        (pl.col(W.ACCEPTED) / pl.col(W.DRAFTED)).alias(A.ACCEPTANCE_RATE),
        (length >= NOT_PAID_ACCEPT_LEN).alias(A.PAID),
    )


def length_histogram(lengths: pl.DataFrame) -> pl.DataFrame:
    """Per run: the per-request acceptance lengths (`request_lengths`) in bins of `LENGTH_BIN` tokens from
    1 (a bin's low edge, its count)."""
    binned = lengths.filter(pl.col(C.ACCEPT_LEN).is_not_null()).with_columns(
        (1 + ((pl.col(C.ACCEPT_LEN) - 1) / LENGTH_BIN).floor().clip(lower_bound=0) * LENGTH_BIN).alias(
            A.BIN_FROM
        )
    )
    return (
        binned.group_by(*RUN_KEY, A.BIN_FROM)
        .agg(pl.len().cast(pl.Int64).alias(A.COUNT))
        .sort(*RUN_KEY, A.BIN_FROM)
    )


def histogram_positions(requests: pl.DataFrame) -> pl.DataFrame:
    """Per run and position: P(accepted > position) over the verify steps of the requests whose
    histogram reaches that position."""
    done = _finished(requests).filter(pl.col(C.SPEC_ACCEPT_HISTOGRAM).list.len() > 1)
    if not done.height:
        return pl.DataFrame(schema=_POSITION_SCHEMA)
    bins = done.select(
        *RUN_KEY,
        A.ENGINE,
        pl.col(C.SPEC_ACCEPT_HISTOGRAM).list.len().alias(W.BINS),
        pl.col(C.SPEC_ACCEPT_HISTOGRAM).list.sum().alias(W.VERIFY),
        pl.col(C.SPEC_ACCEPT_HISTOGRAM),
    ).with_row_index(W.ROW)
    flat = bins.explode(C.SPEC_ACCEPT_HISTOGRAM).with_columns(
        pl.int_range(pl.len()).over(W.ROW).alias(W.HIST_BIN)
    )
    # steps of each request that accepted more than p drafts: the bins above p, summed
    above = (
        flat.with_columns(
            (
                pl.col(C.SPEC_ACCEPT_HISTOGRAM).cum_sum(reverse=True).over(W.ROW)
                - pl.col(C.SPEC_ACCEPT_HISTOGRAM)
            ).alias(W.ABOVE)
        )
        .filter(pl.col(W.HIST_BIN) < pl.col(W.BINS) - 1)
        .rename({W.HIST_BIN: A.POSITION})
    )
    return (
        above.group_by(*RUN_KEY, A.POSITION)
        .agg(
            (pl.col(W.ABOVE).sum() / pl.col(W.VERIFY).sum()).alias(A.RATE),
            pl.col(A.ENGINE).first(),
            pl.col(W.VERIFY).sum().cast(pl.Int64).alias(A.SAMPLES),
        )
        .with_columns(pl.lit(BASIS_HISTOGRAMS).alias(A.BASIS), pl.col(A.POSITION).cast(pl.Int64))
        .select(list(_POSITION_SCHEMA))
    )


def counter_positions(metrics: pl.DataFrame) -> pl.DataFrame:
    """Per run and position: vLLM's accepted-per-position counter over its drafts counter. In a run
    after the first of its source, which began with its server (a start line, or counters that went back:
    `parsers/restarts.py`), the totals its last snapshot has: they count from zero at that start. In
    the first, seen from some time on: with several snapshots, the increase between the first and the
    last (the interval they span); with one, or when no draft was made between them, the totals since
    the server started."""
    samples = metrics.filter(pl.col(C.METRIC_ITEM) == "sample").filter(
        pl.col(C.METRIC_NAME).is_in([_DRAFTS, _PER_POS])
    )
    if not samples.height:
        return pl.DataFrame(schema=_POSITION_SCHEMA)
    series = samples.with_columns(
        pl.col(C.METRIC_LABELS)
        .list.eval(pl.element().filter(pl.element().struct.field(C.KEY) != "position"))
        .list.eval(
            pl.concat_str(pl.element().struct.field(C.KEY), pl.lit("="), pl.element().struct.field(C.VALUE))
        )
        .list.join(",")
        .fill_null("")
        .alias(W.SERIES)
    )
    by = [*RUN_KEY, C.METRIC_NAME, W.SERIES, C.METRIC_POSITION]
    spans = _increase(series, by)
    drafts = (
        spans.filter(pl.col(C.METRIC_NAME) == _DRAFTS)
        .group_by(RUN_KEY)
        .agg(pl.col(W.GAIN).sum(), pl.col(W.LAST).sum().alias(W.TOTAL))
        # no draft between a run's snapshots (an idle server, or one snapshot), or a run that began with
        # its server: its totals since it started
        .with_columns((pl.col(W.GAIN).eq(0) | (pl.col(C.RUN) > 0)).alias(W.IDLE))
        .select(*RUN_KEY, W.IDLE, pl.when(pl.col(W.IDLE)).then(W.TOTAL).otherwise(W.GAIN).alias(W.DRAFTED))
    )
    accepted = (
        spans.filter(pl.col(C.METRIC_NAME) == _PER_POS)
        .group_by(*RUN_KEY, C.METRIC_POSITION)
        .agg(pl.col(W.GAIN).sum(), pl.col(W.LAST).sum().alias(W.TOTAL))
    )
    accepted = accepted.join(drafts, on=RUN_KEY).with_columns(
        pl.when(pl.col(W.IDLE)).then(W.TOTAL).otherwise(W.GAIN).alias(W.ACCEPTED)
    )
    return (
        accepted.filter(pl.col(W.DRAFTED) > 0)
        .select(
            *RUN_KEY,
            pl.col(C.METRIC_POSITION).alias(A.POSITION),
            (pl.col(W.ACCEPTED) / pl.col(W.DRAFTED)).alias(A.RATE),
            pl.lit(VLLM).alias(A.ENGINE),
            pl.lit(BASIS_COUNTERS).alias(A.BASIS),
            pl.col(W.DRAFTED).cast(pl.Int64).alias(A.SAMPLES),
        )
        .sort(*RUN_KEY, A.POSITION)
    )


def _increase(samples: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Per series (``by``): the counter's increase over its snapshots (`W.GAIN`; a single snapshot: its
    value) and its last value (`W.LAST`); a value below the one before is a restart, from which the new
    value counts whole."""
    ordered = samples.sort(C.LINE_NO)
    step = pl.col(C.METRIC_VALUE).diff().over(by)
    single = pl.len().over(by) == 1
    gained = pl.when(step < 0).then(pl.col(C.METRIC_VALUE)).otherwise(step).fill_null(0)
    out = ordered.with_columns(pl.when(single).then(pl.col(C.METRIC_VALUE)).otherwise(gained).alias(W.GAIN))
    return out.group_by(by).agg(pl.col(W.GAIN).sum(), pl.col(C.METRIC_VALUE).last().alias(W.LAST))


def line_positions(spec_metrics: pl.DataFrame) -> pl.DataFrame:
    """Per run and position: vLLM's per-position rates of its metrics lines, weighted by each interval's
    drafted tokens (an idle interval drafts nothing and weighs nothing); a plain mean when no line says."""
    rows = spec_metrics.filter(pl.col(C.PER_POSITION).list.len() > 0).select(
        *RUN_KEY,
        pl.col(C.DRAFTED).fill_null(0).cast(pl.Float64).alias(W.DRAFTED),
        pl.col(C.PER_POSITION).list.eval(
            pl.struct(pl.int_range(pl.len()).alias(A.POSITION), pl.element().alias(A.RATE))
        ),
    )
    if not rows.height:
        return pl.DataFrame(schema=_POSITION_SCHEMA)
    flat = rows.explode(C.PER_POSITION).unnest(C.PER_POSITION).filter(pl.col(A.RATE).is_not_nan())
    weighted = (pl.col(A.RATE) * pl.col(W.DRAFTED)).sum() / pl.col(W.DRAFTED).sum()
    return (
        flat.group_by(*RUN_KEY, A.POSITION)
        .agg(
            pl.when(pl.col(W.DRAFTED).sum() > 0)
            .then(weighted)
            .otherwise(pl.col(A.RATE).mean())
            .alias(A.RATE),
            pl.len().cast(pl.Int64).alias(A.SAMPLES),
        )
        .with_columns(
            pl.lit(VLLM).alias(A.ENGINE),
            pl.lit(BASIS_LINES).alias(A.BASIS),
            pl.col(A.POSITION).cast(pl.Int64),
        )
        .select(list(_POSITION_SCHEMA))
        .sort(*RUN_KEY, A.POSITION)
    )


def all_positions(requests: pl.DataFrame, metrics: pl.DataFrame, spec_metrics: pl.DataFrame) -> pl.DataFrame:
    """Every basis a run has, one row per (run, basis, position)."""
    parts = [counter_positions(metrics), histogram_positions(requests), line_positions(spec_metrics)]
    return pl.concat([p.select(list(_POSITION_SCHEMA)).cast(_POSITION_SCHEMA) for p in parts]).sort(
        *RUN_KEY, A.BASIS, A.POSITION
    )


def preferred_curves(positions: pl.DataFrame) -> pl.DataFrame:
    """One curve per run: the rows of its most exact basis (`BASES` order)."""
    rank = pl.col(A.BASIS).replace_strict({b: i for i, b in enumerate(BASES)}, return_dtype=pl.Int32)
    best = rank.min().over(RUN_KEY)
    return positions.filter(rank == best).sort(*RUN_KEY, A.POSITION)


def gauge_figures(metrics: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Per run: SGLang's `sglang:spec_accept_length` and `sglang:spec_accept_rate` gauges as the newest
    snapshot has them (the mean over its ranks' series), taken as they are; the normalised rate from the
    length, (accept len - 1) / the depth in force (the newest `/server_info`'s, else the launch depth)."""
    gauges = metrics.filter(
        (pl.col(C.METRIC_ITEM) == "sample") & pl.col(C.METRIC_NAME).is_in([_SGLANG_LENGTH, _SGLANG_RATE])
    )
    if not gauges.height:
        return pl.DataFrame(
            schema={
                C.SOURCE: pl.String,
                C.RUN: pl.Int32,
                C.ACCEPT_LEN: pl.Float64,
                A.ACCEPT_RATE_LOGGED: pl.Float64,
                A.ACCEPTANCE_RATE: pl.Float64,
            }
        )
    labels = pl.col(C.METRIC_LABELS).list.eval(
        pl.concat_str(pl.element().struct.field(C.KEY), pl.lit("="), pl.element().struct.field(C.VALUE))
    )
    newest = (
        gauges.with_columns(labels.list.join(",").fill_null("").alias(W.SERIES))
        .sort(C.LINE_NO)
        .group_by(*RUN_KEY, C.METRIC_NAME, W.SERIES)
        .agg(pl.col(C.METRIC_VALUE).last())
        .group_by(RUN_KEY)
        .agg(
            pl.col(C.METRIC_VALUE).filter(pl.col(C.METRIC_NAME) == _SGLANG_LENGTH).mean().alias(C.ACCEPT_LEN),
            pl.col(C.METRIC_VALUE)
            .filter(pl.col(C.METRIC_NAME) == _SGLANG_RATE)
            .mean()
            .alias(A.ACCEPT_RATE_LOGGED),
        )
    )
    # the depth in force at the newest /server_info snapshot, else the launch depth
    in_force = depth_timeline(metrics, runs).group_by(RUN_KEY).agg(pl.col(A.DEPTH).last())
    launched = runs.select(*RUN_KEY, C.SPEC_NUM_STEPS)
    depth = pl.coalesce(A.DEPTH, C.SPEC_NUM_STEPS)
    return (
        newest.join(in_force, on=RUN_KEY, how="left")
        .join(launched, on=RUN_KEY, how="left")
        .with_columns(((pl.col(C.ACCEPT_LEN) - 1) / depth).alias(A.ACCEPTANCE_RATE))
        .drop(A.DEPTH, C.SPEC_NUM_STEPS)
        .sort(RUN_KEY)
    )


def depth_timeline(metrics: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """The `/server_info` snapshots of each run: time, the depth in force, the mean accept length, and
    the rate against that depth, (accept len - 1) / depth; the launch-time depth beside it."""
    info = metrics.filter(pl.col(C.METRIC_NAME) == SERVER_INFO_ACCEPT)
    launched = runs.select(*RUN_KEY, pl.col(C.SPEC_NUM_STEPS).alias(A.LAUNCH_DEPTH))
    out = info.join(launched, on=RUN_KEY, how="left").select(
        *RUN_KEY,
        C.TS,
        C.LINE_NO,
        pl.coalesce(C.SPEC_NUM_STEPS, A.LAUNCH_DEPTH).alias(A.DEPTH),
        A.LAUNCH_DEPTH,
        pl.col(C.METRIC_VALUE).alias(C.ACCEPT_LEN),
    )
    return out.with_columns(((pl.col(C.ACCEPT_LEN) - 1) / pl.col(A.DEPTH)).alias(A.ACCEPTANCE_RATE)).sort(
        *RUN_KEY, C.LINE_NO
    )


def served_figures(
    requests: pl.DataFrame, curves: pl.DataFrame, gauges: pl.DataFrame, depth: pl.DataFrame
) -> pl.DataFrame:
    """Per run: an acceptance length and normalised rate from the first place (`FROM_COUNTERS`, ...) that
    has one, its engine and the place: what `summary` and `compare` show for a run without decode or
    metrics lines. ``requests``: `request_figures`; ``curves``: `preferred_curves`; ``gauges``:
    `gauge_figures`; ``depth``: `depth_timeline`. A length below 1 is no figure (a server that does
    not draft exports 0)."""
    counted = curves.filter(pl.col(A.BASIS) == BASIS_COUNTERS)
    # the accepted tokens per draft are the sum of the positions' rates, over k positions
    counters = counted.group_by(RUN_KEY).agg(
        (1 + pl.col(A.RATE).sum()).alias(W.SERVED_LEN),
        (pl.col(A.RATE).sum() / pl.len()).alias(W.SERVED_RATE),
        pl.col(A.ENGINE).first().alias(W.SERVED_ENGINE),
    )
    asked = requests.select(
        *RUN_KEY,
        pl.col(A.POOLED_ACCEPT_LEN).alias(W.SERVED_LEN),
        pl.col(A.POOLED_RATE).alias(W.SERVED_RATE),
        pl.col(A.ENGINE).alias(W.SERVED_ENGINE),
    )
    gauged = gauges.select(
        *RUN_KEY,
        pl.col(C.ACCEPT_LEN).alias(W.SERVED_LEN),
        pl.col(A.ACCEPTANCE_RATE).alias(W.SERVED_RATE),
        pl.lit(SGLANG).alias(W.SERVED_ENGINE),
    )
    newest = (
        depth.sort(C.LINE_NO)
        .group_by(RUN_KEY)
        .agg(
            pl.col(C.ACCEPT_LEN).last().alias(W.SERVED_LEN),
            pl.col(A.ACCEPTANCE_RATE).last().alias(W.SERVED_RATE),
        )
        .with_columns(pl.lit(SGLANG).alias(W.SERVED_ENGINE))
    )
    places = (FROM_COUNTERS, FROM_REQUESTS, FROM_GAUGES, FROM_SERVER_INFO)  # most exact first
    schema = pl.Schema(
        {
            C.SOURCE: pl.String(),
            C.RUN: pl.Int32(),
            W.SERVED_LEN: pl.Float64(),
            W.SERVED_RATE: pl.Float64(),
            W.SERVED_ENGINE: pl.String(),
        }
    )
    parts = [
        frame.select(list(schema))
        .cast(schema)
        .with_columns(pl.lit(place).alias(W.SERVED_FROM), pl.lit(rank).alias(W.PLACE_RANK))
        for rank, (place, frame) in enumerate(zip(places, (counters, asked, gauged, newest), strict=True))
    ]
    return (
        pl.concat(parts)
        .filter(pl.col(W.SERVED_LEN) >= 1)
        .sort(*RUN_KEY, W.PLACE_RANK)
        .unique(RUN_KEY, keep="first", maintain_order=True)
        .drop(W.PLACE_RANK)
    )


def depth_spans(depth: pl.DataFrame) -> pl.DataFrame:
    """Per run, the stretches of its `/server_info` snapshots (`depth_timeline`) at one depth in force, in
    order: the depth, the first and last snapshot's time and line, how many, and the mean of their accept
    lengths with its rate against that depth (`check` prints the timeline in brief)."""
    ordered = depth.sort(*RUN_KEY, C.LINE_NO).with_columns(
        pl.col(A.DEPTH).rle_id().over(RUN_KEY).alias(W.SPAN)
    )
    return (
        ordered.group_by(*RUN_KEY, W.SPAN, maintain_order=True)
        .agg(
            pl.col(A.DEPTH).first(),
            pl.col(A.LAUNCH_DEPTH).first(),
            pl.col(C.TS).first().alias(A.FIRST_TS),
            pl.col(C.TS).last().alias(A.LAST_TS),
            pl.col(C.LINE_NO).first().alias(C.FIRST_LINE),
            pl.col(C.LINE_NO).last().alias(C.LAST_LINE),
            pl.len().cast(pl.Int64).alias(A.SAMPLES),
            pl.col(C.ACCEPT_LEN).mean(),
        )
        .with_columns(((pl.col(C.ACCEPT_LEN) - 1) / pl.col(A.DEPTH)).alias(A.ACCEPTANCE_RATE))
        .drop(W.SPAN)
    )
