"""A run's failure events, before a chain is made of them: every line that carries text (messages,
foreign-format lines, unparsed lines, each line of a traceback) matched against the failure catalog,
an exception line of a traceback that no entry knows as an event of its own, a traceback cut before
its exception line as one too, and the graceful stops."""

from __future__ import annotations

from collections import deque

import polars as pl

from tracelens.analysis.catalog import FAILURES, Weight
from tracelens.analysis.crash_text import CUT_TRACEBACK, TRACEBACK_HEAD
from tracelens.analysis.frame_rules import by_frames
from tracelens.analysis.request_scope import as_requests
from tracelens.analysis.start_steps import frame_step
from tracelens.tables.exceptions import EXCEPTION_LINE_PATTERN, TORCH_RANK
from tracelens.tables.first_match import first_match
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import PROCESS_COLUMNS, C, Kind, T, process_types

# Event columns (working names of the events frame).
TEXT, CODE, RANK, IN_TRACEBACK = "_text", "_code", "_rank", "_in_traceback"
CLIENT, NEXT = "_client", "_next"  # a client's traceback; the text of the line after
WARNED = "_warned"  # a line its program logged as a warning
# start-up or serving, as a traceback's frames say (`_frames_stage`); a start-up's step words in its place
# when a frame names the step (`start_steps`)
STAGE = "_stage"
CUT = "_cut"  # the head of a traceback that ends before its exception line (`_cut_tracebacks`)
GENERIC = "exception"  # the code of an exception line no catalog entry knows
# Frames of code that calls a server (benchmarks, tests, HTTP clients) and of a server's own code.
CLIENT_FRAMES = (
    r'File "[^"]*(?:/tests?/|/test_\w+\.py|bench\w*\.py|/benchmarks?/|/openai/|/requests/|/httpx/|'
    r"/aiohttp/|/unittest/|/_pytest/|/locust/)"
)
SERVER_FRAMES = r'File "[^"]*(?:/sglang/srt/|/vllm/(?:v1|engine|worker|model_executor|distributed|executor)/)'
# Frames of an engine's client: the API server or HTTP front end (vLLM's entrypoints, SGLang's
# entrypoints and tokenizer manager) and the engine client that waits on the engine's processes (vLLM
# V1's AsyncLLM / LLMEngine / core client and the start-up wait in its utils, V0's multiprocessing client).
FRONT_FRAMES = (
    r'File "[^"]*(?:/vllm/entrypoints/|/vllm/v1/engine/(?:core_client|async_llm|llm_engine|output_processor|'
    r"processor|utils)\.py|/vllm/v1/utils\.py|/vllm/engine/multiprocessing/client\.py|/sglang/srt/entrypoints/|"
    r"/sglang/srt/managers/tokenizer_manager\.py|/sglang/launch_server\.py)"
)
# The outermost frame of a process Python started for an engine (`multiprocessing`'s bootstrap, a
# thread's run, `runpy`): Python's own library, not a program of its own.
_STDLIB_FRAME = r'File "(?:<frozen [\w.]+>|[^"]*/lib/python3[\d.]*/[\w/]+\.py)"'
FRONT = "_front"  # a traceback of the engine's client (`_front_end`)
MISPLACED = "_misplaced"  # an exception line printed away from its own traceback (`_pair_exceptions`)
FRONT_CUT = "frontend-cut"  # the code of a cut traceback of the engine's client (a consequence)
FRONT_CUT_TEXT = "the engine's client failed with no exception line in the log"

NOISE = [f.code for f in FAILURES if f.weight == Weight.NOISE]


def _classify(text: pl.Expr, in_traceback: pl.Expr) -> pl.Expr:
    stripped = text.str.strip_chars()
    # A traceback's source line (`    raise ValueError("No available memory ...")`) quotes the message
    # its exception line says: the code is no event of its own.
    code = stripped.str.contains(r"^raise\s+[\w.]+(?:\(|$)")
    known = pl.when(~code).then(first_match((text.str.contains(f.pattern), pl.lit(f.code)) for f in FAILURES))
    generic = (
        in_traceback
        & stripped.str.contains(EXCEPTION_LINE_PATTERN)
        & ~stripped.str.contains(r"^\S*Warning\b")
        & ~stripped.str.contains(r"^Exception raised from ")
    )
    return pl.coalesce(known, pl.when(generic).then(pl.lit(GENERIC)))


