"""What a run's verdict reads from the tables beside its findings: a benchmark client's figures, the
requests it answered, its role in a PD-disaggregated pair. One query each, for every run at once."""

from __future__ import annotations

import polars as pl

from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import C, T


def client_figures(tables: Tables) -> dict[tuple[str, int], tuple[float | None, float | None]]:
    """Per run holding a benchmark client's results: its successful requests and output tok/s."""
    metric, number = pl.col(C.BENCH_METRIC), pl.col(C.BENCH_NUMBER)
    rows = collect(
        tables.scan(T.BENCHMARKS)
        .filter(pl.col(C.BENCH_ITEM) == "metric")
        .group_by(RUN_KEY)
        .agg(
            number.filter(metric == "Successful requests").sum().alias("ok"),
            number.filter(metric.str.starts_with("Output token throughput")).mean().alias("tput"),
        )
    )
    return {(s, r): (ok, tput) for s, r, ok, tput in rows.iter_rows()}


def answered_requests(tables: Tables) -> dict[tuple[str, int], int]:
    """Per run: the POST requests (generation, embedding, audio) it answered with a 2xx status."""
    ok = (pl.col(C.STATUS) >= 200) & (pl.col(C.STATUS) < 300) & (pl.col(C.METHOD) == "POST")
    rows = collect(tables.scan(T.HTTP).filter(ok).group_by(RUN_KEY).agg(pl.len()))
    return {(s, r): int(n) for s, r, n in rows.iter_rows()}


def roles(tables: Tables) -> dict[tuple[str, int], str]:
    """Each run's `disaggregation_mode` (prefill, decode) where its server args set one."""
    mode = collect(
        tables.scan(T.SERVER_ARGS)
        .filter(pl.col(C.KEY) == "disaggregation_mode")
        .select(*RUN_KEY, pl.col(C.VALUE).str.strip_chars("'\" ").str.to_lowercase())
    )
    return {(s, r): v for s, r, v in mode.iter_rows() if v in ("prefill", "decode")}
