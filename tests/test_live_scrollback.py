"""The log index's scroll-back limit: each source keeps its newest lines, the memory of the index stays
bounded as lines go through, views, filters, search and labels stay consistent, and the text store
releases what no held line needs (spool segments and rotated files closed)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tracelens.live import store as store_module
from tracelens.live.index import KIND_CODES, NOT_HELD, UNKNOWN, LineFilter, LogIndex, parsed_columns
from tracelens.live.merge import split_keys
from tracelens.sources.files import line_spans
from tracelens.sources.generation import FileGeneration
from tracelens.tables.schema import C, Kind

LIMIT = 1000
BATCH = 170  # not a divisor of the limit: trims fall between batches


def _line(n: int) -> str:
    kind = "fault" if n % 7 == 0 else "batch"
    return f"[2026-11-20 10:{(n // 60) % 60:02d}:{n % 60:02d} TP{n % 4}] {kind} line {n:07d}"


def _feed(index: LogIndex, source: int, first: int, count: int, generation: FileGeneration | None = None):
    """Store and index lines first..first+count-1 of ``source`` (0-based numbers in the text), as the
    session's pump does, and fill their kinds, ranks and times as the worker's reply does."""
    data = "".join(_line(n) + "\n" for n in range(first, first + count)).encode()
    start = index.store(source).append(data, generation, 0)  # a file generation: its whole content
    starts, lengths = line_spans(data)
    index.append(source, starts + start, lengths)
    numbers = np.arange(first, first + count)
    frame = pl.DataFrame(
        {
            C.LINE_NO: numbers + 1,
            C.KIND: [Kind.FAULT if n % 7 == 0 else Kind.BATCH for n in numbers],
            C.TP: (numbers % 4).astype(np.int32),
            C.DP: np.full(count, None, dtype=object),
            C.TS: pl.Series(numbers * 1_000_000, dtype=pl.Datetime("us")),
        },
        schema_overrides={C.DP: pl.Int32},
    )
    index.fill_parsed(source, parsed_columns(frame))


def _number(text: str) -> int:
    return int(text.rsplit(" ", 1)[1])


def _index_bytes(index: LogIndex) -> int:
    return sum(
        column.data.nbytes
        for lines in index.lines
        for column in (lines.offset, lines.length, lines.kind, lines.tp, lines.dp, lines.ts)
    )


def test_the_index_holds_the_newest_lines_in_bounded_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "SPOOL_SEGMENT", 8 << 10)  # spool segments of 8 KiB: many to close
    index = LogIndex(limit=LIMIT)
    index.add_source("gpu1:/var/log/server.log")
    sizes, files = [], []
    total = 0
    while total < 60 * LIMIT:
        _feed(index, 0, total, BATCH)
        total += BATCH
        sizes.append(_index_bytes(index))
        files.append(index.store(0).open_files())
    lines = index.lines[0]
    assert index.count() == total and lines.count == total
    assert LIMIT <= index.held() <= LIMIT + LIMIT // 16
    assert index.dropped() == total - index.held() == lines.base
    # memory: reached within the first few trims, then never grows (no doubling past the cap)
    assert max(sizes) == sizes[len(sizes) // 4] == sizes[-1]
    assert sizes[-1] <= (LIMIT + LIMIT // 16) * 29
    # the spool segments open are those of the held lines (and the one being written), not all of them
    held_bytes = (LIMIT + LIMIT // 16) * (len(_line(0)) + 1)
    assert max(files[len(files) // 4 :]) <= held_bytes // (8 << 10) + 2 < files.count(0) + 60 * LIMIT // 200
    # the view is the newest lines, in order, each read back from the store with its own number
    order = index.order()
    assert [_number(index.text(int(k))) for k in order] == list(range(lines.base, total))
    assert index.line_numbers(order).tolist() == list(range(lines.base + 1, total + 1))
    # a key made before the trim (line 1) reads as not held, never as another line
    old = np.array([0, lines.base - 1, lines.base], dtype=np.int64)
    assert index.text(0) == NOT_HELD
    assert index.kinds(old).tolist()[:2] == [UNKNOWN, UNKNOWN]
    assert index.kinds(old).tolist()[2] == KIND_CODES[Kind.FAULT if lines.base % 7 == 0 else Kind.BATCH]
    assert index.key_of("gpu1:/var/log/server.log", 1) is None
    assert index.is_dropped("gpu1:/var/log/server.log", 1)
    assert not index.is_dropped("gpu1:/var/log/server.log", total)
    assert index.key_of("gpu1:/var/log/server.log", total) == total - 1


def test_filters_and_search_agree_with_the_held_lines_across_trims() -> None:
    index = LogIndex(limit=LIMIT)
    index.add_source("server.log")
    faults = LineFilter(kinds=frozenset({Kind.FAULT}))
    total = 0
    for round_ in range(12):
        _feed(index, 0, total, 3 * BATCH)
        total += 3 * BATCH
        held = [_number(index.text(int(k))) for k in index.order()]
        # kind filter: exactly the held fault lines
        view = index.select(faults)
        assert [_number(index.text(int(k))) for k in view] == [n for n in held if n % 7 == 0]
        # rank filter
        tp2 = index.select(LineFilter(rank="TP2"))
        assert [_number(index.text(int(k))) for k in tp2] == [n for n in held if n % 4 == 2]
        # a regex, its cache carried across trims (the same pattern every round), equals a fresh scan
        pattern = r"line \d{5}[05]3"
        expect = [n for n in held if re.search(pattern, _line(n))]
        got = index.select(LineFilter(pattern=pattern))
        assert [_number(index.text(int(k))) for k in got] == expect, round_
        # search from the top of a view made before more lines came (its oldest keys then dropped)
        stale = index.order()
        _feed(index, 0, total, BATCH)
        total += BATCH
        assert index.matches(pattern, stale)[: index.lines[0].base - int(stale[0])].sum() == 0
        row = index.find(pattern, stale, 0)
        if row is not None:
            assert int(stale[row]) >= index.lines[0].base
        assert index.next_kind(stale, 0) is not None


def test_merged_sources_keep_only_their_held_lines() -> None:
    index = LogIndex(limit=LIMIT)
    a, b = index.add_source("a.log"), index.add_source("b.log")
    for i in range(20):
        _feed(index, a, i * BATCH, BATCH)
        if i % 4 == 3:  # b: 850 lines, under the limit
            _feed(index, b, (i // 4) * BATCH, BATCH)
    order = index.order()
    sources, idx = split_keys(order)
    for s in (a, b):
        mine = idx[sources == s]
        lines = index.lines[s]
        assert mine.tolist() == list(range(lines.base, lines.count))
    times = index._columns(order, "ts")
    assert (np.diff(times) >= 0).all()
    assert index.lines[a].base > 0 and index.lines[b].base == 0


def test_rotated_files_no_line_needs_are_closed(tmp_path: Path) -> None:
    index = LogIndex(limit=LIMIT)
    index.add_source("server.log")
    generations = []
    total = 0
    for g in range(8):
        path = tmp_path / f"server.log.{g}"
        data = "".join(_line(n) + "\n" for n in range(total, total + LIMIT // 2)).encode()
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        generation = FileGeneration.of(str(path), fd)
        os.close(fd)
        generations.append(generation)
        _feed(index, 0, total, LIMIT // 2, generation)
        total += LIMIT // 2
    # the newest two or three files hold the newest 1,000 lines; the older ones are closed
    assert [g.fd >= 0 for g in generations[:5]] == [False] * 5
    assert all(g.fd >= 0 for g in generations[-2:])
    assert [_number(index.text(int(k))) for k in index.order()] == list(range(index.lines[0].base, total))
    index.close()
    assert all(g.fd < 0 for g in generations)


def test_no_limit_keeps_every_line_and_a_limit_below_one_is_refused() -> None:
    index = LogIndex(limit=None)
    index.add_source("server.log")
    _feed(index, 0, 0, 5 * BATCH)
    assert index.held() == index.count() == 5 * BATCH and index.dropped() == 0
    with pytest.raises(Exception, match="at least 1 line"):
        LogIndex(limit=0)
