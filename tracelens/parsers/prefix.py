"""Peel what surrounds an SGLang message: colour codes, tqdm carriage returns, users' wrappers, and
SGLang's own prefix (timestamp, rank tags, level). Every step is one vectorized polars expression.

The prefix reader is one pluggable piece (`PREFIX_PATTERN`), because `SGLANG_LOGGING_CONFIG_PATH` lets
a user install any format. All patterns run on Rust's `regex` engine: linear time, no backtracking.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from tracelens.parsers.distinct import groups_expr, without_captures
from tracelens.parsers.literals import has_literal
from tracelens.tables.exceptions import TORCH_RANK
from tracelens.tables.schema import C, W, discard, project

# ANSI SGR codes, also when the ESC byte was lost in a copy-paste (bare `[36m`). Without the ESC a
# code needs a number: a bare `[m` is real text (`[module_aiter_enum]`, `[metrics.py:53]`).
# A copy that shows the ESC byte in caret notation (`^[[0;36m`, as `cat -v` and some CI viewers print
# it) has the same codes.
ANSI_PATTERN = r"(?:\x1b|\^\[)\[[0-9;]{0,12}m|\[[0-9]{1,3}(?:;[0-9]{1,3}){0,3}m"

# A tqdm bar rewrites its line with `\r`; the next record can share the physical line. The record
# starts at its `[T ...]` bracket, else the last non-empty segment is what a terminal would show.
_CR_RECORD = r"\r(\[\d\d[^\r]*)"
_CR_LAST = r"([^\r]*[^\r\s][^\r]*)\r*$"

# The severity words of cloud loggers and log shippers (GCP, syslog, log4j-style), and an ISO-8601 stamp.
# Upper, lower or title case, listed: a case-insensitive group costs the whole wrapper test a fifth more.
_SEVERITY_WORDS = (
    "DEFAULT TRACE DEBUG INFO NOTICE WARN WARNING ERROR ERR CRITICAL CRIT FATAL SEVERE ALERT EMERGENCY"
)
_SEVERITIES = "|".join(w for word in _SEVERITY_WORDS.split() for w in (word, word.lower(), word.title()))
_ISO_STAMP = r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"

# A process wrapper, without its trailing space: vLLM's `(APIServer pid=N)`, `(VllmWorker rank=0 pid=N)`,
# Ray's `(RayWorkerWrapper pid=N, ip=H)`. One pattern for the peeling here, the process columns
# (`processes`) and the glued records (`glued`).
PROCESS_WRAPPER = r"\((?:[\w.]+ ){0,2}(?:\w+=\w+ ){0,4}pid=\d+(?:, ip=[0-9a-fA-F.:]+)?\)"

# Where vLLM's lead says a record was logged: `[llm_engine.py:706]` (`llm_engine.py:706]` before 0.6),
# or a path in its package when its logging is at DEBUG or told to (`[v1/executor/multiproc_executor.py:671]`;
# its formatter shortens long ones: `[v1/engine/.../core.py:7]`), with the space after it.
VLLM_FILE_INFO = r"\[?[\w./-]+:\d+\] "

# A relay's name for the node or pod a line came from, before the line it forwards (an RL framework
# gathering its nodes' output: `<pod> >> (SGLangEngine pid=N) [T TP7] ...`), as compose's `service | `.
RELAY_LEAD = r"[A-Za-z0-9][\w.-]* >> "

# torch's per-rank prefix (`[rank3]:`) without its group: the wrapper, the c10d format and the rank's reader
# (`processes`) share it.
TORCH_RANK_LEAD = without_captures(TORCH_RANK)

# Wrappers added by users' tooling, in any order and number, at the start of a line.
WRAPPER_PATTERN = (
    r"^(?:"
    r"> ?(?:[-*+] )?"  # markdown quote, of a list item too
    r"|[A-Za-z0-9][\w.-]*\s+\| "  # docker-compose `service  | `
    rf"|{RELAY_LEAD}"  # an RL framework's relay: `<pod> >> `
    # a cloud console's or log shipper's export: a severity word, then an ISO-8601 stamp (GCP's
    # `ERROR 2026-01-02T03:04:05.123456Z `; in any of three cases, bracketed or not, `T` or space, any zone or none)
    rf"|\[?(?:{_SEVERITIES})\]?:? {_ISO_STAMP} "
    # Ray actor, vLLM `(APIServer pid=N)`, `(VllmWorker rank=0 pid=N)`, `(VllmWorker TP0 pid=N)`
    rf"|{PROCESS_WRAPPER} "
    # systemd's journal (`journalctl -u vllm`): `Aug 17 18:42:18 host unit[pid]: `
    r"|[A-Z][a-z]{2} [ 0-3]\d \d\d:\d\d:\d\d [\w.-]+ [\w.@/-]+(?:\[\d+\])?: "
    # a container runtime's or log shipper's stamp: `kubectl logs --timestamps`, the CRI file form
    # `<ISO> stdout F `, a sidecar's `[name id]: <ISO> 1 stdout: `
    # (an issue's log pasted as a markdown list puts `- ` before the stamp)
    r"|(?:[-*+] )?(?:\[[\w .:/-]{1,80}\]:? )?\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d) "
    r"(?:\d+ )?(?:(?:stdout|stderr)(?: [FP])?:? )?"
    # a CI runner's bracketed stamp (Buildkite: `[2025-12-15T20:35:11Z] `)
    r"|\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)\] "
    # torch's per-rank prefix on each line of a rank's uncaught exception (`[rank0]: Traceback ...`);
    # its glog lines (`[rank4]:[W208 ...`, no space) are the c10d format's and keep it
    rf"|{TORCH_RANK_LEAD} "
    r")+"
)
# Another process's output spliced in front of an SGLang record (`ml-h2[2025-06-03 20:04:36] INFO: ...`,
# `host:1:2 [3] NCCL INFO [2025-02-08 00:25:32 TP15] ...`): the record starts at its timestamp bracket.
STAMP_BRACKET = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z_]+\d+)*\] "
SPLICED_PATTERN = rf"^[^\[]*?\S.*?({STAMP_BRACKET})"
# Two processes' output glued on one line that starts with a record: the first record was cut where
# the other process's record (`...[2025-04-17 11:44:15 TP3] Scheduler hit an exception`) began; the
# line is that whole record. A stamp inside quotes (a prompt quoting a log) is text, never a record.
GLUED_PATTERN = rf"^\[\d[^'\"]*?({STAMP_BRACKET})"
_GLUE_HINT = "[20"  # every dated stamp's start: a line with two may hold a glued record
# A log collector's outer timestamp in front of SGLang's own: `[T] [T TP0] ...` keeps the inner one.
OUTER_TS_PATTERN = r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?\] (\[\d)"
# Leads that a user's logging config (`SGLANG_LOGGING_CONFIG_PATH`) or an older router arranges
# otherwise, with the same fields (time, rank tags, level, file:line), put in SGLang's order
# `[T TAGS] LEVEL file.py:N: message`; each is anchored and read on few lines (`_rearranged`).
_T = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,6})?"
_TAG = r"(?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+"
_TAGS = rf"(?: {_TAG})*"
_LEVELS = r"DEBUG|INFO|WARNING|ERROR|CRITICAL"
REARRANGED: tuple[tuple[str, str], ...] = (
    # `T LEVEL PID [ TAGS file.py:N] message`
    (rf"^({_T}) ({_LEVELS}) (?:\d+ )?\[({_TAGS}) ?([\w.]+:\d+)\] ", "[${1}${3}] ${2} ${4}: "),
    # the same config on a prefix without its leading space (DP-attention ranks: `[DP3 TP3 EP3 file.py:N]`)
    (rf"^({_T}) ({_LEVELS}) (?:\d+ )?\[({_TAG}{_TAGS}) ([\w.]+:\d+)\] ", "[${1} ${3}] ${2} ${4}: "),
    # `[T TAGS][file.py:N][LEVEL]: message`
    (rf"^\[({_T}{_TAGS})\]\[([\w.]+:\d+)\]\[({_LEVELS})\]:? ", "[${1}] ${3} ${2}: "),
    # `[Router (Rust)] T - LEVEL - message` (the Rust router of early 2025); Python's own `T,mmm - LEVEL -`
    # lines stay a foreign format: another program's
    (rf"^\[Router \(Rust\)\] ({_T}) - ({_LEVELS}) - ", "[${1}] ${2}: "),
)

RANK_TAGS: dict[str, str] = {
    C.DP: "DP",
    C.PP: "PP",
    C.ATTN_CP: "ATTN_CP",
    C.MOE_DP: "MOE_DP",
    C.TP: "TP",
    C.EP: "EP",
}

# `[YYYY-MM-DD HH:MM:SS(.mmm) TAGS] message`; the date is missing before v0.3.4; tags in any order.
# Patterns capture the prefix only and the message is sliced off after it: capturing `(.*)$` to the
# end of every line costs four times as much.
_BRACKET = (
    rf"\[(?:(?P<{W.DATE}>\d{{4}}-\d\d-\d\d) )?(?P<{W.TIME}>\d\d:\d\d:\d\d)(?:[.,](?P<{W.FRAC}>\d{{1,6}}))?"
    rf"(?P<{W.TAGS}>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] ?"
)
PREFIX_PATTERN = rf"^(?P<{W.PREFIX}>{_BRACKET})"
# 2024 eras: `[gpu_id=N] `, `[gpu=N] `, `Rank N: `.
_GPU = rf"\[gpu(?:_id)?=(?P<{W.GPU}>\d+)\] ?|Rank (?P<{W.RANK}>\d+): "
# After the prefix: the 2026 logger form `INFO file.py:N: msg`, or uvicorn's `INFO:     msg`.
_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)(?:: +| (?P<logger>[\w.]+:\d+): )"
# A line's whole lead, before its message: SGLang's prefix (the bracketed form first, else the gpu or
# rank form), then the level. Both parts are optional: a line without them has an empty lead.
_LEAD_FIELDS = rf"^(?:{_BRACKET}|{_GPU})?(?:{_LEVEL})?"
_LEAD_WITH_TEXT = rf"^(?P<{W.LEAD}>{_LEAD_FIELDS[1:]})"
_LEAD_TEXT = without_captures(_LEAD_WITH_TEXT)
# The variable part of a bracketed lead, `[date time.frac`, and the stamp that stands in for it.
_STAMP = r"^\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d{1,6})?"
_KEY_STAMP = "[2000-01-01 00:00:00"
# Lines that `clean` would change, except spliced records (tested apart, on few lines): codes or
# carriage returns anywhere, wrappers at the start. Two patterns: mixing anchored and unanchored
# alternatives in one regex makes every alternative scan the whole line.
_NEEDS_CLEANING_ANYWHERE = rf"{ANSI_PATTERN}|\r"
_NEEDS_CLEANING_AT_START = (
    rf"^(?:{WRAPPER_PATTERN[1:]}|{OUTER_TS_PATTERN[1:]}|" + "|".join(p[1:] for p, _ in REARRANGED) + ")"
)
# What a line needs to match `_NEEDS_CLEANING_ANYWHERE`: a code has an ESC or is bare (`[36m`, a digit
# before its `m`). Two literal-fast tests pick the few lines for the whole pattern, which on every line
# costs more than both (the `[` of every stamp starts a bare code's match). Not one regex: the digit
# class leaves the regex engine no literal to skip to, and it costs several times as much.
_ESC_OR_CR = "[\x1b\r]"
_DIGIT_M = "[0-9]m"


def clean(text: pl.Expr) -> pl.Expr:
    """Line text without colour codes, tqdm carriage-return segments and wrappers."""
    no_ansi = text.str.replace_all(ANSI_PATTERN, "")
    has_cr = has_literal(no_ansi, "\r")
    from_cr = pl.coalesce(no_ansi.str.extract(_CR_RECORD, 1), no_ansi.str.extract(_CR_LAST, 1), pl.lit(""))
    one_record = pl.when(has_cr).then(from_cr).otherwise(no_ansi)
    unwrapped = one_record.str.replace(WRAPPER_PATTERN, "")
    unspliced = (
        pl.when(unwrapped.str.starts_with("["))
        .then(unwrapped)
        .otherwise(unwrapped.str.replace(SPLICED_PATTERN, "$1"))
    )
    outer = unspliced.str.replace(OUTER_TS_PATTERN, "$1")
    outer = (
        pl.when(has_literal(outer.str.slice(1), _GLUE_HINT))
        .then(outer.str.replace(GLUED_PATTERN, "$1"))
        .otherwise(outer)
    )
    for pattern, lead in REARRANGED:
        outer = outer.str.replace(pattern, lead)
    return outer


def clean_frame(df: pl.DataFrame) -> pl.DataFrame:
    """Add CLEAN. It is computed only when some line of the block needs it: most blocks have no colour
    codes, carriage returns or wrappers, and a `contains` costs a fraction of a `replace`."""
    text = df.get_column(C.TEXT)
    needs = (
        _codes_or_returns(df)
        or bool(text.str.contains(_NEEDS_CLEANING_AT_START).any())
        or _any_spliced(text)
        or _any_glued(text)
    )
    return df.with_columns((clean(pl.col(C.TEXT)) if needs else pl.col(C.TEXT)).alias(W.CLEAN))


def _any_spliced(text: pl.Series) -> bool:
    """Whether some line holds a spliced record. The spliced-record pattern scans a whole line: only
    lines that do not start a record need it, and only those that hold a stamp bracket at all (found by
    its `[`, a fraction of the cost)."""
    unbracketed = ~text.str.starts_with("[")
    if not unbracketed.any():
        return False
    lines = text.filter(unbracketed)
    stamped = lines.filter(lines.str.contains(STAMP_BRACKET))
    return bool(len(stamped)) and bool(stamped.str.contains(SPLICED_PATTERN).any())


def _any_glued(text: pl.Series) -> bool:
    """Whether some line that starts with a record holds another glued to it: only lines with a dated
    stamp's start past their first character (a literal test, a fraction of the pattern's cost; a count
    of the starts costs six times as much) are tested."""
    twice = text.filter(has_literal(text.str.slice(1), _GLUE_HINT))
    return bool(len(twice)) and bool(twice.str.contains(GLUED_PATTERN).any())


# The lead of nearly every line of today's logs, read by position: `[YYYY-MM-DD HH:MM:SS`, then rank tags
# (or none) and `]`, maybe a level. ASCII digits only: the lead pattern's `\d` takes any digit, and lines
# with others go the pattern's way, like every line this does not fit.
_DATED = r"^\[[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}[ \]]"
_DATED_LEN = len("[2000-01-01 00:00:00")
# Whether a dated line's window starts with an inner stamp's bracket: only then does `OUTER_TS_PATTERN`
# match the line (its stamp is the dated one, without a fraction: the window starts with ` ` or `]`).
_OUTER_WINDOW = r"^\] \[\d|^(?: [A-Z_]+\d+)*\]\[[\w.]"  # or a rearranged lead's `][file.py`
# A message that starts with a level word may have a level the lead pattern would take into the lead.
_LEVEL_START = r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_LONGEST_LEVEL = len("CRITICAL")
# The lines not read by position that the lead pattern may read otherwise than as having no lead (empty
# fields, the whole line its message): those that start with a lead form in full. A dated line whose
# window did not decide it and that starts with no bracket lead got no fields from its window either:
# the window is a prefix of the line behind a stamp of the same form, and an anchored pattern that
# matches a prefix matches the line.
_REST_TO_READ = "^(?:" + without_captures(rf"{_BRACKET}|{_GPU}|{_LEVEL}") + ")"
# How many characters after the stamp a line's window holds: its lead and the start of its message. The
# window is as wide as a block's widest lead in its first lines asks, within these bounds: wider
# windows are more distinct (access lines' addresses), narrower ones leave long leads undecided.
_WINDOW = (16, 40)
LEAD_SAMPLE = 256
# What the prefix adds to a line frame, in order.
PREFIX_COLUMNS: tuple[str, ...] = (
    W.UNDATED_TIME,
    W.GPU,
    C.LEVEL,
    C.LOGGER,
    *RANK_TAGS,
    W.PREFIXED,
    W.BODY,
    C.TS,
)


def add_prefix_columns(df: pl.DataFrame, base_date: dt.date | None, by_position: bool = True) -> pl.DataFrame:
    """Add CLEAN, BODY, PREFIXED, rank tags, LEVEL, LOGGER and TS (before day roll-over) to a line frame.

    Lines that start with a dated stamp (`_DATED`) are read by position. The characters after the stamp
    (a window of fixed width) hold the tags, the level and the start of the message; windows are few
    (one per rank and message start), so the lead pattern reads each distinct window once, behind a
    fixed stamp, and says where the lead ends and whether the window alone decides it (`_window_leads`).
    The date and time are sliced, the message sliced off at the lead's end. Of the other lines, one that
    starts with none of the lead's forms has none (`_REST_TO_READ`, tested on these lines only); the
    others are read by the lead pattern (`_pattern_columns`) and their fields put in place. Both ways
    give the same columns: `tests/test_prefix_paths.py` compares them (``by_position=False`` reads every
    line by the pattern)."""
    if df.height == 0 or not by_position:
        return _pattern_columns(clean_frame(df), base_date)
    # A block without codes or carriage returns (nearly every one) is windowed as if it needed no
    # cleaning at all: the windows then tell whether a dated line starts with an outer stamp, and only
    # the undated lines are left to test. A block that needs cleaning is windowed once it is clean.
    text = pl.col(C.TEXT)
    windowed = None if _codes_or_returns(df) else _windowed(df.with_columns(text.alias(W.CLEAN)))
    if windowed is None or _needs_cleaning_at_start(windowed):
        windowed = _windowed(df.with_columns(clean(text).alias(W.CLEAN)))
    df = windowed
    clean_text = pl.col(W.CLEAN)
    on_position = pl.col(W.BY_POSITION).fill_null(False)
    # The lines the position reading does not take and the pattern may read a lead in: the others (most
    # are not SGLang's: `EAGLE3_DEBUG` prints, tracebacks, vLLM's `WARNING 12-01 ...`) are read already.
    rest = df.select(pl.arg_where(~on_position)).to_series()
    rest = rest.filter(df.get_column(W.CLEAN).gather(rest).str.contains(_REST_TO_READ))
    if len(rest) == df.height:
        return _pattern_columns(project(df, *_input_columns(df)), base_date)
    # The window fields no window of the memo has are not joined: a null of their type stands in.
    field = {
        name: pl.col(name) if name in df.columns else pl.lit(None, dtype) for name, dtype in _FIELDS.items()
    }

    def when_taken(expr: pl.Expr) -> pl.Expr:
        return pl.when(on_position).then(expr)

    df = df.select(
        *_input_columns(df),
        pl.lit(None, dtype=pl.String).alias(W.UNDATED_TIME),  # a dated stamp: its date and time are in TS
        *(field[name].alias(name) for name in (W.GPU, C.LEVEL, C.LOGGER)),
        *(
            (pl.coalesce(field[C.TP], field[W.GPU]) if col == C.TP else field[col]).alias(col)
            for col in RANK_TAGS
        ),
        on_position.alias(W.PREFIXED),
        clean_text.str.slice(pl.when(on_position).then(pl.col(W.LEAD_END)).otherwise(0)).alias(W.BODY),
        when_taken(
            clean_text.str.slice(1, 19).str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us", strict=False)
        ).alias(C.TS),
    )
    if not len(rest):
        return df
    read = _pattern_columns(project(df, *_input_columns(df)).gather(rest), base_date)
    return df.with_columns(
        df.get_column(name).scatter(rest, read.get_column(name)) for name in PREFIX_COLUMNS
    )


def _windowed(df: pl.DataFrame) -> pl.DataFrame:
    """``df`` (with CLEAN) with its dated lines' windows (LEAD_KEY) and their readings joined.

    Only a dated line has a window: the others' lead fields come out of the join null, and their position
    reading is not taken. A dated line whose window does not decide it is read by the pattern, and its
    fields replaced, so the window's fields need no test per line."""
    clean_text = pl.col(W.CLEAN)
    width = _window_width(df.get_column(W.CLEAN).head(LEAD_SAMPLE))
    key = pl.when(clean_text.str.contains(_DATED)).then(clean_text.str.slice(_DATED_LEN, width))
    return _WINDOWS.join(df.with_columns(key.alias(W.LEAD_KEY)), width)


