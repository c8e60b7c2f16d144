"""The live session's parser and analyser, in a process of their own.

Why a process: a parse or an analysis of a growing log holds Python's interpreter lock for tens of
milliseconds at a time, and on a 2-core machine it also takes the cores the screen needs. In a
process of its own, at a lower scheduling priority (`NICE`), it holds neither the screen's lock nor
the CPU while the screen has work: the screen's process only reads, indexes and draws.

    parent (LiveSession)                          child (python -m tracelens.live.worker)
    pump -> WorkerClient.parse(bytes) -- stdin -> reader -> parse loop: parse_block per source
              (ParseRequested)                                (carried ParseState, held blank lines)
    WorkerClient reader <------------- stdout --- RowsParsed (the new rows' tables, the index's columns)
                                                  analyser: finalize + analyze_tables at most every
                                                  `interval` s -> Analysed (findings, snapshot)
    LiveSession.analysis -- AnalysisRequested --> the full `Analysis` of every row seen, on request
                                                  (AnalysisSent)

The analyser reads each source's newest lines only, plus the small tables whole (`window.LiveTables`;
older rows are spilled to disk), so an update costs the same after ten thousand lines as after ten
million; findings whose rows have left the window are kept (`kept.KeptFindings`).

Messages are the records of `tracelens.live.messages`, pickled (polars frames pickle as Arrow IPC),
each framed by its length. The child is started with `sys.executable -m`, not `multiprocessing`: its
`spawn` and `forkserver` contexts import the parent's `__main__` (the Textual app) into the child, and
the forkserver is one per process, set up by the batch engine with its own preload. The child ends
when its stdin closes (the parent ended, even by `kill -9`), and ignores Ctrl-C (the parent stops it).
"""

from __future__ import annotations

import contextlib
import io
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, BinaryIO

import polars as pl

from tracelens.analysis import Analysis, Finding, Verdict, analyze_tables
from tracelens.engine.executors import WORKER_ENV
from tracelens.engine.stream import SourceParser
from tracelens.live.index import parsed_columns
from tracelens.live.kept import KeptFindings, KeptRuns
from tracelens.live.messages import (
    Analysed,
    AnalysisRequested,
    AnalysisSent,
    FromWorker,
    LinesBeforeCut,
    NotAnalysed,
    ParseFailed,
    ParseRequested,
    RowsParsed,
    StopRequested,
    ToWorker,
    WorkerConfig,
    WorkerEnded,
)
from tracelens.live.seed import held_lines, read_seed, seed_findings
from tracelens.live.status import RunKey, newest_decode, snapshot, with_finding_counts, with_verdicts
from tracelens.live.window import LiveTables
from tracelens.parsers import ParseState
from tracelens.sizes import DEFAULT_BLOCK_BYTES
from tracelens.sources.files import block_lines
from tracelens.sources.naming import short_names
from tracelens.sources.protocol import Block
from tracelens.tables.frames import Tables
from tracelens.tables.schema import C, T

WHOLE_RUN_LINES = 200_000  # an ended run up to this long is judged once on all its rows (read back)
# jemalloc's decay in the worker: 200 ms, as the batch workers had when the live path's memory was
# measured over hours (bench/live.py memory); their 500 ms buys CPU a live view does not need.
LIVE_JEMALLOC = "dirty_decay_ms:200,muzzy_decay_ms:0"
NICE = 10  # how much lower the child's scheduling priority is than its parent's (a nice increment)
_HEADER = struct.Struct("<Q")
_PARSE_BATCH = 64  # parse messages read ahead and parsed as one block per source
_READ_AHEAD = 8  # parse messages the child holds before the parent's writes wait
# An update waits while lines are parsed or queued (a session catching up on a log), up to this long
# since the last (or since the worker started): a window's analysis beside a block's parse made the
# live worker's peak (1 GiB log, one run: 364 MiB resident; after the seed, whose first update did not
# wait, 318), and the catch-up's every update is superseded by the next anyway.
BACKLOG_WAIT = 15.0


# ----- framing -----


def send(stream: IO[bytes], message: ToWorker | FromWorker) -> None:
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(message)
    data = buffer.getbuffer()
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


