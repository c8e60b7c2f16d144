"""The live session's parser and analyser run in a worker process of lower priority; the log view
never depends on it: when it dies, lines are still indexed and shown, and the failure is reported."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from live_support import Recorder, view_texts, wait_for

from tracelens.live import LiveSession, parse_spec
from tracelens.live import events as ev
from tracelens.sources.files import block_lines, line_spans
from tracelens.sources.protocol import Block
from tracelens.tables.schema import C, T

pytestmark = pytest.mark.timeout(90)

DECODE = "[2026-11-20 10:00:{s:02d} TP0] Decode batch, #running-req: 1, #token: 9, accept len: 2.50, gen throughput (token/s): 90.00, "


def _session(path: Path) -> LiveSession:
    spec = parse_spec(str(path))
    return LiveSession([spec], interval=0.1, follower_options={spec.label: {"poll": 0.01}})


def test_parsing_and_analysis_run_in_a_lower_priority_process(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text("".join(DECODE.format(s=i) + "\n" for i in range(20)))
    session = _session(path)
    recorder = Recorder()
    session.subscribe(recorder)
    session.start()
    try:
        worker = session._worker
        assert worker is not None and worker.process.pid != os.getpid()
        assert os.getpriority(os.PRIO_PROCESS, worker.process.pid) > os.getpriority(os.PRIO_PROCESS, 0)
        assert wait_for(lambda: session.analyses >= 1) and session.wait_idle()
        parsed = recorder.of(ev.LinesParsed)
        assert sum(e.count for e in parsed) == 20
        assert parsed[-1].newest_decode == (2.5, 90.0)
        assert session.index.kinds(session.index.order()).tolist() == [session_kind("batch")] * 20
        assert session.analysis is not None and session.analysis.tables[T.BATCHES].height == 20
        assert session.snapshot.lines == 20
    finally:
        session.stop()
    assert worker.process.poll() is not None  # stopped with the session


def session_kind(kind: str) -> int:
    from tracelens.live.index import KIND_CODES

    return KIND_CODES[kind]


def test_when_the_worker_dies_lines_are_still_shown_and_the_failure_reported(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    path.write_text(DECODE.format(s=0) + "\n")
    session = _session(path)
    recorder = Recorder()
    session.subscribe(recorder)
    session.start()
    try:
        assert wait_for(lambda: session.analyses >= 1)
        before = session.analysis
        assert before is not None
        session._worker.process.kill()
        assert wait_for(lambda: bool(recorder.of(ev.SessionFailed)))
        assert "parser's process ended" in recorder.of(ev.SessionFailed)[0].message
        with path.open("a") as fh:
            fh.write("after the worker died\n")
        assert wait_for(lambda: session.index.count() == 2)
        assert view_texts(session)[-1] == "after the worker died"
        assert session.wait_idle()
        assert session.analysis is before  # the last one fetched, without waiting for a dead worker
    finally:
        session.stop()


def test_a_dead_worker_never_makes_the_sender_wait(tmp_path: Path) -> None:
    """Lines sent after the worker died are dropped at once, even past the queue's byte bound: the
    pump, which also feeds the log view, must not wait for a process that is gone."""
    import threading

    from tracelens.live.messages import WorkerConfig
    from tracelens.live.worker import WorkerClient
    from tracelens.parsers import ParseOptions

    config = WorkerConfig(["a"], [ParseOptions()], None, None, 900.0, 0.1)
    ended = threading.Event()
    client = WorkerClient(config, lambda message: None, lambda reason: ended.set(), max_bytes=10)
    try:
        client.process.kill()
        assert ended.wait(20) and client.gone

        def send() -> None:  # past the 10-byte bound: would wait forever if not dropped
            for seq in range(1, 6):
                client.parse(seq, 0, seq, 0, b"x" * 100 + b"\n", False)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        sender.join(timeout=20)
        assert not sender.is_alive()
    finally:
        client.close()


@given(st.lists(st.sampled_from([b"a", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b" "]), max_size=60))
def test_the_pump_cuts_lines_where_the_parser_does(pieces: list[bytes]) -> None:
    """The pump indexes lines with `line_spans` (numpy only); the worker parses `block_lines` frames of
    the same bytes: both must agree on every line's offset and length."""
    data = b"".join(pieces)
    starts, lengths = line_spans(data)
    frame = block_lines(Block("x", 1, 0, data))
    assert starts.tolist() == frame.get_column(C.BYTE_OFFSET).to_list()
    assert lengths.tolist() == frame.get_column(C.BYTE_LEN).to_list()


