"""Which process printed a line: the wrapper an engine puts in front of each line of its child processes.

vLLM prefixes every line a child process writes with `(NAME pid=N) ` (`_add_prefix`): `VllmWorkerProcess`
(V0), `VllmWorker rank=N` (V1, early 2025), `VllmWorker TP1` / `VllmWorker PP1_TP2` (mid 2025), then
`Worker_TP1`, `Worker_DP0_PP0_TP1_EP1`, `EngineCore_DP0`, `EngineCore_0`, `APIServer`; Ray puts
`(RayWorkerWrapper pid=N, ip=H) ` in front of its actors' lines. A process that starts another nests
them (`(EngineCore_0 pid=6) (VllmWorker TP0 pid=7) `): the last one printed the line.

`prefix.clean` peels the wrappers; this keeps what they say as columns: the last wrapper's name, pid
and host (PROCESS, PID, HOST), and the rank tags of every wrapper of the line in the rank columns a
line's SGLang prefix fills (a worker's `TP1` -> tp; a later wrapper's tag wins), so that the analysis groups
interleaved tracebacks by process and names the rank as it names SGLang's `TP1`. vLLM's `rank=N` is a
worker's rank in its engine's tensor x pipeline group: the TP rank unless pipeline-parallel, kept in tp.
torch's `[rankN]:` before a rank's exception output and its C++ log lines names no process but the rank:
its global rank goes into tp where nothing else named one, and a rank's tracebacks join per rank
(`process_records`).
"""

from __future__ import annotations

import polars as pl

from tracelens.parsers.literals import has_literal
from tracelens.parsers.prefix import (
    ANSI_PATTERN,
    PROCESS_WRAPPER,
    RELAY_LEAD,
    TORCH_RANK_LEAD,
    WRAPPER_PATTERN,
)
from tracelens.tables.schema import PROCESS_COLUMNS, C, W, process_types

# Every line a wrapper names its process in holds this; a block without it (nearly every block of an
# SGLang log) costs one literal test.
_MARK = "pid="
# The same for torch's per-rank prefix (`TORCH_RANK_LEAD`).
_TORCH_MARK = "[rank"
# torch's prefix glued to a c10d line's glog lead (`[rank3]:[E227 ...`, `[rank0]:[W ProcessGroupNCCL.cpp:...`)
_GLUED_RANK = TORCH_RANK_LEAD + r"\[[IWEF]"
# One process wrapper of a line's lead (the form `WRAPPER_PATTERN` peels), its name, pid and host.
_PROCESS_WRAPPER = PROCESS_WRAPPER + " "
_FIELDS = (
    rf"^\((?P<{W.PROCESS_NAME}>(?:[\w.]+ ){{0,2}}(?:\w+=\w+ ){{0,4}})pid=(?P<{W.PROCESS_PID}>\d+)"
    rf"(?:, ip=(?P<{W.PROCESS_HOST}>[0-9a-fA-F.:]+))?\) $"
)
# A rank tag in a worker's name: `TP1` of `VllmWorker TP1` or `Worker_DP0_TP1`, `rank=1`. Read on the
# names joined by spaces. Only a worker's tags name a rank (every vLLM process that holds a GPU's rank
# is named `...Worker...`): an engine core's or API server's index names an engine, and vLLM prints
# `EngineCore_DP0` or `EngineCore_0` beside a single engine too, whose failure is no rank's.
_RANKED = "Worker"
# The node a relay names before the wrapper (`<pod> >> `): the host when the wrapper gives no `ip=`.
_RELAY = rf"(?:^|\s)({RELAY_LEAD.removesuffix(' >> ')}) >> "
_TAG_END = r"(?:[ _]|$)"
_TAGS: dict[str, tuple[str, ...]] = {
    C.DP: (rf"(?:^| |_)DP(\d+){_TAG_END}",),
    C.PP: (rf"(?:^| |_)PP(\d+){_TAG_END}",),
    C.TP: (rf"(?:^| |_)TP(\d+){_TAG_END}", r"(?:^| )rank=(\d+)(?: |$)"),
    C.EP: (rf"(?:^| |_)EP(\d+){_TAG_END}",),
}


def add_process_columns(df: pl.DataFrame) -> pl.DataFrame:
    """PROCESS, PID and HOST of each line of a line frame (with TEXT and the rank columns), null where no
    wrapper names one, and the wrappers' rank tags where the line's own prefix gave none, then torch's
    per-rank prefix (`_with_torch_rank`). Only the lines that hold `pid=` are read, and their distinct
    leads (one per process) parsed once each."""
    return _with_torch_rank(_with_process_wrappers(df))


def _with_torch_rank(df: pl.DataFrame) -> pl.DataFrame:
    """torch's per-rank prefix (`[rank3]: ` on its exception output, `[rank3]:[E...` glued to its C++
    log lines, maybe behind other wrappers) in tp, where neither the line's own prefix nor a process
    wrapper named a rank: torch's global rank. Only lines that hold `[rank` are read (a literal test). The
    prefix with a space counts among the wrappers `prefix.clean` peeled; the glued form, which nothing
    but torch prints, anywhere in the clean text (behind a lead no wrapper peels: a pasted table's `| `)."""
    text = df.get_column(C.TEXT)
    hits = has_literal(text, _TORCH_MARK)
    if not hits.any():
        return df
    idx = hits.arg_true()
    clean = df.get_column(W.CLEAN).gather(idx)
    lead = _leads(text.gather(idx), clean)
    rank = (
        lead.str.extract_all(TORCH_RANK_LEAD)
        .list.last()
        .fill_null(clean.str.extract(_GLUED_RANK, 0))
        .str.extract(r"(\d+)", 1)
        .cast(pl.Int32, strict=False)
    )
    if not rank.is_not_null().any():
        return df
    found = pl.repeat(None, df.height, dtype=pl.Int32, eager=True).scatter(idx, rank)
    return df.with_columns(pl.coalesce(pl.col(C.TP), found).alias(C.TP))


