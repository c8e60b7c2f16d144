"""The parsers against the team's real corpus (`../shared/corpus/real/*.log`, read in place, never copied).

Four families of checks, each computed independently of the parser with plain Python over the raw bytes:

1. every `Prefill batch` / `Decode batch` / `new fill batch` line is one `batches` row, whose typed fields
   and `extra` items are exactly the line's `key: value` items;
2. exact values of a handful of batch lines across SGLang eras;
3. prefixes and wrappers (Ray, ANSI codes, double timestamps, hard-wrapped `server_args`, mangled and
   interleaved tracebacks, vLLM spec metrics, the 2026 `INFO file.py:N:` form);
4. accounting: every physical line is in `lines` exactly once and in the table of its kind.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from tracelens.engine.ingest import parse_paths
from tracelens.parsers import ParseOptions
from tracelens.tables.frames import Tables
from tracelens.tables.schema import BATCH_FIELDS, KIND_TABLE, RANK_COLUMNS, SCHEMAS, C, Kind, T

from conftest import REAL_CORPUS, missing, real_corpus_files

# Time-only prefixes (011) need a date: pin one so that timestamps do not depend on file mtimes.
BASE_DATE = dt.date(2024, 9, 2)

# --- independent readers (plain Python, no tracelens code) ---------------------------------------------

# SGLang's own prefix, in every era: `[date time(.frac) TAGS] `, `[time TAGS] `, `[gpu=N] `,
# `[gpu_id=N] `, `Rank N: `.
SGLANG_PREFIX = re.compile(
    r"(?:\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d+)?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*\] ?"
    r"|\[gpu(?:_id)?=\d+\] ?|Rank \d+: )$"
)
BATCH_HEADER = re.compile(r"(Prefill|Decode|new fill) batch(?: \[\d+\])?[.,]?")
ANSI_WITH_ESC = re.compile(r"\x1b\[[0-9;]*m")
PHASES = {"Prefill": "prefill", "Decode": "decode", "new fill": "prefill"}

FIELD_BY_KEY = {f.log_key: f for f in BATCH_FIELDS}
TYPED_BATCH_COLUMNS = list(dict.fromkeys(f.column for f in BATCH_FIELDS))
LINE_TABLES = [t for t in SCHEMAS if t not in (T.LINES, T.SERVER_ARGS, T.RUNS)]
NO_RANKS = dict.fromkeys(RANK_COLUMNS)


def corpus_file(number: str) -> Path:
    matches = sorted(REAL_CORPUS.glob(f"{number}_*.log"))
    if not matches:
        missing(f"the real corpus has no file {number}_*.log under {REAL_CORPUS}")
    return matches[0]


def physical_lines(path: Path) -> list[str]:
    """The file's physical lines as a terminal would count them: split on LF, CR of CRLF dropped."""
    data = path.read_bytes()
    pieces = data.split(b"\n")
    if data.endswith(b"\n"):
        pieces.pop()
    return [p.removesuffix(b"\r").decode("utf-8", "replace") for p in pieces]


def line_text(number: str, line_no: int) -> str:
    return physical_lines(corpus_file(number))[line_no - 1]


def batch_header(text: str) -> re.Match[str] | None:
    """The first batch header in a physical line that stands where an SGLang record starts: at column 0
    (early 2024 had no prefix) or right after an SGLang prefix, wherever that prefix is (a log collector's
    outer timestamp, or another process's output spliced in front of it). A header inside other text
    (a traceback's source line, a user's prose) does not count."""
    text = ANSI_WITH_ESC.sub("", text)
    for match in BATCH_HEADER.finditer(text):
        before = text[: match.start()]
        if before == "" or SGLANG_PREFIX.search(before):
            return match
    return None


VLLM_STATS_LINE = re.compile(
    r"^(?:\(\w+ pid=\d+\) )?(?:INFO|DEBUG) \d\d-\d\d [\d:.]+ .*Avg generation throughput: "
)


def vllm_stats(text: str) -> bool:
    """A vLLM engine stats line, at the start of its line after vLLM's prefix: a batch row too."""
    return VLLM_STATS_LINE.match(ANSI_WITH_ESC.sub("", text)) is not None


def batch_items(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(phase, [(key, value)]) of a batch line, by a plain split of the body on `, ` and `. `."""
    match = batch_header(text)
    assert match is not None
    body = ANSI_WITH_ESC.sub("", text)[match.end() :].strip().rstrip(".,").strip()
    items = []
    for piece in re.split(r"[,.]\s+", body):
        key, sep, value = piece.partition(": ")
        if sep:
            items.append((key.strip(), value.strip().rstrip(".")))
    return PHASES[match.group(1)], items


def typed(key: str, raw: str) -> object:
    """What a known batch key's raw value must become in its typed column."""
    field = FIELD_BY_KEY[key]
    kind = str(field.type)
    if kind == "bool":
        return {"True": True, "False": False}[raw]
    if kind == "int64":
        return int(raw)
    if kind == "double":
        return float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    return raw


def same(want: object, got: object) -> bool:
    if isinstance(want, float) and isinstance(got, float):
        return (math.isnan(want) and math.isnan(got)) or math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-12)
    return want == got