def _codes_or_returns(df: pl.DataFrame) -> bool:
    """Whether a line of ``df`` has a colour code or a carriage return (`_NEEDS_CLEANING_ANYWHERE`)."""
    text = pl.col(C.TEXT)
    maybe = text.str.contains(_ESC_OR_CR) | text.str.contains(_DIGIT_M)
    return bool(df.select(text.filter(maybe).str.contains(_NEEDS_CLEANING_ANYWHERE).any()).item())


def _needs_cleaning_at_start(df: pl.DataFrame) -> bool:
    """Whether `clean` would change the start of a line of ``df`` (windowed with CLEAN = TEXT). The tests
    read only the undated lines: a dated line (`[` and ASCII digits) starts with no wrapper and holds no
    spliced record (a glued one is tested apart), and starts with an outer stamp only when its window
    starts with the inner one's bracket (`W.OUTER_STAMP`, read once per window)."""
    text = pl.col(C.TEXT)
    undated = pl.col(W.LEAD_KEY).is_null()
    flags = df.select(
        text.filter(undated).str.contains(_NEEDS_CLEANING_AT_START).any().alias("at_start"),
        pl.col(W.OUTER_STAMP).any().alias("outer"),
    )
    return (
        any(flags.row(0))
        or _any_spliced(df.select(text.filter(undated)).to_series())
        or _any_glued(df.select(text.filter(~undated)).to_series())
    )


