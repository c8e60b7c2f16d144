"""A server restart seen in its `/metrics` pages: a counter below the value it had on an earlier page.

A metrics endpoint has no `server_args=` line to start a run: its process starts again unseen, and what
shows it is the counters, which start again from zero. So the first counter sample below its previous
value starts a new run, from its family's `# HELP`/`# TYPE` lines right before it. A page of
`prometheus_client` lists the default collectors' counters first (`python_gc_objects_collected_total`),
which a new process has counted less of than an old one, so the run nearly always starts at the page's
first line. The comments a block ends with are parsed with the next block (`pipeline.parse_block`), so
a sample and the comments before it are always read together, and the runs do not depend on where
blocks are cut.

A counter is what a `# TYPE` line declares one (`prometheus_client` writes the `_total` name there), else
a sample whose name ends in `_total` (the Prometheus naming rule for counters). Gauges go up and down
and say nothing about a restart. After a restart the old server's values are forgotten: a series the new
server exports later, small, is compared with its own later values only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from tracelens.parsers.endpoint_metrics import COMMENT_STARTS
from tracelens.tables.schema import C, Kind, W

_SAMPLE = r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?[ \t]+([^ \t]+)"
_TYPE = r"^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*)[ \t]+(\w+)"
_NAME, _LABELS, _VALUE, _PREV = "_name", "_labels", "_value", "_prev"


@dataclass(frozen=True)
class Counters:
    """What the next block of a source needs of the metrics pages before it. Never changed in place
    (a block may be parsed again from the same state): `restart_rows` makes new mappings."""

    last: Mapping[str, float] = field(default_factory=dict)  # series (name and labels) -> newest value
    types: Mapping[str, str] = field(default_factory=dict)  # metric name -> its `# TYPE`


def is_comment(text: pl.Expr) -> pl.Expr:
    """A metrics page's `# HELP`/`# TYPE` line."""
    return pl.any_horizontal(text.str.starts_with(start) for start in COMMENT_STARTS)


def _is_counter(name: pl.Expr, types: Mapping[str, str]) -> pl.Expr:
    """Declared a counter by a `# TYPE` line (under its own name or without `_total`), else, declared
    nothing, named `..._total`."""
    counters = [n for n, kind in types.items() if kind == "counter"]
    others = [n for n, kind in types.items() if kind != "counter"]
    base = name.str.strip_suffix("_total")
    declared = name.is_in(counters) | base.is_in(counters)
    undeclared = ~name.is_in(others) & ~base.is_in(others)
    return declared | (undeclared & name.str.ends_with("_total"))


def restart_rows(df: pl.DataFrame, state: Counters) -> tuple[list[int], Counters]:
    """The rows of ``df`` (a block of one source, kinds known) that start a run because a counter went
    back, and the state after the block. Vectorized: a block holds a restart rarely, and each one costs a
    pass over the counter samples after it. A block without an endpoint line costs a comparison of its
    kinds."""
    metric = df.get_column(C.KIND) == Kind.ENDPOINT_METRIC
    if not metric.any():
        return [], state
    lines = pl.DataFrame([metric.arg_true().alias(W.ROW), df.get_column(W.BODY).filter(metric)])
    body = pl.col(W.BODY)
    types = dict(state.types)
    declared = (
        lines.filter(body.str.starts_with("# TYPE "))
        .select(body.str.extract(_TYPE, 1).alias(_NAME), body.str.extract(_TYPE, 2).alias(_VALUE))
        .drop_nulls()
        .unique(maintain_order=True)
    )
    types.update(
        zip(declared.get_column(_NAME).to_list(), declared.get_column(_VALUE).to_list(), strict=True)
    )
    samples = (
        lines.filter(~body.str.starts_with("#"))
        .select(
            W.ROW,
            body.str.extract(_SAMPLE, 1).alias(_NAME),
            body.str.extract(_SAMPLE, 2).fill_null("").alias(_LABELS),
            body.str.extract(_SAMPLE, 3).cast(pl.Float64, strict=False).alias(_VALUE),
        )
        .filter(pl.col(_NAME).is_not_null() & pl.col(_VALUE).is_not_null())
    )
    counters = samples.filter(_is_counter(pl.col(_NAME), types)).select(
        W.ROW, (pl.col(_NAME) + pl.col(_LABELS)).alias(W.SERIES), _VALUE
    )
    last = dict(state.last)
    starts: list[int] = []
    while counters.height:
        # each sample's previous value: the one before it in the block, else the blocks' before it
        before = pl.col(W.SERIES).replace_strict(last, default=None, return_dtype=pl.Float64)
        first = pl.col(W.SERIES).is_first_distinct()
        prev = pl.when(first).then(before).otherwise(pl.col(_VALUE).shift(1).over(W.SERIES))
        went_back = counters.select((pl.col(_VALUE) < prev).fill_null(False)).to_series().arg_true()
        if not len(went_back):
            newest = counters.group_by(W.SERIES).agg(pl.col(_VALUE).last())
            last.update(
                zip(newest.get_column(W.SERIES).to_list(), newest.get_column(_VALUE).to_list(), strict=True)
            )
            break
        at = int(went_back[0])
        row = int(counters.item(at, W.ROW))
        starts.append(_page_head(df, row))
        # a new server: its values are compared with its own only, from this sample on
        counters, last = counters.slice(at), {}
    return starts, Counters(last, types)


def _page_head(df: pl.DataFrame, row: int) -> int:
    """The first of the `#` lines of a metrics page right before ``row`` (``row`` without any)."""
    kinds, bodies = df.get_column(C.KIND), df.get_column(W.BODY)
    while (
        row > 0
        and kinds[row - 1] == Kind.ENDPOINT_METRIC
        and (bodies[row - 1] or "").startswith(COMMENT_STARTS)
    ):
        row -= 1
    return row
