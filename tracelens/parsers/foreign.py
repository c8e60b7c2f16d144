"""Lines of other known formats that share the stream: vLLM, glog, python logging, Ray, NCCL, torch
c10d, tqdm bars, `[Gloo]`, `[aiter]`. Each format is data: a name and one anchored pattern."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import polars as pl

from tracelens.parsers.distinct import groups_expr, without_captures
from tracelens.parsers.literals import has_literal
from tracelens.parsers.prefix import TORCH_RANK_LEAD, VLLM_FILE_INFO
from tracelens.tables.schema import COMMON_COLUMNS, PROCESS_COLUMNS, C, T, W, conform, project

_LEVELS = r"DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL"


@dataclass(frozen=True)
class ForeignFormat:
    """A format: its name and a pattern with the named groups `level` (optional), `msg`, `ts` (optional:
    a full `YYYY-MM-DD HH:MM:SS` date; formats without a year leave the time null).

    ``starts`` and ``contains`` are literal tests that every line the pattern matches passes: it starts
    with one of ``starts`` and contains one of ``contains`` (an empty tuple tests nothing). They are
    implied by the pattern, never a filter of their own: a format none of a block's candidate lines
    passes is never run on them, and never compiled in a process whose lines never pass it (polars keeps
    the last 32 regexes it compiled, per thread; a block runs about 25, so a compiled pattern stays)."""

    name: str
    pattern: str
    starts: tuple[str, ...] = ()
    contains: tuple[str, ...] = ()


_LEVEL_STARTS = tuple(f"{level} " for level in _LEVELS.split("|"))

FOREIGN_FORMATS: tuple[ForeignFormat, ...] = (
    ForeignFormat(
        "vllm",
        rf"^(?P<level>{_LEVELS}) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? {VLLM_FILE_INFO}(?P<msg>.*)$",
        starts=_LEVEL_STARTS,
        contains=("] ",),
    ),
    ForeignFormat(
        "glog",
        r"^(?P<level>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w./-]+:\d+\] (?P<msg>.*)$",
        starts=("I", "W", "E", "F"),
        contains=("] ",),
    ),
    ForeignFormat(
        "python",
        rf"^(?P<ts>\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d),\d{{3}} - (?P<level>{_LEVELS}) - (?P<msg>.*)$",
        contains=tuple(f" - {level} - " for level in _LEVELS.split("|")),
    ),
    ForeignFormat(
        "ray",
        r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3} (?P<level>[A-Z]+) [\w.]+:\d+ -- (?P<msg>.*)$",
        contains=(" -- ",),
    ),
    ForeignFormat(
        "nccl",
        r"^\S+:\d+:\d+ \[\d+\] NCCL (?P<level>INFO|WARN|ERROR|TRACE) ?(?P<msg>.*)$",
        contains=("] NCCL ",),
    ),
    ForeignFormat(
        "c10d",
        # torch's per-rank prefix (`[rank2]:[E1001 ...`) names the rank that printed the line: read into tp
        # with every line's that has it (`processes`)
        rf"^(?:{TORCH_RANK_LEAD})?\[?(?P<level>[IWEF])\d{{3,4}} [\d:.]+ (?:\d+ )?[^\]\s]+\] ?(?P<msg>.*)$",
        starts=("[rank", "[I", "[W", "[E", "[F", "I", "W", "E", "F"),
        contains=("]",),
    ),
    ForeignFormat("pywarning", r"^\S+\.py:\d+: (?P<level>\w*Warning): (?P<msg>.*)$", contains=("Warning: ",)),
    ForeignFormat(
        "cuda_assert", r"^(?P<msg>\S+\.cu:\d+: .*Assertion .* failed\.?)$", contains=("Assertion ",)
    ),
    ForeignFormat("gloo", r"^\[Gloo\] (?P<msg>.*)$", starts=("[Gloo] ",)),
    ForeignFormat("aiter", r"^\[aiter\] (?P<msg>.*)$", starts=("[aiter] ",)),
    ForeignFormat(
        "tqdm",
        r"^(?P<msg>.*(?:\d%\||it/s\]|s/it\]|\d+%\s+Completed \|).*)$",
        contains=("%|", "it/s]", "s/it]", "Completed |"),
    ),
)

_GLOG_LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR", "F": "FATAL", "WARN": "WARNING"}
# The groups a format may have, and the working column each is read into.
_GROUP_COLUMNS = {"level": W.LEVEL, "msg": W.MESSAGE, "ts": W.TS_TEXT}


def may_match_expr(fmt: ForeignFormat) -> pl.Expr:
    """Whether a clean line passes ``fmt``'s literal tests: false only on lines its pattern cannot match."""
    clean = pl.col(W.CLEAN)
    tests = []
    if fmt.starts:
        tests.append(pl.any_horizontal(*(clean.str.starts_with(s) for s in fmt.starts)))
    if fmt.contains:
        tests.append(has_literal(clean, *fmt.contains))
    return pl.all_horizontal(*tests) if tests else pl.lit(True)