# --- parsing, once per file -----------------------------------------------------------------------------


@cache
def _parsed(path: Path) -> Tables:
    return parse_paths([path], ParseOptions(base_date=BASE_DATE))


def parsed(number: str) -> Tables:
    return _parsed(corpus_file(number))


def row_at(tables: Tables, table: str, line_no: int) -> dict:
    rows = tables[table].filter(pl.col(C.LINE_NO) == line_no)
    assert rows.height == 1, f"{table} has {rows.height} rows for line {line_no}"
    return rows.row(0, named=True)


def ranks(row: dict) -> dict:
    return {r: row[r] for r in RANK_COLUMNS}


FILE_PARAMS = [pytest.param(p, id=p.name.split("_", 1)[0]) for p in real_corpus_files()] or [
    pytest.param(None, id="no-corpus")
]


@pytest.fixture
def corpus_path(request: pytest.FixtureRequest, real_corpus: Path) -> Path:
    return request.param


# =========================================================================================================
# 1. Every batch line, every field
# =========================================================================================================


def test_corpus_has_batch_lines(real_corpus: Path) -> None:
    """Guard: the scanner below finds the batch lines the corpus is known to hold (151 in 15 files)."""
    found = {
        p.name[:3]: sum(batch_header(t) is not None for t in physical_lines(p)) for p in real_corpus_files()
    }
    assert found["035"] == 69 and found["017"] == 19 and found["052"] == 19 and found["001"] == 1
    assert sum(found.values()) >= 151


@pytest.mark.parametrize("corpus_path", FILE_PARAMS, indirect=True)
def test_every_batch_line_is_one_batches_row(corpus_path: Path) -> None:
    lines = physical_lines(corpus_path)
    expected = {i: t for i, t in enumerate(lines, 1) if batch_header(t) is not None or vllm_stats(t)}
    batches = _parsed(corpus_path)[T.BATCHES]
    got = batches.get_column(C.LINE_NO).to_list()
    assert len(got) == len(set(got)), "a batch line gave more than one row"
    missing = sorted(set(expected) - set(got))
    assert not missing, f"batch lines with no batches row: {[(n, expected[n][:120]) for n in missing]}"
    # Rows the scan did not expect may only be the unlabelled early-2024 form `#running-req: N, ...`.
    extra = [
        n for n in sorted(set(got) - set(expected)) if not lines[n - 1].lstrip().startswith("#running-req: ")
    ]
    assert not extra, (
        f"batches rows for lines that are not batch lines: {[(n, lines[n - 1][:120]) for n in extra]}"
    )


@pytest.mark.parametrize("corpus_path", FILE_PARAMS, indirect=True)
def test_batch_fields_equal_the_lines_items(corpus_path: Path) -> None:
    """For every batch row: the number of typed non-null fields equals the number of the line's items with
    a known key (`schema.BATCH_FIELDS`), the other items are exactly the `extra` list, so typed non-null +
    len(extra) == number of `key: value` items; and every typed value is the item's value."""
    lines = physical_lines(corpus_path)
    batches = _parsed(corpus_path)[T.BATCHES]
    problems = []
    for row in batches.iter_rows(named=True):
        text = lines[row[C.LINE_NO] - 1]
        if batch_header(text) is None:
            continue  # an unlabelled early-2024 line; checked by test_kinds
        phase, items = batch_items(text)
        known = [(k, v) for k, v in items if k in FIELD_BY_KEY]
        unknown = [(k, v) for k, v in items if k not in FIELD_BY_KEY]
        non_null = [c for c in TYPED_BATCH_COLUMNS if row[c] is not None]
        extra = [(e[C.KEY], e[C.VALUE]) for e in (row[C.EXTRA] or [])]
        wrong = {
            FIELD_BY_KEY[k].column: (typed(k, v), row[FIELD_BY_KEY[k].column])
            for k, v in known
            if not same(typed(k, v), row[FIELD_BY_KEY[k].column])
        }
        if row[C.PHASE] != phase:
            problems.append((row[C.LINE_NO], "phase", phase, row[C.PHASE]))
        if len(non_null) != len(known):
            problems.append((row[C.LINE_NO], "typed non-null", len(known), non_null))
        if len(non_null) + len(extra) != len(items):
            problems.append(
                (row[C.LINE_NO], "typed + extra != items", len(items), len(non_null) + len(extra))
            )
        if extra != unknown:
            problems.append((row[C.LINE_NO], "extra", unknown, extra))
        if wrong:
            problems.append((row[C.LINE_NO], "values (wanted, got)", wrong))
    assert not problems, problems