def test_an_update_reads_a_bounded_window_of_rows_and_every_run_whole() -> None:
    """`LiveTables` holds each source's newest lines (at most twice the window) and the small tables
    whole; `runs` covers every line, and `everything()` gives back the batch parse's tables."""
    from tracelens.engine.ingest import parse_paths
    from tracelens.engine.stream import SourceParser
    from tracelens.live.window import LiveTables
    from tracelens.parsers import ParseOptions

    from conftest import SAMPLE_LOGS

    path = SAMPLE_LOGS / "sweep_and_crash.log"
    data = path.read_bytes()
    batch = parse_paths([path])
    label = batch[T.LINES].item(0, C.SOURCE)
    parser = SourceParser(ParseOptions())
    live = LiveTables(window=300)
    cuts = [0, *sorted({data.index(b"\n", at) + 1 for at in range(4096, len(data), 4096)}), len(data)]
    line = 1
    for start, end in itertools.pairwise(cuts):
        frame = block_lines(Block(label, line, start, data[start:end]))
        line += frame.height
        tables, _, parsed = parser.feed(frame, end == len(data))
        if parsed:
            live.add(tables)
        view = live.view()
        assert view[T.LINES].height <= 2 * 300
    assert live.lines == batch[T.LINES].height == 4540 and live.spilled
    assert live.window_start(label) > 4000
    view = live.view()
    assert view[T.RUNS].equals(batch[T.RUNS])  # whole runs, although the window holds their end only
    assert view[T.LIFECYCLE].equals(batch[T.LIFECYCLE]) and view[T.SERVER_ARGS].equals(batch[T.SERVER_ARGS])
    # faults are windowed too, each one whole (its traceback's pieces go with its first line)
    recent = batch[T.FAULTS].filter(pl.col(C.LINE_NO) >= live.window_start(label))
    assert recent.height and view[T.FAULTS].equals(recent)
    whole = live.everything()
    for name in (T.LINES, T.BATCHES, T.DEBUG, T.FAULTS, T.LIFECYCLE, T.RUNS, T.SERVER_ARGS):
        assert whole[name].equals(batch[name]), name
    live.close()