_FRAME = r'^\s*File "'
# Of a group of lines that may be a traceback: its first row, its last line, whether it holds frames.
_SPAN = (
    pl.all().first(),
    pl.col(C.LINE_NO).max().alias("_last"),
    pl.col(TEXT).str.contains(_FRAME).any().alias("_frames"),
)


def _front_end() -> pl.Expr:
    """Whether a traceback's frames (TEXT, one line each) are those of an engine's client, not of the
    engine: no frame of the engine's own processes, and a frame of its client (the API server, the
    engine client) or an outermost frame of a program of its own (a script, an RL framework driving
    the engine) rather than Python's bootstrap of an engine process."""
    text = pl.col(TEXT)
    frame = text.str.contains(_FRAME)
    front = frame & text.str.contains(FRONT_FRAMES)
    engine = frame & text.str.contains(SERVER_FRAMES) & ~front  # the engine's own processes
    # the first frame is the outermost only when the traceback's head is there (not an excerpt's middle)
    headed = text.str.contains(TRACEBACK_HEAD, literal=True).any()
    outermost = text.filter(frame).first()
    own = headed & outermost.is_not_null() & ~outermost.str.contains(_STDLIB_FRAME).fill_null(True)
    return ~engine.any() & (front.any() | own)


def _cut_tracebacks(rows: pl.DataFrame, coded: pl.DataFrame) -> pl.DataFrame:
    """The head of each server traceback that ends before its exception line (a log or a copy that stops
    inside it, another process's output in its place), as a fatal event of its process: the failure
    is there even unnamed, and what it set off (the parent's sigquit, a child's exit) is explained by
    it rather than named the cause. A traceback with any event among its lines (its exception line,
    a catalog line behind a prefix) is not cut; one whose frames are not its own lines (vLLM's
    prefixed lines, each a line of its own) is read by `_cut_error_frames`."""
    if IN_TRACEBACK not in rows.columns:
        return pl.DataFrame()
    spans = (
        rows.filter(pl.col(IN_TRACEBACK) & ~pl.col(CLIENT))
        .group_by(C.SOURCE, C.RECORD, maintain_order=True)
        .agg(*_SPAN)
        .filter(pl.col(TEXT).str.contains(TRACEBACK_HEAD, literal=True) & pl.col("_frames"))
    )
    return _uncoded(spans, coded)


def _cut_error_frames(foreign: pl.DataFrame, coded: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """vLLM logs a traceback one ERROR line per line: a stretch of consecutive error lines that holds
    frames and no event (no exception line, no catalog line) is a traceback cut short, a fatal event at
    its first line, as `_cut_tracebacks` makes of SGLang's. Lines a wrapper names by process (workers
    print their tracebacks at once, interleaved) are consecutive when no other line of their process
    (``rows``: every line that carries text) comes between them, and a stretch holds its process'
    events only."""
    if not foreign.height or not foreign.filter(pl.col(IN_TRACEBACK)).height:
        return pl.DataFrame()
    process = [C.SOURCE, *PROCESS_COLUMNS]
    named = (
        _with_process(rows)
        .filter(pl.col(C.PID).is_not_null())
        .select(*process, C.LINE_NO)
        .unique()
        .sort(C.SOURCE, C.LINE_NO)
        .with_columns(pl.int_range(pl.len()).over(process).alias("_at"))
        .select(C.SOURCE, C.LINE_NO, "_at")
    )
    errors = (
        _with_process(foreign)
        .filter(pl.col(IN_TRACEBACK))
        .join(named, on=[C.SOURCE, C.LINE_NO], how="left")
        .with_columns(pl.coalesce("_at", C.LINE_NO).alias("_at"))
        .sort(*process, C.LINE_NO, nulls_last=True)
    )
    changed = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift()) for c in process)
    apart = (pl.col("_at").diff() != 1) | changed
    spans = (
        errors.with_columns(apart.fill_null(True).cum_sum().alias("_stretch"))
        .group_by("_stretch", maintain_order=True)
        .agg(*_SPAN, _frames_stage().alias(STAGE), _front_end().alias(FRONT))
        .filter(pl.col("_frames"))
        .drop("_stretch", "_at")
        # the process is vLLM's (its engine core or a worker: the wrapper naming it is peeled)
        .with_columns(pl.col(C.COMPONENT).fill_null("vLLM"))
    )
    return _uncoded(spans, coded)