PREFIX_PARTS = re.compile(
    r"\[(?:(?P<date>\d{4}-\d\d-\d\d) )?(?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<frac>\d+))?(?P<tags>(?: [A-Z_]+\d+)*)\] ?$"
    r"|\[gpu(?:_id)?=(?P<gpu>\d+)\] ?$|Rank (?P<rank>\d+): $"
)
TAG_COLUMNS = {"DP": C.DP, "PP": C.PP, "ATTN_CP": C.ATTN_CP, "MOE_DP": C.MOE_DP, "TP": C.TP, "EP": C.EP}


def prefix_of(text: str) -> tuple[dt.datetime | None, dict]:
    """(ts, rank tags) from the SGLang prefix right before a line's batch header (the inner one when a
    log collector added its own timestamp in front)."""
    text = ANSI_WITH_ESC.sub("", text)
    match = batch_header(text)
    assert match is not None
    m = PREFIX_PARTS.search(text[: match.start()])
    tags = dict(NO_RANKS)
    if m is None:
        return None, tags
    if m.group("gpu") or m.group("rank"):
        tags[C.TP] = int(m.group("gpu") or m.group("rank"))
        return None, tags
    for tag in m.group("tags").split():
        name, number = re.fullmatch(r"([A-Z_]+?)(\d+)", tag).groups()
        tags[TAG_COLUMNS[name]] = int(number)
    day = dt.date.fromisoformat(m.group("date")) if m.group("date") else BASE_DATE
    ts = dt.datetime.combine(day, dt.time.fromisoformat(m.group("time")))
    if m.group("frac"):
        ts += dt.timedelta(microseconds=int(m.group("frac").ljust(6, "0")))
    return ts, tags


@pytest.mark.parametrize("corpus_path", FILE_PARAMS, indirect=True)
def test_batch_rows_carry_their_prefix_ts_and_rank_tags(corpus_path: Path) -> None:
    lines = physical_lines(corpus_path)
    wrong = []
    for row in _parsed(corpus_path)[T.BATCHES].iter_rows(named=True):
        text = lines[row[C.LINE_NO] - 1]
        if batch_header(text) is None:
            continue
        ts, tags = prefix_of(text)
        if (row[C.TS], ranks(row)) != (ts, tags):
            wrong.append((row[C.LINE_NO], (ts, tags), (row[C.TS], ranks(row))))
    assert not wrong, wrong


# =========================================================================================================
# 2. Exact values on chosen lines across eras
# =========================================================================================================

