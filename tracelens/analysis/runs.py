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
    """Runs worth showing: a server start, or a run 0 that holds more than preamble (batch or fault lines).
    A run 0 of a few lines before the first `server_args=` is only noise in a report."""
    busy = collect(
        lines.lazy()
        .filter(pl.col(C.KIND).is_in(["batch", "fault", "debug", "spec_metrics"]))
        .select(RUN_KEY)
        .unique()
    ).with_columns(pl.lit(True).alias(W.BUSY))
    out = runs.join(busy, on=RUN_KEY, how="left")
    # A source without a server start is one run, whatever it holds: it gets a verdict like the others.
    alone = pl.col(C.RUN).max().over(C.SOURCE) == 0
    return out.filter((pl.col(C.RUN) > 0) | pl.col(W.BUSY).fill_null(False) | alone).drop(W.BUSY)


# Kinds that say nothing about what a file is: a file of only these is no server log.
UNKNOWN_KINDS = ("unparsed", "blank")


# A line that opens with a date and time is a log line of some program, known or not (a router's, a
# launcher's): a file holding one is a log, never refused as prose or a config file.
TIMESTAMPED = r"^\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}"


def unknown_sources(lines: pl.DataFrame | pl.LazyFrame, unparsed: pl.LazyFrame) -> tuple[list[str], int]:
    """The sources with no line of any known kind and no timestamped line (a config file, prose: no
    log at all), and how many sources there are."""
    known = pl.col(C.KIND).is_in(UNKNOWN_KINDS).not_().any()
    found = collect(lines.lazy().group_by(C.SOURCE).agg(known.alias(W.BUSY)))
    unknown = found.filter(~pl.col(W.BUSY)).get_column(C.SOURCE).to_list()
    if unknown:
        stamped = collect(
            unparsed.filter(pl.col(C.SOURCE).is_in(unknown) & pl.col(C.TEXT).str.contains(TIMESTAMPED))
            .select(C.SOURCE)
            .unique()
        )
        unknown = [s for s in unknown if s not in set(stamped.get_column(C.SOURCE).to_list())]
    return sorted(unknown), found.height
