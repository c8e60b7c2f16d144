"""Fault lines (exceptions, sigquit, watchdog, OOM, retraction, NCCL, health) and their tracebacks.

A fault's head line is parsed here; the traceback lines that follow it are joined in `records`, and the
whole traceback, its last line and exception type are filled in when the tables are finalized.
"""

from __future__ import annotations

from functools import cache

import polars as pl

from tracelens.parsers.distinct import groups_expr
from tracelens.parsers.kinds import FAULT_PHRASES
from tracelens.parsers.literals import has_literal
from tracelens.tables.exceptions import EXCEPTION_LINE_PATTERN
from tracelens.tables.first_match import first_match
from tracelens.tables.schema import COMMON_COLUMNS, PROCESS_COLUMNS, C, T, W, conform, project


@cache  # one chain of thirty phrases, built once rather than per block
def fault_kind_expr() -> pl.Expr:
    """The fault kind of a clean line, from the first phrase it contains."""
    return first_match((has_literal(pl.col(W.CLEAN), phrase), pl.lit(kind)) for phrase, kind in FAULT_PHRASES)


def parse_faults(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `fault` -> the `faults` table, one row per head line (traceback joined later)."""
    body = pl.col(W.BODY)
    exc = groups_expr(W.BODY, EXCEPTION_LINE_PATTERN, strip=True)
    out = df.with_columns(
        body.str.extract(r"(\w+) hit an exception", 1).alias(C.COMPONENT),
        fault_kind_expr().alias(C.FAULT_KIND),
        body.str.strip_chars().alias(C.MESSAGE),
        exc.struct.field("type").alias(C.EXCEPTION_TYPE),
        body.alias(C.TRACEBACK),
        pl.col(C.LINE_NO).alias(C.FIRST_LINE),
        pl.col(C.LINE_NO).alias(C.LAST_LINE),
    )
    return conform(
        T.FAULTS,
        project(
            out,
            *COMMON_COLUMNS,
            *PROCESS_COLUMNS,
            C.COMPONENT,
            C.FAULT_KIND,
            C.MESSAGE,
            C.EXCEPTION_TYPE,
            C.TRACEBACK,
            C.FIRST_LINE,
            C.LAST_LINE,
        ),
    )


def complete_faults(faults: pl.DataFrame, parts: pl.DataFrame) -> pl.DataFrame:
    """Join each fault's continuation lines into its traceback, then let interleaved crash groups share
    their exception (see `share_within_groups`)."""
    return share_within_groups(join_tracebacks(faults, parts))


def join_tracebacks(faults: pl.DataFrame, parts: pl.DataFrame) -> pl.DataFrame:
    """Join each fault's continuation lines (`parts`: source, record, line_no, text) into its traceback;
    the last exception line gives the exception type and, for a bare head, the message. Needs only the
    fault's own lines, so it can run as soon as a record is closed."""
    if not parts.height:
        return faults
    joined = (
        parts.sort(C.SOURCE, C.LINE_NO)
        .with_columns(groups_expr(C.TEXT, EXCEPTION_LINE_PATTERN, strip=True).alias(W.EXCEPTION_LINE))
        .group_by(C.SOURCE, C.RECORD)
        .agg(
            pl.col(C.TEXT).str.join("\n").alias(W.TRACEBACK_TEXT),
            pl.col(C.LINE_NO).max().alias(W.LAST_LINE),
            pl.col(W.EXCEPTION_LINE).struct.field("type").drop_nulls().last().alias(W.EXCEPTION_TYPE),
            pl.col(C.TEXT)
            .filter(pl.col(W.EXCEPTION_LINE).struct.field("type").is_not_null())
            .last()
            .str.strip_chars()
            .alias(W.EXCEPTION_MESSAGE),
        )
        .rename({C.RECORD: C.LINE_NO})
    )
    out = faults.join(joined, on=[C.SOURCE, C.LINE_NO], how="left").with_columns(
        pl.when(pl.col(W.TRACEBACK_TEXT).is_not_null())
        .then(pl.concat_str([pl.col(C.TRACEBACK), pl.col(W.TRACEBACK_TEXT)], separator="\n"))
        .otherwise(pl.col(C.TRACEBACK))
        .alias(C.TRACEBACK),
        pl.coalesce(pl.col(W.LAST_LINE), pl.col(C.LAST_LINE)).alias(C.LAST_LINE),
        pl.coalesce(pl.col(W.EXCEPTION_TYPE), pl.col(C.EXCEPTION_TYPE)).alias(C.EXCEPTION_TYPE),
        # The exception line says what went wrong better than a generic "hit an exception" head.
        pl.when(pl.col(W.EXCEPTION_MESSAGE).is_not_null() & pl.col(C.EXCEPTION_TYPE).is_null())
        .then(pl.col(W.EXCEPTION_MESSAGE))
        .otherwise(pl.col(C.MESSAGE))
        .alias(C.MESSAGE),
    )
    return conform(T.FAULTS, out)


def share_within_groups(faults: pl.DataFrame) -> pl.DataFrame:
    """Interleaved crash groups share their exception, and an exception that is an out-of-memory error
    makes the fault an `oom`. Groups never cross a source, but may cross blocks and byte ranges: this
    runs once all of a source's faults are in (rows in file order)."""
    if not faults.height:
        return faults
    out = _share_within_interleaved_group(faults)
    kind = (
        pl.when((pl.col(C.FAULT_KIND) == "exception") & pl.col(C.EXCEPTION_TYPE).str.contains("OutOfMemory"))
        .then(pl.lit("oom"))
        .otherwise(pl.col(C.FAULT_KIND))
    )
    return conform(T.FAULTS, out.with_columns(kind.alias(C.FAULT_KIND)))


def _share_within_interleaved_group(faults: pl.DataFrame) -> pl.DataFrame:
    """When ranks crash together their tracebacks interleave line by line, and unprefixed frames cannot
    be told apart: they all join the last head. Heads of the same component in the same second of the
    same run are one such group, and a head left without an exception line takes the group's."""
    group = [C.SOURCE, C.RUN, C.COMPONENT, C.TS]
    has_component = pl.col(C.COMPONENT).is_not_null()
    shared_type = pl.col(C.EXCEPTION_TYPE).drop_nulls().last().over(group)
    shared_msg = pl.col(C.MESSAGE).filter(pl.col(C.EXCEPTION_TYPE).is_not_null()).last().over(group)
    missing = has_component & pl.col(C.EXCEPTION_TYPE).is_null()
    return faults.with_columns(
        pl.when(missing).then(shared_type).otherwise(pl.col(C.EXCEPTION_TYPE)).alias(C.EXCEPTION_TYPE),
        pl.when(missing & shared_type.is_not_null())
        .then(shared_msg)
        .otherwise(pl.col(C.MESSAGE))
        .alias(C.MESSAGE),
    )
