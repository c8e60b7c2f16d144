"""A large local log opened live is read by the batch engine into a dataset first, and the live session
takes over at the start of the engine's last byte range (`tracelens.live.seed`): real files, the real
engine, a real worker process. Small ranges (`range_bytes`) make the sample logs count as large.

What must hold: the session shows, finds and figures what a session that reads the file itself does;
a second session on the unchanged file reads nothing the engine already parsed; a file growing across
the hand-over is shown, parsed and analysed once per line; a file that changed under the dataset is read
as it is now.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import polars as pl
import pytest
from live_support import Recorder, source_texts, wait_for

from tracelens.engine import EngineOptions
from tracelens.live import LiveSession, parse_spec
from tracelens.live import events as ev
from tracelens.live.seed import LOAD_BYTES, Cut, load_files
from tracelens.tables.schema import C, T

from conftest import SAMPLE_LOGS

pytestmark = pytest.mark.timeout(300)

OPTIONS = EngineOptions(range_bytes=96 << 10, jobs=1)  # sweep_and_crash.log (505 kB): 5 ranges
RANKS = (C.TP, C.DP)  # not stored in a dataset's `lines` (they are in each kind's own table)


def _session(path: Path, cuts: dict[str, Cut]) -> LiveSession:
    session = LiveSession([parse_spec(str(path))], interval=0.1, cuts=cuts)
    session.start()
    return session


def _settled(session: LiveSession, lines: int) -> None:
    assert wait_for(lambda: session.index.count() == lines, timeout=120), session.index.count()
    assert session.wait_idle(timeout=120)


def _seen(path: Path, cuts: dict[str, Cut], recorder: Recorder | None = None) -> dict:
    """What a session on ``path`` shows once it has read the whole file."""
    session = LiveSession([parse_spec(str(path))], interval=0.1, cuts=cuts)
    if recorder is not None:
        session.subscribe(recorder)
    session.start()
    try:
        _settled(session, len(path.read_bytes().splitlines()))
        analysis = session.analysis
        assert analysis is not None
        lines = session.index.lines[0]
        return {
            "cuts": dict(session.cuts),
            "texts": source_texts(session),
            "kinds": lines.kind.view().tolist(),
            "times": lines.ts.view().tolist(),
            "ranks": list(zip(lines.tp.view().tolist(), lines.dp.view().tolist(), strict=True)),
            "findings": sorted(
                (f.severity, f.code, f.source, f.run, f.message, tuple(e.where for e in f.evidence))
                for f in session.findings
            ),
            "evidence": sorted(e.text for f in session.findings for e in f.evidence),
            # the verdicts of the full analysis (the report's); the live snapshot's are the window's,
            # which starts at the cut here and at the newest lines of a long file read live
            "runs": analysis.runs.select(C.RUN, "status", "headline").sort(C.RUN).rows(),
            "tables": {name: analysis.tables[name] for name in analysis.tables.frames},
            "report_findings": sorted((f.code, f.run, f.message) for f in analysis.findings),
            # each run's headline figures: the window's analysis, or the running sums of a run partly
            # outside the window (here: every run the cut holds a part of, fed from the dataset)
            "figures": sorted(
                (
                    r.run,
                    *(_rounded(getattr(r, name)) for name in _FIGURES),
                    r.baseline,
                    tuple(s for s in r.window_figures if s != "series"),
                )
                for r in session.snapshot.runs
            ),
        }
    finally:
        session.stop()


_FIGURES = ("mean_accept_len", "mean_acceptance_rate", "mean_gen_throughput", "speedup")


def _rounded(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.9g}")  # sums in another order: the last bits differ


def _same_tables(got: dict[str, pl.DataFrame], want: dict[str, pl.DataFrame]) -> None:
    for name in (T.LINES, T.BATCHES, T.DEBUG, T.FAULTS, T.LIFECYCLE, T.SERVER_ARGS, T.RUNS, T.UNPARSED):
        a, b = got[name], want[name]
        if name == T.LINES:
            a, b = a.drop(RANKS), b.drop(RANKS)
        keys = [c for c in (C.SOURCE, C.RUN, C.LINE_NO, C.KEY) if c in a.columns]
        assert a.columns == b.columns, name
        assert a.sort(keys).equals(b.sort(keys)), name


_COMPARED = ("texts", "kinds", "times", "ranks", "findings", "evidence", "runs", "report_findings", "figures")


def _same_view(got: dict, want: dict) -> None:
    for key in _COMPARED:
        assert got[key] == want[key], key
    _same_tables(got["tables"], want["tables"])


def test_a_session_starts_from_the_engine_dataset_and_shows_what_reading_the_file_shows(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    dataset = tmp_path / "dataset"
    report, cuts = load_files({str(log): str(log)}, str(dataset), OPTIONS)
    assert report.read == 1 and report.bytes_read == log.stat().st_size
    assert (dataset / ".tracelens" / "manifest.json").is_file()
    cut = cuts[str(log)]
    assert 0 < cut.offset < log.stat().st_size and cut.first_line > 1000
    assert cut.run == 3  # the cut is inside the third run: runs 1 and 2 ended before it

    loaded = _seen(log, cuts)
    assert loaded["cuts"] == cuts  # the hand-over was made, not dropped
    read = _seen(log, {})
    _same_view(loaded, read)
    # findings made before the cut (from the dataset's analysis) are among them
    assert any(f[3] < cut.run for f in loaded["findings"])
    assert any(int(where.rsplit(":", 1)[1]) < cut.first_line for f in loaded["findings"] for where in f[5])


def test_a_scroll_back_below_the_cut_holds_the_lines_reading_the_file_holds(tmp_path: Path) -> None:
    """With a scroll-back smaller than the lines before the cut, only the newest of them are read from
    the dataset (the older ones would be dropped at once): the view holds the same lines, with the
    same numbers, text, kinds and times, as a session that read the file itself."""
    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    _, cuts = load_files({str(log): str(log)}, str(tmp_path / "dataset"), OPTIONS)
    scrollback = 1000
    assert cuts[str(log)].first_line > 2 * scrollback
    total = len(log.read_bytes().splitlines())
    seen = []
    for given in (cuts, {}):
        session = LiveSession([parse_spec(str(log))], interval=0.1, cuts=given, scrollback=scrollback)
        session.start()
        try:
            _settled(session, total)
            lines = session.index.lines[0]
            seen.append(
                (
                    lines.base,
                    source_texts(session)[-scrollback:],
                    lines.kind.view().tolist()[-scrollback:],
                    lines.ts.view().tolist()[-scrollback:],
                )
            )
            assert scrollback <= lines.held <= scrollback + scrollback // 16
            assert lines.count == total  # numbered as the file's lines: dropped and held add up
        finally:
            session.stop()
    (_, *loaded), (_, *read) = seen
    assert loaded == read


def test_a_second_session_reads_nothing_the_engine_already_parsed(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    dataset = str(tmp_path / "dataset")
    _, first = load_files({str(log): str(log)}, dataset, OPTIONS)
    report, cuts = load_files({str(log): str(log)}, dataset, OPTIONS)
    # the engine's second look: the file is unchanged, nothing is read
    assert (report.unchanged, report.read, report.bytes_read) == (1, 0, 0)
    assert cuts == first
    cut = cuts[str(log)]
    recorder = Recorder()
    seen = _seen(log, cuts, recorder)
    parsed = recorder.of(ev.LinesParsed)
    # the live worker parsed the engine's last range only: from the cut's line to the end
    total = len(seen["texts"])
    assert min(p.first_line for p in parsed) == cut.first_line
    assert sum(p.count for p in parsed) == total - (cut.first_line - 1)
    # and the log view has every line before it from the dataset
    assert recorder.of(ev.LinesIndexed)[0].count == cut.first_line - 1


def test_a_run_across_the_cut_that_ends_later_is_judged_on_all_its_rows(tmp_path: Path) -> None:
    """Run 3 starts before the cut and ends when a new server start is written during the session: it
    is judged once on every row, those before the cut read back from the dataset."""
    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    _, cuts = load_files({str(log): str(log)}, str(tmp_path / "dataset"), OPTIONS)
    assert cuts[str(log)].run == 3
    restart = b"".join((SAMPLE_LOGS / "eagle3_fixed.log").read_bytes().splitlines(keepends=True)[:300])
    session = LiveSession([parse_spec(str(log))], interval=0.1, cuts=cuts)
    recorder = Recorder()
    session.subscribe(recorder)
    session.start()
    try:
        _settled(session, len(log.read_bytes().splitlines()))
        with log.open("ab") as fh:
            fh.write(restart)
        _settled(session, len(log.read_bytes().splitlines()))
        loaded = sorted((f.code, f.run, f.message) for f in session.findings)
        assert 4 in {r.run for r in session.snapshot.runs}
    finally:
        session.stop()
    assert not recorder.of(ev.SessionFailed)
    read = _seen(log, {})
    assert loaded == sorted((code, run, message) for _, code, _, run, message, _ in read["findings"])
    assert any(run == 3 for _, run, _ in loaded)


def _line(i: int) -> str:
    return (
        f"[2026-11-20 10:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch, #running-req: 1, "
        f"#token: {i}, accept len: 2.{i % 10}0, gen throughput (token/s): 90.00, "
    )


def _every_line_once(session: LiveSession, expected: list[str]) -> None:
    assert wait_for(lambda: session.index.count() == len(expected), timeout=120), session.index.count()
    assert not wait_for(lambda: session.index.count() > len(expected), timeout=0.3)
    assert source_texts(session) == expected
    assert session.wait_idle(timeout=120)
    analysis = session.analysis
    assert analysis is not None
    batches = analysis.tables[T.BATCHES]
    assert sorted(batches[C.LINE_NO].to_list()) == list(range(1, len(expected) + 1))
    assert sorted(analysis.tables[T.LINES][C.LINE_NO].to_list()) == list(range(1, len(expected) + 1))


def test_a_file_growing_across_the_hand_over_loses_and_repeats_no_line(tmp_path: Path) -> None:
    """Lines arrive, cut in two, from before the engine reads the file until after the session has
    taken over: the engine's last range, the cut and the follower each see some of them."""
    path = tmp_path / "server.log"
    existing, more = 4000, 3000
    expected = [_line(i) for i in range(existing)]
    path.write_text("".join(line + "\n" for line in expected))
    started = threading.Event()

    def write_more() -> None:
        with path.open("a") as fh:
            for i in range(existing, existing + more):
                text = _line(i) + "\n"
                half = len(text) // 2
                fh.write(text[:half])
                fh.flush()
                if i == existing + 10:
                    started.set()
                fh.write(text[half:])
                fh.flush()
                if i % 50 == 0:
                    threading.Event().wait(0.005)

    writer = threading.Thread(target=write_more, name="writer")
    writer.start()
    assert started.wait(10)
    _, cuts = load_files({str(path): str(path)}, str(tmp_path / "dataset"), OPTIONS)
    assert cuts[str(path)].first_line > 1000
    session = _session(path, cuts)
    try:
        writer.join(120)
        assert not writer.is_alive()
        expected += [_line(i) for i in range(existing, existing + more)]
        _every_line_once(session, expected)
        assert session.cuts == cuts
    finally:
        session.stop()