def _with_process_wrappers(df: pl.DataFrame) -> pl.DataFrame:
    """PROCESS, PID, HOST and the process wrappers' rank tags (`add_process_columns`)."""
    types = process_types()
    nulls = [pl.lit(None, dtype).alias(name) for name, dtype in types.items()]
    hits = has_literal(df.get_column(C.TEXT), _MARK)
    if not hits.any():
        return df.with_columns(nulls)
    idx = hits.arg_true()
    leads = _leads(df.get_column(C.TEXT).gather(idx), df.get_column(W.CLEAN).gather(idx))
    if not (leads.str.len_bytes() > 0).any():  # `pid=` in messages (an SGLang log's), no wrapper
        return df.with_columns(nulls)
    found = (
        leads.alias(W.PROCESS_LEAD)
        .to_frame()
        .join(_identities(leads.drop_nulls().unique()), on=W.PROCESS_LEAD, how="left", maintain_order="left")
    )

    def spread(name: str, dtype: pl.DataType) -> pl.Series:
        column = pl.repeat(None, df.height, dtype=dtype, eager=True).alias(name)
        return column.scatter(idx, found.get_column(name))

    tagged = [rank for rank in _TAGS if found.get_column(rank).null_count() < found.height]
    return df.with_columns(
        *(spread(name, dtype) for name, dtype in types.items()),
        *(pl.coalesce(pl.col(rank), spread(rank, pl.Int32())).alias(rank) for rank in tagged),
    )


def _leads(text: pl.Series, clean: pl.Series) -> pl.Series:
    """What `prefix.clean` peeled off the start of each line: the colourless text before its CLEAN when
    that is how CLEAN ends (nearly always: a line is cleaned at its start), else the wrappers that
    `WRAPPER_PATTERN` matches (a carriage return's segment, a rearranged lead). Cut by length, not
    matched: the wrapper pattern's alternatives cost many times the rest on a log of wrapped lines."""
    frame = pl.DataFrame([text.str.replace_all(ANSI_PATTERN, "").alias(W.PROCESS_LEAD), clean.alias(W.CLEAN)])
    lead, rest = pl.col(W.PROCESS_LEAD), pl.col(W.CLEAN)
    cut = lead.str.slice(0, lead.str.len_chars() - rest.str.len_chars())
    ends = lead.str.ends_with(rest)
    leads = frame.select(pl.when(ends).then(cut)).to_series()
    if leads.null_count():
        wrapped = frame.get_column(W.PROCESS_LEAD).str.extract(WRAPPER_PATTERN, 0)
        leads = leads.fill_null(wrapped)
    return leads


def _identities(leads: pl.Series) -> pl.DataFrame:
    """Per distinct lead (the wrappers before a line's message): the last process wrapper's name, pid and
    host, and the rank tags of all its process wrappers (null when it has none)."""
    wrappers = leads.str.extract_all(_PROCESS_WRAPPER)
    last = wrappers.list.last()
    fields = last.str.extract_groups(_FIELDS)
    names = wrappers.list.eval(pl.element().str.extract_groups(_FIELDS).struct.field(W.PROCESS_NAME))
    ranked = names.list.eval(pl.element().filter(has_literal(pl.element(), _RANKED)))
    joined = ranked.list.join(" ").str.replace_all(" +", " ")
    name = fields.struct.field(W.PROCESS_NAME).str.strip_chars()
    out = pl.DataFrame(
        [
            leads.alias(W.PROCESS_LEAD),
            name.alias(C.PROCESS),
            fields.struct.field(W.PROCESS_PID).cast(pl.Int64, strict=False).alias(C.PID),
            fields.struct.field(W.PROCESS_HOST).fill_null(leads.str.extract(_RELAY, 1)).alias(C.HOST),
            *(_tag(joined, patterns).alias(rank) for rank, patterns in _TAGS.items()),
        ]
    ).with_columns(
        pl.when(pl.col(C.PROCESS) != "").then(pl.col(C.PROCESS)).alias(C.PROCESS)
    )  # Ray's `(pid=N)`
    return out.select(W.PROCESS_LEAD, *PROCESS_COLUMNS, *_TAGS)


def _tag(names: pl.Series, patterns: tuple[str, ...]) -> pl.Series:
    """The number of a rank tag in each string of ``names``: of its first pattern that matches."""
    tag = _last_tag(names, patterns[0])
    for pattern in patterns[1:]:
        tag = tag.fill_null(_last_tag(names, pattern))
    return tag


def _last_tag(names: pl.Series, pattern: str) -> pl.Series:
    """The number of the last match of ``pattern`` (one group) in each string of ``names``."""
    last = names.str.extract_all(pattern).list.last()
    return last.str.extract(r"(\d+)[ _]?$", 1).cast(pl.Int32, strict=False)
