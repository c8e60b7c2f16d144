"""Working columns: the names of the temporary columns that parsers and the analysis add to a frame while
they compute, and drop before a frame becomes a table (a table column never starts with ``_``). Named
here like every other column, so that two steps cannot pick the same name by accident: every name is
different (`tests/test_working_columns.py` checks it), and a regex group that becomes a working column
is spelt with the constant (``rf"(?P<{W.DATE}>...)"``).

A name that ends in ``_`` or is documented as a prefix is the start of numbered or per-column names
(``f"{W.VALUE}{i}"``, ``f"{W.AT}{column}"``)."""

from __future__ import annotations


class W:
    """Working column names (never part of a table)."""

    # The line frame, while the pipeline reads it (parsers/prefix.py, parsers/pipeline.py).
    CLEAN = "_clean"  # line text without colour codes, tqdm carriage returns and wrappers
    BODY = "_body"  # the message after the prefix (the whole clean text when there is no prefix)
    PREFIXED = "_prefixed"  # SGLang's own prefix was found ([T TAGS], [gpu=N], Rank N:)
    PREFIX = "_prefix"  # the prefix a prefix pattern matched (`explain`)
    DATE = "_date"  # a stamp's pieces, while the lead pattern reads them
    TIME = "_time"
    FRAC = "_frac"
    UNDATED_TIME = "_undated_time"  # HH:MM:SS of a stamp without a date (before v0.3.4), else null
    TAGS = "_tags"
    GPU = "_gpu"
    RANK = "_rank"  # N of a `Rank N: ` prefix
    LEAD = "_lead"  # a line's prefix and level, before its message
    STAMP = "_stamp"  # the date and time of a bracketed lead
    LEAD_KEY = "_lead_key"  # the lead without its stamp: few distinct values
    KEY_LEAD = "_key_lead"  # a distinct LEAD_KEY with a fixed stamp put back, for the lead pattern
    BY_POSITION = "_by_pos"  # a dated line's lead is read by position (its window decides it)
    LEAD_END = "_lead_end"  # where a line's lead ends, in characters: its message starts there
    OUTER_STAMP = "_outer_stamp"  # a dated line's window starts with an inner stamp's `] [` (a collector's)
    ROUTE_TEST = "_route_"  # prefix: whether a line passes the n-th bulk route's test (parsers/pipeline.py)
    CONT = "_cont"  # could continue a multi-line record (traceback frame, wrapped server_args)
    AFTER_FRAME = "_after_frame"  # the line before is a traceback frame
    SEGMENT = "_seg"  # which record a line belongs to: a head and the lines that continue it
    ARGS_HEAD = "_args_head"  # the line number of the `server_args=` head a wrapped line continues
    PROCESS_LEAD = "_process_lead"  # the wrappers before a line's message (parsers/processes.py)
    PROCESS_NAME = "_process_name"  # a process wrapper's name, pid and host, as its pattern reads them
    PROCESS_PID = "_process_pid"
    PROCESS_HOST = "_process_host"
    IS_FRAME = "_is_frame"  # a traceback frame line (parsers/process_records.py)
    LINE_RANK = "_line_rank"  # the rank in a line's process key: tp of a line without SGLang's prefix
    OPEN_FAULT = "_open_fault"  # a process' open traceback, from the block before
    PREV_CONT = "_prev_cont"  # a process' last line before the block could continue a traceback
    PREV_FRAME = "_prev_frame"  # a process' last line before the block was a frame
    EPOCH = "_epoch"  # how many lines of SGLang's prefix a block has up to a line (they close records)
    HEAD_KIND = "_head_kind"  # the kind and line of the head of a line's segment
    HEAD_LINE = "_head_line"
    GLUED_PART = "_glued_part"  # 0: a line's own row; 1, 2, ...: a further record glued onto it
    SECS = "_secs"  # seconds since midnight of a time-only prefix
    DAYS = "_days"  # midnights passed since the block's first line
    ROW = "_row"  # a row's position in its frame
    GROUPS = "_groups"  # a pattern's named groups as one struct, unnested at once
    HEADER = "_header"  # the header a pattern matched (batch and debug lines), read once per distinct one

    # Batch lines (parsers/batch.py).
    BATCH_HEAD = "_head"  # `Decode batch [N], ` with its separator: the body starts after it
    BATCH_PHASE = "_phase"  # the phase as printed: Prefill | Decode | new fill
    BATCH_ITER = "_iter"  # the forward iteration counter, as printed
    KV = "_kv"  # the body of a batch line: its `key: value` items
    COLUMN = "_column"  # the batch column a log key feeds
    SHAPE = "_shape"  # the body with its values cut out
    ITEMS = "_items"  # the body cut at `, `, a struct of ITEM fields
    ITEM = "_it"  # prefix: the n-th item of the body
    LAYOUT = "_layout"  # which of the block's literal batch layouts or lanes a line is of (null or -1: none)
    AT = "_i_"  # prefix: where a column's value sits among the body's values, per shape
    VALUES = "_values"  # the body's values, in order
    VALUE = "_v"  # prefix: the raw value of the n-th known log key
    ODD = "_odd"  # the body has items no known key read (they go to `extra`)
    PAIR = "_pair"  # one `key: value` item of a body
    KEY_VALUE = "_kvs"  # a PAIR as a struct of key and value

    # Debug lines (parsers/debug.py).
    BEFORE_HEADER = "_pre"  # what comes before a debug header in the body, usually nothing
    CLOSE = "_close"  # the header's `]` (null: the line was cut off inside the header)
    SPACE = "_sp"  # the space after the header: items follow
    REST = "_rest"  # the body after the header
    TEMPLATE = "_tpl"  # the body with its `norm=` value cut out (a placeholder in its place)
    SLOT = "_slot"  # the value cut out of the body (null: nothing was cut)
    TEMPLATE_OK = "_tpl_ok"  # a template's placeholder sits where putting the value back is exact
    SLOT_NORM = "_slot_norm"  # the template's `norm` column reads the placeholder: it is the value
    SLOT_ITEM = "_slot_item"  # which of the template's items holds the placeholder (null: none)
    REPEATS = "_repeats"  # how many lines of the block share a template
    SLOT_ITEM_VALUE = "_slot_item_value"  # that item's value when it holds more than the placeholder

    # Access lines (parsers/http.py).
    FIELDS = "_f"  # an access line cut at spaces; also the prefix of its fields (`_f0`, ...)

    # Tracebacks (parsers/faults.py).
    EXCEPTION_LINE = "_e"  # an exception line's groups (type, message)
    TRACEBACK_TEXT = "_tb"  # a fault's continuation lines, joined
    LAST_LINE = "_last"  # a fault's last continuation line
    EXCEPTION_TYPE = "_type"
    EXCEPTION_MESSAGE = "_exc_msg"

    # Foreign formats (parsers/foreign.py): their `level`, `msg` and `ts` groups.
    LEVEL = "_level"
    MESSAGE = "_msg"
    TS_TEXT = "_ts"

    # The analysis (tracelens/analysis/).
    N = "_n"  # rows per group (decode rounds, debug lines, earlier starts)
    SUM = "_sum"  # a group's running sum (earlier starts' times to ready)
    GROUP = "_group"  # which incident a fault belongs to
    ROUND = "_round"  # the n-th decode round of a run (all ranks of one round share it)
    READY = "_ready"  # when the run's server was ready
    LOAD_PAIR = "_load_pair"  # 0 for the first weight load of a rank (target), 1 for the second (draft)
    FROM = "_from"  # when the previous phase of a start began
    ERROR = "_error"  # a finding is an error
    VLLM_LEN = "_vllm_len"  # vLLM's mean acceptance length of a run
    VLLM_RATE = "_vllm_rate"  # and its acceptance rate: accepted / drafted tokens, pooled
    SERVED_LEN = "_served_len"  # a run's accept len and rate from a place other than its lines
    SERVED_RATE = "_served_rate"
    SERVED_ENGINE = "_served_engine"
    SERVED_FROM = "_served_from"
    PLACE_RANK = "_place_rank"  # which of those places is preferred (0 first)
    SPAN = "_span"  # which stretch of a run's `/server_info` snapshots at one depth a snapshot is in
    PRINTED = "_printed"  # the run printed the layer ids it captures
    BUSY = "_busy"  # the run has batch, fault, debug or vLLM metrics lines
    SEEN = "_seen"  # the run's debug lines show an embedding capture
    MEASURED = "_measured"  # why a compared run's speedup could not be measured (`compare.speedup_notes`)
    SPEC_SEEN = "_spec_seen"  # which stats lines of a run show it drafts (`runs.with_speculation`)
    SITES = "_s"  # a run's debug sites, `tag/site/event`
    WIDTH = "_w"  # the last dimension of a debug shape
    NORM_Z = "_z"  # a norm's distance from its site's median, in robust standard deviations
    KEPT = "_kept"  # a row's position in a run's series, before thinning
    RUN_ORDER = "_run_order"  # a run's place among the short runs whose series are made together
    MINUTES = "_x"  # minutes since the run's start
    BUCKET = "_bucket"  # which of a thinned series' buckets a row falls in
    LOW = "_lo"  # a bucket's lowest row
    HIGH = "_hi"  # a bucket's highest row
    MIDDLE = "_mid"  # a bucket's middle row
    BIN = "_bin"  # which time bin of the TUI's acceptance plot a decode round falls in
    CAPTURE_TEXT = "_capture_text"  # a debug line's printed `layers_to_capture` value

    # The live worker's running figures (tracelens/live/running.py): partial sums of decode rounds.
    DP_KEY = "_dp_key"  # a decode line's DP rank, -1 without one (each key counts its own rounds)
    LEN_SUM = "_len_sum"  # sum and count of a round's (or a group of rounds') non-null accept lens
    LEN_N = "_len_n"
    TPUT_SUM = "_tput_sum"  # the same of gen throughput
    TPUT_N = "_tput_n"
    REQ_SUM = "_req_sum"  # the same of running requests (a round's batch size)
    REQ_N = "_req_n"
    WARM = "_warm"  # a decode round is warm-up (`acceptance.is_warm`)
    # A decode line's throughput interval held an idle gap (`acceptance.after_idle`), and its helpers.
    AFTER_IDLE = "_after_idle"
    IDLE_SEEN = "_idle_seen"  # idle lines of its rank before a line
    IDLE_BEFORE = "_idle_before"  # an idle line came after a rank's last decode line (carried on)
    FINITE_SUM = "_finite_sum"  # sum and count of a debug site's finite norms
    FINITE_N = "_finite_n"

    # A run's debug lines as a few rows (tracelens/analysis/debug_digest.py).
    BAD_NORM = "_bad_norm"  # a debug line's norm when it is NaN, infinite or zero
    FIRST_SEEN = "_first_seen"  # the line number and time of a digest row's first line
    FIRST_SEEN_TS = "_first_seen_ts"
    LAST_SEEN = "_last_seen"  # and of its last
    LAST_SEEN_TS = "_last_seen_ts"
    TS_MIN = "_ts_min"  # the earliest and latest time of its lines
    TS_MAX = "_ts_max"
    LINES = "_lines"  # the line numbers of its first lines
    MEDIAN = "_median"  # a debug site's median norm and median absolute deviation
    MAD = "_mad"

    # Hangs by silence (tracelens/analysis/hangs.py).
    SINCE = "_since"  # when a run's work in hand was last seen moving
    MARK = "_mark"  # the line it was seen at
    LAST_BATCH = "_last_batch"  # the run's last batch line
    UNTIL = "_until"  # the run's last timed line after the mark
    EARLIEST = "_earliest"  # its earliest one (before the mark's time: mixed clocks)
    FINISHED_AT = "_finished_at"  # a request finished after the mark

    # Per-request and per-position acceptance (tracelens/analysis/positions.py).
    TO_SOURCE = "_to_source"  # the run a loose request row joins (a server start whose span holds it)
    TO_RUN = "_to_run"
    VERIFY = "_verify"  # a request's verify steps
    ACCEPTED = "_accepted"  # its accepted draft tokens
    DRAFTED = "_drafted"  # its drafted tokens (or an interval's, or a run's drafts counter)
    LENGTH = "_length"  # its acceptance length
    RATE = "_rate"  # its accepted / drafted
    BINS = "_bins"  # its histogram's length (depth + 1)
    HIST_BIN = "_hist_bin"  # a histogram bin: the number of drafts a verify step accepted
    ABOVE = "_above"  # a request's verify steps that accepted more drafts than a position
    SERIES = "_series"  # a counter's labels but `position`: one series per engine and model
    GAIN = "_gain"  # a counter's increase at one snapshot
    LAST = "_last_value"  # a counter's value at the last snapshot
    TOTAL = "_total"  # the sum of those over a run's series
    IDLE = "_idle"  # no draft between a run's counter snapshots: its totals are taken