EXACT_BATCHES = [
    pytest.param(
        "001",
        40,
        None,
        NO_RANKS,
        {
            C.PHASE: "prefill",
            C.NEW_SEQ: 1,
            C.CACHED_TOKEN: 0,
            C.NEW_TOKEN: 27,
            C.REMAINING_REQ: 0,
            C.RUNNING_REQ: 0,
        },
        id="001-early-2024-new-fill-batch-crlf",
    ),
    pytest.param(
        "003",
        7,
        None,
        NO_RANKS,
        {
            C.PHASE: "prefill",
            C.NEW_SEQ: 1,
            C.CACHED_TOKEN: 9,
            C.NEW_TOKEN: 8,
            C.REMAINING_REQ: 0,
            C.RUNNING_REQ: 0,
            C.CACHE_HIT_RATE: 0.4992,
        },
        id="003-tree-cache-hit-rate",
    ),
    pytest.param(
        "007",
        2,
        None,
        {**NO_RANKS, C.TP: 0},
        {
            C.PHASE: "prefill",
            C.NEW_SEQ: 17,
            C.NEW_TOKEN: 13938,
            C.CACHED_TOKEN: 3260,
            C.CACHE_HIT_RATE: 0.1786,
            C.RUNNING_REQ: 1,
            C.QUEUE_REQ: 2,
        },
        id="007-gpu-prefix-cache-hit-rate",
    ),
    pytest.param(
        "011",
        1,
        dt.datetime.combine(BASE_DATE, dt.time(11, 19, 46)),
        {**NO_RANKS, C.TP: 0},
        {
            C.PHASE: "decode",
            C.RUNNING_REQ: 36,
            C.TOKEN: 14473,
            C.TOKEN_USAGE: 0.03,
            C.GEN_THROUGHPUT: 2283.73,
            C.QUEUE_REQ: 0,
        },
        id="011-time-only-prefix",
    ),
    pytest.param(
        "035",
        14,
        dt.datetime(2025, 3, 11, 1, 16, 58),
        {**NO_RANKS, C.TP: 0},
        {
            C.PHASE: "prefill",
            C.NEW_SEQ: 9,
            C.NEW_TOKEN: 8192,
            C.CACHED_TOKEN: 1055,
            C.CACHE_HIT_RATE: 0.2335,
            C.TOKEN_USAGE: 0.0,
            C.RUNNING_REQ: 1,
            C.QUEUE_REQ: 6,
        },
        id="035-double-timestamp-inner-utc-wins",
    ),
    pytest.param(
        "047",
        7,
        dt.datetime(2025, 5, 28, 6, 32, 54),
        {**NO_RANKS, C.TP: 0},
        {
            C.PHASE: "prefill",
            C.NEW_SEQ: 1,
            C.NEW_TOKEN: 23,
            C.CACHED_TOKEN: 0,
            C.TOKEN_USAGE: 0.0,
            C.RUNNING_REQ: 0,
            C.UNBOOTSTRAPPED_REQ: 0,
            C.QUEUE_REQ: 0,
            C.TRANSFERRING_REQ: 0,
        },
        id="047-pd-unbootstrapped-transferring-trailing-space",
    ),
    pytest.param(
        "049",
        20,
        dt.datetime(2025, 6, 3, 20, 16, 55),
        {**NO_RANKS, C.TP: 0},
        {
            C.PHASE: "prefill",
            C.NEW_SEQ: 1,
            C.NEW_TOKEN: 2025,
            C.CACHED_TOKEN: 0,
            C.TOKEN_USAGE: 0.0,
            C.RUNNING_REQ: 0,
            C.UNBOOTSTRAPPED_REQ: 0,
            C.QUEUE_REQ: 0,
            C.TRANSFERRING_REQ: 0,
            C.EXTRA: [{C.KEY: "time", C.VALUE: "165.77"}],
        },
        id="049-unknown-key-goes-to-extra",
    ),
    pytest.param(
        "051",
        2,
        dt.datetime(2025, 6, 5, 14, 56, 29),
        {**NO_RANKS, C.TP: 0},
        {
            C.PHASE: "decode",
            C.RUNNING_REQ: 62,
            C.TOKEN: 167777,
            C.TOKEN_USAGE: 0.81,
            C.GRAPH: True,
            C.GEN_THROUGHPUT: 896.73,
            C.QUEUE_REQ: 2,
        },
        id="051-cuda-graph",
    ),
    pytest.param(
        "052",
        13,
        dt.datetime(2025, 6, 7, 21, 21, 9),
        {**NO_RANKS, C.TP: 0},
        {
            C.PHASE: "decode",
            C.RUNNING_REQ: 1,
            C.TOKEN: 9448,
            C.TOKEN_USAGE: 0.0,
            C.ACCEPT_LEN: 2.38,
            C.GEN_THROUGHPUT: 79.63,
            C.QUEUE_REQ: 0,
        },
        id="052-eagle-accept-len",
    ),
    pytest.param(
        "055",
        1,
        dt.datetime(2025, 7, 2, 11, 36, 23),
        {**NO_RANKS, C.DP: 5, C.TP: 5},
        {
            C.PHASE: "decode",
            C.RUNNING_REQ: 1,
            C.TOKEN: 2765,
            C.TOKEN_USAGE: 0.01,
            C.PREALLOCATED_USAGE: 0.0,
            C.RETRACTED_REQ: 0,
            C.GRAPH: True,
            C.GEN_THROUGHPUT: 15.02,
            C.QUEUE_REQ: 0,
        },
        id="055-dp-tags-preallocated-retracted-graph",
    ),
]


@pytest.mark.parametrize(("number", "line_no", "ts", "rank_tags", "fields"), EXACT_BATCHES)
def test_batch_line_exact_values(
    real_corpus: Path, number: str, line_no: int, ts: dt.datetime | None, rank_tags: dict, fields: dict
) -> None:
    row = row_at(parsed(number), T.BATCHES, line_no)
    assert row[C.TS] == ts
    assert ranks(row) == rank_tags
    assert row[C.FORWARD_ITER] is None
    # Every typed column: the listed value, or null when the line does not carry that field.
    wrong = {c: (fields.get(c), row[c]) for c in TYPED_BATCH_COLUMNS if not same(fields.get(c), row[c])}
    assert not wrong, f"column: (wanted, got) {wrong}"
    assert row[C.PHASE] == fields[C.PHASE]
    assert (row[C.EXTRA] or None) == fields.get(C.EXTRA)


# =========================================================================================================
# 3. Prefixes, wrappers and multi-line records
# =========================================================================================================

RAY_VLLM = re.compile(
    r"^\[36m\((?:RayWorkerWrapper )?pid=\d+(?:, ip=[\d.]+)?\)\[0m "
    r"(?P<level>INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+:\d+\] (?P<msg>.*)$"
)


