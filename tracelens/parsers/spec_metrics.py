"""vLLM speculative-decoding metrics, in each layout vLLM has printed (read by key, not by position)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from tracelens.parsers.batch import PERCENT
from tracelens.parsers.distinct import groups_expr
from tracelens.parsers.literals import has_literal
from tracelens.parsers.prefix import VLLM_FILE_INFO
from tracelens.tables.names import VLLM_V0_METRICS
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform

# The line a vLLM server prints as it starts (every version since 0.4): it starts a run.
VLLM_SERVER_START = "vLLM API server version"
# Newer vLLM prints an ASCII-art banner instead; its version sits right of the logo's last block.
VLLM_BANNER_VERSION = "\u2588  version "
# The banner's plain form, when the logo is off (`VLLM_DISABLE_LOG_LOGO`, or a logging config without
# vLLM's formatter): `vLLM server version 0.12.0, serving model Qwen/Qwen3-8B`.
VLLM_PLAIN_START = "vLLM server version "
# Each of these, once per server start, starts a run (the planner of byte ranges counts the same).
VLLM_STARTS = (VLLM_SERVER_START, VLLM_BANNER_VERSION, VLLM_PLAIN_START)
# vLLM's prefix, `INFO 08-21 10:29:59 [metrics.py:120] ` (older: without the brackets): no year.
_STAMP_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_VLLM_STAMP = (
    rf"^(?:{'|'.join(_STAMP_LEVELS)}) (?P<month>\d\d)-(?P<day>\d\d) "
    r"(?P<time>\d\d:\d\d:\d\d(?:\.\d{1,6})?) " + VLLM_FILE_INFO
)
# Every line the stamp matches starts with one of these (the pattern's first words).
_STAMP_STARTS = tuple(f"{level} " for level in _STAMP_LEVELS)


def vllm_timestamps(df: pl.DataFrame, base_date: dt.date | None, base_is_end: bool) -> pl.DataFrame:
    """TS of lines with vLLM's yearless prefix (their TS is null: it is not SGLang's prefix). The year
    is that of the nearest dated line of the block (SGLang's own lines around them, which carry their
    year), rolled over when the month is more than half a year away from it. With no dated line near,
    it is ``base_date``'s, rolled over at New Year: given the date of the first line, a line whose month
    and day come before it is in the next year; given a date at or after the last line (the file's
    time), a line whose month and day come after it is in the year before. Read line by line, so a log
    must span less than a year."""
    missing = df.get_column(C.TS).is_null()
    if not missing.any():
        return df
    # Only lines without a time can carry vLLM's stamp: in an SGLang log a handful (vLLM-style warnings)
    # or none, never the bulk. A literal test of its first word finds them; the pattern (with groups,
    # costly to run and, once per process, to compile) reads only those, and not at all when there are
    # none. A line the pattern does not match reads a null time, which it had already.
    untimed = missing.arg_true()
    clean = df.get_column(W.CLEAN).gather(untimed).to_frame()
    may_stamp = clean.select(pl.any_horizontal(pl.col(W.CLEAN).str.starts_with(s) for s in _STAMP_STARTS))
    rows = untimed.filter(may_stamp.to_series())
    if rows.is_empty():
        return df
    # The nearest dated line before (else after): an SGLang log that also prints vLLM-style lines.
    near = df.get_column(C.TS).fill_null(strategy="forward").fill_null(strategy="backward").gather(rows)
    stamped = pl.DataFrame([df.get_column(W.CLEAN).gather(rows), near])
    # The groups are read once into columns: each `struct.field` of the match would match again.
    parts = stamped.with_columns(groups_expr(W.CLEAN, _VLLM_STAMP).alias(W.GROUPS)).unnest(W.GROUPS)
    read = parts.select(_stamp_expr(base_date, base_is_end)).to_series()
    return df.with_columns(df.get_column(C.TS).scatter(rows, read))


def _stamp_expr(base_date: dt.date | None, base_is_end: bool) -> pl.Expr:
    """The time of a line with vLLM's stamp, in a frame with the stamp's groups (month, day, time) as
    columns and whose TS is the nearest dated line's."""
    month = pl.col("month").cast(pl.Int32, strict=False)
    day = pl.col("day").cast(pl.Int32, strict=False)
    near = pl.col(C.TS)
    near_month = near.dt.month().cast(pl.Int32)
    from_near = (
        near.dt.year().cast(pl.Int32)
        + ((near_month - month) > 6).cast(pl.Int32)
        - ((month - near_month) > 6).cast(pl.Int32)
    )
    if base_date is None:
        year = from_near
    else:
        base = base_date.month * 100 + base_date.day
        after_base = (month * 100 + day) > base
        before_base = (month * 100 + day) < base
        from_base = (
            pl.lit(base_date.year) - after_base.cast(pl.Int32)
            if base_is_end
            else pl.lit(base_date.year) + before_base.cast(pl.Int32)
        )
        year = pl.coalesce(from_near, from_base)
    return (
        pl.format(
            "{}-{}-{} {}",
            year,
            pl.col("month"),
            pl.col("day"),
            pl.col("time"),
        )
        .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False)
        .alias(C.TS)
    )