class _Pickler(pickle.Pickler):
    """Pickles a frame whose columns are cut into chunks at different rows as its rechunked copy.

    Polars (2.1) pickles a frame by `DataFrame.serialize`, which first aligns the frame's chunks in
    place, on its thread pool, while this thread holds the interpreter lock and waits for the pool. A
    chunk so replaced that was the last reference to an Arrow array made by pyarrow over a Python
    buffer (`pa.py_buffer`: a block's text, the batch lanes' numbers) is released on a pool thread,
    and pyarrow's release takes the interpreter lock: the worker hung for good. Frames whose null
    columns are materialised (`schema.conform`'s concatenation with a frame of no rows) next to
    two-chunk ones are such frames; a `select` made them null literals, which the alignment skips.
    `rechunk` builds a new frame and frees nothing the original holds, and the serialization of the
    copy has nothing to align. The frame received is the same."""

    def reducer_override(self, obj: object) -> Any:  # a reduce tuple, or NotImplemented
        if isinstance(obj, pl.DataFrame) and not _chunks_aligned(obj):
            return obj.rechunk().__reduce_ex__(pickle.HIGHEST_PROTOCOL)
        return NotImplemented


def _chunks_aligned(frame: pl.DataFrame) -> bool:
    """Whether every column of ``frame`` is cut into chunks at the same rows (polars' serialization
    then aligns nothing). A null literal column counts one chunk here, though polars skips it."""
    counts = frame.n_chunks("all")
    if not counts or max(counts) == 1:
        return True  # the usual block's frame: no chunks to align
    if min(counts) != max(counts):
        return False
    lengths = {tuple(len(chunk) for chunk in column.get_chunks()) for column in frame.iter_columns()}
    return len(lengths) == 1