# Columns the position reading adds: its working columns and the prefix's own.
_ADDED = frozenset({W.LEAD_KEY, W.OUTER_STAMP, W.BY_POSITION, W.LEAD_END, *PREFIX_COLUMNS})
# The lead fields a window gives, with their types.
_FIELDS: dict[str, pl.DataType] = {
    W.GPU: pl.Int32(),
    C.LEVEL: pl.String(),
    C.LOGGER: pl.String(),
    **{col: pl.Int32() for col in RANK_TAGS},
}


def _input_columns(df: pl.DataFrame) -> list[str]:
    return [name for name in df.columns if name not in _ADDED]


def _window_width(sample: pl.Series) -> int:
    """A window wide enough for the sample's bracket leads and the longest level word after them."""
    dated = sample.filter(sample.str.contains(_DATED))
    # The byte offset of the first `]` (`str.find` would put a regex in polars' cache: `literals.py`).
    before = dated.str.splitn("]", 2).struct.field("field_0").str.len_bytes()
    close = before.filter(has_literal(dated, "]")).max()
    need = (int(close) + 2 - _DATED_LEN + _LONGEST_LEVEL) if isinstance(close, int) else _WINDOW[0]
    return min(max(need, _WINDOW[0]), _WINDOW[1])


class _WindowLeads:
    """`_window_leads` kept across blocks: a process reads the same few windows (ranks, message starts)
    in every block, and reading them costs a dozen small polars calls whatever their number. The memo
    holds the windows of the last `_MEMO_WIDTHS` widths (a block that needs cleaning is windowed before
    and after, maybe at two widths), and a width's are dropped when they grow past `_MEMO_ROWS` (a log
    whose windows hold changing text)."""

    def __init__(self) -> None:
        # Replaced whole, never changed in place: a thread that reads it meanwhile keeps its own.
        self._memo: dict[int, pl.DataFrame] = {}

    def join(self, df: pl.DataFrame, width: int) -> pl.DataFrame:
        """``df`` (with LEAD_KEY) joined to its windows' readings: BY_POSITION, LEAD_END and the lead
        fields that some window has (a field null in every window is left out)."""
        memo = self._memo
        known = memo.get(width)
        if known is None or known.height > _MEMO_ROWS:
            known = _window_leads(df.get_column(W.LEAD_KEY).drop_nulls().unique(), width)
        else:
            # Joined first and the new windows found by their null reading: a block seldom has any, and
            # finding them among the distinct keys cost more than this test of the joined rows.
            joined = df.join(known, on=W.LEAD_KEY, how="left", maintain_order="left")
            unread = pl.col(W.LEAD_KEY).is_not_null() & pl.col(W.BY_POSITION).is_null()
            if not joined.select(unread.any()).item():
                return joined
            new = joined.select(pl.col(W.LEAD_KEY).filter(unread).unique()).to_series()
            known = pl.concat([known, _window_leads(new, width)], how="diagonal_relaxed")
        known = known.select(
            name
            for name in known.columns
            if name not in _FIELDS or known.get_column(name).null_count() < known.height
        )
        others = [(other, windows) for other, windows in memo.items() if other != width]
        self._memo = dict([*others[len(others) + 1 - _MEMO_WIDTHS :], (width, known)])
        return df.join(known, on=W.LEAD_KEY, how="left", maintain_order="left")


