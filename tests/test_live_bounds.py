"""What the live worker keeps does not grow with the session (issue 35, row 4): a server that restarts
for hours, or whose every error has words of its own, is followed in bounded memory. The worker's own
parse and analysis (`live.worker._Worker`, in this process so that its structures can be measured)
is fed such a log in batches, as the session feeds it, with an update after each batch."""

from __future__ import annotations

import io
import os
from collections import Counter

from tracelens.live.kept import ENDED_SERIES, KEPT_PER_CODE
from tracelens.live.messages import ParseRequested, RowsParsed, WorkerConfig
from tracelens.live.worker import _Worker, receive
from tracelens.parsers import ParseOptions

START = "[2026-11-20 {t}] server_args=ServerArgs(model_path='/m', speculative_algorithm='EAGLE3', speculative_num_steps=3, tp_size=1)"
READY = "[2026-11-20 {t}] The server is fired up and ready to roll!"
DECODE = "[2026-11-20 {t} TP0] Decode batch, #running-req: {n}, #token: 1538, token usage: 0.20, accept len: 2.{a:02d}, gen throughput (token/s): 5{a:02d}.00, #queue-req: 0, "
ERROR = "[2026-11-20 {t} TP0] Scheduler hit an exception: ValueError: token id {word} out of range"


def _clock(i: int) -> str:
    s = 9 * 3600 + i // 50
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def _letters(n: int) -> str:
    """A word of its own for ``n``, without digits (a finding's signature leaves numbers out)."""
    word = ""
    while True:
        n, digit = divmod(n, 26)
        word += "abcdefghijklmnopqrstuvwxyz"[digit]
        if not n:
            return word + "q"


def _feed(worker: _Worker, lines: list[str], batch: int) -> None:
    first, offset = 1, 0
    for seq, at in enumerate(range(0, len(lines), batch), start=1):
        data = "".join(line + "\n" for line in lines[at : at + batch]).encode()
        worker._parse_batch([ParseRequested(seq, 0, first, offset, data, False)])
        worker._analyse_once(seq, 0.0)
        first, offset = first + len(lines[at : at + batch]), offset + len(data)


def _worker(window: int) -> _Worker:
    config = WorkerConfig(["server.log"], [ParseOptions()], None, None, 900.0, 1.0, window)
    return _Worker(config, open(os.devnull, "wb"))  # closed with the test process


def test_a_server_restarting_all_along_keeps_no_frames_or_series_of_its_old_runs() -> None:
    lines: list[str] = []
    for run in range(120):  # a start every 60 lines: 120 runs
        at = run * 60
        lines += [START.format(t=_clock(at)), READY.format(t=_clock(at))]
        lines += [DECODE.format(t=_clock(at + i), n=1 + i % 8, a=i % 100) for i in range(58)]
    worker = _worker(window=20_000)
    _feed(worker, lines, batch=600)
    decode = worker._tables.running._decode
    ended = [key for key in decode if worker._kept.is_frozen(key)]
    assert len(ended) >= 100
    held = [key for key in ended if decode[key].pending is not None or decode[key].tail is not None]
    assert held == [], f"{len(held)} ended runs still hold their decode frames"
    statuses = worker._runs.kept
    with_series = [key for key, status in statuses.items() if status.series.height]
    assert len(statuses) >= 100 and len(with_series) <= ENDED_SERIES, len(with_series)
    # the figures stay: an ended run's means are still there for a baseline
    assert all(worker._tables.running.means(key, 3) is not None for key in ended)


def test_errors_with_words_of_their_own_keep_a_bounded_number_of_findings() -> None:
    lines: list[str] = [START.format(t=_clock(0)), READY.format(t=_clock(0))]
    for i in range(40_000):
        if i % 50 == 0:
            lines.append(ERROR.format(t=_clock(i), word=_letters(i)))
        else:
            lines.append(DECODE.format(t=_clock(i), n=1 + i % 8, a=i % 100))
    worker = _worker(window=500)  # the window is cut every 500 lines: findings leave it often
    _feed(worker, lines, batch=500)
    per_code = Counter((f.source, f.run, f.code) for f in worker._kept._kept.values())
    assert per_code and max(per_code.values()) <= KEPT_PER_CODE + 10, per_code