def receive(stream: IO[bytes]) -> object:
    """The next message, or None at the end of the stream (the caller checks its type)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


# ----- the child -----


class _Worker:
    """Parses each source's new lines in order and analyses a bounded window of them (`LiveTables`)."""

    def __init__(self, config: WorkerConfig, out: BinaryIO) -> None:
        self.config = config
        self._names = short_names(config.labels)  # label -> short name, as the analyses name runs
        self._out = out
        self._out_lock = threading.Lock()
        self._inbox: queue.Queue[ParseRequested | None] = queue.Queue(maxsize=_READ_AHEAD)
        # a source a dataset holds up to a cut is parsed from the cut's line and run (`live.seed`)
        self._parsers = [
            SourceParser(options, ParseState(run=config.cuts[label].run) if label in config.cuts else None)
            for label, options in zip(config.labels, config.options, strict=True)
        ]
        self._lock = threading.Lock()
        self._tables = LiveTables(config.window_lines)
        self._pending_seq = 0  # the last parse message whose rows are in `_tables`
        self._kept = KeptFindings()
        self._runs = KeptRuns()  # every ended run's last status (its verdict, fix and figures)
        # verdicts of ended runs judged on all their rows (read back, or the dataset's), until frozen
        self._whole: dict[RunKey, Verdict] = {}
        self._analysis: Analysis | None = None
        self._analyses = 0
        self._dirty = threading.Event()
        self._done = threading.Event()
        self._parsing = threading.Event()  # set while the parse thread parses a batch

    def reply(self, message: FromWorker) -> None:
        with self._out_lock:
            send(self._out, message)

    def run(self, inp: BinaryIO) -> None:
        if self.config.cuts:
            self._start_from_datasets()
        threading.Thread(target=self._read, args=(inp,), name="worker read", daemon=True).start()
        threading.Thread(target=self._analyse_loop, name="worker analyse", daemon=True).start()
        try:
            self._parse_loop()
        finally:
            with self._lock:
                self._tables.close()  # the spilled rows' folder

    def _start_from_datasets(self) -> None:
        """The tables start from the datasets' rows before each cut, the findings from their analysis
        (`live.seed`); the parse messages wait meanwhile. Should the datasets be unreadable, updates
        analyse what is parsed from the cuts, and the screen says so."""
        for label, cut in self.config.cuts.items():  # first what the screen shows: the log index's lines
            number = self.config.labels.index(label)
            try:
                for columns in held_lines(cut, label, self.config.index_skip.get(label, 0)):
                    self.reply(LinesBeforeCut(number, columns))
            except Exception as exc:  # the parent numbers the lines not sent, blank, and says so
                self.reply(ParseFailed(f"{label}: reading the dataset failed: {type(exc).__name__}: {exc}"))
            self.reply(LinesBeforeCut(number, None))
        try:
            self._tables.seed(read_seed(self.config.cuts))
            verdicts: list[Verdict] = []

            def analyse(tables: Tables) -> list[Finding]:
                analysis = self._analyse(tables)
                verdicts.extend(analysis.verdicts)
                return analysis.findings

            found, ended = seed_findings(self.config.cuts, analyse, self._names)
            self._kept.update(found, ended, self._tables.window_start)
            named = {(cut.source, label) for label, cut in self.config.cuts.items()}
            for verdict in verdicts:  # the runs that ended before the cut, under their live labels
                for source, label in named:
                    if verdict.source == source and (label, verdict.run) in ended:
                        self._whole[(label, verdict.run)] = verdict
        except Exception as exc:
            self.reply(ParseFailed(f"reading the lines before the cut from the dataset failed: {exc}"))

    def _read(self, inp: BinaryIO) -> None:
        try:
            while True:
                match receive(inp):
                    case ParseRequested() as message:
                        self._inbox.put(message)
                    case AnalysisRequested(request):
                        self._send_analysis(request)
                    case _:  # StopRequested, the end of the stream, or what no sender sends
                        return
        finally:
            self._inbox.put(None)  # the parse loop ends, and so does the process

    def _parse_loop(self) -> None:
        while True:
            first = self._inbox.get()
            if first is None:
                break
            items = [first]
            while len(items) < _PARSE_BATCH:
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._inbox.put(None)  # seen after this batch
                    break
                items.append(item)
            self._parsing.set()
            try:
                self._parse_batch(items)
            except Exception as exc:
                # what this batch held is lost for the tables (as a failed parse always was); the
                # parent hears that every message of it was handled, and why
                self.reply(RowsParsed(items[-1].seq, items[-1].source))
                self.reply(ParseFailed(f"parsing failed: {type(exc).__name__}: {exc}"))
            finally:
                self._parsing.clear()
        self._done.set()

    def _parse_batch(self, items: list[ParseRequested]) -> None:
        """Consecutive messages of one source become one block (the parser's cost is mostly per call),
        up to the batch engine's block size: a parse holds about fourteen times its block, and a
        session catching up on a log (the engine's last range, 32 MiB) sent it all at once."""
        # source, last seq, frames, final, bytes
        runs: list[tuple[int, int, list[pl.DataFrame], bool, int]] = []
        for item in items:
            frame = block_lines(
                Block(self.config.labels[item.source], item.first_line, item.offset, item.data)
            )
            size = len(item.data)
            last = runs[-1] if runs else None
            if last and last[0] == item.source and not last[3] and last[4] + size <= DEFAULT_BLOCK_BYTES:
                last[2].append(frame)
                runs[-1] = (item.source, item.seq, last[2], item.final, last[4] + size)
            else:
                runs.append((item.source, item.seq, [frame], item.final, size))
        for source, seq, frames, final, _size in runs:
            self._parse(seq, source, pl.concat(frames) if len(frames) > 1 else frames[0], final)

    def _parse(self, seq: int, source: int, frame: pl.DataFrame, final: bool) -> None:
        """Parse new lines after those held back last time, exactly as a batch parse reads blocks
        (`stream.SourceParser`)."""
        parser = self._parsers[source]
        if parser.held is None and not frame.height:
            self.reply(RowsParsed(seq, source))
            return
        tables, first, parsed = parser.feed(frame, final)
        if not parsed:
            self.reply(RowsParsed(seq, source))
            return
        # the index's columns are computed here too: the screen's process only stores them
        columns = parsed_columns(tables[T.LINES])
        self.reply(RowsParsed(seq, source, first, parsed, columns, newest_decode(tables)))
        with self._lock:
            self._tables.add(tables)
            self._pending_seq = seq
        self._dirty.set()

    def _analyse_loop(self) -> None:
        wait = self.config.interval
        last = 0.0  # when the last analysis started (none yet)
        since = time.monotonic()  # a backlog's wait counts from the last analysis, or from the start
        while not self._done.is_set():
            if not self._dirty.wait(0.1):
                continue
            pause = last + wait - time.monotonic()
            if pause > 0 and self._done.wait(pause):
                return
            backlog = self._parsing.is_set() or not self._inbox.empty()
            if backlog and time.monotonic() - since < BACKLOG_WAIT:
                # lines are being parsed (a catch-up): parse them first, then analyse once
                if self._done.wait(0.05):
                    return
                continue
            self._dirty.clear()
            last = since = time.monotonic()
            with self._lock:
                through = self._pending_seq
            try:
                self._analyse_once(through, last)
            except Exception as exc:
                self.reply(NotAnalysed(through, f"analysis failed: {type(exc).__name__}: {exc}"))
            took = time.monotonic() - last
            wait = max(self.config.interval, 2 * took)  # a long analysis leaves time for parsing

    def _analyse_once(self, through: int, started: float) -> None:
        with self._lock:
            if not self._tables.lines:
                self.reply(NotAnalysed(through, None))
                return
            tables = self._tables.view()
            lines = self._tables.lines
        analysis = self._analyse(tables)
        ended = _ended_runs(tables)
        found = self._judge_ended(analysis.findings, ended)
        findings = self._kept.update(found, ended, self._tables.window_start)
        kept = self._runs.kept
        snap = with_verdicts(snapshot(analysis, self.config.labels, lines, kept), self._whole)
        with self._lock:  # a run longer than the window shows its whole-run figures (`live/running.py`)
            snap = self._tables.running.apply(snap, analysis, self._tables.is_cut, self.config.baseline, kept)
        snap = self._runs.update(with_finding_counts(snap, findings), ended)
        with self._lock:  # an ended run's status is kept as it is now: its running figures are final
            self._tables.running.end(ended)
        for key in ended:
            self._whole.pop(key, None)
        with self._lock:
            self._analysis = analysis
            self._analyses += 1
            count = self._analyses
        self.reply(Analysed(through, count, findings, snap, time.monotonic() - started))

    def _judge_ended(self, found: list[Finding], ended: set[tuple[str, int]]) -> list[Finding]:
        """A run that has just ended and no longer fits the window is judged once on all its rows
        (read back from disk; up to `WHOLE_RUN_LINES`): its findings replace the window's."""
        for source, run in ended:
            if self._kept.is_frozen((source, run)):
                continue
            first, count = self._tables.run_lines(source, run)
            if first >= self._tables.window_start(source) or count > WHOLE_RUN_LINES:
                continue  # whole in the window already, or too long to read back
            with self._lock:
                tables = self._tables.with_whole_run(source, run)
            whole = self._analyse(tables)
            found = [f for f in found if (f.source, f.run) != (source, run)]
            found += [f for f in whole.findings if (f.source, f.run) == (source, run)]
            for verdict in whole.verdicts:
                if (verdict.source, verdict.run) == (source, run):
                    self._whole[(source, run)] = verdict
        return found

    def _analyse(self, tables: Tables) -> Analysis:
        return analyze_tables(
            tables,
            self.config.expectations,
            baseline=self.config.baseline,
            stall_seconds=self.config.stall_seconds,
            training=self.config.training,
            sources=self.config.labels,  # all of them from the start: a label never changes
        )

    def _send_analysis(self, request: int) -> None:
        """The newest update's analysis while it read every row; else one of every row, made now."""
        with self._lock:
            analysis, count = self._analysis, self._analyses
            whole = self._tables.everything() if self._tables.spilled else None
        if whole is not None:
            with contextlib.suppress(Exception):  # the newest update's analysis is still an answer
                analysis = self._analyse(whole)
        self.reply(AnalysisSent(request, count, analysis))