_MEMO_ROWS = 4096
_MEMO_WIDTHS = 2
_WINDOWS = _WindowLeads()


def _window_leads(windows: pl.Series, width: int) -> pl.DataFrame:
    """Per distinct window (what follows a dated stamp, ``width`` characters at most): whether the lead
    pattern's reading of it holds for the whole line (BY_POSITION), where the lead ends in the line
    (LEAD_END), and the lead's fields.

    The window decides when the line ends inside it, or when its lead (a bracket: a stamp and valid tags
    were put in front) is followed by a character that is not a space and either has a level, or is
    followed by a message start at least as long as a level word that does not start with one: the
    pattern cannot take more of the line then."""
    groups = _lead_groups(windows, with_fit=True)
    taken_len = pl.col(W.LEAD).str.len_chars() - _DATED_LEN
    rest = pl.col(W.LEAD_KEY).str.slice(taken_len)
    decided = (pl.col(W.LEAD_KEY).str.len_chars() < width) | (
        (rest.str.len_chars() > 0)
        & ~rest.str.starts_with(" ")
        & (
            pl.col(C.LEVEL).is_not_null()
            | ((rest.str.len_chars() >= _LONGEST_LEVEL) & ~rest.str.contains(_LEVEL_START))
        )
    )
    bracket = pl.col(W.TIME).is_not_null() & pl.col(W.LEAD_KEY).str.contains(r"^[ \]]")
    return groups.with_columns(
        (bracket & decided).fill_null(False).alias(W.BY_POSITION),
        pl.col(W.LEAD).str.len_chars().alias(W.LEAD_END),
        pl.col(W.LEAD_KEY).str.contains(_OUTER_WINDOW).alias(W.OUTER_STAMP),
    ).drop(W.LEAD, W.TIME)


