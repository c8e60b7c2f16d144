"""A live session: followers feed lines in, the same parser reads them block by block as they arrive,
and the same analysis re-runs on a bounded window of them (`window.LiveTables`), at a bounded rate.

In this process, threads that never parse:

- one per source, running its follower (`tracelens.sources`: `tail`, `ssh`, `command`, `replay`), which puts source
  events on a bounded queue (a fast reader waits for the parser instead of filling memory);
- the pump, which drains the queue, stores the text, indexes the lines for the log view (the view has
  them at once) and hands them to the worker.

In a worker process (`tracelens.live.worker`, at a lower priority): `parse_lines` on each source's new
lines with that source's carried `ParseState`, exactly as a batch parse reads blocks, and at most every
`interval` seconds (longer when an analysis takes long) `finalize` and `analyze_tables` on each
source's newest lines and the small tables whole (findings made earlier are kept, `kept.KeptFindings`).
Its replies (the new rows' tables; findings and the `Snapshot`) arrive on the worker client's reader
thread, which fills in the index's kinds and ranks and reports what is new.

Listeners (`subscribe`) are called on those threads with the events of `tracelens.live.events`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tracelens.analysis import Analysis, Evidence, Finding
from tracelens.analysis.defaults import DEFAULT_STALL_SECONDS
from tracelens.analysis.expectations import Expectations
from tracelens.analysis.training import TrainingInputs
from tracelens.live import events as ev
from tracelens.live.index import NOT_HELD, LogIndex
from tracelens.live.kept import finding_changed, finding_id
from tracelens.live.messages import (
    Analysed,
    FromWorker,
    LinesBeforeCut,
    NotAnalysed,
    ParseFailed,
    RowsParsed,
    WorkerConfig,
)
from tracelens.live.seed import Cut, index_skip, map_before_cut, opened
from tracelens.live.spec import FILE, RECORDED, SSH, SourceSpec
from tracelens.live.status import Snapshot
from tracelens.live.store import SCROLLBACK_LINES, TextStore
from tracelens.live.window import WINDOW_LINES
from tracelens.live.worker import WorkerClient, WorkerGone
from tracelens.parsers import ParseOptions, ParseState, parse_lines
from tracelens.sizes import DEFAULT_BLOCK_BYTES, LIVE_BATCH_BYTES
from tracelens.sources import events as src
from tracelens.sources.files import block_lines, line_spans
from tracelens.sources.generation import FileGeneration
from tracelens.sources.protocol import Block
from tracelens.tables.schema import C, T

Listener = Callable[[Any], None]
ANALYSIS_INTERVAL = 0.75
_QUEUE_ITEMS = 32
# The bytes the followers may have read ahead of the pump (the queue's events). With the worker's own
# bound (`WorkerClient`'s ``max_bytes``), what a session holds of lines not yet parsed is a few parse
# blocks whatever the worker is doing: a session opened on a long log read the whole catch-up (32 MiB)
# while the worker made its seed, held it in four copies and kept the heap it took (the session's
# process at 207 MiB PSS for good instead of 182, bench/live_one_run.py).
_QUEUE_BYTES = DEFAULT_BLOCK_BYTES
_FETCH_TIMEOUT = 120.0  # seconds to wait for the worker's full analysis (`LiveSession.analysis`)


def _data_bytes(event: src.SourceEvent) -> int:
    """The bytes of lines an event carries (a state change carries none)."""
    return len(getattr(event, "data", b""))


@dataclass
class SourceState:
    """What the header shows about one source."""

    label: str
    spec: SourceSpec
    state: str = src.CONNECTING
    detail: str = ""
    last_data: float | None = None  # monotonic time of the last bytes received
    backfill: tuple[int, int] | None = None  # bytes read, total (a large file's existing content)
    lines: int = 0
    reconnects: int = 0
    rotations: int = 0
    truncations: int = 0
    options: ParseOptions = field(default_factory=ParseOptions)

    @property
    def ended(self) -> bool:
        return self.state in (src.ENDED, src.FAILED)

    def staleness(self, now: float) -> float | None:
        return None if self.last_data is None else now - self.last_data


class LiveSession:
    def __init__(
        self,
        specs: list[SourceSpec],
        expectations: Expectations | None = None,
        *,
        baseline: str | None = None,
        stall_seconds: float = DEFAULT_STALL_SECONDS,
        base_date: dt.date | None = None,
        interval: float = ANALYSIS_INTERVAL,
        window_lines: int = WINDOW_LINES,
        scrollback: int | None = SCROLLBACK_LINES,
        follower_options: dict[str, dict[str, Any]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        cuts: dict[str, Cut] | None = None,
        training: TrainingInputs | None = None,
    ) -> None:
        labels = [s.label for s in specs]
        if len(set(labels)) != len(labels):
            raise ValueError("two sources with the same label")
        self.expectations = expectations
        self.training = training
        self.baseline = baseline
        self.stall_seconds = stall_seconds
        self.interval = interval
        self.window_lines = window_lines
        self.clock = clock
        self.index = LogIndex(scrollback)  # the log view: each source's newest `scrollback` lines
        self.sources = [SourceState(s.label, s, options=_options(s, base_date)) for s in specs]
        for state in self.sources:
            self.index.add_source(state.label)
        self.snapshot = Snapshot()
        self.findings: list[Finding] = []  # of the newest analysis, evidence read from the store
        self.analyses = 0
        self._said: dict[str, Finding] = {}  # the newest analysis' findings by `finding_id`
        self._follower_options = follower_options or {}
        # local files the batch engine read into a dataset: taken over at a cut (`live.seed`)
        self.cuts: dict[str, Cut] = dict(cuts or {})
        self._opened: dict[str, FileGeneration] = {}
        # by label, set once the worker has sent the lines before the cut (or cannot: it is gone)
        self._cut_read: dict[str, threading.Event] = {}
        self.followers: list[Any] = []
        self._queue: queue.Queue[src.SourceEvent] = queue.Queue(maxsize=_QUEUE_ITEMS)
        self._queued_bytes = 0  # of the events in `_queue` (`_emit` waits while `_QUEUE_BYTES` are)
        self._queue_room = threading.Condition()
        self._listeners: list[Listener] = []
        self._stop = threading.Event()
        self._next_line = [1 for _ in specs]
        self._threads: list[threading.Thread] = []
        self._pumping = False
        self._worker: WorkerClient | None = None
        self._worker_gone = False
        # Parse messages are numbered; the worker's replies say which it has parsed (`_parsed_seq`) and
        # which the newest analysis covers (`_analysed_seq`), so `idle` knows what is still on its way.
        self._sent_seq = 0
        self._parsed_seq = 0
        self._rows_seq = 0  # the last parse message that produced rows (an analysis must cover it)
        self._analysed_seq = 0
        self._seq_lock = threading.Lock()
        self._fetched: tuple[int, Analysis | None] = (0, None)  # (analyses, full analysis) last fetched

    def _training_where_followed(self) -> TrainingInputs | None:
        """The training inputs, the configs looked up on the host the logs come from: when every source
        is followed over ssh from one host, there, through the same ssh options as its follower."""
        training = self.training
        if training is None or not training.discover or training.remote is not None:
            return training
        remote = [s.spec for s in self.sources if s.spec.kind == SSH and s.spec.target is not None]
        hosts = {(t.host, t.user, t.port) for t in (spec.target for spec in remote) if t is not None}
        if not remote or len(remote) != len(self.sources) or len(hosts) != 1:
            return training
        spec = remote[0]
        options = tuple(self._follower_options.get(spec.label, {}).get("extra_options", ()))
        return replace(training, remote=spec.target, remote_options=options)

    # ----- lifecycle -----

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self) -> None:
        for label, cut in list(self.cuts.items()):
            spec = self.sources[self.index.source_of(label)].spec
            generation = opened(spec.path, cut) if spec.kind == FILE and spec.path else None
            if generation is None:  # changed since the engine read it: read from its start
                del self.cuts[label]
                continue
            self._opened[label] = generation
            self._next_line[self.index.source_of(label)] = cut.first_line
            self._cut_read[label] = threading.Event()
            self._map_before_cut(label)
        for state in self.sources:
            options = dict(self._follower_options.get(state.label, {}))
            if state.label in self.cuts:
                options["start"] = (self.cuts[state.label].offset, self._opened[state.label])
            follower = state.spec.follower(**options)
            self.followers.append(follower)
            self._spawn(f"follow {state.label}", self._run_follower, follower, state.label)
        config = WorkerConfig(
            labels=[s.label for s in self.sources],
            options=[s.options for s in self.sources],
            expectations=self.expectations,
            baseline=self.baseline,
            stall_seconds=self.stall_seconds,
            interval=self.interval,
            window_lines=self.window_lines,
            cuts=self.cuts,
            training=self._training_where_followed(),
            index_skip={label: index_skip(cut, self.index.limit) for label, cut in self.cuts.items()},
        )
        try:
            self._worker = WorkerClient(config, self._from_worker, self._worker_ended)
        except OSError as exc:
            self._worker_ended(f"it could not start: {exc}")
        self._spawn("pump", self._pump)

    def stop(self) -> None:
        self._stop.set()
        for follower in self.followers:
            follower.close()
        for thread in self._threads:
            thread.join(timeout=5)
        if self._worker is not None:
            self._worker.close()
        self.index.close()
        for generation in self._opened.values():  # those never handed to the index's store
            generation.close()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def all_ended(self) -> bool:
        return all(s.ended for s in self.sources)

    def idle(self) -> bool:
        """Nothing queued, parsed or analysed is waiting (for tests and `follow`'s last report)."""
        if not (self._queue.empty() and not self._pumping):
            return False
        if self._worker_gone:
            return True
        with self._seq_lock:
            return self._parsed_seq == self._sent_seq and self._analysed_seq >= self._rows_seq

    def wait_idle(self, timeout: float = 30.0, settle: float = 0.1) -> bool:
        """Wait until idle (and still idle ``settle`` seconds later); False on timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.idle():
                time.sleep(settle)
                if self.idle():
                    return True
            time.sleep(0.02)
        return False

    @property
    def analysis(self) -> Analysis | None:
        """The full analysis of everything seen (every table), None before the first. The worker makes
        it (from its window and the rows it spilled to disk, or its newest update's analysis while
        nothing was spilled): reading this asks the worker for it (when newer than the one read last)
        and waits, so read it off the screen's thread (the panels use `snapshot` and `findings`)."""
        if self.analyses == 0:
            return None
        fetched_at, fetched = self._fetched
        if fetched is not None and fetched_at >= self.analyses:
            return fetched
        if self._worker is None or self._worker_gone:
            return fetched
        try:
            count, analysis = self._worker.request_analysis(_FETCH_TIMEOUT)
        except WorkerGone:
            return fetched
        if analysis is not None:
            self._fill_evidence(analysis.findings)
            self._fetched = (count, analysis)
        return analysis if analysis is not None else fetched

    # ----- threads -----

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=f"tracelens {name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _notify(self, event: Any) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):  # a listener's failure must not stop the session
                listener(event)

    def _emit(self, event: src.SourceEvent) -> None:
        """Followers call this; it waits while the queue is full, in events or in bytes (backpressure),
        unless stopping."""
        size = _data_bytes(event)
        with self._queue_room:
            while self._queued_bytes >= _QUEUE_BYTES and not self._stop.is_set():
                self._queue_room.wait(0.1)
            self._queued_bytes += size
        while not self._stop.is_set():
            try:
                self._queue.put(event, timeout=0.1)
                return
            except queue.Full:
                continue

    def _taken(self, event: src.SourceEvent) -> src.SourceEvent:
        """The pump took ``event`` from the queue: its bytes no longer count against `_QUEUE_BYTES`."""
        with self._queue_room:
            self._queued_bytes -= _data_bytes(event)
            self._queue_room.notify_all()
        return event

    def _run_follower(self, follower: Any, label: str) -> None:
        try:
            if label in self.cuts:
                self._index_before_cut(label)
            follower.run(self._emit, self._stop)
        except Exception as exc:
            self._emit(src.SourceEnded(label, f"{type(exc).__name__}: {exc}", failed=True))

    def _map_before_cut(self, label: str) -> None:
        """The file's bytes before the cut, mapped into the index's store: the worker sends the lines'
        offsets (`LinesBeforeCut`)."""
        source = self.index.source_of(label)
        try:
            map_before_cut(self.index, source, self.cuts[label], self._opened[label])
        except (OSError, ValueError) as exc:  # the lines are numbered blank below
            self._notify(ev.SessionFailed(f"{label}: mapping the file failed: {type(exc).__name__}: {exc}"))

    def _index_before_cut(self, label: str) -> None:
        """Wait for the lines before a cut, which the worker reads from the dataset, before the follower
        reads on from it (on the follower's thread: the pump sees this source's lines only after)."""
        source = self.index.source_of(label)
        want = self.cuts[label].first_line - 1
        while not self._cut_read[label].wait(0.1):
            if self._stop.is_set():
                return
        have = self.index.lines[source].count
        if have < want:  # numbered but blank, so the lines after the cut keep their numbers
            self.index.append(source, np.zeros(want - have, dtype=np.int64), np.zeros(want - have, np.int32))
            self._notify(
                ev.SessionFailed(f"{label}: lines {have + 1:,}-{want:,} could not be read from the dataset")
            )
        self.sources[source].lines += want
        self._notify(ev.LinesIndexed(label, want))

    def _pump(self) -> None:
        while not self._stop.is_set():
            try:
                first = self._taken(self._queue.get(timeout=0.05))
            except queue.Empty:
                continue
            self._pumping = True
            try:
                batch = [first]
                size = _data_bytes(first)
                while size < LIVE_BATCH_BYTES:
                    try:
                        item = self._taken(self._queue.get_nowait())
                    except queue.Empty:
                        break
                    batch.append(item)
                    size += _data_bytes(item)
                self._handle(batch)
            except Exception as exc:
                self._notify(ev.SessionFailed(f"reading lines failed: {type(exc).__name__}: {exc}"))
            finally:
                self._pumping = False

    def _handle(self, batch: list[src.SourceEvent]) -> None:
        chunks: dict[int, list[tuple[int, bytes]]] = {}
        for event in batch:
            source = self.index.source_of(event.source)
            if isinstance(event, src.LinesAppended):
                store = self.index.store(source)
                start = store.append(event.data, event.origin, event.origin_offset)
                chunks.setdefault(source, []).append((start, event.data))
                self.sources[source].last_data = self.clock()
                continue
            if source in chunks:  # keep the order: lines before a state change are read first
                self._ingest(source, chunks.pop(source))
            self._on_state_event(source, event)
        for source, parts in chunks.items():
            self._ingest(source, parts)

    def _ingest(self, source: int, parts: list[tuple[int, bytes]]) -> None:
        # A message to the worker is about a parse block (or one follower's read): a parse holds about
        # fourteen times its block, and a session catching up on a log had sent 16 MiB at once. A group
        # ends only where a line does: a follower's read may stop inside one.
        group: list[tuple[int, bytes]] = []
        held = 0
        for part in parts:
            if group and held + len(part[1]) > DEFAULT_BLOCK_BYTES and group[-1][1].endswith(b"\n"):
                self._ingest_group(source, group)
                group, held = [], 0
            group.append(part)
            held += len(part[1])
        if group:
            self._ingest_group(source, group)

    def _ingest_group(self, source: int, parts: list[tuple[int, bytes]]) -> None:
        state = self.sources[source]
        data = b"".join(p[1] for p in parts)
        first_line = self._next_line[source]
        starts, lengths = line_spans(data)  # numpy only: the worker makes the parser's frame
        self.index.append(source, starts + parts[0][0], lengths)
        self._next_line[source] += len(starts)
        state.lines += len(starts)
        self._notify(ev.LinesIndexed(state.label, len(starts)))
        self._send_parse(source, first_line, parts[0][0], data, final=False)

    def _send_parse(self, source: int, first_line: int, offset: int, data: bytes, final: bool) -> None:
        """Hand lines to the worker (in order: only the pump sends)."""
        if self._worker is None:
            return
        with self._seq_lock:
            self._sent_seq += 1
            seq = self._sent_seq
        self._worker.parse(seq, source, first_line, offset, data, final)

    # ----- the worker's replies (on its client's reader thread) -----

    def _from_worker(self, message: FromWorker) -> None:
        try:
            match message:
                case LinesBeforeCut(source, columns):
                    self._on_lines_before_cut(source, columns)
                case RowsParsed():
                    self._on_parsed(message)
                case Analysed():
                    self._on_analysed(message)
                case NotAnalysed(through, reason):  # nothing to analyse, or the analysis failed
                    with self._seq_lock:
                        self._analysed_seq = max(self._analysed_seq, through)
                    if reason:
                        self._notify(ev.SessionFailed(reason))
                case ParseFailed(reason):
                    self._notify(ev.SessionFailed(reason))
        except Exception as exc:
            self._notify(
                ev.SessionFailed(f"reading the parser's results failed: {type(exc).__name__}: {exc}")
            )

    def _on_lines_before_cut(self, source: int, columns: dict[str, np.ndarray] | None) -> None:
        if columns is None:
            self._cut_read[self.sources[source].label].set()
            return
        self.index.append(source, columns.pop(C.BYTE_OFFSET), columns.pop(C.BYTE_LEN))
        self.index.fill_parsed(source, columns)

    def _on_parsed(self, parsed: RowsParsed) -> None:
        if parsed.columns is not None and parsed.count:
            self.index.fill_parsed(parsed.source, parsed.columns)
        with self._seq_lock:
            self._parsed_seq = max(self._parsed_seq, parsed.seq)
            if parsed.count:
                self._rows_seq = max(self._rows_seq, parsed.seq)
        if parsed.count:
            label = self.sources[parsed.source].label
            self._notify(ev.LinesParsed(label, parsed.first_line, parsed.count, parsed.decode))

    def _on_analysed(self, analysed: Analysed) -> None:
        findings, snap = analysed.findings, analysed.snapshot
        self._fill_evidence(findings)
        now = {finding_id(f): f for f in findings}
        new = [f for key, f in now.items() if key not in self._said]
        updated = [f for key, f in now.items() if key in self._said and finding_changed(self._said[key], f)]
        # forgotten, so it is new again if a later analysis finds it
        withdrawn = [f for key, f in self._said.items() if key not in now]
        self._said = now
        self.findings, self.snapshot = findings, snap
        self.analyses = analysed.count
        with self._seq_lock:
            self._analysed_seq = max(self._analysed_seq, analysed.through)
        self._notify(ev.AnalysisUpdated(findings, snap, new, analysed.seconds, withdrawn, updated))

    def _worker_ended(self, reason: str) -> None:
        self._worker_gone = True
        for read in self._cut_read.values():  # what it had not sent of them is numbered blank
            read.set()
        self._notify(ev.SessionFailed(f"the parser's process ended ({reason}); new lines are shown unparsed"))

    def _set_state(self, source: int, state: str, detail: str = "") -> None:
        entry = self.sources[source]
        entry.state, entry.detail = state, detail
        self._notify(ev.SourceStateChanged(entry.label, state, detail))

    def _on_state_event(self, source: int, event: src.SourceEvent) -> None:
        entry = self.sources[source]
        if isinstance(event, src.TailPreviewed):
            store = TextStore()
            store.append(event.data, event.origin, event.origin_offset)
            frame = block_lines(Block(entry.label, 1, 0, event.data))
            parsed, _ = parse_lines(frame, ParseState(), entry.options)
            self.index.set_preview(source, frame, parsed[T.LINES], store)
            entry.backfill = (0, event.origin_offset + len(event.data))
            self._notify(ev.PreviewShown(entry.label, frame.height))
        elif isinstance(event, src.BackfillProgressed):
            entry.backfill = (event.done, event.total) if event.done < event.total else None
            if event.done >= event.total:
                self.index.set_preview(source, None)
            self._notify(ev.SourceStateChanged(entry.label, entry.state, entry.detail))
        elif isinstance(event, src.SourceConnected):
            self._set_state(source, src.CONNECTED, event.detail)
        elif isinstance(event, src.SourceDisconnected):
            entry.reconnects += 1
            self._set_state(source, src.RECONNECTING, f"{event.reason}; retry in {event.retry_in:.1f}s")
        elif isinstance(event, src.FileRotated):
            entry.rotations += 1
            self._set_state(source, entry.state, event.detail)
        elif isinstance(event, src.FileTruncated):
            entry.truncations += 1
            self._set_state(source, entry.state, "the file was truncated; reading from its start")
        elif isinstance(event, src.SourceEnded):
            self._send_parse(source, self._next_line[source], self.index.store(source).size, b"", final=True)
            self._set_state(source, src.FAILED if event.failed else src.ENDED, event.reason)

    def _fill_evidence(self, findings: list[Finding]) -> None:
        """Evidence text from the session's own store: a live source's offsets are in its logical
        stream (across rotations), not necessarily in the file its label names."""
        for finding in findings:
            out = []
            for e in finding.evidence:
                key = self.index.key_of(e.source, e.line_no)
                # a line the scroll-back dropped: the text the worker kept with the finding
                text = self.index.text(key) if key is not None else e.text or NOT_HELD
                out.append(Evidence(e.source, e.line_no, text))
            finding.evidence = out


def _options(spec: SourceSpec, base_date: dt.date | None) -> ParseOptions:
    """Time-only prefixes need a date: the one given, else a local file's modification date, else today."""
    if base_date is not None:
        return ParseOptions(base_date=base_date)
    if spec.kind == RECORDED and spec.mtime is not None:  # as the engine dates a file or a member
        return ParseOptions(base_date=dt.datetime.fromtimestamp(spec.mtime).date(), base_date_is_end=True)
    if spec.kind == FILE and spec.path and Path(spec.path).exists():
        return ParseOptions(
            base_date=dt.date.fromtimestamp(os.stat(spec.path).st_mtime), base_date_is_end=True
        )
    return ParseOptions(base_date=dt.date.today(), base_date_is_end=True)
