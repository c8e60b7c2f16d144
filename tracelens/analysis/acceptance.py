"""Acceptance and throughput over time, one series per run.

Attention data parallelism prints one decode line per DP rank with local counts: per round (the k-th
line of every DP rank), accept len is the mean over DP ranks and throughput, running and queued
requests are their sum; nothing is ever summed over TP (only the first rank of each attention group
prints).

The acceptance rate is recomputed with one definition for every SGLang version:
    acceptance_rate = (accept_len - 1) / speculative_num_steps
the share of drafted positions accepted per verify step, the bonus token excluded (0 = the draft never
helps, 1 = every step accepts the whole chain). With topk 1, num_steps = num_draft_tokens - 1, so it
equals SGLang's 2026 `accept rate`. The logged `accept rate` is kept beside it, with the definition
that era used (found by which formula reproduces it).
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from tracelens.analysis.rolling import rolling_quantiles
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.schema import A, C, W

ROLLING_WINDOW = 21
ACCEPT_LEN_QUANTILES = {A.ROLLING_MEDIAN: 0.5, A.ROLLING_P10: 0.1, A.ROLLING_P90: 0.9}
TPUT_QUANTILES = {A.TPUT_ROLLING_MEDIAN: 0.5}
WARMUP_SECONDS = 60.0
WARMUP_LINES = 10

# The definitions `accept rate` has had (field guide, section 2), by name.
LOGGED_DEFINITIONS: dict[str, pl.Expr] = {
    "accept_len/(num_steps+1)": pl.col(C.ACCEPT_LEN) / (pl.col(C.SPEC_NUM_STEPS) + 1),
    "accept_len/num_draft_tokens": pl.col(C.ACCEPT_LEN) / pl.col(C.SPEC_NUM_DRAFT_TOKENS),
    "(accept_len-1)/(num_draft_tokens-1)": (pl.col(C.ACCEPT_LEN) - 1) / (pl.col(C.SPEC_NUM_DRAFT_TOKENS) - 1),
}


# A batch line (prefill or decode) printed with no request running: the server was idle then.
IDLE = pl.col(C.RUNNING_REQ) == 0
# The batch lines the series reads: decode lines, and the idle lines that mark an idle gap.
SERIES_LINES = (pl.col(C.PHASE) == "decode") | IDLE.fill_null(False)


def decode_series(batches: pl.DataFrame, runs: pl.DataFrame, ready: pl.DataFrame) -> pl.DataFrame:
    """One row per (run, decode timestamp): DP-combined values, recomputed acceptance, stage, rolling
    median and spread. ``batches``: decode lines and the idle ones (`SERIES_LINES`); ``ready``: source,
    run, ts of the run's `fired up` line (may be missing)."""
    decode, _ = after_idle(batches)
    no_dp = decode.get_column(C.DP).is_null().all()
    combined = single_rounds(decode) if no_dp else _dp_rounds(decode)
    return with_rolling(round_columns(combined, runs, ready))


