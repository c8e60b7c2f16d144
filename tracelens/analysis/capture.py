"""EAGLE-3 hidden-state capture as the debug lines show it: per run and debug site, what was captured.

An embedding capture is a debug line with `layer_id=-1` or an event that names the embedding. The
run's aux layer ids come from the expectations (the draft's config) or, failing that, from a debug
line that prints `layer_ids=[...]`.
"""

from __future__ import annotations

import polars as pl

from tracelens.analysis.expectations import Expectations
from tracelens.analysis.runs import RUN_KEY
from tracelens.tables.frames import collect
from tracelens.tables.schema import A, C, W

SITE_KEY = [*RUN_KEY, C.TAG, C.SITE, C.EVENT]


def is_embed() -> pl.Expr:
    return (pl.col(C.LAYER_ID) == -1).fill_null(False) | pl.col(C.EVENT).str.to_lowercase().str.contains(
        "embed", literal=True
    ).fill_null(False)


def sites(digest: pl.DataFrame) -> pl.DataFrame:
    """Per (run, tag, site, event), in the order of first lines: count, last num_aux / num_items /
    shapes, norm mean/min/max, bad norms, latest time; of the rows of `debug_digest` (``digest``)."""
    named = digest.filter(pl.col(C.EVENT).is_not_null())
    # a site's last printed values are those of its digest row seen last
    lasts = named.sort(W.LAST_SEEN).group_by(SITE_KEY).agg(*last_printed())
    counted = pl.col(W.FINITE_N).sum()
    return (
        named.group_by(SITE_KEY, maintain_order=True)
        .agg(
            pl.col(W.N).sum().alias(A.COUNT),
            pl.when(counted > 0).then(pl.col(W.FINITE_SUM).sum() / counted).alias(A.NORM_MEAN),
            pl.col(A.NORM_MIN).min(),
            pl.col(A.NORM_MAX).max(),
            pl.col(W.N).filter(pl.col(W.BAD_NORM).is_not_null()).sum().cast(pl.UInt32).alias(A.BAD_NORMS),
            pl.col(W.TS_MAX).max().alias(C.TS),
        )
        .join(lasts, on=SITE_KEY, how="left", nulls_equal=True, maintain_order="left")
        .select(
            *SITE_KEY,
            A.COUNT,
            C.NUM_AUX,
            C.NUM_ITEMS,
            C.SHAPES,
            A.NORM_MEAN,
            A.NORM_MIN,
            A.NORM_MAX,
            A.BAD_NORMS,
            C.TS,
        )
    )


def finite_norms() -> pl.Expr:
    return pl.col(C.NORM).filter(pl.col(C.NORM).is_finite())


def last_printed() -> list[pl.Expr]:
    """A site's last num_aux, num_items and (non-empty) shapes."""
    return [
        pl.col(C.NUM_AUX).drop_nulls().last(),
        pl.col(C.NUM_ITEMS).drop_nulls().last(),
        pl.col(C.SHAPES).filter(pl.col(C.SHAPES).list.len() > 0).last(),
    ]


def bad_norms() -> pl.Expr:
    """NaN, infinite or zero norms: left out of a site's norm mean and range, so counted."""
    return (~pl.col(C.NORM).is_finite() | (pl.col(C.NORM) == 0)).fill_null(False).sum().alias(A.BAD_NORMS)


def run_layer_ids(debug: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """source, run, layer_ids: the first `layer_ids=[...]` a run's debug lines print."""
    printed = debug.lazy().filter(pl.col(C.LAYER_IDS).is_not_null() & (pl.col(C.LAYER_IDS).list.len() > 0))
    return (
        collect(printed.select(*RUN_KEY, C.LAYER_IDS))
        .group_by(RUN_KEY, maintain_order=True)
        .agg(pl.col(C.LAYER_IDS).first())
    )


def layer_id_lines(debug: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """source, run, layer_ids, line_no: the first `layer_ids=[...]` a run's debug lines print, and where
    (the evidence that shows what the server was configured with)."""
    return (
        debug.lazy()
        .select(*RUN_KEY, C.LAYER_IDS, C.LINE_NO)
        .filter(pl.col(C.LAYER_IDS).is_not_null() & (pl.col(C.LAYER_IDS).list.len() > 0))
        .group_by(RUN_KEY, maintain_order=True)
        .agg(pl.col(C.LAYER_IDS).first(), pl.col(C.LINE_NO).first())
        .collect()
    )


def embed_stats(digest: pl.DataFrame) -> pl.DataFrame:
    """source, run, _n, _seen: how many debug lines each run has, and whether one is an embedding
    capture (what `embed_states` judges), of the rows of `debug_digest` (``digest``)."""
    return digest.group_by(RUN_KEY, maintain_order=True).agg(
        pl.col(W.N).sum().cast(pl.UInt32), is_embed().any().alias(W.SEEN)
    )


def embed_states(runs: pl.DataFrame, stats: pl.DataFrame, expect: Expectations) -> pl.DataFrame:
    """source, run, embed_state for every speculative run: `seen` / `not seen` when nothing is expected,
    `as expected` / `missing` / `unexpected` against the expectation, `no debug lines` otherwise.
    ``stats``: `embed_stats` of the debug lines, or the same counts kept as rows arrive (the live
    worker's running figures)."""
    out = runs.filter(pl.col(A.SPECULATIVE)).select(RUN_KEY).join(stats, on=RUN_KEY, how="left")
    seen = pl.col(W.SEEN).fill_null(False)
    if expect.embed_capture is None:
        state = pl.when(seen).then(pl.lit("seen")).otherwise(pl.lit("not seen"))
    elif expect.embed_capture:
        state = pl.when(seen).then(pl.lit("as expected")).otherwise(pl.lit("missing"))
    else:
        state = pl.when(seen).then(pl.lit("unexpected")).otherwise(pl.lit("as expected"))
    no_lines = pl.col(W.N).fill_null(0) == 0
    return out.select(
        *RUN_KEY, pl.when(no_lines).then(pl.lit("no debug lines")).otherwise(state).alias(A.EMBED_STATE)
    )
