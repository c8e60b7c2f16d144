"""Client-side results (`sglang.bench_serving` blocks in the logs) beside the server-side figures of the
run they were pasted into: accept length as the client measured it against the run's mean accept len
from the decode lines, output throughput against the decode lines' mean throughput."""

from __future__ import annotations

import polars as pl

from tracelens.tables.frames import Tables
from tracelens.tables.schema import A, C, T

# (printed name, column): the figures of a block that are shown.
_NUMBERS = (
    ("Successful requests", A.BENCH_REQUESTS),
    ("Accept length", A.BENCH_ACCEPT_LENGTH),
    ("Output token throughput", A.BENCH_OUTPUT_THROUGHPUT),
    ("Request throughput", A.BENCH_REQUEST_THROUGHPUT),
    ("Mean E2E Latency", A.BENCH_MEAN_E2E_MS),
    ("Mean TTFT", A.BENCH_MEAN_TTFT_MS),
    ("Mean TPOT", A.BENCH_MEAN_TPOT_MS),
    ("Mean ITL", A.BENCH_MEAN_ITL_MS),
)


def benchmark_results(tables: Tables) -> pl.DataFrame:
    """One row per result block: its source, run, header line and figures. A block is the header and
    the rows after it in the same source, up to the next header."""
    rows = tables[T.BENCHMARKS].sort(C.SOURCE, C.LINE_NO)
    headers = rows.filter(pl.col(C.BENCH_ITEM) == "header").select(
        C.SOURCE, pl.col(C.LINE_NO).alias(A.BENCH_LINE), C.RUN
    )
    if not headers.height:
        return pl.DataFrame(
            schema={
                C.SOURCE: pl.String,
                C.RUN: pl.Int32,
                A.BENCH_LINE: pl.Int64,
                A.BENCH_BACKEND: pl.String,
                **{column: pl.Float64 for _, column in _NUMBERS},
            }
        )
    metrics = (
        rows.filter(pl.col(C.BENCH_ITEM) == "metric")
        .join_asof(
            headers.drop(C.RUN),
            left_on=C.LINE_NO,
            right_on=A.BENCH_LINE,
            by=C.SOURCE,
            strategy="backward",
            check_sortedness=False,  # both sorted by source and line above; polars cannot check by group
        )
        .filter(pl.col(A.BENCH_LINE).is_not_null())
    )
    figures = metrics.group_by(C.SOURCE, A.BENCH_LINE).agg(
        pl.col(C.VALUE).filter(pl.col(C.BENCH_METRIC) == "Backend").first().alias(A.BENCH_BACKEND),
        *[
            pl.col(C.BENCH_NUMBER).filter(pl.col(C.BENCH_METRIC) == name).first().alias(column)
            for name, column in _NUMBERS
        ],
    )
    return headers.join(figures, on=[C.SOURCE, A.BENCH_LINE], how="left").sort(C.SOURCE, A.BENCH_LINE)


def benchmarks_beside_runs(runs: pl.DataFrame, tables: Tables) -> pl.DataFrame:
    """`benchmark_results` with the label, mean accept len and mean throughput of the run each block
    was pasted into (``runs``: the analysis' run overview)."""
    server = runs.select(C.SOURCE, C.RUN, A.LABEL, A.MEAN_ACCEPT_LEN, A.MEAN_GEN_THROUGHPUT)
    return benchmark_results(tables).join(server, on=[C.SOURCE, C.RUN], how="left")
