"""Result blocks of SGLang's client benchmark, `python -m sglang.bench_serving`, pasted into a log:

    ============ Serving Benchmark Result ============
    Backend:                                 sglang
    Successful requests:                     1000
    Output token throughput (tok/s):         1715.29
    Accept length:                           2.83
    ----------------End-to-End Latency----------------
    Mean E2E Latency (ms):                   9912.73
    ==================================================

Each line of a block is a row of `benchmarks` (header, section, metric or footer), so nothing is lost;
`analysis.benchmarks` groups the rows of a block into one result. Lines are routed by their literal
start (the names bench_serving prints), then read by one anchored pattern.
"""

from __future__ import annotations

import polars as pl

from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform

HEADER = "Serving Benchmark Result"
FOOTER = "=" * 50
SECTIONS = (
    "End-to-End Latency",
    "Time to First Token",
    "Time per Output Token (excl. 1st token)",
    "Inter-token Latency",
    "Speculative Decoding",
)
_SCALARS = (
    "Backend",
    "Traffic request rate",
    "Max request concurrency",
    "Successful requests",
    "Failed requests",  # vLLM's `bench serve`, late 2025 on
    "Benchmark duration (s)",
    "Total input tokens",
    "Total input text tokens",
    "Total input vision tokens",
    "Total generated tokens",
    "Total generated tokens (retokenized)",
    "Request throughput (req/s)",
    "Input token throughput (tok/s)",
    "Output token throughput (tok/s)",
    "Peak output token throughput (tok/s)",
    "Peak concurrent requests",
    "Total token throughput (tok/s)",
    "Total throughput (tok/s)",
    "Concurrency",
    "Accept length",
)
_LATENCIES = tuple(
    f"{stat} {name} (ms)"
    for stat in ("Mean", "Median", "Std", "P90", "P95", "P99", "Max")
    for name in ("E2E Latency", "TTFT", "TPOT", "ITL")
)
# The starts of metric lines, for routing (the name and its colon).
METRIC_STARTS = tuple(f"{key}:" for key in (*_SCALARS, *_LATENCIES))

_HEADER_PATTERN = rf"^=+ ?{HEADER} ?=+\s*$"
_FOOTER_PATTERN = r"^={20,}\s*$"
_SECTION_PATTERN = r"^-{2,}([A-Za-z][A-Za-z0-9 .()-]*?[A-Za-z0-9)])-{2,}\s*$"
_METRIC_PATTERN = r"^([A-Z][A-Za-z0-9 ()./-]*?):\s+(\S+)\s*$"
_UNIT_PATTERN = r" \((ms|s|req/s|tok/s)\)$"


def parse_benchmarks(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `benchmark` -> the `benchmarks` table (a line no pattern reads is left out, and
    falls back to `unparsed`)."""
    clean = pl.col(W.CLEAN)
    metric = clean.str.extract_groups(_METRIC_PATTERN)
    name = metric.struct.field("1")
    section = clean.str.extract(_SECTION_PATTERN, 1)
    item = (
        pl.when(clean.str.contains(_HEADER_PATTERN))
        .then(pl.lit("header"))
        .when(clean.str.contains(_FOOTER_PATTERN))
        .then(pl.lit("footer"))
        .when(section.is_not_null())
        .then(pl.lit("section"))
        .when(name.is_not_null())
        .then(pl.lit("metric"))
    )
    out = df.with_columns(item.alias(C.BENCH_ITEM)).filter(pl.col(C.BENCH_ITEM).is_not_null())
    is_metric = pl.col(C.BENCH_ITEM) == "metric"
    out = out.with_columns(
        pl.when(is_metric)
        .then(name.str.replace(_UNIT_PATTERN, ""))
        .when(pl.col(C.BENCH_ITEM) == "section")
        .then(section)
        .alias(C.BENCH_METRIC),
        pl.when(is_metric).then(name.str.extract(_UNIT_PATTERN, 1)).alias(C.BENCH_UNIT),
        pl.when(is_metric).then(metric.struct.field("2")).alias(C.VALUE),
    ).with_columns(pl.col(C.VALUE).cast(pl.Float64, strict=False).alias(C.BENCH_NUMBER))
    return conform(
        T.BENCHMARKS,
        out.select(*COMMON_COLUMNS, C.BENCH_ITEM, C.BENCH_METRIC, C.BENCH_UNIT, C.BENCH_NUMBER, C.VALUE),
    )