def test_043_ray_wrapped_vllm_lines_are_foreign_without_colour_remnants(real_corpus: Path) -> None:
    lines = physical_lines(corpus_file("043"))
    tables = parsed("043")
    expected = {i: RAY_VLLM.match(t) for i, t in enumerate(lines, 1)}
    expected = {i: m for i, m in expected.items() if m}
    assert len(expected) >= 40, "the Ray-wrapped vLLM lines of 043 were not found"
    wrong = []
    for line_no, m in expected.items():
        row = row_at(tables, T.FOREIGN, line_no)
        message = m.group("msg").replace("[32m", "").replace("[0m", "")
        if (row[C.FORMAT], row[C.LEVEL], row[C.MESSAGE]) != ("vllm", m.group("level"), message):
            wrong.append((line_no, (row[C.FORMAT], row[C.LEVEL], row[C.MESSAGE]), message))
    assert not wrong, wrong


@pytest.mark.parametrize(
    ("line_no", "fmt", "level", "message"),
    [
        (36, "c10d", "WARNING", "[c10d] The hostname of the client socket cannot be retrieved. err=-3"),
        (201, "vllm", "INFO", "Found nccl from library libnccl.so.2"),
        (205, "vllm", "INFO", "Found nccl from library libnccl.so.2 [repeated 15x across cluster]"),
        (208, "vllm", "INFO", "rank 5 in world size 16 is assigned as DP rank 0, PP rank 0, TP rank 5"),
    ],
)
def test_043_ray_wrapped_lines_exact(
    real_corpus: Path, line_no: int, fmt: str, level: str, message: str
) -> None:
    assert line_text("043", line_no).startswith("[36m(")
    row = row_at(parsed("043"), T.FOREIGN, line_no)
    assert (row[C.FORMAT], row[C.LEVEL], row[C.MESSAGE]) == (fmt, level, message)
    assert row_at(parsed("043"), T.LINES, line_no)[C.KIND] == Kind.FOREIGN


def test_057_raw_ansi_escapes_inside_sglang_prefixed_lines(real_corpus: Path) -> None:
    lines = physical_lines(corpus_file("057"))
    with_esc = [i for i, t in enumerate(lines, 1) if "\x1b[" in t and t.startswith("[2026-")]
    assert with_esc == [1052, 1286]
    tables = parsed("057")
    first = row_at(tables, T.MESSAGES, 1052)
    assert first[C.TS] == dt.datetime(2026, 2, 26, 6, 24, 34)
    assert ranks(first) == NO_RANKS
    assert (first[C.LEVEL], first[C.LOGGER]) == ("INFO", "core.py:695")
    second = row_at(tables, T.MESSAGES, 1286)
    assert second[C.TS] == dt.datetime(2026, 2, 26, 6, 25, 13)
    assert ranks(second) == {**NO_RANKS, C.TP: 3}
    for row in (first, second):
        assert "\x1b" not in row[C.MESSAGE] and "[32m" not in row[C.MESSAGE] and "[0m" not in row[C.MESSAGE]
        assert row[C.MESSAGE].startswith("finish build ")


@pytest.mark.parametrize(
    ("table", "line_no", "message"),
    [
        (
            T.MESSAGES,
            2,
            "import [module_aiter_enum] under /sgl-workspace/aiter/aiter/jit/module_aiter_enum.so",
        ),
        (T.MESSAGES, 1052, "finish build [module_aiter_enum], cost 7.2s"),
        (T.MESSAGES, 1286, "finish build [module_custom_all_reduce], cost 22.9s"),
        (
            T.FOREIGN,
            1,
            "import [module_aiter_enum] under /sgl-workspace/aiter/aiter/jit/module_aiter_enum.so",
        ),
    ],
)
def test_057_bracketed_text_starting_with_m_is_not_a_colour_code(
    real_corpus: Path, table: str, line_no: int, message: str
) -> None:
    assert row_at(parsed("057"), table, line_no)[C.MESSAGE].strip() == message


def test_057_2026_level_logger_lines_are_messages(real_corpus: Path) -> None:
    lines = physical_lines(corpus_file("057"))
    form = re.compile(
        r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: [A-Z_]+\d+)*\] (INFO|WARNING|ERROR|DEBUG) ([\w.]+:\d+): "
    )
    expected = {i: m for i, t in enumerate(lines, 1) if (m := form.match(t)) and "core.py:501" in t}
    assert len(expected) >= 8
    tables = parsed("057")
    for line_no, m in expected.items():
        assert row_at(tables, T.LINES, line_no)[C.KIND] == Kind.MESSAGE
        row = row_at(tables, T.MESSAGES, line_no)
        assert (row[C.LEVEL], row[C.LOGGER]) == (m.group(2), m.group(3))
        assert row[C.TS] == dt.datetime.fromisoformat(m.group(1))
        assert row[C.MESSAGE].startswith("import ")


