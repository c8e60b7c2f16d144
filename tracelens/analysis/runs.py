"""Run identity: every frame of the analysis names a run by (source, run) and shows it as a label."""

from __future__ import annotations

from pathlib import PurePath

import polars as pl

from tracelens.tables.frames import collect
from tracelens.tables.schema import A, C, W

RUN_KEY = [C.SOURCE, C.RUN]


def label_expr() -> pl.Expr:
    """`<file name>#<run>`: short enough for a legend, unique within one analysis in practice."""
    name = pl.col(C.SOURCE).map_elements(lambda s: PurePath(s).name, return_dtype=pl.String)
    return pl.concat_str([name, pl.lit("#"), pl.col(C.RUN).cast(pl.String)]).alias(A.LABEL)


def with_labels(frame: pl.DataFrame, runs: pl.DataFrame) -> pl.DataFrame:
    """Add the run label to any frame keyed by (source, run)."""
    return frame.join(runs.select(*RUN_KEY, A.LABEL), on=RUN_KEY, how="left")


def interesting_runs(runs: pl.DataFrame, lines: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Runs worth showing: a server start, or a run 0 that holds more than preamble (batch, fault, debug,
    vLLM metrics, request or endpoint lines).
    A run 0 of a few lines before the first `server_args=` is only noise in a report."""
    busy = collect(
        lines.lazy()
        .filter(
            pl.col(C.KIND).is_in(["batch", "fault", "debug", "spec_metrics", "request", "endpoint_metric"])
        )
        .select(RUN_KEY)
        .unique()
    ).with_columns(pl.lit(True).alias(W.BUSY))
    out = runs.join(busy, on=RUN_KEY, how="left")
    return out.filter((pl.col(C.RUN) > 0) | pl.col(W.BUSY).fill_null(False)).drop(W.BUSY)
