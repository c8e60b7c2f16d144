"""The log view's model: every line of every source by offset, with its kind, rank and time once parsed.

The text stays in each source's `TextStore`; the index holds numbers in growable numpy columns, so a
view of millions of lines is an int64 array of keys (see `merge`), filtering is a vectorised mask and
a regex runs (Rust's engine, through polars) on blocks of text read back from the store, once per
pattern, then only on new lines.

One writer (the session thread) appends; readers (the UI thread) read columns under the same lock.

Scroll-back is bounded: each source keeps its newest `limit` lines (`SCROLLBACK_LINES` by default). A
key names a line by its number in its source for the whole session, so a view made before a trim stays
valid; a key below the source's `base` (the lines dropped) reads as `NOT_HELD`, never as another line.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from tracelens.errors import InputError
from tracelens.live.merge import INDEX_MASK, NO_TS, PREVIEW_BIT, forward_fill, merged_order, split_keys
from tracelens.live.store import SCROLLBACK_LINES, TextStore
from tracelens.sizes import LIVE_BATCH_BYTES
from tracelens.sources.files import block_lines
from tracelens.sources.protocol import Block
from tracelens.tables.schema import KINDS, C, Kind

UNKNOWN = -1
KIND_CODES: dict[str, int] = {kind: i for i, kind in enumerate(KINDS)}
FAULT = KIND_CODES[Kind.FAULT]
_SCAN_LINES = 250_000
NOT_HELD = "[line no longer held: the log view keeps each source's newest lines (--scrollback)]"


class _Column:
    """A numpy array that grows by doubling (up to a cap) and drops its oldest values."""

    def __init__(self, dtype: type, fill: int) -> None:
        self.data: np.ndarray = np.full(1024, fill, dtype=dtype)
        self.fill = fill
        self.size = 0

    def extend(self, values: np.ndarray, cap: int) -> None:
        need = self.size + len(values)
        if need > len(self.data):
            grown = np.full(max(need, min(2 * len(self.data), cap)), self.fill, dtype=self.data.dtype)
            grown[: self.size] = self.data[: self.size]
            self.data = grown
        self.data[self.size : need] = values
        self.size = need

    def view(self) -> np.ndarray:
        return self.data[: self.size]

    def drop(self, n: int) -> None:
        """Forget the oldest ``n`` values (in place: the array keeps its size)."""
        kept = self.size - n
        self.data[:kept] = self.data[n : self.size]
        self.data[kept : self.size] = self.fill
        self.size = kept


@dataclass
class SourceLines:
    """Columns of one source's newest lines (index i is line_no base+i+1) and the store that holds
    their text; at most ``limit`` lines, and ``limit // 16`` more between two trims (trimming copies the
    columns: once every so many lines, not at every append)."""

    store: TextStore = field(default_factory=TextStore)
    limit: int | None = None  # None: every line
    base: int = 0  # lines dropped from the front
    offset: _Column = field(default_factory=lambda: _Column(np.int64, 0))
    length: _Column = field(default_factory=lambda: _Column(np.int32, 0))
    kind: _Column = field(default_factory=lambda: _Column(np.int8, UNKNOWN))
    tp: _Column = field(default_factory=lambda: _Column(np.int32, UNKNOWN))
    dp: _Column = field(default_factory=lambda: _Column(np.int32, UNKNOWN))
    ts: _Column = field(default_factory=lambda: _Column(np.int64, NO_TS))

    @property
    def count(self) -> int:
        """Lines seen (held or dropped)."""
        return self.base + self.offset.size

    @property
    def held(self) -> int:
        return self.offset.size

    def _columns(self) -> tuple[_Column, ...]:
        return (self.offset, self.length, self.kind, self.tp, self.dp, self.ts)

    def append(self, offsets: np.ndarray, lengths: np.ndarray) -> int:
        """Add lines; returns how many of the oldest were dropped to stay within the limit."""
        n = len(offsets)
        cap = 1 << 62
        dropped = 0
        if self.limit is not None:
            cap = self.limit + max(self.limit // 16, 1)
            if self.held + n > cap:
                dropped = self.held + n - self.limit
                if n > self.limit:  # even some of the new ones go
                    offsets, lengths = offsets[n - self.limit :], lengths[n - self.limit :]
                old = min(dropped, self.held)  # (the new lines beyond the limit were never stored)
                for column in self._columns():
                    column.drop(old)
                self.base += dropped
                n = len(offsets)
        self.offset.extend(offsets, cap)
        self.length.extend(lengths, cap)
        self.kind.extend(np.full(n, UNKNOWN, dtype=np.int8), cap)
        self.tp.extend(np.full(n, UNKNOWN, dtype=np.int32), cap)
        self.dp.extend(np.full(n, UNKNOWN, dtype=np.int32), cap)
        self.ts.extend(np.full(n, NO_TS, dtype=np.int64), cap)
        if dropped and self.held:
            self.store.release(int(self.offset.data[0]))
        return dropped

    def positions(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(held, position in the columns) of line indexes (line_no - 1)."""
        pos = idx - self.base
        held = (pos >= 0) & (pos < self.held)
        return held, np.where(held, pos, 0)

    def set_parsed(self, lines: pl.DataFrame, first_index: int = 0) -> None:
        """Fill kind, ranks and time from a parsed `lines` frame (line_no 1-based, after ``first_index``)."""
        self.fill(parsed_columns(lines), first_index)

    def fill(self, columns: dict[str, np.ndarray], first_index: int = 0) -> None:
        """Fill kind, ranks and time from `parsed_columns` (plain array stores: quick under a lock)."""
        if not len(columns[C.LINE_NO]):
            return
        held, pos = self.positions(columns[C.LINE_NO] - 1 - first_index)
        if not held.all():  # parsed after its line was dropped (a limit smaller than a batch)
            pos = pos[held]
        for name in ("kind", "tp", "dp", "ts"):
            values = columns[name]
            getattr(self, name).data[pos] = values if held.all() else values[held]