def _ended_runs(tables: Tables) -> set[tuple[str, int]]:
    """The runs a later server start of their source has ended."""
    runs = tables[T.RUNS].select(C.SOURCE, C.RUN)
    last = runs.group_by(C.SOURCE).agg(pl.col(C.RUN).max().alias("_last"))
    ended = runs.join(last, on=C.SOURCE).filter(pl.col(C.RUN) < pl.col("_last"))
    return {(source, int(run)) for source, run in ended.select(C.SOURCE, C.RUN).iter_rows()}


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the parent, which stops us
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the message stream
    config = receive(inp)
    if not isinstance(config, WorkerConfig):  # the parent ended before it said anything
        return
    _Worker(config, out).run(inp)


# ----- the parent's side -----


class WorkerGone(Exception):
    """The worker process ended (or never started); what it said last on stderr is the message."""


class WorkerClient:
    """Starts the worker, sends it lines (from a queue, so a caller never waits on the pipe unless
    ``max_bytes`` are already waiting) and hands every reply to ``on_message`` on a reader thread."""

    def __init__(
        self,
        config: WorkerConfig,
        on_message: Callable[[FromWorker], None],
        on_exit: Callable[[str], None],
        max_bytes: int = DEFAULT_BLOCK_BYTES,
    ) -> None:
        self.config = config
        self._on_message = on_message
        self._on_exit = on_exit
        self._max_bytes = max_bytes
        self._outbox: queue.Queue[ToWorker | None] = queue.Queue()
        self._queued_bytes = 0
        self._room = threading.Condition()
        self._requests: dict[int, queue.Queue[AnalysisSent | WorkerEnded]] = {}
        self._next_request = 0
        self._closing = False
        self.gone = False  # the worker ended: what is sent now is dropped
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (the child writes it; `close` closes it)
        env = dict(os.environ)
        # the child imports this same tracelens, wherever it was imported from
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        # freed memory goes back to the system soon, as the batch engine's workers do: the window is
        # rebuilt at every update, and without it the allocators keep what earlier updates freed
        env.update(
            {
                "_RJEM_MALLOC_CONF": LIVE_JEMALLOC,
                "ARROW_DEFAULT_MEMORY_POOL": WORKER_ENV["ARROW_DEFAULT_MEMORY_POOL"],
            }
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tracelens.live.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            close_fds=True,
        )
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None  # both are pipes
        self._stdin: IO[bytes] = stdin
        self._stdout: IO[bytes] = stdout
        # set by the parent at once (the threads the child starts later inherit it): its imports
        # already run below the screen
        with contextlib.suppress(OSError, AttributeError):  # no setpriority on some platforms
            mine = os.getpriority(os.PRIO_PROCESS, 0)
            os.setpriority(os.PRIO_PROCESS, self.process.pid, min(mine + NICE, 19))
        self._threads = [
            threading.Thread(target=self._write, name="tracelens worker write", daemon=True),
            threading.Thread(target=self._read, name="tracelens worker read", daemon=True),
        ]
        self._outbox.put(config)
        for thread in self._threads:
            thread.start()

    def parse(self, seq: int, source: int, first_line: int, offset: int, data: bytes, final: bool) -> None:
        """Queue lines for parsing; waits only while ``max_bytes`` are already queued (a large file's
        backfill waits for the parser instead of filling memory)."""
        with self._room:
            while self._queued_bytes >= self._max_bytes and not (self._closing or self.gone):
                self._room.wait(0.1)
            if self.gone:
                return
            self._queued_bytes += len(data)
        self._outbox.put(ParseRequested(seq, source, first_line, offset, data, final))

    def request_analysis(self, timeout: float) -> tuple[int, Analysis | None]:
        """(analyses so far, the newest full analysis) from the worker; raises WorkerGone."""
        reply: queue.Queue[AnalysisSent | WorkerEnded] = queue.Queue(maxsize=1)
        with self._room:
            self._next_request += 1
            request = self._next_request
            self._requests[request] = reply
        self._outbox.put(AnalysisRequested(request))
        try:
            message = reply.get(timeout=timeout)
        except queue.Empty:
            raise WorkerGone("the worker did not answer in time") from None
        finally:
            with self._room:
                self._requests.pop(request, None)
        match message:
            case WorkerEnded(reason):
                raise WorkerGone(reason)
            case AnalysisSent(_, count, analysis):
                return count, analysis

    def close(self, timeout: float = 5.0) -> None:
        self._closing = True
        with self._room:
            self._room.notify_all()
        self._outbox.put(None)
        for thread in self._threads:
            thread.join(timeout=timeout)
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=timeout)
        with contextlib.suppress(OSError):
            self._stdout.close()
        self._stderr.close()

    def _write(self) -> None:
        stdin = self._stdin
        try:
            while True:
                item = self._outbox.get()
                if item is None:
                    send(stdin, StopRequested())
                    break
                send(stdin, item)
                if isinstance(item, ParseRequested):
                    with self._room:
                        self._queued_bytes -= len(item.data)
                        self._room.notify_all()
        except (BrokenPipeError, OSError, ValueError):
            self._set_gone()  # the worker ended: the reader reports it
        finally:
            with contextlib.suppress(OSError, BrokenPipeError, ValueError):
                stdin.close()

    def _read(self) -> None:
        stdout = self._stdout
        while True:
            try:
                message = receive(stdout)
            except (OSError, ValueError, EOFError, pickle.UnpicklingError):
                message = None
            match message:
                case AnalysisSent(request):
                    with self._room:
                        reply = self._requests.get(request)
                    if reply is not None:
                        reply.put(message)
                case LinesBeforeCut() | RowsParsed() | ParseFailed() | Analysed() | NotAnalysed():
                    self._on_message(message)
                case _:  # the end of the stream (or what no worker sends)
                    break
        self._set_gone()
        reason = self._exit_reason()
        with self._room:
            waiting = list(self._requests.values())
        for reply in waiting:
            reply.put(WorkerEnded(reason))
        if not self._closing:
            self._on_exit(reason)

    def _set_gone(self) -> None:
        with self._room:
            self.gone = True
            self._room.notify_all()

    def _exit_reason(self) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        try:
            self._stderr.seek(0)
            said = self._stderr.read().decode("utf-8", "replace").strip().splitlines()
        except (OSError, ValueError):
            said = []
        return f"exit status {code}" + (f": {said[-1]}" if said else "")


if __name__ == "__main__":
    main()