_MAY_MATCH = [may_match_expr(fmt).alias(fmt.name) for fmt in FOREIGN_FORMATS]
# The tests run without capture groups: the same matches, at half the cost of compiling the patterns.
_TESTS = {fmt.name: without_captures(fmt.pattern) for fmt in FOREIGN_FORMATS}


def formats_of(clean: pl.Series) -> pl.Series:
    """The foreign format each clean line matches (the first in `FOREIGN_FORMATS` order), or null.

    The literal tests of all formats run in one pass; then each format's pattern runs only on the lines
    that pass its tests and no earlier format took, and not at all when there are none: a block's few
    candidates (vLLM-style warnings, Python warnings) run two or three patterns, not eleven."""
    found = pl.repeat(None, len(clean), dtype=pl.String, eager=True).alias(C.FORMAT)
    frame = clean.alias(W.CLEAN).to_frame()
    may = frame.select(_MAY_MATCH)
    left = pl.repeat(True, len(clean), dtype=pl.Boolean, eager=True)
    for fmt in FOREIGN_FORMATS:
        rows = may.get_column(fmt.name) & left
        if not rows.any():
            continue
        idx = rows.arg_true()
        taken = idx.filter(
            frame.select(pl.col(W.CLEAN).gather(idx).str.contains(_TESTS[fmt.name])).to_series()
        )
        if len(taken):
            found = found.scatter(taken, fmt.name)
            left = left.scatter(taken, False)
    return found


def parse_foreign(df: pl.DataFrame) -> pl.DataFrame:
    """Rows routed to `foreign` (with their `format`) -> the `foreign` table."""
    parts = []
    # One partition, not a filter per format: a block holds one or two of the eleven formats.
    by_format = df.partition_by(C.FORMAT, as_dict=True)
    for fmt in FOREIGN_FORMATS:
        sub = by_format.get((fmt.name,))
        if sub is None:
            continue
        # The groups are read once, into a struct unnested into working columns, and the rows built in one
        # select: on a block's few foreign lines each polars call costs more than its rows (a `struct.field`
        # per group, then two more frames, was seven calls a format).
        names = _group_names(fmt.pattern)
        sub = sub.with_columns(_groups(fmt.pattern).alias(W.GROUPS)).unnest(W.GROUPS)
        level = pl.col(W.LEVEL).replace(_GLOG_LEVELS) if "level" in names else pl.lit(None, pl.String)
        ts = (
            pl.col(W.TS_TEXT).str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us", strict=False)
            if "ts" in names
            else pl.col(C.TS)
        )
        read = {C.TS: ts}
        parts.append(
            sub.select(
                *(read.get(name, pl.col(name)).alias(name) for name in COMMON_COLUMNS),
                *PROCESS_COLUMNS,
                pl.col(C.FORMAT),
                level.alias(C.LEVEL),
                pl.col(W.MESSAGE).alias(C.MESSAGE),
            )
        )
    if not parts:
        return conform(T.FOREIGN, project(df, *COMMON_COLUMNS))
    out = parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical_relaxed")
    return conform(T.FOREIGN, out.sort(C.LINE_NO))


@cache
def _group_names(pattern: str) -> tuple[str, ...]:
    """The named groups of ``pattern``, in order, as polars' own regex engine reads them (the fields of
    its `extract_groups` struct; Python's `re` need not agree on every pattern)."""
    return tuple(pl.select(pl.lit(None, pl.String).str.extract_groups(pattern)).to_series().struct.fields)


@cache
def _groups(pattern: str) -> pl.Expr:
    """``pattern``'s groups read from the clean line, as a struct whose fields are named by the working
    columns they stand for (`level` would clash with the LEVEL column)."""
    fields = [_GROUP_COLUMNS.get(name, f"_group_{name}") for name in _group_names(pattern)]
    return groups_expr(W.CLEAN, pattern).struct.rename_fields(fields)
