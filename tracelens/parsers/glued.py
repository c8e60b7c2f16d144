"""vLLM records glued onto one physical line: a copy that lost its newlines (a log pasted into an issue,
a terminal's wrapped selection) puts `INFO 01-25 11:26:53 llm_engine.py:706] Avg prompt throughput: ...
(_AsyncLLMEngine pid=1974) INFO 01-25 11:26:58 llm_engine.py:706] Avg prompt throughput: ...` on one
line, and the line read as its first record only: one figure for a run of many.

Such a line stays one row of `lines`, read as before (its first record, its whole text a message), and
each further record that is of the same kind as the first (vLLM's engine stats, spec-decoding metrics:
the records with figures) is one more row of that kind's table at the same line number. A record of
another kind stays in the line's text only, as before. Only lines with a second record's lead are split:
a literal test on the block, then one pattern on the lines it passes.
"""

from __future__ import annotations

import polars as pl

from tracelens.parsers.literals import has_literal
from tracelens.parsers.prefix import PROCESS_WRAPPER, VLLM_FILE_INFO
from tracelens.tables.schema import C, Kind, W

# vLLM's lead (`INFO 01-25 11:26:53 llm_engine.py:706] `, `[loggers.py:116] ` since 0.6), behind any of
# its process wrappers (in colour or not).
_ANSI = r"(?:\x1b\[[0-9;]{0,12}m)?"
_WRAPPERS = rf"(?:{_ANSI}{PROCESS_WRAPPER}{_ANSI} )*"
_LEAD = rf"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? {VLLM_FILE_INFO}"
# A further record with figures is an INFO record (vLLM logs its stats and spec-decoding metrics so):
# its lead follows a space (its wrapper's, or the record before's), and its level a month. A line
# without one holds no record to split off (an SGLang line, a vLLM line not wrapped). Two literals:
# one per level and month digit costs five times as much on every line.
_MARKS = (" INFO 0", " INFO 1")
# A line that holds a record's lead and, after some of its text, another record's.
_TWO_LEADS = rf"{_LEAD}.*?\S\s+{_WRAPPERS}{_LEAD}"
_FIRST = rf"^.*?{_LEAD}"  # the line up to its first record's message
_NEXT = rf"\s+({_WRAPPERS}{_LEAD})"  # where each further record starts
# The kinds whose glued records are read: those with figures, one row per record.
SPLIT_KINDS = (Kind.BATCH, Kind.SPEC_METRICS)


def split_glued(lines: pl.DataFrame) -> pl.DataFrame:
    """``lines`` (a block's line frame) with one more row per further record of a glued line, right
    after the line's own (same line number, offset and length; W.GLUED_PART 1, 2, ...). The block as
    it is when no line is glued."""
    text = lines.get_column(C.TEXT)
    marked = has_literal(text, *_MARKS)
    if not marked.any():
        return lines
    idx = marked.arg_true()
    glued = idx.filter(text.gather(idx).str.contains(_TWO_LEADS))
    if not len(glued):
        return lines
    rows = lines[glued]
    line = pl.col(C.TEXT)
    first = line.str.extract(_FIRST, 0).str.len_chars()
    records = (
        line.str.slice(first)
        .str.replace_all(_NEXT, "\n$1")
        .str.split("\n")
        .list.slice(1)  # the first record is the line's own row
    )
    parts = (
        rows.with_columns(records.alias(C.TEXT))
        .explode(C.TEXT)
        .with_columns((pl.int_range(pl.len()).over(C.LINE_NO) + 1).cast(pl.Int32).alias(W.GLUED_PART))
    )
    whole = lines.with_columns(pl.lit(0, pl.Int32).alias(W.GLUED_PART))
    return pl.concat([whole, parts]).sort(C.LINE_NO, W.GLUED_PART)


def keep_same_kind(df: pl.DataFrame) -> pl.DataFrame:
    """Of a frame with KIND and W.GLUED_PART, the further records of a glued line whose kind is the
    line's own and one of `SPLIT_KINDS`; the others are dropped (their text is in the line's own row)."""
    if W.GLUED_PART not in df.columns:
        return df
    part = pl.col(W.GLUED_PART)
    own = pl.col(C.KIND).filter(part == 0).first().over(C.LINE_NO)
    return df.filter((part == 0) | ((pl.col(C.KIND) == own) & pl.col(C.KIND).is_in(SPLIT_KINDS)))


def own_rows(df: pl.DataFrame) -> pl.DataFrame:
    """Each physical line's own row (what `lines` keeps), without the glued records' rows."""
    if W.GLUED_PART not in df.columns:
        return df
    return df.filter(pl.col(W.GLUED_PART) == 0)