def after_idle(
    batches: pl.DataFrame, carried: pl.DataFrame | None = None
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The decode lines of ``batches`` (in line order per run) with W.AFTER_IDLE: whether the server
    was idle during the interval the line's `gen throughput` is taken over. SGLang's figure is the
    tokens made since its previous decode line over the time since then; after an idle gap (a batch
    line with `#running-req: 0` since the previous decode line of its rank: a prefill that found
    nothing running, or an idle decode line) that time holds the idle seconds, and the figure says
    nothing of the speed served (a few tok/s where 80 are served). Also returns, per (source, run, DP
    rank), whether an idle line came after its last decode line (``carried`` in: the same of what came
    before, for a run read in pieces)."""
    key = [*RUN_KEY, W.DP_KEY]
    rows = _by_line(batches).with_columns(pl.col(C.DP).cast(pl.Int64).fill_null(-1).alias(W.DP_KEY))
    decode = pl.col(C.PHASE) == "decode"
    idle = IDLE.fill_null(False).cast(pl.Int64)
    before = pl.lit(0, pl.Int64)
    if carried is not None and carried.height:
        rows = rows.join(carried, on=key, how="left", maintain_order="left")
        before = pl.col(W.IDLE_BEFORE).fill_null(False).cast(pl.Int64)
    # idle lines before each line of its rank (itself not counted), and the same at the rank's
    # previous decode line: more now means an idle line came since, or that decode line was idle
    seen = (idle.cum_sum() - idle).over(key) + before
    rows = rows.with_columns(seen.alias(W.IDLE_SEEN))
    previous = pl.when(decode).then(pl.col(W.IDLE_SEEN)).forward_fill().shift(1).over(key).fill_null(0)
    flagged = rows.with_columns(
        ((pl.col(W.IDLE_SEEN) > previous) | IDLE.fill_null(False)).alias(W.AFTER_IDLE)
    )
    ends = flagged.group_by(key, maintain_order=True).agg(
        ((pl.col(W.IDLE_SEEN) + idle).last() > pl.col(W.IDLE_SEEN).filter(decode).last().fill_null(0)).alias(
            W.IDLE_BEFORE
        )
    )
    out = flagged.filter(decode).drop(W.DP_KEY, W.IDLE_SEEN, W.IDLE_BEFORE, strict=False)
    return out, ends


def round_columns(
    combined: pl.DataFrame,
    runs: pl.DataFrame,
    ready: pl.DataFrame,
    *,
    first_ts: dt.datetime | None = None,
    index_offset: int = 0,
) -> pl.DataFrame:
    """The columns `decode_series` adds to the combined rounds before its rolling statistics. A run read
    in pieces (`long_run`) gives each piece its run's earliest round time (``first_ts``) and the number
    of rounds before it (``index_offset``), so every piece gets the values the whole run would."""
    # the analysis makes the series one run at a time: a window over the run is then the whole column
    one_run = _one_run(combined)
    config = runs.select(*RUN_KEY, C.START_TS, C.SPEC_NUM_STEPS, C.SPEC_NUM_DRAFT_TOKENS)
    ready_ts = ready.select(*RUN_KEY, pl.col(C.TS).alias(W.READY))
    out = _run_constants(combined, config, ready_ts) if one_run else None
    if out is None:
        out = combined.join(config, on=RUN_KEY, how="left").join(ready_ts, on=RUN_KEY, how="left")

    def per_run(expr: pl.Expr) -> pl.Expr:
        return expr if one_run else expr.over(RUN_KEY)

    earliest = per_run(pl.col(C.TS).min()) if first_ts is None else pl.lit(first_ts, pl.Datetime("us"))
    first = pl.coalesce(pl.col(C.START_TS), earliest)
    index = per_run(pl.int_range(pl.len())) + index_offset
    warm = is_warm(pl.col(W.READY), index)
    out = out.with_columns(
        ((pl.col(C.TS) - first).dt.total_microseconds() / 1e6).alias(A.T_SINCE_START),
        ((pl.col(C.ACCEPT_LEN) - 1) / pl.col(C.SPEC_NUM_STEPS)).alias(A.ACCEPTANCE_RATE),
        pl.when(warm).then(pl.lit("warmup")).otherwise(pl.lit("steady")).alias(A.STAGE),
        pl.col(C.RUNNING_REQ).alias(A.BATCH_SIZE),
        # a round whose interval held an idle gap has no speed (`after_idle`); its accept len stands
        pl.when(~pl.col(W.AFTER_IDLE).fill_null(False))
        .then(pl.col(C.GEN_THROUGHPUT))
        .alias(C.GEN_THROUGHPUT),
    )
    return out.drop(W.READY, C.START_TS, W.AFTER_IDLE)


def with_rolling(out: pl.DataFrame) -> pl.DataFrame:
    """The rolling quantiles of accept len and tok/s (`ROLLING_WINDOW` rounds, centred) of each run."""
    if _one_run(out):  # a window over the run is the whole column: sorted windows, not polars' moving ones
        return out.with_columns(
            *rolling_quantiles(out.get_column(C.ACCEPT_LEN), ACCEPT_LEN_QUANTILES, ROLLING_WINDOW),
            *rolling_quantiles(out.get_column(C.GEN_THROUGHPUT), TPUT_QUANTILES, ROLLING_WINDOW),
        )
    return out.with_columns(
        *_rolling(C.ACCEPT_LEN, ACCEPT_LEN_QUANTILES), *_rolling(C.GEN_THROUGHPUT, TPUT_QUANTILES)
    )


def is_warm(ready: pl.Expr, index: pl.Expr) -> pl.Expr:
    """A decode round (its `ts`) is warm-up: less than `WARMUP_SECONDS` (whole seconds) after the run's
    ``ready`` time, or, in a run without one, among its first `WARMUP_LINES` rounds (``index``: the
    round's position in its run). A round without a time in a run with one is warm-up. The live
    worker's running figures (`live/running.py`) judge rounds with the same expression."""
    return (
        pl.when(ready.is_not_null())
        .then((pl.col(C.TS) - ready).dt.total_seconds() < WARMUP_SECONDS)
        .otherwise(index < WARMUP_LINES)
        .fill_null(True)
    )


def _dp_rounds(decode: pl.DataFrame) -> pl.DataFrame:
    """Decode lines combined per round. With attention DP each DP rank prints its own line per
    interval: the k-th line of every rank is one round. Without DP tags each line is its own round
    (several lines may share a second)."""
    dp_run = pl.col(C.DP).is_not_null().any().over(RUN_KEY)
    nth = pl.int_range(pl.len()).over(*RUN_KEY, C.DP)
    rounds = _by_line(decode).with_columns(
        pl.when(dp_run).then(nth).otherwise(pl.int_range(pl.len()).over(RUN_KEY)).alias(W.ROUND)
    )
    combined = rounds.group_by(*RUN_KEY, W.ROUND).agg(round_aggregates()).sort(*RUN_KEY, W.ROUND)
    # A round at the end that not every DP rank has printed yet (a live log, or one cut off) would count
    # part of the ranks' throughput: the rounds after the last complete one are left out until whole.
    complete = pl.col(A.DP_RANKS) == pl.col(A.DP_RANKS).max().over(RUN_KEY)
    last_complete = pl.col(W.ROUND).filter(complete).max().over(RUN_KEY)
    return combined.filter(pl.col(W.ROUND) <= last_complete).drop(W.ROUND).sort(*RUN_KEY, C.LINE_NO)


def round_aggregates() -> list[pl.Expr]:
    """One round's values from its lines (one per DP rank): what `_dp_rounds` groups by."""
    return [
        pl.col(C.TS).max(),
        pl.col(C.LINE_NO).min(),
        pl.col(C.ACCEPT_LEN).mean(),
        pl.col(C.ACCEPT_RATE).mean().alias(A.ACCEPT_RATE_LOGGED),
        _sum_or_null(C.GEN_THROUGHPUT),
        _sum_or_null(C.RUNNING_REQ),
        pl.col(C.TOKEN_USAGE).mean(),
        _sum_or_null(C.QUEUE_REQ),
        pl.col(C.DP).n_unique().alias(A.DP_RANKS),
        pl.col(W.AFTER_IDLE).any(),
    ]


def single_rounds(decode: pl.DataFrame) -> pl.DataFrame:
    """What `_dp_rounds` gives when no line has a DP tag (every line its own round), without grouping
    a run's lines one by one: that grouping was most of the series' cost on a long run."""
    # the columns kept first: the sort then moves only those
    return _by_line(
        decode.select(
            *RUN_KEY,
            C.TS,
            C.LINE_NO,
            C.ACCEPT_LEN,
            pl.col(C.ACCEPT_RATE).alias(A.ACCEPT_RATE_LOGGED),
            C.GEN_THROUGHPUT,
            C.RUNNING_REQ,
            C.TOKEN_USAGE,
            C.QUEUE_REQ,
            pl.lit(1, pl.UInt32).alias(A.DP_RANKS),
            W.AFTER_IDLE,
        )
    )


def _run_constants(combined: pl.DataFrame, *tables: pl.DataFrame) -> pl.DataFrame | None:
    """What a left join of one run's rows with each of ``tables`` (keyed by source, run, at most one row
    per run) gives, as constant columns: no copy of the run's columns. None when it does not apply (no
    rows, or a run with several rows in a table)."""
    if not combined.height:
        return None
    source, run = combined.row(0)[:2] if combined.columns[:2] == RUN_KEY else combined.select(RUN_KEY).row(0)
    values: list[pl.Series] = []
    for table in tables:
        row = table.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run)).drop(RUN_KEY)
        if row.height > 1:
            return None
        row = row if row.height else row.clear(1)  # no row: nulls, as the join gives
        # Whole columns, not literals: polars divides by a literal as a product with its inverse, which
        # can differ from the division in the last bit, and the figures must stay those of the join.
        values.extend(column.new_from_index(0, combined.height) for column in row.get_columns())
    return combined.with_columns(values)