def test_findings_outlive_the_window_and_the_full_analysis_reads_every_row(tmp_path: Path) -> None:
    """With a window of 300 lines, an update judges the newest 300-600 lines of a 4540-line log: what it
    found earlier is kept, `session.analysis` (the report's) is still the batch analysis of every row,
    and the open run's means are those of the window (docs/live.md: what the live view computes)."""
    import shutil

    from tracelens.analysis import Severity
    from tracelens.engine.ingest import analyze

    from conftest import SAMPLE_LOGS

    path = tmp_path / "sweep_and_crash.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", path)
    batch = analyze([path])
    spec = parse_spec(str(path))
    session = LiveSession(
        [spec], interval=0.1, window_lines=300, follower_options={spec.label: {"poll": 0.01}}
    )
    session.start()
    try:
        assert wait_for(lambda: session.analyses >= 1) and session.wait_idle(timeout=60)
        assert session.snapshot.lines == 4540
        full = session.analysis
        assert full is not None
        keep = [C.RUN, C.LINE_COUNT, "mean_accept_len", "mean_gen_throughput", "status"]
        assert full.runs.select(keep).equals(batch.runs.select(keep))
        found = lambda findings: {(f.run, f.code, f.severity) for f in findings}  # noqa: E731
        assert found(full.findings) == found(batch.findings)
        live = found(session.findings)
        assert live <= found(batch.findings)
        # Every run keeps all its findings: the first left the window long ago (kept, and frozen when
        # it ended), the second was judged once on all its rows (read back from disk) when it ended.
        # Only a comparison across runs is missing: the first run's debug lines are on disk.
        missing = found(batch.findings) - live
        assert missing == {(2, "debug-sites-missing", Severity.WARNING)}
        newest = session.snapshot.runs[0]
        last = batch.runs.row(-1, named=True)
        assert newest.run == 3 and newest.status == last["status"]
        # the run's means are those of every row (kept as rows arrived), its plots the window's
        assert newest.mean_accept_len == pytest.approx(last["mean_accept_len"], rel=1e-9)
        assert newest.mean_gen_throughput == pytest.approx(last["mean_gen_throughput"], rel=1e-9)
        assert newest.window_figures == ("series",)
    finally:
        session.stop()