def parsed_columns(lines: pl.DataFrame) -> dict[str, np.ndarray]:
    """What the index keeps of a parsed `lines` frame, as numpy arrays: line_no, kind code, ranks, time."""
    if not lines.height:
        return {C.LINE_NO: np.zeros(0, dtype=np.int64)}
    return {
        C.LINE_NO: lines.get_column(C.LINE_NO).to_numpy(),
        "kind": lines.get_column(C.KIND)
        .replace_strict(KIND_CODES, default=UNKNOWN, return_dtype=pl.Int8)
        .to_numpy(),
        "tp": lines.get_column(C.TP).fill_null(UNKNOWN).to_numpy(),
        "dp": lines.get_column(C.DP).fill_null(UNKNOWN).to_numpy(),
        "ts": lines.get_column(C.TS).dt.epoch("us").fill_null(NO_TS).to_numpy(),
    }


@dataclass(frozen=True)
class LineFilter:
    """What the log view shows: kinds (None: all), a rank such as `TP3` or `DP1`, a regex."""

    kinds: frozenset[str] | None = None
    rank: str | None = None
    pattern: str | None = None

    @property
    def active(self) -> bool:
        return self.kinds is not None or bool(self.rank) or bool(self.pattern)

    def describe(self) -> str:
        parts = []
        if self.kinds is not None:
            parts.append("kind " + ",".join(sorted(self.kinds)))
        if self.rank:
            parts.append(self.rank)
        if self.pattern:
            parts.append(f"/{self.pattern}/")
        return " · ".join(parts) if parts else "all lines"


def parse_rank(text: str) -> tuple[str, int]:
    """`TP3` / `tp3` / `3` -> ("tp", 3); `DP1` -> ("dp", 1)."""
    raw = text.strip().lower()
    column = "tp"
    for prefix in ("tp", "dp"):
        if raw.startswith(prefix):
            column, raw = prefix, raw[len(prefix) :]
    if not raw.isdigit():
        raise InputError(f"a rank is TPn, DPn or a number, got {text!r}")
    return column, int(raw)


def check_pattern(pattern: str) -> None:
    """Raise InputError when polars' (Rust) regex engine cannot compile ``pattern``."""
    try:
        pl.Series([""]).str.contains(pattern)
    except Exception as exc:  # polars raises ComputeError for a bad pattern
        raise InputError(f"not a valid regex: {pattern!r}") from exc