def _wrapped_server_args(number: str) -> tuple[int, int, str]:
    """(first line, last line, joined text) of the first hard-wrapped `server_args=` record of a file."""
    lines = physical_lines(corpus_file(number))
    start = next(i for i, t in enumerate(lines) if "server_args=ServerArgs(" in t)
    end = start
    while not lines[end].rstrip().endswith(")"):
        end += 1
    return start + 1, end + 1, "".join(lines[start : end + 1])


def test_021_hard_wrapped_server_args_join_into_one_record(real_corpus: Path) -> None:
    first, last, joined = _wrapped_server_args("021")
    assert (first, last) == (1, 9)
    body = joined.split("server_args=ServerArgs(", 1)[1]
    keys = re.findall(r"(?:^|, )([a-z_][a-z0-9_]*)=", body)
    tables = parsed("021")
    args = tables[T.SERVER_ARGS]
    assert set(args.get_column(C.LINE_NO).to_list()) == {first}
    assert set(args.get_column(C.FORM).to_list()) == {"repr"}
    assert args.get_column(C.KEY).to_list() == keys
    values = dict(zip(args.get_column(C.KEY).to_list(), args.get_column(C.VALUE).to_list(), strict=True))
    assert values["tp_size"] == "16"
    assert values["dp_size"] == "1"
    assert values["nnodes"] == "2"
    assert values["model_path"] == "/code/llm-benchmark-script/data/raw/DeepSeek-V3"
    assert values["disable_cuda_graph"] == "True"
    assert values["enable_hierarchical_cache"] == "False"
    # The wrapped pieces are continuation lines of the record.
    for line_no in range(first, last + 1):
        row = row_at(tables, T.LINES, line_no)
        assert (row[C.KIND], row[C.RECORD]) == (Kind.LIFECYCLE, first)
    run = tables[T.RUNS].filter(pl.col(C.START_LINE) == first).row(0, named=True)
    assert run[C.START_TS] == dt.datetime(2025, 2, 8, 0, 24, 47)
    assert (run[C.TP_SIZE], run[C.DP_SIZE], run[C.EP_SIZE], run[C.PP_SIZE]) == (16, 1, 1, None)
    assert run[C.MODEL] == "/code/llm-benchmark-script/data/raw/DeepSeek-V3"
    assert run[C.DISABLE_CUDA_GRAPH] is True
    assert run[C.SPEC_ALGORITHM] is None
    assert run[C.SPEC_NUM_STEPS] == 5
    assert run[C.LINE_COUNT] == len(physical_lines(corpus_file("021")))
    head = row_at(tables, T.LIFECYCLE, first)
    assert head[C.EVENT] == "server_args"


def _scheduler_heads(number: str) -> dict[int, int]:
    """{line_no: tp rank} of `[... TPn] Scheduler hit an exception` lines."""
    heads = {}
    for i, t in enumerate(physical_lines(corpus_file(number)), 1):
        m = re.match(r"^\[[\d\- :]+ TP(\d+)\] Scheduler hit an exception", t)
        if m:
            heads[i] = int(m.group(1))
    return heads


def test_023_markdown_mangled_tracebacks_are_scheduler_runtime_errors(real_corpus: Path) -> None:
    lines = physical_lines(corpus_file("023"))
    heads = _scheduler_heads("023")
    assert sorted(heads.values()) == [0, 2, 3]
    faults = parsed("023")[T.FAULTS]
    for head, tp in heads.items():
        # The traceback's end: its `RuntimeError: ...` line (indentation was lost, so no shape helps).
        end = next(i for i in range(head, len(lines) + 1) if lines[i - 1].startswith("RuntimeError: "))
        rows = faults.filter(pl.col(C.FIRST_LINE) == head)
        assert rows.height == 1
        row = rows.row(0, named=True)
        assert (row[C.COMPONENT], row[C.TP], row[C.EXCEPTION_TYPE]) == ("Scheduler", tp, "RuntimeError")
        assert row[C.LAST_LINE] == end
        assert row[C.TRACEBACK].count("\n") == end - head


def test_015_interleaved_rank_tracebacks_give_scheduler_faults_per_rank(real_corpus: Path) -> None:
    heads = _scheduler_heads("015")
    assert sorted(heads.values()) == list(range(8))
    faults = parsed("015")[T.FAULTS].filter(pl.col(C.COMPONENT) == "Scheduler")
    got = dict(zip(faults.get_column(C.FIRST_LINE).to_list(), faults.get_column(C.TP).to_list(), strict=True))
    assert got == heads
    assert set(faults.get_column(C.FAULT_KIND).to_list()) == {"exception"}
    assert all(row[C.LAST_LINE] > row[C.FIRST_LINE] for row in faults.iter_rows(named=True))


