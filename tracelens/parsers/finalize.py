"""Finish parsed tables once every block of every source is in: join multi-line records (tracebacks,
hard-wrapped server_args) that may have straddled blocks, then build `server_args` and `runs`."""

from __future__ import annotations

import polars as pl

from tracelens.parsers.faults import complete_faults
from tracelens.parsers.server_args import server_args_table
from tracelens.tables.frames import PARTS, Tables
from tracelens.tables.schema import TABLES, C, Kind, T, conform, empty

# Server args that become typed `runs` columns, by the name SGLang gives them (the engine reads only
# these rows of `server_args` when it builds `runs` at commit).
RUN_ARGS: dict[str, str] = {
    "model_path": C.MODEL,
    "tp_size": C.TP_SIZE,
    "dp_size": C.DP_SIZE,
    "pp_size": C.PP_SIZE,
    "ep_size": C.EP_SIZE,
    C.SPEC_ALGORITHM: C.SPEC_ALGORITHM,
    C.SPEC_NUM_STEPS: C.SPEC_NUM_STEPS,
    C.SPEC_EAGLE_TOPK: C.SPEC_EAGLE_TOPK,
    C.SPEC_NUM_DRAFT_TOKENS: C.SPEC_NUM_DRAFT_TOKENS,
    C.SPEC_DRAFT_MODEL: C.SPEC_DRAFT_MODEL,
    C.DISABLE_CUDA_GRAPH: C.DISABLE_CUDA_GRAPH,
}


def finalize(tables: Tables) -> Tables:
    """Join multi-line records (tracebacks, wrapped server_args) and build `server_args` and `runs`."""
    parts = tables.frames.get(
        PARTS,
        pl.DataFrame(
            schema={
                C.SOURCE: pl.String,
                C.RUN: pl.Int32,
                C.RECORD: pl.Int64,
                C.LINE_NO: pl.Int64,
                C.KIND: pl.String,
                C.TEXT: pl.String,
            }
        ),
    )
    frames = {name: frame for name, frame in tables.frames.items() if name != PARTS}
    fault_parts = parts.filter(pl.col(C.KIND) == Kind.FAULT)
    frames[T.FAULTS] = complete_faults(tables[T.FAULTS], fault_parts)
    frames[T.SERVER_ARGS] = server_args_from_parts(parts)
    frames[T.RUNS] = build_runs(tables[T.LINES], frames[T.SERVER_ARGS])
    for name in TABLES:
        frames.setdefault(name, empty(name))
    return Tables(frames)


def server_args_from_parts(parts: pl.DataFrame) -> pl.DataFrame:
    """The `server_args` rows of the `server_args` records among ``parts`` (heads and wrapped pieces)."""
    records = (
        parts.filter(pl.col(C.KIND) == Kind.LIFECYCLE)
        .sort(C.SOURCE, C.LINE_NO)
        .group_by(C.SOURCE, C.RECORD, maintain_order=True)
        # Hard-wrapped pieces are glued without a separator: the terminal cut mid-token.
        .agg(pl.col(C.RUN).first(), pl.col(C.TEXT).str.join(""))
        .rename({C.RECORD: C.LINE_NO})
    )
    return server_args_table(records)


def run_spans(lines: pl.DataFrame, one_source: bool = False) -> pl.DataFrame:
    """Per (source, run) of some lines: first line, first and last time, line count. Spans of pieces of a
    source combine with `merge_run_spans`, so runs can be built without holding every line.
    ``one_source``: the lines are of one source, which is then put on the few span rows instead of being
    hashed with every line's run (four fifths of the grouping, per block of a batch task)."""
    spans = (
        pl.col(C.LINE_NO).min().alias(C.START_LINE),
        pl.col(C.TS).min().alias(C.START_TS),
        pl.col(C.TS).max().alias(C.END_TS),
        pl.len().cast(pl.Int64).alias(C.LINE_COUNT),
    )
    if not one_source or lines.height == 0:
        return lines.group_by(C.SOURCE, C.RUN, maintain_order=True).agg(*spans)
    source = pl.lit(lines.item(0, C.SOURCE), dtype=lines.schema[C.SOURCE]).alias(C.SOURCE)
    return lines.group_by(C.RUN, maintain_order=True).agg(*spans).select(source, pl.all())


def merge_run_spans(spans: pl.DataFrame) -> pl.DataFrame:
    """Combine spans of the same (source, run) computed on different pieces of a source."""
    return spans.group_by(C.SOURCE, C.RUN, maintain_order=True).agg(
        pl.col(C.START_LINE).min(),
        pl.col(C.START_TS).min(),
        pl.col(C.END_TS).max(),
        pl.col(C.LINE_COUNT).sum(),
    )


def build_runs(lines: pl.DataFrame, server_args: pl.DataFrame) -> pl.DataFrame:
    """One row per (source, run): its span and the server args that describe it."""
    return runs_from_spans(run_spans(lines), server_args)


def runs_from_spans(spans: pl.DataFrame, server_args: pl.DataFrame) -> pl.DataFrame:
    """`runs` from run spans (`run_spans`) and the `server_args` table."""
    wanted = server_args.filter(pl.col(C.KEY).is_in(list(RUN_ARGS)))
    if wanted.height:
        wide = wanted.with_columns(pl.col(C.KEY).replace_strict(RUN_ARGS).alias(C.KEY)).pivot(
            on=C.KEY, index=[C.SOURCE, C.RUN], values=C.VALUE, aggregate_function="first"
        )
        spans = spans.join(wide, on=[C.SOURCE, C.RUN], how="left")
    text_null = {
        col: pl.when(pl.col(col) == "None").then(None).otherwise(pl.col(col)).alias(col)
        for col in RUN_ARGS.values()
        if col in spans.columns
    }
    spans = spans.with_columns(*text_null.values())
    if C.DISABLE_CUDA_GRAPH in spans.columns:
        spans = spans.with_columns(pl.col(C.DISABLE_CUDA_GRAPH) == "True")
    ints = [
        C.TP_SIZE,
        C.DP_SIZE,
        C.PP_SIZE,
        C.EP_SIZE,
        C.SPEC_NUM_STEPS,
        C.SPEC_EAGLE_TOPK,
        C.SPEC_NUM_DRAFT_TOKENS,
    ]
    spans = spans.with_columns(pl.col(c).cast(pl.Int64, strict=False) for c in ints if c in spans.columns)
    return conform(T.RUNS, spans).sort(C.SOURCE, C.RUN)