class LogIndex:
    def __init__(self, limit: int | None = SCROLLBACK_LINES) -> None:
        if limit is not None and limit < 1:
            raise InputError(f"the scroll-back is at least 1 line, got {limit}")
        self.limit = limit  # lines held per source (None: every line)
        self.labels: list[str] = []
        self.lines: list[SourceLines] = []
        self.previews: list[SourceLines | None] = []
        self.version = 0  # bumped on every change the view should notice
        self._lock = threading.RLock()
        self._order: np.ndarray | None = None
        self._order_version = -1
        self._matches: dict[str, list[np.ndarray]] = {}

    # ----- writing (session thread) -----

    def add_source(self, label: str) -> int:
        with self._lock:
            self.labels.append(label)
            self.lines.append(SourceLines(limit=self.limit))
            self.previews.append(None)
            self.version += 1
            return len(self.labels) - 1

    def source_of(self, label: str) -> int:
        return self.labels.index(label)

    def append(self, source: int, offsets: np.ndarray, lengths: np.ndarray) -> None:
        """Lines (byte offsets in the source's stream, byte lengths) whose bytes are already in the
        source's store."""
        with self._lock:
            dropped = self.lines[source].append(offsets, lengths)
            if dropped and self.previews[source] is None:
                # the search caches hold one bool per held line: the dropped lines' go too
                for cache in self._matches.values():
                    if source < len(cache):
                        cache[source] = cache[source][dropped:].copy()
            self.version += 1

    def skip(self, source: int, count: int) -> None:
        """Count ``count`` lines as seen and dropped before any is held (the scroll-back would drop
        them at once: a dataset's lines before the newest ``limit`` are not read at all)."""
        with self._lock:
            lines = self.lines[source]
            if lines.held:
                raise ValueError("lines are skipped only before any is held")
            lines.base += count
            self.version += 1

    def fill_parsed(self, source: int, columns: dict[str, np.ndarray]) -> None:
        """Kinds, ranks and times of parsed lines (`parsed_columns`); only array stores under the lock,
        which the pump and the view wait on."""
        with self._lock:
            self.lines[source].fill(columns)
            self.version += 1

    def store(self, source: int) -> TextStore:
        return self.lines[source].store

    def set_preview(
        self,
        source: int,
        frame: pl.DataFrame | None,
        parsed: pl.DataFrame | None = None,
        store: TextStore | None = None,
    ) -> None:
        """Show ``frame`` (a large file's last lines, text in ``store``) for the source until
        `set_preview(source, None)`."""
        with self._lock:
            old = self.previews[source]
            if old is not None:
                old.store.close(close_generations=False)
            if frame is None or store is None:
                self.previews[source] = None
            else:
                preview = SourceLines(store)
                preview.append(
                    frame.get_column(C.BYTE_OFFSET).to_numpy(), frame.get_column(C.BYTE_LEN).to_numpy()
                )
                if parsed is not None:
                    preview.set_parsed(parsed)
                self.previews[source] = preview
            for cache in self._matches.values():
                cache[source] = np.zeros(0, dtype=bool)
            self.version += 1

    def close(self) -> None:
        with self._lock:
            for preview in self.previews:
                if preview is not None:
                    preview.store.close(close_generations=False)
            for lines in self.lines:
                lines.store.close()

    # ----- reading (any thread) -----

    def _shown(self, source: int) -> SourceLines:
        preview = self.previews[source]
        return preview if preview is not None else self.lines[source]

    def count(self) -> int:
        """Lines seen, held or not."""
        with self._lock:
            return sum(self._shown(s).count for s in range(len(self.labels)))

    def held(self) -> int:
        """Lines the view can show."""
        with self._lock:
            return sum(self._shown(s).held for s in range(len(self.labels)))

    def dropped(self) -> int:
        """Lines dropped by the scroll-back limit, over all sources."""
        with self._lock:
            return sum(lines.base for lines in self.lines)

    def is_dropped(self, label: str, line_no: int) -> bool:
        """Whether a line was seen but is no longer held (evidence older than the scroll-back)."""
        if label not in self.labels:
            return False
        return 0 < line_no <= self.lines[self.labels.index(label)].base

    def order(self) -> np.ndarray:
        """Keys of every shown line, merged by time across sources."""
        with self._lock:
            if self._order is not None and self._order_version == self.version:
                return self._order
            shown = [self._shown(s) for s in range(len(self.labels))]
            if len(shown) == 1:
                order = np.arange(shown[0].base, shown[0].count, dtype=np.int64)
            else:
                order = merged_order(
                    [forward_fill(lines.ts.view().copy()) for lines in shown], [lines.base for lines in shown]
                )
            for s, preview in enumerate(self.previews):
                if preview is not None:
                    mine = (order >> 40) == s
                    order[mine] |= PREVIEW_BIT
            self._order, self._order_version = order, self.version
            return order

    def _columns(self, keys: np.ndarray, name: str) -> np.ndarray:
        sources, idx = split_keys(keys)
        preview = (idx & PREVIEW_BIT) != 0
        idx = idx & ~PREVIEW_BIT & INDEX_MASK
        out = np.empty(len(keys), dtype=np.int64)
        with self._lock:
            for s in np.unique(sources):
                for is_preview in (False, True):
                    mine = (sources == s) & (preview == is_preview)
                    if not mine.any():
                        continue
                    lines = self.previews[s] if is_preview else self.lines[s]
                    if lines is None:
                        out[mine] = UNKNOWN
                        continue
                    held, pos = lines.positions(idx[mine])
                    out[mine] = np.where(held, getattr(lines, name).data[pos], UNKNOWN)
        return out

    def kinds(self, keys: np.ndarray) -> np.ndarray:
        return self._columns(keys, "kind")

    def line_numbers(self, keys: np.ndarray) -> np.ndarray:
        """1-based line numbers; 0 for a preview line (its number is known once the file is read)."""
        _, idx = split_keys(keys)
        return np.where((idx & PREVIEW_BIT) != 0, 0, (idx & INDEX_MASK) + 1)

    def text(self, key_: int) -> str:
        source, idx = int(key_) >> 40, int(key_) & INDEX_MASK
        lines = self.previews[source] if idx & PREVIEW_BIT else self.lines[source]
        idx &= ~PREVIEW_BIT
        with self._lock:  # a trim moves the columns
            if lines is None or idx >= lines.count:
                return ""
            if idx < lines.base:
                return NOT_HELD
            offset, length = (
                int(lines.offset.data[idx - lines.base]),
                int(lines.length.data[idx - lines.base]),
            )
        return lines.store.line(offset, length)

    def label(self, key_: int) -> str:
        return self.labels[int(key_) >> 40]

    def key_of(self, label: str, line_no: int) -> int | None:
        try:
            source = self.labels.index(label)
        except ValueError:
            return None
        if not self.lines[source].base < line_no <= self.lines[source].count:
            return None  # not seen yet, or no longer held (`is_dropped`)
        return (source << 40) | (line_no - 1)

    # ----- filtering and search -----

    def select(self, line_filter: LineFilter) -> np.ndarray:
        """Keys of the shown lines that pass the filter, in view order."""
        order = self.order()
        if not line_filter.active:
            return order
        mask = np.ones(len(order), dtype=bool)
        if line_filter.kinds is not None:
            codes = [KIND_CODES[k] for k in line_filter.kinds if k in KIND_CODES]
            mask &= np.isin(self.kinds(order), codes)
        if line_filter.rank:
            column, value = parse_rank(line_filter.rank)
            mask &= self._columns(order, column) == value
        if line_filter.pattern:
            mask &= self.matches(line_filter.pattern, order)
        return order[mask]

    def matches(self, pattern: str, keys: np.ndarray) -> np.ndarray:
        """Whether each key's text matches ``pattern`` (computed once per line and pattern)."""
        check_pattern(pattern)
        with self._lock:
            cache = self._matches.setdefault(pattern, [np.zeros(0, dtype=bool) for _ in self.labels])
            cache.extend(np.zeros(0, dtype=bool) for _ in range(len(self.labels) - len(cache)))
            # the oldest patterns are dropped: a cache holds one bool per line
            while len(self._matches) > 4:
                self._matches.pop(next(iter(self._matches)))
        sources, idx = split_keys(keys)
        idx = idx & ~PREVIEW_BIT
        out = np.zeros(len(keys), dtype=bool)
        for s in np.unique(sources):
            while True:
                # under the lock (a trim moves the columns), a slice at a time: the pump that appends
                # waits for one slice, not for a whole scan
                with self._lock:
                    lines, done = self._shown(int(s)), cache[s]
                    if len(done) >= lines.held:
                        mine = sources == s
                        held, pos = lines.positions(idx[mine])
                        out[mine] = held & done[pos] if len(done) else False
                        break
                    hi = min(len(done) + _SCAN_LINES, lines.held)
                    cache[s] = np.concatenate([done, self._scan(lines, len(done), hi, pattern)])
        return out

    def _scan(self, lines: SourceLines, lo: int, hi: int, pattern: str) -> np.ndarray:
        """Regex over lines [lo, hi) of a source, reading their text back in big contiguous reads."""
        parts = []
        offsets, lengths = lines.offset.view(), lines.length.view()
        store = lines.store
        i = lo
        while i < hi:
            start = int(offsets[i])
            j = int(np.searchsorted(offsets, start + LIVE_BATCH_BYTES, side="left"))
            j = min(max(j, i + 1), hi)
            end = int(offsets[j - 1] + lengths[j - 1])
            data = store.read(start, end - start)
            text = block_lines(Block("", 1, 0, data)).get_column(C.TEXT)
            if len(text) != j - i:  # text gone (a truncated file): its placeholder, line by line
                text = pl.Series([store.line(int(offsets[k]), int(lengths[k])) for k in range(i, j)])
            parts.append(text.str.contains(pattern).fill_null(False).to_numpy())
            i = j
        return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)

    def find(self, pattern: str, view: np.ndarray, start: int, forward: bool = True) -> int | None:
        """Position in ``view`` of the next (or previous) line after ``start`` matching ``pattern``."""
        hits = np.flatnonzero(self.matches(pattern, view))
        if not len(hits):
            return None
        if forward:
            after = hits[hits > start]
            return int(after[0]) if len(after) else int(hits[0])  # wrap around
        before = hits[hits < start]
        return int(before[-1]) if len(before) else int(hits[-1])

    def next_kind(self, view: np.ndarray, start: int, kind_code: int = FAULT) -> int | None:
        """Position of the next line of a kind after ``start`` (wrapping), e.g. the next fault."""
        hits = np.flatnonzero(self.kinds(view) == kind_code)
        if not len(hits):
            return None
        after = hits[hits > start]
        return int(after[0]) if len(after) else int(hits[0])