def _num(pattern: str, dtype: type[pl.DataType] = pl.Float64) -> pl.Expr:
    return pl.col(W.BODY).str.extract(pattern, 1).cast(dtype, strict=False)


# The layouts vLLM printed (vllm/spec_decode/metrics.py and vllm/engine/metrics.py in V0,
# vllm/v1/spec_decode/metrics.py in V1); the analysis reads V0's apart (`analysis/vllm_metrics.py`):
# - V0 (2024 to early 2025): `Speculative metrics: Draft acceptance rate: F, System efficiency: F, Number
#   of speculative tokens: k, Number of accepted tokens: N, Number of draft tokens: N, Number of emitted
#   tokens: N.` (mid 2024: `Number of draft tokens tokens: N, Number of emitted tokens tokens: N.`). Its
#   counts are the server's since it started, not the interval's.
# - V1's first (March 2025): `Speculative metrics: Draft acceptance rate: F, Number of accepted tokens: N,
#   Number of draft tokens: N, ` (no efficiency, no k), counted per interval as every V1 line is.
# - V1 early (April to September 2025): `SpecDecoding metrics: Draft acceptance rate: F%, [Mean acceptance
#   length: F, ][Accepted throughput ..., ]Accepted: N tokens, Drafted: N tokens[, Per-position ...]`.
# - V1 (since September 2025): `SpecDecoding metrics: Mean acceptance length: F, Accepted throughput: F
#   tokens/s, ..., Per-position acceptance rate: F, ..., Avg Draft acceptance rate: F%`.
def parse_spec_metrics(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `spec_metrics` -> the `spec_metrics` table."""
    body = pl.col(W.BODY)
    # the rate as a fraction (`Speculative metrics:`, both engines) or as a per cent (`SpecDecoding`)
    fraction = has_literal(body, "Speculative metrics:")
    v0 = fraction & has_literal(body, "System efficiency:")
    current = has_literal(body, "Mean acceptance length:") & has_literal(body, "Accepted throughput:")
    pct_rate = pl.coalesce(
        _num(r"Avg Draft acceptance rate: ([\w.]+)%"), _num(r"Draft acceptance rate: ([\w.]+)%")
    )
    out = df.with_columns(
        pl.when(v0)
        .then(pl.lit(VLLM_V0_METRICS))
        .when(current)
        .then(pl.lit("vllm_v1"))
        .otherwise(pl.lit("vllm_v1_early"))
        .alias(C.LAYOUT),
        _num(r"Mean acceptance length: ([\w.]+)").alias(C.MEAN_ACCEPTANCE_LENGTH),
        pl.when(fraction)
        .then(_num(r"Draft acceptance rate: ([\w.]+)"))
        .otherwise(pct_rate * PERCENT)
        .alias(C.ACCEPTANCE_RATE),
        pl.coalesce(
            _num(r"Accepted: (\d+) tokens", pl.Int64), _num(r"Number of accepted tokens: (\d+)", pl.Int64)
        ).alias(C.ACCEPTED),
        pl.coalesce(
            _num(r"Drafted: (\d+) tokens", pl.Int64),
            _num(r"Number of draft tokens(?: tokens)?: (\d+)", pl.Int64),
        ).alias(C.DRAFTED),
        _num(r"Number of emitted tokens(?: tokens)?: (\d+)", pl.Int64).alias(C.EMITTED),
        _num(r"Number of speculative tokens: (\d+)", pl.Int64).alias(C.NUM_SPEC_TOKENS),
        _num(r"Accepted throughput: ([\w.]+)").alias(C.ACCEPTED_THROUGHPUT),
        _num(r"Drafted throughput: ([\w.]+)").alias(C.DRAFTED_THROUGHPUT),
        _num(r"System efficiency: ([\w.]+)").alias(C.SYSTEM_EFFICIENCY),
        body.str.extract(r"Per-position acceptance rate: ((?:(?:[\d.]+|nan), )*(?:[\d.]+|nan))", 1)
        .str.split(", ")
        .list.eval(pl.element().cast(pl.Float64, strict=False))
        .alias(C.PER_POSITION),
    )
    # V0 prints no acceptance length: it is the tokens emitted per speculative step, the bonus token
    # included as V1's (k drafted tokens per step: emitted / (drafted / k)); of the counts since the
    # server started, so the line's figure is the mean up to it.
    steps = pl.col(C.DRAFTED) / pl.col(C.NUM_SPEC_TOKENS)
    derived = pl.when(steps > 0).then(pl.col(C.EMITTED) / steps)
    out = out.with_columns(pl.coalesce(C.MEAN_ACCEPTANCE_LENGTH, derived).alias(C.MEAN_ACCEPTANCE_LENGTH))
    return conform(
        T.SPEC_METRICS,
        out.select(
            *COMMON_COLUMNS,
            C.LAYOUT,
            C.MEAN_ACCEPTANCE_LENGTH,
            C.ACCEPTANCE_RATE,
            C.ACCEPTED,
            C.DRAFTED,
            C.EMITTED,
            C.NUM_SPEC_TOKENS,
            C.ACCEPTED_THROUGHPUT,
            C.DRAFTED_THROUGHPUT,
            C.SYSTEM_EFFICIENCY,
            C.PER_POSITION,
        ),
    )
