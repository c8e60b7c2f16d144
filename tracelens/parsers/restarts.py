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

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from tracelens.parsers.endpoint_metrics import COMMENT_STARTS
from tracelens.tables.schema import C, Kind, W

_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?[ \t]+([^ \t]+)")
_TYPE = re.compile(r"# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*)[ \t]+(\w+)")


@dataclass(frozen=True)
class Counters:
    """What the next block of a source needs of the metrics pages before it. Never changed in place
    (a block may be parsed again from the same state): `restart_rows` makes new mappings."""

    last: Mapping[str, float] = field(default_factory=dict)  # series (name and labels) -> newest value
    types: Mapping[str, str] = field(default_factory=dict)  # metric name -> its `# TYPE`


def is_comment(text: pl.Expr) -> pl.Expr:
    """A metrics page's `# HELP`/`# TYPE` line."""
    return pl.any_horizontal(text.str.starts_with(start) for start in COMMENT_STARTS)


def _is_counter(name: str, types: Mapping[str, str]) -> bool:
    declared = types.get(name) or types.get(name.removesuffix("_total"))
    return declared == "counter" if declared is not None else name.endswith("_total")


def restart_rows(df: pl.DataFrame, state: Counters) -> tuple[list[int], Counters]:
    """The rows of ``df`` (a block of one source, kinds known) that start a run because a counter went
    back, and the state after the block. Only endpoint lines are read: a block without one costs a
    comparison of its kinds."""
    metric = df.get_column(C.KIND) == Kind.ENDPOINT_METRIC
    if not metric.any():
        return [], state
    rows = metric.arg_true().to_list()
    bodies = df.get_column(W.BODY).gather(rows).to_list()
    last, types = dict(state.last), dict(state.types)
    comments: int | None = None  # the first row of the `#` lines right before the next sample
    previous = -2
    starts: list[int] = []
    for row, body in zip(rows, bodies, strict=True):
        text = body or ""
        if row != previous + 1:
            comments = None  # another kind of line came between: the comments were not the sample's
        previous = row
        if text.startswith(COMMENT_STARTS):
            comments = row if comments is None else comments
            typed = _TYPE.match(text)
            if typed:
                types[typed.group(1)] = typed.group(2)
            continue
        head, comments = comments, None
        sample = _SAMPLE.match(text)
        if sample is None:
            continue  # a `/server_info` object: no counter
        try:
            value = float(sample.group(3))
        except ValueError:
            continue
        series = sample.group(1) + (sample.group(2) or "")
        before = last.get(series)
        if before is not None and value < before and _is_counter(sample.group(1), types):
            starts.append(head if head is not None else row)
            last = {}  # the old server's values are done with
        last[series] = value
    return starts, Counters(last, types)