def test_a_line_half_written_when_the_engine_reads_is_read_once_whole(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    existing = 4000
    expected = [_line(i) for i in range(existing + 1)]
    last = expected[-1] + "\n"
    path.write_text("".join(line + "\n" for line in expected[:-1]) + last[:20])
    _, cuts = load_files({str(path): str(path)}, str(tmp_path / "dataset"), OPTIONS)
    session = _session(path, cuts)
    try:
        assert wait_for(lambda: session.index.count() == existing, timeout=120)
        with path.open("a") as fh:
            fh.write(last[20:])
        _every_line_once(session, expected)
    finally:
        session.stop()


@pytest.mark.parametrize("change", ["replaced", "truncated"])
def test_a_file_changed_under_the_dataset_is_read_as_it_is_now(tmp_path: Path, change: str) -> None:
    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    dataset = str(tmp_path / "dataset")
    _, before = load_files({str(log): str(log)}, dataset, OPTIONS)
    if change == "replaced":  # another log of about the same size in its place
        shutil.copy(SAMPLE_LOGS / "baseline_tp8.log", tmp_path / "new.log")
        os.replace(tmp_path / "new.log", log)
    else:  # cut back to its first 300 kB (still several ranges)
        data = log.read_bytes()[:300_000]
        log.write_bytes(data[: data.rfind(b"\n") + 1])
    report, cuts = load_files({str(log): str(log)}, dataset, OPTIONS)
    assert report.read == 1 and report.unchanged == 0
    assert cuts[str(log)] != before[str(log)]
    loaded = _seen(log, cuts)
    assert loaded["cuts"] == cuts
    _same_view(loaded, _seen(log, {}))


def test_a_file_changed_after_the_engine_read_it_is_read_from_its_start(tmp_path: Path) -> None:
    """Between the engine's look and the session's start the file was replaced: the cut no longer
    fits it, so the session drops it and reads the file itself."""
    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    _, cuts = load_files({str(log): str(log)}, str(tmp_path / "dataset"), OPTIONS)
    shutil.copy(SAMPLE_LOGS / "eagle3_fixed.log", tmp_path / "new.log")
    os.replace(tmp_path / "new.log", log)
    loaded = _seen(log, cuts)
    assert loaded["cuts"] == {}
    _same_view(loaded, _seen(log, {}))


TRACELENS = [sys.executable, "-m", "tracelens.cli"]


@pytest.mark.parametrize("command", ["follow", "tui"])
def test_an_archive_with_no_log_in_it_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    """Compressed files and archives are read (`test_live_recorded`), never sent through the engine's
    initial load; an archive that holds no log is an input error before anything starts."""
    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("notes.bin", b"\x00not a log\n")
    result = subprocess.run([*TRACELENS, command, str(archive)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "holds no log files" in result.stderr and str(archive) in result.stderr


def test_follow_with_dataset_reads_the_file_through_the_engine(tmp_path: Path) -> None:
    """`follow --dataset DIR` parses the file into DIR (every local file, whatever its size) and then
    follows it; --dataset and --no-cache exclude each other."""
    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    dataset = tmp_path / "dataset"
    process = subprocess.Popen(
        [*TRACELENS, "follow", "--json", "--dataset", str(dataset), str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out: list[str] = []
    assert process.stdout is not None
    reader = threading.Thread(target=lambda: out.extend(process.stdout or []), daemon=True)
    reader.start()
    try:
        # the findings of the whole file are printed: some come from before the cut (runs 1 and 2)
        assert wait_for(lambda: any('"run": 1' in line and '"finding"' in line for line in out), 120)
        assert (dataset / ".tracelens" / "manifest.json").is_file()
    finally:
        process.terminate()
        err = process.stderr.read() if process.stderr else ""
        process.wait(timeout=60)
    assert process.returncode == 128 + 15, err
    assert "Traceback" not in err
    both = subprocess.run(
        [*TRACELENS, "follow", "--dataset", str(dataset), "--no-cache", str(log)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert both.returncode == 2 and both.stderr.count("\n") == 1


def test_follow_reads_a_large_file_into_the_cache_and_a_second_follow_reads_nothing_again(
    tmp_path: Path,
) -> None:
    """Over 32 MiB, `follow` parses the file into the cache dataset `check` would use; a second
    `follow` finds it unchanged (its manifest is not rewritten)."""
    log = tmp_path / "big.log"
    line = (_line(1) + "\n").encode()
    log.write_bytes(line * ((LOAD_BYTES + (1 << 20)) // len(line)))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}

    def follow_until_stats() -> str:
        process = subprocess.Popen(
            [*TRACELENS, "follow", "--json", "--stats-every", "0.2", str(log)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.extend(process.stdout or []), daemon=True)
        reader.start()
        try:
            assert wait_for(lambda: any('"stats"' in text for text in out), 240)
        finally:
            process.terminate()
            err = process.stderr.read() if process.stderr else ""
            process.wait(timeout=60)
        assert process.returncode == 128 + 15 and "Traceback" not in err, err
        return err

    follow_until_stats()
    manifests = list((tmp_path / "cache").glob("tracelens/datasets/*/.tracelens/manifest.json"))
    assert len(manifests) == 1
    written = manifests[0].stat().st_mtime_ns
    listed = subprocess.run([*TRACELENS, "cache"], capture_output=True, text=True, env=env, timeout=60)
    assert str(log.resolve()) in listed.stdout
    follow_until_stats()
    assert manifests[0].stat().st_mtime_ns == written


def test_no_engine_process_outlives_the_load(tmp_path: Path) -> None:
    """A session runs for hours after the engine read its log: the engine's fork server (about 100 MiB)
    does not stay beside it."""
    import psutil

    log = tmp_path / "server.log"
    shutil.copy(SAMPLE_LOGS / "sweep_and_crash.log", log)
    options = EngineOptions(range_bytes=32 << 10, jobs=2)  # ranges enough for the workers to start
    report, cuts = load_files({str(log): str(log)}, str(tmp_path / "dataset"), options)
    assert report.read == 1 and cuts
    left = [" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True)]
    assert not [c for c in left if "forkserver" in c or "tracelens.engine" in c], left


def test_a_restart_page_after_the_cut_is_told_against_the_pages_before_it(tmp_path: Path) -> None:
    """Saved `/metrics` pages in the first ranges, then only stamped `/server_info` lines: a page whose
    counters went back, written while the session runs, is a restart only beside the pages before the
    engine's last range, so the session reads such a file itself rather than from that range's start."""
    from test_metric_restarts import info, page

    path = tmp_path / "snapshots.log"
    pages = "".join(page(5000 + 10 * n, 5000 + 10 * n, [5000 + 6 * n, 5000 + 3 * n]) for n in range(4))
    stamps = "".join(info(f"2026-12-06 10:{n // 60 % 60:02d}:{n % 60:02d}", 2.0) for n in range(4000))
    path.write_text(pages + stamps, encoding="utf-8")
    _, cuts = load_files({str(path): str(path)}, str(tmp_path / "dataset"), OPTIONS)
    session = _session(path, cuts)
    try:
        _settled(session, len(path.read_bytes().splitlines()))
        with path.open("a", encoding="utf-8") as fh:
            fh.write(page(100, 100, [60, 30]) + page(200, 200, [120, 60]))  # the server started again
        _settled(session, len(path.read_bytes().splitlines()))
        assert wait_for(lambda: 1 in {r.run for r in session.snapshot.runs}, timeout=60)
        analysis = session.analysis
        assert analysis is not None
        assert analysis.tables[T.RUNS].get_column(C.RUN).to_list() == [0, 1]
    finally:
        session.stop()