def _pattern_columns(df: pl.DataFrame, base_date: dt.date | None) -> pl.DataFrame:
    """The prefix columns of lines read by the lead pattern (a frame with CLEAN).

    One anchored match per line finds the whole lead (SGLang prefix and level), without captures: a
    capture group makes the regex engine leave its fast automaton, and costs five times as much. Leads
    are nearly as many as lines (a timestamp per second and rank), but without their timestamp they are
    few (one per rank and logger), so the named groups are read once per distinct stamp-less lead and
    joined back; the timestamp's fields sit at fixed places and are sliced."""
    lead = df.get_column(W.CLEAN).str.extract(_LEAD_TEXT, 0)
    stamp = lead.str.extract(_STAMP, 0)
    # The lead without its stamp: same groups but the stamp's, few distinct values. A stamped lead's rest
    # starts with ` ` (tags) or `]`, which no lead without a stamp does, so keys of the two never meet.
    lead_col, stamp_col = pl.col(W.LEAD), pl.col(W.STAMP)
    key = lead_col.str.slice(stamp_col.str.len_chars().fill_null(0))
    df = df.with_columns(lead.alias(W.LEAD), stamp.alias(W.STAMP)).with_columns(
        key.alias(W.LEAD_KEY), *_stamp_fields(pl.col(W.STAMP))
    )
    df = df.join(_lead_groups(df.get_column(W.LEAD_KEY)), on=W.LEAD_KEY, how="left", maintain_order="left")
    df = df.with_columns(
        pl.coalesce(pl.col(C.TP), pl.col(W.GPU)).alias(C.TP),
        (pl.col(W.TIME).is_not_null() | pl.col(W.GPU).is_not_null()).alias(W.PREFIXED),
        pl.col(W.CLEAN).str.slice(pl.col(W.LEAD).str.len_chars().fill_null(0)).alias(W.BODY),
        timestamp_expr(base_date).alias(C.TS),
        pl.when(pl.col(W.DATE).is_null()).then(pl.col(W.TIME)).alias(W.TIME),
    )
    # What the day roll-over needs of the stamp once TS holds it: the time of one without a date.
    return discard(df, W.LEAD, W.STAMP, W.LEAD_KEY, W.DATE, W.FRAC).rename({W.TIME: W.UNDATED_TIME})