def _one_run(frame: pl.DataFrame) -> bool:
    """At most one (source, run) in ``frame``."""
    return bool(frame.select((pl.col(C.SOURCE).n_unique() <= 1) & (pl.col(C.RUN).n_unique() <= 1)).item())


def _by_line(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` sorted by run and line. One run's rows are sorted by line alone: the same order (a
    source's line numbers are unique), without comparing the source's name on every row (that sort was
    a third of the series' cost)."""
    return frame.sort(C.LINE_NO) if _one_run(frame) else frame.sort(*RUN_KEY, C.LINE_NO)


def steady_rows(series: pl.DataFrame) -> pl.DataFrame:
    """The steady-state rows of each run; a run too short to have any keeps all its rows."""
    is_steady = pl.col(A.STAGE) == "steady"
    anywhere = is_steady.any() if _one_run(series) else is_steady.any().over(RUN_KEY)
    return series.filter(is_steady | ~anywhere)


def _sum_or_null(column: str) -> pl.Expr:
    """Sum over DP ranks; null (not 0) when no rank printed the field."""
    return pl.when(pl.col(column).is_not_null().any()).then(pl.col(column).sum()).alias(column)


def rolling_medians() -> list[pl.Expr]:
    """The rolling medians of accept len and tok/s of one run's rounds, as `decode_series` makes them
    (its sorted windows give polars' values exactly)."""
    return [
        pl.col(column)
        .rolling_quantile(0.5, window_size=ROLLING_WINDOW, min_samples=1, center=True)
        .alias(name)
        for column, name in ((C.ACCEPT_LEN, A.ROLLING_MEDIAN), (C.GEN_THROUGHPUT, A.TPUT_ROLLING_MEDIAN))
    ]


def _rolling(column: str, quantiles: dict[str, float]) -> list[pl.Expr]:
    """The rolling quantiles of every run of a frame of several (`rolling.rolling_quantiles` for one)."""
    return [
        pl.col(column)
        .rolling_quantile(q, window_size=ROLLING_WINDOW, min_samples=1, center=True)
        .over(RUN_KEY)
        .alias(name)
        for name, q in quantiles.items()
    ]


def logged_definition(series: pl.DataFrame) -> pl.DataFrame:
    """Per run: which known formula reproduces the logged `accept rate` (null when none logged)."""
    logged = series.filter(pl.col(A.ACCEPT_RATE_LOGGED).is_not_null() & pl.col(C.ACCEPT_LEN).is_not_null())
    if not logged.height:
        return pl.DataFrame(
            schema={C.SOURCE: pl.String, C.RUN: pl.Int32, A.ACCEPT_RATE_DEFINITION: pl.String}
        )
    errors = logged.group_by(RUN_KEY).agg(
        (formula - pl.col(A.ACCEPT_RATE_LOGGED)).abs().mean().alias(name)
        for name, formula in LOGGED_DEFINITIONS.items()
    )
    names = list(LOGGED_DEFINITIONS)
    best = pl.concat_list(pl.col(names)).list.arg_min()
    close = pl.min_horizontal(pl.col(names)) < 0.02
    return errors.select(
        *RUN_KEY,
        pl.when(close)
        .then(best.replace_strict(dict(enumerate(names)), return_dtype=pl.String))
        .otherwise(pl.lit("unknown"))
        .alias(A.ACCEPT_RATE_DEFINITION),
    )


CHANGE_SCHEMA = pl.Schema(
    {
        C.SOURCE: pl.String(),
        C.RUN: pl.Int32(),
        A.METRIC: pl.String(),
        C.TS: pl.Datetime("us"),
        C.LINE_NO: pl.Int64(),
        A.BEFORE: pl.Float64(),
        A.AFTER: pl.Float64(),
    }
)
MIN_SEGMENT = 15
MIN_SHIFT = 0.1


def change_points(
    series: pl.DataFrame, column: str, min_segment: int = MIN_SEGMENT, min_shift: float = MIN_SHIFT
) -> pl.DataFrame:
    """Steps inside one run: binary segmentation on the mean, up to three points per run. A split is
    kept when both sides have ``min_segment`` samples, the means differ by ``min_shift`` of the run's
    mean, and the shift is at least six standard errors."""
    rows = []
    present = series.filter(pl.col(column).is_not_null())
    if not _one_run(present):  # a run too short to split has no step: thousands of short runs, no loop
        present = present.filter(pl.len().over(RUN_KEY) >= 2 * min_segment)
    # one run (as the analysis calls it) is its own group: not grouped by hashing its source's name
    runs = (
        [((present.item(0, C.SOURCE), present.item(0, C.RUN)), present)]
        if present.height and _one_run(present)
        else present.group_by(RUN_KEY, maintain_order=True)
    )
    for (source, run), part in runs:
        values = part.get_column(column).to_numpy()
        rows += step_rows(values, part, (source, run), column, min_segment, min_shift)
    return pl.DataFrame(rows, schema=CHANGE_SCHEMA)


def step_rows(
    values, at_rows: pl.DataFrame, key: tuple[str, int], column: str, min_segment: int, min_shift: float
) -> list[dict[str, object]]:
    """The change points of one run's ``values`` (a numpy array) as rows of `CHANGE_SCHEMA`, each with
    the ts and line of its row of ``at_rows`` (the row of each value)."""
    rows = []
    for at, before, after in _segment(values, 0, len(values), min_segment, min_shift, depth=3):
        # the row of a change point only: a run's whole columns as Python lists cost more than the search
        rows.append(
            {
                C.SOURCE: key[0],
                C.RUN: key[1],
                A.METRIC: column,
                C.TS: at_rows.item(at, C.TS),
                C.LINE_NO: at_rows.item(at, C.LINE_NO),
                A.BEFORE: before,
                A.AFTER: after,
            }
        )
    return rows


def _segment(
    values, lo: int, hi: int, min_segment: int, min_shift: float, depth: int
) -> list[tuple[int, float, float]]:
    import numpy as np

    n = hi - lo
    if depth == 0 or n < 2 * min_segment:
        return []
    seg = values[lo:hi]
    cums = np.cumsum(seg)
    total = cums[-1]
    k = np.arange(min_segment, n - min_segment + 1)
    left = cums[k - 1] / k
    right = (total - cums[k - 1]) / (n - k)
    gain = np.abs(left - right) * np.sqrt(k * (n - k) / n)
    best = int(np.argmax(gain))
    split = int(k[best])
    before, after = float(left[best]), float(right[best])
    noise = float(np.std(np.concatenate([seg[:split] - before, seg[split:] - after]))) or 1e-12
    stderr = noise * np.sqrt(1 / split + 1 / (n - split))
    mean = abs(float(np.mean(seg))) or 1e-12
    if abs(after - before) < min_shift * mean or abs(after - before) < 6 * stderr:
        return []
    at = lo + split
    return sorted(
        [
            *_segment(values, lo, at, min_segment, min_shift, depth - 1),
            (at, before, after),
            *_segment(values, at, hi, min_segment, min_shift, depth - 1),
        ]
    )
