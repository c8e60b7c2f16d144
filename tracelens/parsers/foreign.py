"""Lines of other known formats that share the stream: vLLM, glog, python logging, Ray, NCCL, torch
c10d, tqdm bars, `[Gloo]`, `[aiter]`. Each format is data: a name and one anchored pattern."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from tracelens.parsers.distinct import groups_expr, without_captures
from tracelens.parsers.first_match import first_match
from tracelens.tables.schema import COMMON_COLUMNS, C, T, W, conform

_LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL"


@dataclass(frozen=True)
class ForeignFormat:
    """A format: its name and a pattern with the named groups `level` (optional), `msg`, `ts` (optional:
    a full `YYYY-MM-DD HH:MM:SS` date; formats without a year leave the time null)."""

    name: str
    pattern: str


FOREIGN_FORMATS: tuple[ForeignFormat, ...] = (
    ForeignFormat(
        "vllm", rf"^(?P<level>{_LEVELS}) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.]+:\d+\] (?P<msg>.*)$"
    ),
    ForeignFormat("glog", r"^(?P<level>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] (?P<msg>.*)$"),
    ForeignFormat(
        "python", rf"^(?P<ts>\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d),\d{{3}} - (?P<level>{_LEVELS}) - (?P<msg>.*)$"
    ),
    ForeignFormat(
        "ray", r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3} (?P<level>[A-Z]+) [\w.]+:\d+ -- (?P<msg>.*)$"
    ),
    ForeignFormat("nccl", r"^\S+:\d+:\d+ \[\d+\] NCCL (?P<level>INFO|WARN|ERROR|TRACE) ?(?P<msg>.*)$"),
    ForeignFormat(
        "c10d", r"^(?:\[rank\d+\]:)?\[?(?P<level>[IWEF])\d{3,4} [\d:.]+ (?:\d+ )?[^\]\s]+\] ?(?P<msg>.*)$"
    ),
    ForeignFormat("pywarning", r"^\S+\.py:\d+: (?P<level>\w*Warning): (?P<msg>.*)$"),
    ForeignFormat("cuda_assert", r"^(?P<msg>\S+\.cu:\d+: .*Assertion .* failed\.?)$"),
    ForeignFormat("gloo", r"^\[Gloo\] (?P<msg>.*)$"),
    ForeignFormat("aiter", r"^\[aiter\] (?P<msg>.*)$"),
    ForeignFormat("tqdm", r"^(?P<msg>.*(?:\d%\||it/s\]|s/it\]|\d+%\s+Completed \|).*)$"),
)

_GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL", "WARN": "WARNING"}
# The groups a format may have, and the working column each is read into.
_GROUP_COLUMNS = {"level": W.LEVEL, "msg": W.MESSAGE, "ts": W.TS_TEXT}


def format_expr() -> pl.Expr:
    """The foreign format name a clean line matches, or null. The tests run without capture groups: the
    same matches, at half the cost of compiling the patterns, which is most of the cost on a block's
    few candidate lines."""
    return first_match(
        (pl.col(W.CLEAN).str.contains(without_captures(fmt.pattern)), pl.lit(fmt.name))
        for fmt in FOREIGN_FORMATS
    )


def parse_foreign(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `foreign` (with their `format`) -> the `foreign` table."""
    parts = []
    # One partition, not a filter per format: a block holds one or two of the eleven formats.
    by_format = df.partition_by(C.FORMAT, as_dict=True)
    for fmt in FOREIGN_FORMATS:
        sub = by_format.get((fmt.name,))
        if sub is None:
            continue
        groups = groups_expr(W.CLEAN, fmt.pattern)
        names = [g for g in _GROUP_COLUMNS if f"?P<{g}>" in fmt.pattern]
        sub = sub.with_columns(*(groups.struct.field(g).alias(_GROUP_COLUMNS[g]) for g in names))
        level = pl.col(W.LEVEL).replace(_GLOG_LEVELS) if "level" in names else pl.lit(None, pl.String)
        ts = (
            pl.col(W.TS_TEXT).str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us", strict=False)
            if "ts" in names
            else pl.col(C.TS)
        )
        parts.append(
            sub.with_columns(level.alias(C.LEVEL), pl.col(W.MESSAGE).alias(C.MESSAGE), ts.alias(C.TS))
        )
    if not parts:
        return conform(T.FOREIGN, df.select(*COMMON_COLUMNS))
    out = pl.concat(
        [p.select(*COMMON_COLUMNS, C.FORMAT, C.LEVEL, C.MESSAGE) for p in parts], how="vertical_relaxed"
    )
    return conform(T.FOREIGN, out.sort(C.LINE_NO))