def test_a_session_catching_up_hands_its_worker_a_parse_block_at_a_time(tmp_path) -> None:
    """What a session's pump takes from its followers at once (up to 16 MiB of reads when it catches
    up on a log) goes to the worker in messages of at most a parse block, each ending at a line end: one
    message of 16 MiB held about 200 MiB in the worker. A read that stops inside a line stays with the
    read that ends it."""
    from tracelens.live import LiveSession, parse_spec
    from tracelens.sizes import DEFAULT_BLOCK_BYTES, FOLLOW_READ_BYTES

    path = tmp_path / "server.log"
    path.write_text("")
    session = LiveSession([parse_spec(str(path))], interval=0.5)
    sent: list[bytes] = []
    session._send_parse = lambda source, first, offset, data, final: sent.append(data)  # type: ignore[method-assign]
    line = (DECODE.format(t=_clock(0), n=4, a=50) + "\n").encode()
    read = line * (FOLLOW_READ_BYTES // len(line))
    cut = len(line) // 2
    # four whole reads, then a line split over two reads
    parts = [read] * 4 + [read + line[:cut], line[cut:] + read]
    at, chunks = 0, []
    for part in parts:
        chunks.append((at, part))
        at += len(part)
    session._ingest(0, chunks)
    assert b"".join(sent) == b"".join(parts)
    assert len(sent) >= 5 and all(d.endswith(b"\n") for d in sent), [len(d) for d in sent]
    assert max(len(d) for d in sent) <= DEFAULT_BLOCK_BYTES + FOLLOW_READ_BYTES + len(line)
    assert sum(len(d) > DEFAULT_BLOCK_BYTES for d in sent) == 1  # only the read that ends a split line
    assert session.index.count() == b"".join(parts).count(b"\n")


def test_the_worker_answers_a_parse_with_the_index_columns_not_the_rows() -> None:
    """The screen's process stores only each line's kind, ranks and time: the parsed rows stay in the
    worker. A 6 MiB block of decode lines pickled to 17 MiB with its tables (unpickled in the screen's
    process as it caught up on a log), to about 1 MiB without."""
    lines = [DECODE.format(t=_clock(i), n=4, a=50 + i % 30) for i in range(20_000)]
    data = ("\n".join(lines) + "\n").encode()
    out = io.BytesIO()
    config = WorkerConfig(["server.log"], [ParseOptions()], None, None, 60.0, 1.0)
    worker = _Worker(config, out)
    worker._parse_batch([ParseRequested(1, 0, 1, 0, data, True)])
    out.seek(0)
    reply = receive(out)
    assert isinstance(reply, RowsParsed) and (reply.first_line, reply.count) == (1, len(lines))
    assert reply.columns is not None and len(reply.columns["kind"]) == len(lines)
    assert len(out.getvalue()) < len(data) / 2, (len(out.getvalue()), len(data))


def test_a_catch_up_without_updates_holds_a_few_windows_of_rows() -> None:
    """A session catching up on a log sends its worker block after block before the worker's next
    update (which waits while parse messages are queued): the rows parsed meanwhile are cut to the
    window as they come, not joined all at once at the update (on one run of 1 GiB, a 32 MiB catch-up,
    that join was the worker's peak)."""
    from tracelens.live.window import FOLD_WINDOWS
    from tracelens.tables.schema import T

    window = 500
    lines = [START.format(t=_clock(0)), READY.format(t=_clock(0))]
    lines += [DECODE.format(t=_clock(i), n=1 + i % 8, a=i % 100) for i in range(20 * window)]
    worker = _worker(window)
    first, offset, held = 1, 0, []
    for seq, at in enumerate(range(0, len(lines), window), start=1):  # no update in between
        data = "".join(line + "\n" for line in lines[at : at + window]).encode()
        worker._parse_batch([ParseRequested(seq, 0, first, offset, data, False)])
        first, offset = first + len(lines[at : at + window]), offset + len(data)
        tables = worker._tables
        pending = sum(part[T.LINES].height for part in tables._parts)
        held.append(pending + (tables._held[T.LINES].height if tables._held is not None else 0))
    assert max(held) <= (FOLD_WINDOWS + 2) * window, held
    assert worker._tables.spilled
    view = worker._tables.view()  # the update still sees the newest window whole
    assert view[T.LINES].height <= 2 * window
    assert view[T.LINES].get_column("line_no").max() == len(lines)


def test_a_session_whose_worker_is_busy_reads_no_more_than_a_few_blocks_ahead(tmp_path) -> None:
    """While the worker is busy (its seed analysis of a long run takes a minute), the followers read
    ahead of it by at most the queue's bytes: a session catching up on a log had read the whole catch-up
    into its queue (32 events of 4 MiB) and kept the heap that took."""
    import sys
    import threading

    from live_support import wait_for

    from tracelens.live import LiveSession, parse_spec
    from tracelens.sizes import DEFAULT_BLOCK_BYTES, FOLLOW_READ_BYTES
    from tracelens.sources.events import LinesAppended

    line = (DECODE.format(t=_clock(0), n=4, a=50) + "\n").encode()
    path = tmp_path / "server.log"
    path.write_bytes(line * (12 * FOLLOW_READ_BYTES // len(line)))  # 48 MiB: 12 reads
    session = LiveSession([parse_spec(str(path))], interval=0.5)
    busy, released = threading.Event(), threading.Event()

    def worker_busy(source: int, first: int, offset: int, data: bytes, final: bool) -> None:
        busy.set()
        released.wait(60)

    session._send_parse = worker_busy  # type: ignore[method-assign]
    read = [0]
    emit = session._emit

    def counted(event: object) -> None:
        emit(event)  # type: ignore[arg-type]
        if isinstance(event, LinesAppended):  # not the tail's preview, read again after it
            read[0] += len(event.data)

    session._emit = counted  # type: ignore[method-assign]

    def follower_waits() -> bool:
        follower = next(t for t in threading.enumerate() if t.name.startswith("tracelens follow"))
        frame = sys._current_frames().get(follower.ident or 0)
        names = []
        while frame is not None:
            names.append(frame.f_code.co_name)
            frame = frame.f_back
        return "_emit" in names and "wait" in names

    session.start()
    try:
        assert wait_for(busy.is_set)
        assert wait_for(lambda: follower_waits() or read[0] == path.stat().st_size)
        # the pump's batch (in the busy send), the queue's bytes and the read that found it full
        assert read[0] <= 2 * DEFAULT_BLOCK_BYTES + 2 * FOLLOW_READ_BYTES, read[0]
    finally:
        released.set()
        session.stop()


def test_the_first_update_waits_for_the_parse_in_progress() -> None:
    """The worker's first update after its seed waits while a parse runs (the catch-up's first block):
    a window's analysis beside a block's parse made the worker's peak. Then it analyses at once."""
    import threading

    from live_support import wait_for

    class CountedEvent(threading.Event):
        looks = 0

        def is_set(self) -> bool:
            CountedEvent.looks += 1
            return super().is_set()

    worker = _worker(1000)
    worker._parsing = CountedEvent()
    worker._parsing.set()
    analysed: list[int] = []
    worker._analyse_once = lambda through, started: analysed.append(through)  # type: ignore[method-assign]
    loop = threading.Thread(target=worker._analyse_loop, daemon=True)
    worker._dirty.set()
    loop.start()
    try:
        assert wait_for(lambda: CountedEvent.looks >= 3)
        assert analysed == []  # still parsing: no update yet
        worker._parsing.clear()
        assert wait_for(lambda: len(analysed) == 1)
    finally:
        worker._done.set()
        loop.join(10)