# A frame line anywhere in an unparsed line (its wrapper and colour codes are still there), and its function.
_ANY_FRAME = r'File "[^"]*", line \d+, in \S'
_FRAME_FUNCTION = r'File "[^"]*", line \d+, in (\w+)\s*$'
# A frame's source line that is a call (`    scheduler.event_loop_normal()`, `    scheduler = Scheduler(`
# with its arguments on the lines below): the function it calls.
_SOURCE_CALL = r"^\s+(?:[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*)?(?:[\w.]+\.)?(\w+)\((?:.*\))?\s*$"
# The classes of a server's processes, whose construction is its start (SGLang's `Scheduler`, `TpModelWorker`,
# `ModelRunner`; vLLM's `EngineCoreProc`, `WorkerProc`, `LLMEngine`): a call of one is a start-up frame.
_PROCESS_CLASS = r"^(?:[A-Z]\w*)?(?:Scheduler|Worker|Runner|Engine|Core|Proc|Manager|Executor)(?:Class)?$"


def _cut_bare_frames(tables: Tables, unparsed: pl.DataFrame, coded: pl.DataFrame) -> pl.DataFrame:
    """A paste of a traceback's middle: a stretch of consecutive unparsed lines holding frames, with no
    traceback head (a headed one is `_cut_tracebacks`'), no client's frames alone and no event among its
    lines (no exception line), is a traceback cut at both ends: a fatal event at its first line. A
    stretch right under a traceback's line is that traceback's own (an exception group's `| ` lines)."""
    if not unparsed.height:
        return pl.DataFrame()
    under = collect(
        tables.scan(T.LINES)
        .filter(pl.col(C.KIND) == "fault")
        .select(C.SOURCE, (pl.col(C.LINE_NO) + 1).alias(C.LINE_NO), pl.lit(True).alias("_under"))
    )
    rows = unparsed.join(under.unique(), on=[C.SOURCE, C.LINE_NO], how="left").sort(C.SOURCE, C.LINE_NO)
    apart = (pl.col(C.LINE_NO).diff() != 1) | (pl.col(C.SOURCE) != pl.col(C.SOURCE).shift())
    frame = pl.col(TEXT).str.contains(_ANY_FRAME)
    client = (frame & pl.col(TEXT).str.contains(CLIENT_FRAMES)).any() & ~(
        frame & pl.col(TEXT).str.contains(SERVER_FRAMES)
    ).any()
    spans = (
        rows.with_columns(apart.fill_null(True).cum_sum().alias("_stretch"))
        .group_by("_stretch", maintain_order=True)
        .agg(
            pl.all().first(),
            pl.col(C.LINE_NO).max().alias("_last"),
            frame.any().alias("_frames"),
            pl.col(TEXT).str.contains(TRACEBACK_HEAD, literal=True).any().alias("_headed"),
            client.alias("_client"),
            _frames_stage().alias(STAGE),
        )
        .filter(pl.col("_frames") & ~pl.col("_headed") & ~pl.col("_client") & pl.col("_under").is_null())
        .drop("_stretch", "_headed", "_client", "_under")
    )
    return _uncoded(spans, coded)