def _dp_log(rounds: int = 700, ready_line: bool = True) -> str:
    """The DP-attention sample's start (4 DP groups, EAGLE, ready at 12:00:43), then ``rounds`` decode
    rounds, 4 a second, every group printing its own line per round at a jittered time (so a round's
    lines interleave with the next round's and the window's cuts split rounds), and aux captures with a
    NaN norm now and then and one embedding capture near the end."""
    import datetime as dt
    import random

    from conftest import SAMPLE_LOGS

    start = (SAMPLE_LOGS / "era_2025_dp_attention.log").read_text().splitlines()
    head = start[: next(i for i, line in enumerate(start) if "fired up" in line) + 1]
    if not ready_line:  # the warm-up is then the first rounds, not the first minute after ready
        head = [line for line in head if "fired up" not in line]
    rng = random.Random(10)
    ready = dt.datetime(2025, 5, 20, 12, 0, 43)
    events: list[tuple[float, str]] = []
    for k in range(rounds):
        for group in range(4):
            at = 1.0 + k * 0.25 + rng.uniform(0, 0.4)
            running = rng.choice([1, 2, 3, 4]) + (k > rounds // 2)
            accept = 2.2 + 0.8 * (k > 300) + rng.uniform(-0.3, 0.3) + 0.05 * group
            tput = 60.0 * running * accept / 2.5 + rng.uniform(-5, 5)
            events.append(
                (
                    at,
                    f"DP{group} TP{2 * group}] Decode batch. #running-req: {running}, #token: {900 * running}, "
                    f"token usage: 0.01, accept len: {accept:.2f}, cuda graph: True, "
                    f"gen throughput (token/s): {tput:.2f}, #queue-req: 0",
                )
            )
        if k % 3 == 0:
            norm = "nan" if k % 60 == 0 else f"{35 + rng.uniform(0, 20):.4f}"
            layer = -1 if k == rounds - 20 else rng.choice([2, 30, 58])
            events.append(
                (
                    1.0 + k * 0.25 + 0.2,
                    f"DP0 TP0] EAGLE3_DEBUG[dsv2] aux capture: layer_id={layer} shape=torch.Size([1, 7168]) "
                    f"norm={norm}",
                )
            )
    events.sort(key=lambda e: e[0])
    body = [
        f"[{(ready + dt.timedelta(seconds=at)).strftime('%Y-%m-%d %H:%M:%S')} {text}" for at, text in events
    ]
    return "\n".join([*head, *body]) + "\n"


def _rounded(sites: tuple) -> tuple:
    """Capture rows with their norm means rounded (a running sum and polars' mean differ in the last bits)."""
    import dataclasses

    return tuple(dataclasses.replace(s, norm=None if s.norm is None else round(s.norm, 9)) for s in sites)


@pytest.mark.parametrize(
    "logs",
    [
        pytest.param(["dp"], id="dp-rounds-cut-by-the-window"),
        pytest.param(["dp", "no ready line"], id="dp-rounds-warm-up-by-count"),
        pytest.param(["dp", "late rank"], id="dp-rounds-after-the-last-complete-one-left-out"),
        pytest.param(["baseline_tp8.log", "eagle3_fixed.log"], id="speedup-over-a-baseline-on-disk"),
    ],
)
def test_a_run_longer_than_the_window_shows_its_whole_run_figures(tmp_path: Path, logs: list[str]) -> None:
    """A real worker with a 300-line window: the open run's acceptance, acceptance rate and tok/s
    means (DP rounds combined, warm-up cut), its speedup over a baseline run whose rows are all on disk,
    the baseline's means, the capture per debug site and the embedding state are those of
    `tracelens check` on the same file, although the window holds a sixth of the run or less."""
    from tracelens.engine.ingest import analyze
    from tracelens.live.status import site_statuses

    from conftest import SAMPLE_LOGS

    (tmp_path / "whole").mkdir()
    whole = tmp_path / "whole" / "server.log"  # the same name: the same run labels
    if logs[0] == "dp":
        text = _dp_log(ready_line="no ready line" not in logs)
        if "late rank" in logs:  # DP3 begins with its round 0 after 1,200 lines of the others
            rows = text.splitlines(keepends=True)
            decode = [i for i, line in enumerate(rows) if "Decode batch" in line]
            late = {i for i in decode[:1600] if "DP3 TP6]" in rows[i]}
            text = "".join(line for i, line in enumerate(rows) if i not in late)
        whole.write_text(text)
    else:
        whole.write_text("".join((SAMPLE_LOGS / name).read_text() for name in logs))
    batch = analyze([whole])
    lines = whole.read_text().splitlines(keepends=True)
    path = tmp_path / "server.log"
    path.write_text("".join(lines[:400]))
    spec = parse_spec(str(path))
    session = LiveSession(
        [spec], interval=0.1, window_lines=300, follower_options={spec.label: {"poll": 0.01}}
    )
    session.start()
    try:
        # written 400 lines at a time, each parsed before the next: the worker's sums grow update by update
        for at in range(400, len(lines), 400):
            assert wait_for(lambda at=at: session.index.count() >= at) and session.wait_idle(timeout=60)
            with path.open("a") as fh:
                fh.write("".join(lines[at : at + 400]))
        assert wait_for(lambda: session.snapshot.lines == len(lines), timeout=60)
        assert session.wait_idle(timeout=60)
        newest = session.snapshot.runs[0]
        row = batch.runs.row(-1, named=True)
        assert newest.run == row["run"] and row["line_count"] > 6 * 300
        assert newest.window_figures == ("series",)  # the plots only: the window's
        for name in ("mean_accept_len", "mean_acceptance_rate", "mean_gen_throughput"):
            assert row[name] is not None, name
            assert getattr(newest, name) == pytest.approx(row[name], rel=1e-9), name
        assert newest.baseline == row["baseline"]
        if row["baseline"] is None:
            assert newest.speedup is None
        else:
            assert newest.speedup == pytest.approx(row["speedup"], rel=1e-9)
            base = batch.runs.filter(pl.col("label") == row["baseline"]).row(0, named=True)
            assert newest.baseline_accept_len == base["mean_accept_len"]  # None: no speculative decoding
            assert newest.baseline_gen_throughput == pytest.approx(base["mean_gen_throughput"], rel=1e-9)
        # the newest round's values and rolling medians: those the batch series ends with (the window's
        # own rounds of a DP run are cut apart where the window starts)
        series = batch.series.filter(pl.col("run") == row["run"])
        for name, column in (
            ("accept_len", "accept_len"),
            ("gen_throughput", "gen_throughput"),
            ("accept_len_median", "accept_len_rolling_median"),
            ("gen_throughput_median", "gen_throughput_rolling_median"),
        ):
            assert getattr(newest, name) == pytest.approx(series.get_column(column).drop_nulls()[-1]), name
        capture = batch.capture.filter(pl.col("run") == row["run"])
        assert _rounded(newest.sites) == _rounded(site_statuses(capture.to_dicts()))
        assert newest.embed_state == batch.embed.filter(pl.col("run") == row["run"]).item(0, "embed_state")
        shown = [f for f in session.findings if f.run == newest.run]
        assert newest.findings == len(shown) and newest.errors == sum(f.severity == "error" for f in shown)
    finally:
        session.stop()


def test_a_run_whose_rounds_sums_cannot_give_keeps_the_window_figures_and_says_so() -> None:
    """A DP rank that begins printing after the run's first 1,000 decode lines (here after 1,800) would
    join rounds already summed: the run's means are then the window's, and its status names them
    (`window_figures`)."""
    from tracelens.analysis import analyze_tables
    from tracelens.engine.stream import SourceParser
    from tracelens.live.running import WINDOW_MEANS
    from tracelens.live.status import snapshot
    from tracelens.live.window import LiveTables
    from tracelens.parsers import ParseOptions

    lines = _dp_log().splitlines(keepends=True)
    decode = [i for i, line in enumerate(lines) if "Decode batch" in line]
    late = {i for i in decode[:2400] if "DP3 TP6]" in lines[i]}
    lines = [line for i, line in enumerate(lines) if i not in late]
    parser = SourceParser(ParseOptions())
    live = LiveTables(window=300)
    line_no = 1
    for at in range(0, len(lines), 400):
        data = "".join(lines[at : at + 400]).encode()
        frame = block_lines(Block("dp.log", line_no, 0, data))
        line_no += frame.height
        tables, _, parsed = parser.feed(frame, at + 400 >= len(lines))
        if parsed:
            live.add(tables)
    view = live.view()
    analysis = analyze_tables(view)
    snap = live.running.apply(snapshot(analysis, ["dp.log"], live.lines), analysis, live.is_cut, None)
    status = snap.runs[0]
    assert live.is_cut("dp.log", status.run) and live.running.means(("dp.log", status.run), 3) is None
    assert set(WINDOW_MEANS) <= set(status.window_figures)
    window_mean = analysis.runs.filter(pl.col(C.RUN) == status.run).item(0, "mean_accept_len")
    assert status.mean_accept_len == window_mean is not None
    from tracelens.cli.printer import stats_words

    assert "window mean" in stats_words(status) and "run mean" not in stats_words(status)
    live.close()


# A frame whose two-chunk column is pyarrow's over a Python buffer, and whose other column is one
# materialised chunk: polars' serialization aligns the chunks in place on its pool while the sender
# holds the interpreter lock, and pyarrow's release of the replaced chunk waits for that lock.
_MISALIGNED = """
import io
import numpy as np, polars as pl, pyarrow as pa
from tracelens.live.worker import receive, send

def over_python_buffer(n):
    return pl.Series("a", pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(np.arange(n))])).to_frame()

frame = pl.concat([over_python_buffer(2), over_python_buffer(2)], rechunk=False)
frame = pl.concat([frame, pl.DataFrame(schema={"b": pl.Int64})], how="diagonal")
assert frame.n_chunks("all") == [2, 1]
out = io.BytesIO()
send(out, {"frame": frame})
out.seek(0)
assert receive(out)["frame"].equals(frame)
print("sent")
"""


def test_a_frame_of_misaligned_chunks_over_python_buffers_is_sent(tmp_path: Path) -> None:
    # in a process of its own: the hang holds the interpreter lock, which no timeout in this one gets
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    done = subprocess.run(
        [sys.executable, "-c", _MISALIGNED], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "sent"
