"""A live session: followers feed lines in, the same parser reads them block by block as they arrive,
and the same analysis re-runs on everything seen so far, at a bounded rate.

Three kinds of threads, none of them the UI's:

- one per source, running its follower (`tail`, `remote`, `command`, `replay`), which puts source
  events on a bounded queue (a fast reader waits for the parser instead of filling memory);
- the pump, which drains the queue, stores the text, indexes the lines for the log view, and runs
  `parse_lines` on each source's new lines with that source's carried `ParseState`, exactly as a batch
  parse reads blocks;
- the analyser, which at most every `interval` seconds (longer when an analysis takes long) concatenates
  the parsed parts, runs `finalize` and `analyze_tables`, and reports what is new.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from tracelens.analysis import Analysis, Evidence, Finding, analyze_tables
from tracelens.analysis.expectations import Expectations
from tracelens.analysis.startup import DEFAULT_STALL_SECONDS
from tracelens.live import events as ev
from tracelens.live.index import LogIndex
from tracelens.live.spec import FILE, SourceSpec
from tracelens.live.status import Snapshot, snapshot
from tracelens.live.store import TextStore
from tracelens.parsers import ParseOptions, ParseState, parse_lines
from tracelens.parsers.finalize import finalize
from tracelens.parsers.pipeline import parse_block
from tracelens.schema import C, T
from tracelens.sources import Block, block_lines
from tracelens.tables import Tables

Listener = Callable[[Any], None]
_NO_LINES = block_lines(Block("", 1, 0, b""))
ANALYSIS_INTERVAL = 0.75
_QUEUE_ITEMS = 32
_BATCH_BYTES = 16 << 20


@dataclass
class SourceState:
    """What the header shows about one source."""

    label: str
    spec: SourceSpec
    state: str = ev.CONNECTING
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
        return self.state in (ev.ENDED, ev.FAILED)

    def staleness(self, now: float) -> float | None:
        return None if self.last_data is None else now - self.last_data


def finding_key(finding: Finding) -> tuple[str, str, str, int]:
    return (finding.severity, finding.code, finding.source, finding.run)


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
        follower_options: dict[str, dict[str, Any]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        labels = [s.label for s in specs]
        if len(set(labels)) != len(labels):
            raise ValueError("two sources with the same label")
        self.expectations = expectations
        self.baseline = baseline
        self.stall_seconds = stall_seconds
        self.interval = interval
        self.clock = clock
        self.index = LogIndex()
        self.sources = [SourceState(s.label, s, options=_options(s, base_date)) for s in specs]
        for state in self.sources:
            self.index.add_source(state.label)
        self.analysis: Analysis | None = None
        self.snapshot = Snapshot()
        self.analyses = 0
        self.findings_seen: dict[tuple[str, str, str, int], int] = {}  # key -> order first seen
        self._follower_options = follower_options or {}
        self.followers: list[Any] = []
        self._queue: queue.Queue[ev.SourceEvent] = queue.Queue(maxsize=_QUEUE_ITEMS)
        self._listeners: list[Listener] = []
        self._stop = threading.Event()
        self._dirty = threading.Event()
        self._lock = threading.Lock()
        self._parse_states = [ParseState() for _ in specs]
        self._next_line = [1 for _ in specs]
        self._held: list[pl.DataFrame | None] = [None for _ in specs]  # trailing blank lines held back
        self._pending: list[Tables] = []
        self._accumulated: Tables | None = None
        self._threads: list[threading.Thread] = []
        self._pumping = False
        self._parsing = False
        self._analysing = False
        # lines indexed but not parsed yet: (source, frame, final); bounded so that a large file's
        # backfill waits for the parser instead of filling memory
        self._to_parse: queue.Queue[tuple[int, pl.DataFrame, bool]] = queue.Queue(maxsize=8)

    # ----- lifecycle -----

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self) -> None:
        for state in self.sources:
            follower = state.spec.follower(**self._follower_options.get(state.label, {}))
            self.followers.append(follower)
            self._spawn(f"follow {state.label}", self._run_follower, follower, state.label)
        self._spawn("pump", self._pump)
        self._spawn("parse", self._parse_loop)
        self._spawn("analyse", self._analyse_loop)

    def stop(self) -> None:
        self._stop.set()
        for follower in self.followers:
            follower.close()
        for thread in self._threads:
            thread.join(timeout=5)
        self.index.close()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    @property
    def all_ended(self) -> bool:
        return all(s.ended for s in self.sources)

    def idle(self) -> bool:
        """Nothing queued, parsed or analysed is waiting (for tests and `follow`'s last report)."""
        return (
            self._queue.empty()
            and not self._pumping
            and self._to_parse.empty()
            and not self._parsing
            and not self._analysing
            and not self._dirty.is_set()
            and not self._pending
        )

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

    def findings_newest_first(self) -> list[Finding]:
        if self.analysis is None:
            return []
        order = self.findings_seen
        far = dt.datetime.min
        return sorted(
            self.analysis.findings,
            key=lambda f: (order.get(finding_key(f), 0), f.ts or far),
            reverse=True,
        )

    # ----- threads -----

    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=f"tracelens {name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _notify(self, event: Any) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):  # a listener's failure must not stop the session
                listener(event)

    def _emit(self, event: ev.SourceEvent) -> None:
        """Followers call this; it waits while the queue is full (backpressure) unless stopping."""
        while not self._stop.is_set():
            try:
                self._queue.put(event, timeout=0.1)
                return
            except queue.Full:
                continue

    def _run_follower(self, follower: Any, label: str) -> None:
        try:
            follower.run(self._emit, self._stop)
        except Exception as exc:
            self._emit(ev.SourceEnded(label, f"{type(exc).__name__}: {exc}", failed=True))

    def _pump(self) -> None:
        while not self._stop.is_set():
            try:
                first = self._queue.get(timeout=0.05)
            except queue.Empty:
                continue
            self._pumping = True
            try:
                batch = [first]
                size = len(getattr(first, "data", b""))
                while size < _BATCH_BYTES:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    batch.append(item)
                    size += len(getattr(item, "data", b""))
                self._handle(batch)
            except Exception as exc:
                self._notify(ev.SessionFailed(f"reading lines failed: {type(exc).__name__}: {exc}"))
            finally:
                self._pumping = False

    def _handle(self, batch: list[ev.SourceEvent]) -> None:
        chunks: dict[int, list[tuple[int, bytes]]] = {}
        for event in batch:
            source = self.index.source_of(event.source)
            if isinstance(event, ev.LinesAppended):
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
        state = self.sources[source]
        data = b"".join(p[1] for p in parts)
        frame = block_lines(Block(state.label, self._next_line[source], parts[0][0], data))
        self.index.append(source, frame)
        self._next_line[source] += frame.height
        state.lines += frame.height
        self._notify(ev.LinesIndexed(state.label, frame.height))
        self._queue_parse(source, frame, final=False)

    def _queue_parse(self, source: int, frame: pl.DataFrame, final: bool) -> None:
        while not self._stop.is_set():
            try:
                self._to_parse.put((source, frame, final), timeout=0.1)
                return
            except queue.Full:
                continue

    def _parse_loop(self) -> None:
        """Parse what the pump indexed, in order; what piled up meanwhile is parsed as one block per
        source (fewer, larger parses: the parser's cost is mostly per call)."""
        while not self._stop.is_set():
            try:
                first = self._to_parse.get(timeout=0.05)
            except queue.Empty:
                continue
            self._parsing = True
            try:
                items = [first]
                while len(items) < 64:
                    try:
                        items.append(self._to_parse.get_nowait())
                    except queue.Empty:
                        break
                runs: list[tuple[int, list[pl.DataFrame], bool]] = []
                for source, frame, final in items:
                    if runs and runs[-1][0] == source and not runs[-1][2]:
                        runs[-1][1].append(frame)
                        runs[-1] = (source, runs[-1][1], final)
                    else:
                        runs.append((source, [frame], final))
                for source, frames, final in runs:
                    self._parse(source, pl.concat(frames) if len(frames) > 1 else frames[0], final)
            except Exception as exc:
                self._notify(ev.SessionFailed(f"parsing failed: {type(exc).__name__}: {exc}"))
            finally:
                self._parsing = False

    def _parse(self, source: int, frame: pl.DataFrame, final: bool) -> None:
        """Parse new lines after those held back last time. Trailing blank lines are held back until
        the next line arrives (a blank line belongs to a traceback when the line after it continues
        it), exactly as a batch parse holds them back at a block boundary."""
        state = self.sources[source]
        held = self._held[source]
        if held is not None:
            frame = pl.concat([held, frame])
        if not frame.height:
            return
        tables, self._parse_states[source], n_held = parse_block(
            frame, self._parse_states[source], state.options, final
        )
        self._held[source] = frame.tail(n_held) if n_held else None
        parsed = frame.height - n_held
        if not parsed:
            return
        self.index.set_parsed(source, tables[T.LINES])
        with self._lock:
            self._pending.append(tables)
        self._dirty.set()
        self._notify(ev.LinesParsed(state.label, int(frame.item(0, C.LINE_NO)), parsed, tables))

    def _set_state(self, source: int, state: str, detail: str = "") -> None:
        entry = self.sources[source]
        entry.state, entry.detail = state, detail
        self._notify(ev.SourceStateChanged(entry.label, state, detail))

    def _on_state_event(self, source: int, event: ev.SourceEvent) -> None:
        entry = self.sources[source]
        if isinstance(event, ev.TailPreviewed):
            store = TextStore()
            store.append(event.data, event.origin, event.origin_offset)
            frame = block_lines(Block(entry.label, 1, 0, event.data))
            parsed, _ = parse_lines(frame, ParseState(), entry.options)
            self.index.set_preview(source, frame, parsed[T.LINES], store)
            entry.backfill = (0, event.origin_offset + len(event.data))
            self._notify(ev.PreviewShown(entry.label, frame.height))
        elif isinstance(event, ev.BackfillProgressed):
            entry.backfill = (event.done, event.total) if event.done < event.total else None
            if event.done >= event.total:
                self.index.set_preview(source, None)
            self._notify(ev.SourceStateChanged(entry.label, entry.state, entry.detail))
        elif isinstance(event, ev.SourceConnected):
            self._set_state(source, ev.CONNECTED, event.detail)
        elif isinstance(event, ev.SourceDisconnected):
            entry.reconnects += 1
            self._set_state(source, ev.RECONNECTING, f"{event.reason}; retry in {event.retry_in:.1f}s")
        elif isinstance(event, ev.FileRotated):
            entry.rotations += 1
            self._set_state(source, entry.state, event.detail)
        elif isinstance(event, ev.FileTruncated):
            entry.truncations += 1
            self._set_state(source, entry.state, "the file was truncated; reading from its start")
        elif isinstance(event, ev.SourceEnded):
            self._queue_parse(source, _NO_LINES, final=True)
            self._set_state(source, ev.FAILED if event.failed else ev.ENDED, event.reason)

    def _analyse_loop(self) -> None:
        wait = self.interval
        last = 0.0
        while not self._stop.is_set():
            if not self._dirty.wait(0.1):
                continue
            pause = last + wait - time.monotonic()
            if pause > 0 and self._stop.wait(pause):
                return
            self._analysing = True
            self._dirty.clear()
            last = time.monotonic()
            try:
                self._analyse_once()
            except Exception as exc:
                self._notify(ev.SessionFailed(f"analysis failed: {type(exc).__name__}: {exc}"))
            finally:
                self._analysing = False
            took = time.monotonic() - last
            wait = max(self.interval, 2 * took)  # a long analysis leaves time for parsing

    def _analyse_once(self) -> None:
        started = time.monotonic()
        with self._lock:
            parts, self._pending = self._pending, []
        if not parts and self._accumulated is None:
            return
        if self._accumulated is not None:
            parts = [self._accumulated, *parts]
        self._accumulated = Tables.concat(parts) if len(parts) > 1 else parts[0]
        analysis = analyze_tables(
            finalize(self._accumulated),
            self.expectations,
            baseline=self.baseline,
            stall_seconds=self.stall_seconds,
        )
        self._fill_evidence(analysis)
        new = []
        for finding in analysis.findings:
            key = finding_key(finding)
            if key not in self.findings_seen:
                self.findings_seen[key] = len(self.findings_seen) + 1
                new.append(finding)
        snap = snapshot(analysis, [s.label for s in self.sources])
        self.analysis, self.snapshot = analysis, snap
        self.analyses += 1
        self._notify(ev.AnalysisUpdated(analysis, snap, new, time.monotonic() - started))

    def _fill_evidence(self, analysis: Analysis) -> None:
        """Evidence text from the session's own store: a live source's offsets are in its logical
        stream (across rotations), not necessarily in the file its label names."""
        for finding in analysis.findings:
            out = []
            for e in finding.evidence:
                key = self.index.key_of(e.source, e.line_no)
                out.append(Evidence(e.source, e.line_no, self.index.text(key) if key is not None else e.text))
            finding.evidence = out


def _options(spec: SourceSpec, base_date: dt.date | None) -> ParseOptions:
    """Time-only prefixes need a date: the one given, else a local file's modification date, else today."""
    if base_date is not None:
        return ParseOptions(base_date=base_date)
    if spec.kind == FILE and spec.path and Path(spec.path).exists():
        return ParseOptions(base_date=dt.date.fromtimestamp(os.stat(spec.path).st_mtime))
    return ParseOptions(base_date=dt.date.today())