def test_015_traceback_ends_at_its_exception_line(real_corpus: Path) -> None:
    lines = physical_lines(corpus_file("015"))
    ends = [i for i, t in enumerate(lines, 1) if t.startswith("triton.runtime.errors.OutOfResources: ")]
    assert len(ends) == 8
    faults = parsed("015")[T.FAULTS].filter(pl.col(C.COMPONENT) == "Scheduler").sort(C.FIRST_LINE)
    assert faults.get_column(C.LAST_LINE).to_list() == ends
    assert set(faults.get_column(C.EXCEPTION_TYPE).to_list()) == {"triton.runtime.errors.OutOfResources"}


def test_039_vllm_spec_decoding_metrics(real_corpus: Path) -> None:
    lines = physical_lines(corpus_file("039"))
    expected = [i for i, t in enumerate(lines, 1) if "SpecDecoding metrics: Draft acceptance rate: nan%" in t]
    assert expected == [2, 4, 6]
    spec = parsed("039")[T.SPEC_METRICS]
    assert spec.get_column(C.LINE_NO).to_list() == expected
    for row in spec.iter_rows(named=True):
        assert row[C.LAYOUT] == "vllm_v1_early"
        assert math.isnan(row[C.ACCEPTANCE_RATE])
        assert (row[C.ACCEPTED], row[C.DRAFTED]) == (0, 0)
        assert row[C.MEAN_ACCEPTANCE_LENGTH] is None
    # The engine stats between them are batch rows: nothing running or waiting, phase idle.
    stats = parsed("039")[T.BATCHES]
    assert stats.get_column(C.LINE_NO).to_list() == [1, 3, 5]
    assert set(stats.get_column(C.PHASE).to_list()) == {"idle"}
    assert set(stats.get_column(C.CACHE_HIT_RATE).to_list()) == {0.5}


@pytest.mark.parametrize("number", ["009", "055"])
def test_traceback_ends_with_its_bare_exception_line(real_corpus: Path, number: str) -> None:
    lines = physical_lines(corpus_file(number))
    head = 12
    assert "Traceback (most recent call last)" in lines[head - 1]
    exception_line = next(i for i in range(head, len(lines) + 1) if lines[i - 1].startswith("Exception: "))
    row = parsed(number)[T.FAULTS].filter(pl.col(C.FIRST_LINE) == head).row(0, named=True)
    assert row[C.EXCEPTION_TYPE] == "Exception"
    assert row[C.LAST_LINE] >= exception_line
    assert row_at(parsed(number), T.LINES, exception_line)[C.RECORD] == head


def test_023_a_frames_source_line_is_not_a_fault_of_its_own(real_corpus: Path) -> None:
    lines = physical_lines(corpus_file("023"))
    assert re.match(r'^\s*File "[^"]*", line \d+', lines[22])
    assert lines[23].startswith("raise RuntimeError(")
    faults = parsed("023")[T.FAULTS]
    assert 24 not in faults.get_column(C.FIRST_LINE).to_list()


@pytest.mark.parametrize(
    ("number", "line_no", "table", "ts", "tp"),
    [
        ("049", 71, T.HTTP, dt.datetime(2025, 6, 3, 20, 4, 36), None),
        ("021", 199, T.MESSAGES, dt.datetime(2025, 2, 8, 0, 25, 32), 15),
    ],
)
def test_sglang_record_spliced_mid_line_is_found(
    real_corpus: Path, number: str, line_no: int, table: str, ts: dt.datetime, tp: int | None
) -> None:
    text = line_text(number, line_no)
    start = text.index("[2025-")
    assert start > 0 and SGLANG_PREFIX.search(text[: text.index("]", start) + 2])
    row = row_at(parsed(number), table, line_no)
    assert (row[C.TS], row[C.TP]) == (ts, tp)
    if table == T.HTTP:
        assert (row[C.METHOD], row[C.PATH], row[C.STATUS], row[C.CLIENT]) == (
            "POST",
            "/generate",
            200,
            "10.93.81.13:47506",
        )
    else:
        assert row[C.MESSAGE] == "Custom allreduce is disabled because this process group spans across nodes."


# =========================================================================================================
# 4. Accounting: every physical line once, in the table of its kind
# =========================================================================================================


@pytest.mark.parametrize("corpus_path", FILE_PARAMS, indirect=True)
def test_every_physical_line_is_in_lines_once(corpus_path: Path) -> None:
    data = corpus_path.read_bytes()
    n = len(physical_lines(corpus_path))
    lines = _parsed(corpus_path)[T.LINES]
    assert lines.get_column(C.LINE_NO).to_list() == list(range(1, n + 1))
    assert set(lines.get_column(C.SOURCE).to_list()) == {str(corpus_path)}
    # Offsets tile the file: each line starts where the previous one (and its LF) ended.
    offsets = lines.get_column(C.BYTE_OFFSET).to_list()
    lengths = lines.get_column(C.BYTE_LEN).to_list()
    assert offsets[0] == 0
    assert all(offsets[i + 1] == offsets[i] + lengths[i] + 1 for i in range(n - 1))
    assert offsets[-1] + lengths[-1] + (1 if data.endswith(b"\n") else 0) == len(data)
    assert set(lines.get_column(C.KIND).to_list()) <= set(KIND_TABLE)