def _uncoded(spans: pl.DataFrame, coded: pl.DataFrame) -> pl.DataFrame:
    """Of ``spans`` (a first row with RECORD, `_last` its last line), those with no event of ``coded``
    among their lines, each as a cut traceback's event: an engine client's (FRONT) as FRONT_CUT."""
    front = pl.col(FRONT).fill_null(False) if FRONT in spans.columns else pl.lit(False)
    # a span of a process a wrapper names holds only that process' events
    theirs = [pl.col(c).eq_missing(pl.col(f"{c}_ev")) for c in PROCESS_COLUMNS]
    events = _with_process(coded).select(
        C.SOURCE, pl.col(C.LINE_NO).alias("_at"), *(pl.col(c).alias(f"{c}_ev") for c in PROCESS_COLUMNS)
    )
    within = (
        _with_process(spans)
        .select(C.SOURCE, C.RECORD, "_last", *PROCESS_COLUMNS)
        .join(events, on=C.SOURCE)
        .filter(pl.col("_at").is_between(pl.col(C.RECORD), pl.col("_last")))
        .filter(pl.col(C.PID).is_null() | pl.all_horizontal(theirs))
        .select(C.SOURCE, C.RECORD)
        .unique()
    )
    return (
        spans.join(within, on=[C.SOURCE, C.RECORD], how="anti")
        .drop("_last", "_frames")
        .with_columns(
            pl.when(front).then(pl.lit(FRONT_CUT_TEXT)).otherwise(pl.lit(CUT_TRACEBACK)).alias(TEXT),
            pl.when(front).then(pl.lit(FRONT_CUT)).otherwise(pl.lit(GENERIC)).alias(CODE),
            pl.lit(True).alias(CUT),
        )
    )


