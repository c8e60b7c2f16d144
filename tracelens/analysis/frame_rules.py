"""Failures a traceback's frames name when its exception line does not: vLLM's engine waiting on its
workers' shared-memory queue raises a bare `TimeoutError` from `shm_broadcast.acquire_read` (newer
releases say `RPC call to execute_model timed out`). Each rule is data: the code, a frame of the
traceback, and the unknown exception line that frame makes that code."""

from __future__ import annotations

import re
from typing import NamedTuple

import polars as pl

from tracelens.analysis.crash_text import CUT_TRACEBACK
from tracelens.analysis.request_scope import stretches
from tracelens.tables.schema import C


class FrameRule(NamedTuple):
    code: str  # a catalog entry's code
    frame: str  # a frame line of the traceback (`  File "...", line N, in f`)
    exception: str  # the exception line, unknown to the catalog, that the frame names


FRAME_RULES: tuple[FrameRule, ...] = (
    FrameRule(
        "worker-rpc-timeout",
        r'shm_broadcast\.py", line \d+, in (?:acquire_read|dequeue)\b',
        r"^(?:[\w.]+\.)?TimeoutError\b",
    ),
    # a traceback cut before its exception line, through the runner of a kernel build's ninja (torch's
    # extension builder, FlashInfer's JIT): what that runner raises is the build's failure
    FrameRule(
        "jit-compile",
        r'(?:cpp_extension\.py", line \d+, in _run_ninja_build|jit/cpp_ext\.py", line \d+, in run_ninja)\b',
        rf"^{re.escape(CUT_TRACEBACK)}$",
    ),
)


def by_frames(
    rows: pl.DataFrame, coded: pl.DataFrame, code: str, text: str, in_traceback: str, generic: str
) -> pl.DataFrame:
    """``coded`` with each unknown exception (``generic``) given the code of a rule whose frame is in its
    traceback: its record (a traceback printed whole), or its stretch of consecutive traceback lines
    (vLLM's, one ERROR line a line)."""
    unknown = coded.filter(pl.col(code) == generic)
    if not unknown.height:
        return coded
    lines = stretches(rows, text, in_traceback)
    found = []
    for rule in FRAME_RULES:
        framed = lines.filter(pl.col(text).str.contains(rule.frame))
        if not framed.height:
            continue
        stretch = lines.join(framed.select("_stretch").unique(), on="_stretch").select(C.SOURCE, C.LINE_NO)
        record = lines.join(framed.select(C.SOURCE, C.RECORD).unique(), on=[C.SOURCE, C.RECORD])
        within = pl.concat([stretch, record.select(C.SOURCE, C.LINE_NO)]).unique()
        hit = unknown.join(within, on=[C.SOURCE, C.LINE_NO]).filter(
            pl.col(text).str.strip_chars().str.contains(rule.exception)
        )
        found.append(hit.select(C.SOURCE, C.LINE_NO, pl.lit(rule.code).alias("_framed")))
    if not found:
        return coded
    framed_codes = pl.concat(found).unique([C.SOURCE, C.LINE_NO], keep="first")
    return (
        coded.join(framed_codes, on=[C.SOURCE, C.LINE_NO], how="left")
        .with_columns(pl.coalesce("_framed", code).alias(code))
        .drop("_framed")
    )