@pytest.mark.parametrize("corpus_path", FILE_PARAMS, indirect=True)
def test_every_line_is_in_the_table_of_its_kind(corpus_path: Path) -> None:
    tables = _parsed(corpus_path)
    lines = tables[T.LINES]
    raw = physical_lines(corpus_path)
    heads_of = {
        name: set(tables[name].get_column(C.FIRST_LINE if name == T.FAULTS else C.LINE_NO).to_list())
        for name in LINE_TABLES
    }
    problems = []
    for line_no, kind, record in lines.select(C.LINE_NO, C.KIND, C.RECORD).iter_rows():
        if kind == Kind.BLANK:
            if raw[line_no - 1].strip() and not re.fullmatch(
                r"(?:\x1b?\[\d*m|\((?:\w+ )?pid=\d+[^)]*\)|\s)*", raw[line_no - 1]
            ):
                problems.append((line_no, "blank but has text", raw[line_no - 1][:80]))
            continue
        table = KIND_TABLE[kind]
        if record not in heads_of[table]:
            problems.append((line_no, kind, "record", record, f"not a row of {table}"))
    # The other direction: every row of a line-level table is a head line of that kind, once.
    kind_of = dict(
        zip(lines.get_column(C.LINE_NO).to_list(), lines.get_column(C.KIND).to_list(), strict=True)
    )
    record_of = dict(
        zip(lines.get_column(C.LINE_NO).to_list(), lines.get_column(C.RECORD).to_list(), strict=True)
    )
    for name in LINE_TABLES:
        col = C.FIRST_LINE if name == T.FAULTS else C.LINE_NO
        rows = tables[name].get_column(col).to_list()
        if len(rows) != len(set(rows)):
            problems.append((name, "duplicate rows", sorted(n for n in set(rows) if rows.count(n) > 1)))
        for line_no in rows:
            if KIND_TABLE.get(kind_of.get(line_no)) != name or record_of.get(line_no) != line_no:
                problems.append(
                    (name, line_no, "row whose line is", kind_of.get(line_no), record_of.get(line_no))
                )
    assert not problems, problems[:20]


@pytest.mark.parametrize("corpus_path", FILE_PARAMS, indirect=True)
def test_blank_lines_are_only_in_lines(corpus_path: Path) -> None:
    tables = _parsed(corpus_path)
    lines = tables[T.LINES]
    blank = set(lines.filter(pl.col(C.KIND) == Kind.BLANK).get_column(C.LINE_NO).to_list())
    raw = physical_lines(corpus_path)
    # An empty physical line is blank, unless it sits inside a record (a chained traceback) it continues.
    records = dict(
        zip(lines.get_column(C.LINE_NO).to_list(), lines.get_column(C.RECORD).to_list(), strict=True)
    )
    empty = {i for i, t in enumerate(raw, 1) if not t.strip()}
    assert {i for i in empty - blank if records[i] == i} == set()
    for name in LINE_TABLES:
        assert not blank & set(tables[name].get_column(C.LINE_NO).to_list()), name


@pytest.mark.parametrize("corpus_path", FILE_PARAMS, indirect=True)
def test_runs_partition_the_lines_at_server_args_records(corpus_path: Path) -> None:
    raw = physical_lines(corpus_path)
    tables = _parsed(corpus_path)
    runs = tables[T.RUNS]
    assert sum(runs.get_column(C.LINE_COUNT).to_list()) == len(raw)
    # Each run after run 0 starts at a server start, and only there: SGLang's `server_args=` line, or
    # vLLM's `vLLM API server version` line, its banner's `version X.Y.Z`, or its logo-off form.
    starts = [i for i, t in enumerate(raw, 1) if re.match(r"^(?:\[[\d\- :.,]+\] )?server_args=", t)]
    vllm = [
        i
        for i, t in enumerate(raw, 1)
        if re.search(
            r"\] vLLM API server version \S+$|\u2588  version \S+$|\] vLLM server version \S+, serving model ",
            t,
        )
    ]
    later = runs.filter(pl.col(C.RUN) > 0)
    assert later.get_column(C.START_LINE).to_list() == sorted(starts + vllm)
    events = tables[T.LIFECYCLE].filter(pl.col(C.LINE_NO).is_in(starts)).get_column(C.EVENT).to_list()
    assert events == ["server_args"] * len(starts)