def _with_process(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with the process columns (null where it has none: an unparsed line's)."""
    missing = [pl.lit(None, dtype).alias(c) for c, dtype in process_types().items() if c not in frame.columns]
    return frame.with_columns(missing) if missing else frame


def _traceback_rows(tables: Tables) -> pl.DataFrame:
    """Each line of each traceback with its own line number (the fault's continuation lines in order)."""
    faults = tables[T.FAULTS]
    if not faults.height:
        return pl.DataFrame()
    heads = faults.select(
        C.SOURCE,
        C.RUN,
        pl.col(C.LINE_NO).alias(C.RECORD),
        pl.coalesce(C.TP, C.DP).alias(RANK),
        *PROCESS_COLUMNS,
        C.TS,
        C.COMPONENT,
        pl.col(C.TRACEBACK).str.split("\n").alias(TEXT),
    ).with_columns(pl.int_ranges(0, pl.col(TEXT).list.len()).alias("_i"))
    parts = collect(
        tables.scan(T.LINES)
        .filter((pl.col(C.KIND) == "fault") & (pl.col(C.RECORD) != pl.col(C.LINE_NO)))
        .select(C.SOURCE, C.RECORD, C.LINE_NO)
    ).sort(C.SOURCE, C.LINE_NO)
    parts = parts.with_columns((pl.int_range(pl.len()).over(C.SOURCE, C.RECORD) + 1).alias("_i"))
    rows = heads.explode(TEXT, "_i").join(parts, on=[C.SOURCE, C.RECORD, "_i"], how="left")
    # A client's traceback (a benchmark, a test harness, an HTTP client library) printed into the
    # server's stream: frames of client code and none of a server's.
    frames = pl.col(TEXT).str.contains(r'^\s*File "')
    client = (frames & pl.col(TEXT).str.contains(CLIENT_FRAMES)).any() & ~(
        frames & pl.col(TEXT).str.contains(SERVER_FRAMES)
    ).any()
    # An exception line between a traceback's head and its first frame is another traceback's end,
    # printed by another process as this one began (`_pair_exceptions` finds whose).
    first_frame = pl.when(frames).then(pl.col("_i")).min().over(C.SOURCE, C.RECORD)
    early = (pl.col("_i") > 0) & (pl.col("_i") < first_frame) & _exception_line(pl.col(TEXT))
    rows = rows.with_columns(
        client.over(C.SOURCE, C.RECORD).alias(CLIENT),
        _frames_stage().over(C.SOURCE, C.RECORD).alias(STAGE),
        _front_end().over(C.SOURCE, C.RECORD).alias(FRONT),
        early.fill_null(False).alias(MISPLACED),
    )
    return rows.select(
        CLIENT,
        C.SOURCE,
        C.RUN,
        pl.coalesce(C.LINE_NO, C.RECORD).alias(C.LINE_NO),
        C.TS,
        RANK,
        *PROCESS_COLUMNS,
        TEXT,
        pl.lit(True).alias(IN_TRACEBACK),
        C.COMPONENT,
        C.RECORD,
        STAGE,
        FRONT,
        MISPLACED,
    )


def _exception_line(text: pl.Expr) -> pl.Expr:
    """A Python exception line (`AssertionError: ...`), not a warning's."""
    stripped = text.str.strip_chars()
    return stripped.str.contains(EXCEPTION_LINE_PATTERN) & ~stripped.str.contains(r"^\S*Warning\b")


# Functions that run only once a server serves: the serving loops and the steps they call. SGLang's
# `event_loop_*` (2024's `forward_step` and its `forward_decode_batch`) and its workers'
# `forward_batch_generation`; vLLM's `run_busy_loop` / `worker_busy_loop`, `_process_engine_step`, V0's
# `engine_step`, its async engine loop and speculative step, the model runner's `execute_model` and
# `sample_tokens` (a start runs its dummy batches through `_dummy_run`, not these), V1's API-side
# `output_handler` and a request's stream generator.
_SERVING_STEPS = (
    r"^(?:event_loop\w*|\w*busy_loop|_process_engine_step|engine_step|execute_model|sample_tokens|"
    r"forward_batch_generation|forward_step|forward_decode_batch|step_async|run_engine_loop|"
    r"_run_speculative_decoding_step|output_handler|\w*completion_stream_generator)$"
)


def _frames_stage() -> pl.Expr:
    """What a traceback's process was doing, from its frames: the first frame that is an object's
    `__init__` or the call that builds a server's process object (`_PROCESS_CLASS`), a step of a start
    (`start_steps`), a warm-up (SGLang's `_wait_and_warmup` / `_execute_server_warmup`, vLLM's
    `compile_or_warm_up_model`: the last step of a start, before the server says it is ready) or a
    serving loop or a step only requests run (`_SERVING_STEPS`) says start-up or serving: a copy that
    leaves out the loop's own frame keeps its step's, and one cut right under the call of the loop
    (`    scheduler.event_loop_normal()`, a frame's source line) the call's. A start-up is said by its
    step instead when a frame names one (the deepest)."""
    # sought anywhere in the line: an unparsed one keeps its wrapper and colour codes
    called = pl.col(TEXT).str.extract(_SOURCE_CALL, 1)
    function = pl.coalesce(pl.col(TEXT).str.extract(_FRAME_FUNCTION, 1), called)
    # a step of a start (`start_steps`) shows a start-up without an `__init__` frame: a paste cut to its
    # deepest frames. The outermost staged frame decides, so a weight update a serving loop calls stays
    # serving; the deepest step names a start-up's.
    step = frame_step(function)
    starting = (
        (function == "__init__")
        | function.str.contains(_PROCESS_CLASS)
        | function.str.contains(r"(?i)warm_?up")
        | step.is_not_null()
    )
    serving = function.str.contains(_SERVING_STEPS)
    stage = first_match([(starting, pl.lit("start-up")), (serving, pl.lit("serving"))]).drop_nulls().first()
    return pl.when(stage == "start-up").then(pl.coalesce(step.drop_nulls().last(), stage)).otherwise(stage)


# torch's per-rank prefix at the start of an unparsed line's text, which the table keeps whole
_RANK_OUTPUT = f"^{TORCH_RANK} "


def _unparsed_rows(tables: Tables) -> pl.DataFrame:
    """Unparsed lines, each given the run whose start precedes it and the rank the parser read (tp: an
    unparsed line has no SGLang prefix, so a wrapper's or torch's `[rankN]: `)."""
    starts = tables[T.RUNS].select(C.SOURCE, C.RUN, pl.col(C.START_LINE).cast(pl.Int64)).sort(C.START_LINE)
    lines = collect(tables.scan(T.UNPARSED).select(C.SOURCE, C.LINE_NO, pl.col(C.TEXT).alias(TEXT)))
    if not lines.height or not starts.height:
        return pl.DataFrame()
    ranks = collect(
        tables.scan(T.LINES)
        .filter((pl.col(C.KIND) == Kind.UNPARSED) & pl.col(C.TP).is_not_null())
        .select(C.SOURCE, C.LINE_NO, pl.col(C.TP).alias(RANK))
    )
    lines = lines.join(ranks, on=[C.SOURCE, C.LINE_NO], how="left")
    above = pl.col(C.LINE_NO).shift(1).over(C.SOURCE) == pl.col(C.LINE_NO) - 1
    under_frame = (above & pl.col(TEXT).shift(1).over(C.SOURCE).str.contains(r"^\s+\S")).fill_null(False)
    # an exception line right above another traceback's head is the end of a traceback (its own head
    # earlier, or before the excerpt began): one process's last line, the next one's first
    heads = tables[T.FAULTS].select(
        C.SOURCE, (pl.col(C.LINE_NO) - 1).alias(C.LINE_NO), pl.lit(True).alias("_head")
    )
    lines = lines.join(heads.unique(), on=[C.SOURCE, C.LINE_NO], how="left")
    over_head = pl.col("_head").fill_null(False) & _exception_line(pl.col(TEXT)) & ~under_frame
    # torch's `[rankN]: ` prefix marks a rank's uncaught-exception output: its exception line is one even
    # when the excerpt kept no frame above it
    rank_output = pl.col(TEXT).str.contains(_RANK_OUTPUT)
    return (
        lines.sort(C.LINE_NO)
        .join_asof(
            starts,
            left_on=C.LINE_NO,
            right_on=C.START_LINE,
            by=C.SOURCE,
            strategy="backward",
            check_sortedness=False,
        )
        .with_columns(pl.col(C.RUN).fill_null(0))
        .select(
            C.SOURCE,
            C.RUN,
            C.LINE_NO,
            pl.lit(None, pl.Datetime("us")).alias(C.TS),
            pl.col(RANK).cast(pl.Int32),
            pl.col(TEXT).str.replace(_RANK_OUTPUT, ""),
            # a traceback pasted without its `Traceback (most recent call last):` header: an exception
            # line right under an indented frame or source line is its exception line
            (under_frame | over_head | rank_output).alias(IN_TRACEBACK),
            pl.lit(None, pl.String).alias(C.COMPONENT),
            pl.col(C.LINE_NO).alias(C.RECORD),
            over_head.alias(MISPLACED),
        )
    )


def _rank_in_text(coded: pl.DataFrame) -> pl.DataFrame:
    """Events whose line names no rank take the one their words name, where their entry says how
    (`Failure.rank_in_text`)."""
    named = [(f.code, f.rank_in_text) for f in FAILURES if f.rank_in_text]
    if not coded.height or not coded.get_column(CODE).is_in([code for code, _ in named]).any():
        return coded
    said = pl.coalesce(
        *(pl.when(pl.col(CODE) == code).then(pl.col(TEXT).str.extract(pattern, 1)) for code, pattern in named)
    )
    return coded.with_columns(pl.coalesce(pl.col(RANK), said.cast(pl.Int32, strict=False)).alias(RANK))


def _message_rows(tables: Tables, table: str) -> pl.DataFrame:
    return collect(
        tables.scan(table).select(
            C.SOURCE,
            C.RUN,
            C.LINE_NO,
            C.TS,
            pl.coalesce(C.TP, C.DP).alias(RANK),
            *PROCESS_COLUMNS,
            pl.col(C.MESSAGE).alias(TEXT),
            # vLLM prints a traceback one ERROR line per line: its exception line is one of them
            pl.col(C.LEVEL).is_in(["ERROR", "CRITICAL", "FATAL"]).fill_null(False).alias(IN_TRACEBACK),
            pl.col(C.LEVEL).is_in(["WARNING", "WARN", "W"]).fill_null(False).alias(WARNED),
            pl.lit(None, pl.String).alias(C.COMPONENT),
            pl.col(C.LINE_NO).alias(C.RECORD),
        )
    )


def _pair_exceptions(coded: pl.DataFrame, cut: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each misplaced exception line (MISPLACED: printed above another traceback's head, or between a
    head and its first frame) paired with its own traceback, by order: the earliest traceback of its run
    before it that is still cut (no exception line of its own). The line takes that traceback's record,
    rank, process and stage, and the traceback is no longer cut. A line with no such traceback is one
    whose head is not in the log: its own event, of no rank. (Such a line carries no rank of its own:
    SGLang prints a traceback's lines without its prefix.) A line whose process a wrapper names (vLLM's
    `(VllmWorker rank=N pid=M)`) pairs with its own process' traceback only (`_own_head`). Returns the
    events and the tracebacks still cut."""
    misplaced = coded.filter(pl.col(MISPLACED))
    if not misplaced.height:
        return coded, cut
    for name, dtype in _TAKEN.items():
        if name not in coded.columns:
            coded = coded.with_columns(pl.lit(None, dtype).alias(name))
    cut, misplaced = _with_process(cut), _with_process(misplaced)
    heads = (
        cut.select(C.SOURCE, C.RUN, C.RECORD, RANK, C.COMPONENT, STAGE, *PROCESS_COLUMNS).to_dicts()
        if cut.height
        else []
    )
    marks = [{**h, "_head": True, C.LINE_NO: h[C.RECORD]} for h in heads]
    lines = misplaced.select(C.SOURCE, C.RUN, C.LINE_NO, *PROCESS_COLUMNS).to_dicts()
    stream = sorted([*marks, *lines], key=lambda r: (r[C.SOURCE], r[C.LINE_NO], not r.get("_head")))
    waiting: dict[tuple[object, object], deque[dict[str, object]]] = {}  # open tracebacks per run
    paired: list[tuple[object, object]] = []
    fixes = []
    for row in stream:
        queue = waiting.setdefault((row[C.SOURCE], row[C.RUN]), deque())
        if row.get("_head"):
            queue.append(row)
            continue
        head = _own_head(queue, row)
        if head is not None:
            paired.append((head[C.SOURCE], head[C.RECORD]))
        got = head or {C.RECORD: row[C.LINE_NO], RANK: None, C.COMPONENT: None, STAGE: None}
        fixes.append({C.SOURCE: row[C.SOURCE], C.LINE_NO: row[C.LINE_NO], **{k: got[k] for k in _TAKEN}})
    fixed = pl.DataFrame(fixes, schema={C.SOURCE: pl.String, C.LINE_NO: pl.Int64, **_TAKEN})
    coded = coded.update(fixed, on=[C.SOURCE, C.LINE_NO], include_nulls=True)
    if paired:
        done = pl.DataFrame(paired, schema={C.SOURCE: pl.String, C.RECORD: pl.Int64}, orient="row")
        cut = cut.join(done, on=[C.SOURCE, C.RECORD], how="anti")
    return coded, cut


def _own_head(queue: deque[dict[str, object]], line: dict[str, object]) -> dict[str, object] | None:
    """The open traceback a misplaced exception line ends, taken off ``queue``: the earliest of its own
    process when a wrapper names the line's (else one no wrapper names: never another process'), the
    earliest of all when none does."""
    if line[C.PID] is None:
        return queue.popleft() if queue else None
    key = tuple(line[c] for c in PROCESS_COLUMNS)
    own = next((h for h in queue if tuple(h[c] for c in PROCESS_COLUMNS) == key), None)
    own = own or next((h for h in queue if h[C.PID] is None), None)
    if own is not None:
        queue.remove(own)
    return own


# What a paired exception line takes of its traceback.
_TAKEN = {C.RECORD: pl.Int64, RANK: pl.Int32, C.COMPONENT: pl.String, STAGE: pl.String}


def events(tables: Tables) -> pl.DataFrame:
    """source, run, line_no, ts, rank, text, code of every failure event (catalog or unknown exception)."""

    def typed(f: pl.DataFrame) -> pl.DataFrame:
        return (
            f.with_columns(pl.col(C.TS).cast(pl.Datetime("us")), pl.col(RANK).cast(pl.Int32))
            if f.height
            else f
        )

    foreign = typed(_message_rows(tables, T.FOREIGN))
    frames = [typed(_traceback_rows(tables)), typed(_message_rows(tables, T.MESSAGES)), foreign]
    unparsed = typed(_unparsed_rows(tables))
    frames = [f for f in [*frames, unparsed] if f.height]
    if not frames:
        return pl.DataFrame()
    rows = pl.concat(frames, how="diagonal_relaxed")
    if CLIENT not in rows.columns:
        rows = rows.with_columns(pl.lit(False).alias(CLIENT))
    rows = rows.with_columns(pl.col(CLIENT).fill_null(False))
    text = pl.col(TEXT)
    coded = _rank_in_text(
        rows.with_columns(_classify(text, pl.col(IN_TRACEBACK)).alias(CODE)).filter(
            pl.col(CODE).is_not_null()
        )
    )
    if MISPLACED not in coded.columns:
        coded = coded.with_columns(pl.lit(False).alias(MISPLACED))
    coded = coded.with_columns(pl.col(MISPLACED).fill_null(False))
    own = coded.filter(~pl.col(MISPLACED))  # what ends each traceback in its own lines
    coded, cut = _pair_exceptions(coded, _cut_tracebacks(rows, own))
    bare = _cut_bare_frames(tables, unparsed, own)
    coded = pl.concat([coded, cut, _cut_error_frames(foreign, own, rows), bare], how="diagonal_relaxed")
    # a message that ends in a colon goes on on the next line (`2 errors happen:`)
    following = rows.select(C.SOURCE, (pl.col(C.LINE_NO) - 1).alias(C.LINE_NO), text.alias(NEXT))
    coded = coded.join(following, on=[C.SOURCE, C.LINE_NO], how="left").sort(C.SOURCE, C.LINE_NO)
    # A traceback that holds a noise line (a monitor thread's NoSuchProcess) is noise as a whole: its
    # other exception lines are that thread's, not the server's.
    noisy = pl.col(CODE).is_in(NOISE).any().over(C.SOURCE, C.RECORD)
    coded = coded.filter(~noisy | pl.col(CODE).is_in(NOISE))
    # The traceback right after a request handler's head line (uvicorn's `Exception in ASGI application`,
    # vLLM's `Error in chat completion stream generator.`) is one request's, cut short or not: it failed
    # that request.
    coded = as_requests(rows, coded, CODE, TEXT, IN_TRACEBACK, (GENERIC, FRONT_CUT))
    # an unknown exception some of whose frames name the failure (a bare TimeoutError of vLLM's worker queue)
    coded = by_frames(rows, coded, CODE, TEXT, IN_TRACEBACK, GENERIC)
    stops = collect(
        tables.scan(T.LIFECYCLE)
        .filter(pl.col(C.EVENT) == "shutdown")
        .select(
            C.SOURCE,
            C.RUN,
            C.LINE_NO,
            pl.col(C.TS).cast(pl.Datetime("us")),
            pl.coalesce(C.TP, C.DP).cast(pl.Int32).alias(RANK),
            pl.lit("Shutting down").alias(TEXT),
            pl.lit(False).alias(IN_TRACEBACK),
            pl.lit(None, pl.String).alias(C.COMPONENT),
            pl.lit("shutdown-signal").alias(CODE),
            pl.col(C.LINE_NO).alias(C.RECORD),
            pl.lit(False).alias(CLIENT),
        )
    )
    return pl.concat([coded, stops], how="diagonal_relaxed").sort(C.SOURCE, C.RUN, C.LINE_NO)
