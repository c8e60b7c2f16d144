"""The pace of a replayed log (`replay:FILE?speed=N`): chunks of lines that share a timestamp, with
their time after the first one, read by the same parser as everything else."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from tracelens.engine.ingest import parse_source
from tracelens.sources.logfiles import open_source
from tracelens.sources.replay import Schedule
from tracelens.tables.schema import C, T


def replay_schedule(path: Path) -> tuple[bytes, Schedule]:
    """The file's bytes and its chunks: (seconds after the first timestamp, start byte, end byte); each
    chunk is the lines that share one timestamp."""
    with open_source(path) as fh:
        data = fh.read()
    lines = parse_source(path)[T.LINES].sort(C.LINE_NO)
    if not lines.height:
        return data, []
    ts = lines.get_column(C.TS).forward_fill().backward_fill()
    first = ts.drop_nulls().first() if ts.null_count() < len(ts) else None
    seconds = (
        ((ts - first).dt.total_microseconds() / 1e6).fill_null(0.0)
        if first is not None
        else pl.zeros(len(ts), eager=True)
    )
    frame = pl.DataFrame({"t": seconds, "start": lines.get_column(C.BYTE_OFFSET)}).with_columns(
        (pl.col("t") != pl.col("t").shift(1)).fill_null(True).cum_sum().alias("chunk")
    )
    chunks = frame.group_by("chunk", maintain_order=True).agg(pl.col("t").first(), pl.col("start").first())
    starts = chunks.get_column("start").to_list()
    ends = [*starts[1:], len(data)]
    return data, list(zip(chunks.get_column("t").to_list(), starts, ends, strict=True))