def _stamp_fields(stamp: pl.Expr) -> list[pl.Expr]:
    """DATE, TIME and FRAC of a `[YYYY-MM-DD HH:MM:SS.ffffff` or `[HH:MM:SS.ffffff` stamp, by position."""
    dated = stamp.str.slice(5, 1) == "-"
    time_at = pl.when(dated).then(12).otherwise(1)
    frac = stamp.str.slice(time_at + 9)
    return [
        pl.when(dated).then(stamp.str.slice(1, 10)).alias(W.DATE),
        stamp.str.slice(time_at, 8).alias(W.TIME),
        pl.when(frac.str.len_bytes() > 0).then(frac).alias(W.FRAC),
    ]


def _lead_groups(keys: pl.Series, with_fit: bool = False) -> pl.DataFrame:
    """Per distinct stamp-less lead: GPU, LEVEL, LOGGER and the six rank tags (null key: no lead). A key
    that lost its stamp gets a fixed one back, for the pattern to read it. ``with_fit`` adds LEAD (what
    the pattern took, with the stamp) and TIME (null when the key's bracket did not read)."""
    distinct = keys.unique().to_frame(W.LEAD_KEY)
    key = pl.col(W.LEAD_KEY)
    stamped = key.str.starts_with(" ") | key.str.starts_with("]")
    lead = pl.when(stamped).then(pl.lit(_KEY_STAMP) + key).otherwise(key)
    groups = (
        distinct.with_columns(lead.alias(W.KEY_LEAD))
        .with_columns(groups_expr(W.KEY_LEAD, _LEAD_WITH_TEXT).alias(W.GROUPS))
        .unnest(W.GROUPS)
    )
    tags = pl.col(W.TAGS)
    return groups.select(
        W.LEAD_KEY,
        *((W.LEAD, W.TIME) if with_fit else ()),
        pl.coalesce(pl.col(W.GPU), pl.col(W.RANK)).cast(pl.Int32).alias(W.GPU),
        C.LEVEL,
        C.LOGGER,
        *(
            tags.str.extract(rf"(?:^| ){tag}(\d+)", 1).cast(pl.Int32).alias(col)
            for col, tag in RANK_TAGS.items()
        ),
    )


def timestamp_expr(base_date: dt.date | None) -> pl.Expr:
    """Timestamp from the prefix; time-only prefixes take ``base_date`` (roll-over is fixed later)."""
    date = pl.col(W.DATE)
    if base_date is not None:
        date = pl.coalesce(date, pl.when(pl.col(W.TIME).is_not_null()).then(pl.lit(base_date.isoformat())))
    frac_us = pl.col(W.FRAC).str.pad_end(6, "0").cast(pl.Int64).fill_null(0)
    whole = pl.concat_str([date, pl.lit(" "), pl.col(W.TIME)]).str.to_datetime(
        "%Y-%m-%d %H:%M:%S", time_unit="us", strict=False
    )
    return whole + pl.duration(microseconds=frac_us)
