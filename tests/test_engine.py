"""The batch engine (`tracelens parse -o DIR`): its dataset holds exactly the tables of a whole-file
parse, whatever the block size, the byte ranges and the number of workers; it reads archives and
survives broken ones; it skips what it has read and reads only the new bytes of a grown log; an
interrupted run leaves a consistent dataset that the next run completes; and it runs on Dask."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import math
import os
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracelens.engine import EngineOptions, parse_to_dataset
from tracelens.engine import manifest as mf
from tracelens.engine.ingest import parse_paths
from tracelens.engine.ranges import scan_range, server_args_heads
from tracelens.engine.store import META
from tracelens.engine.task import EVIDENCE_KINDS
from tracelens.parsers import ParseOptions
from tracelens.tables.frames import Tables
from tracelens.tables.schema import TABLES, C, T

from conftest import SAMPLE_LOGS

BASE_DATE = dt.date(2026, 11, 20)
TRACELENS = [sys.executable, "-m", "tracelens.cli"]
_KEYS = {T.FAULTS: [C.SOURCE, C.FIRST_LINE], T.RUNS: [C.SOURCE, C.RUN]}


def _assert_evidence(evidence: pl.DataFrame, want: Tables) -> None:
    """The engine's `evidence` (empty in memory) holds each line of the kinds findings cite, once. Which
    decode lines it adds depends on where blocks were cut, and their text is checked in test_evidence."""
    keys = [C.SOURCE, C.LINE_NO]
    assert evidence.select(keys).is_unique().all()
    cited = want[T.LINES].filter(pl.col(C.KIND).is_in(EVIDENCE_KINDS)).select(keys)
    assert cited.join(evidence, on=keys, how="anti").height == 0


def read_dataset(out: Path) -> dict[str, pl.DataFrame]:
    """Each table as a user reads it: one `read_parquet` of its files' glob, no options."""
    return {t: pl.read_parquet(out / t / "*.parquet") for t in TABLES}


def assert_same_tables(
    got: dict[str, pl.DataFrame], want: Tables, rename: dict[str, str] | None = None
) -> None:
    """Every table holds the same rows (datasets keep no global row order: both sides are sorted)."""
    for table in TABLES:
        keys = _KEYS.get(table, [C.SOURCE, C.LINE_NO])
        mine = got[table]
        if rename:
            mine = mine.with_columns(pl.col(C.SOURCE).replace(rename))
        if table == T.EVIDENCE:
            _assert_evidence(mine, want)
            continue
        mine = mine.sort(keys, maintain_order=True)
        theirs = want[table].sort(keys, maintain_order=True)
        assert mine.schema == theirs.schema, table
        assert mine.height == theirs.height, f"{table}: {mine.height} rows, want {theirs.height}"
        assert mine.equals(theirs), f"{table} differs"


# --- a random log with every kind of line, and records that straddle any cut ---------------------------


def _ts(i: int) -> str:
    return (dt.datetime(2026, 11, 20, 9, 0, 0) + dt.timedelta(seconds=i // 3)).strftime("%Y-%m-%d %H:%M:%S")


def _record(kind: int, i: int, tp: int) -> list[str]:
    p = f"[{_ts(i)} TP{tp}] "
    if kind == 0:
        return [
            f"{p}Decode batch, #running-req: {i % 7}, #token: {i * 3}, token usage: 0.{i % 9}, accept len: 2.{i % 10}, cuda graph: True, gen throughput (token/s): {i}.5, #queue-req: 0, "
        ]
    if kind == 1:
        return [f"EAGLE3_DEBUG[dsv2] aux capture: layer_id={i % 3} shape=torch.Size([1, 7168]) norm={i}.25"]
    if kind == 2:
        return [f'[{_ts(i)}] INFO:     10.0.0.{i % 9}:5{i % 1000} - "POST /generate HTTP/1.1" 200 OK']
    if kind == 3:
        return [
            f"[{_ts(i)}] server_args=ServerArgs(model_path='/m/{i}', tp_size={tp + 1}, speculative_num_steps={i % 5})"
        ]
    if kind == 4:  # hard-wrapped by a terminal
        return [
            f"[{_ts(i)}] server_args=ServerArgs(model_path='/m/w{i}', tp_s",
            "ize=8, speculative_algorithm=",
            "'EAGLE3')",
        ]
    if kind == 5:  # a traceback with a blank line inside (chained exceptions)
        return [
            f"{p}Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/scheduler.py", line 10, in run',
            "    self.step()",
            "",
            "",
            "During handling of the above exception, another exception occurred:",
            '  File "/sgl/x.py", line 2, in f',
            f"RuntimeError: boom {i}",
        ]
    if kind == 6:  # an interleaved crash group: heads of one second, frames joined to the last head
        return [
            f"[{_ts(i)} TP0] Scheduler hit an exception: Traceback (most recent call last):",
            f"[{_ts(i)} TP1] Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/sgl/scheduler.py", line 10, in run',
            "torch.OutOfMemoryError: CUDA out of memory.",
        ]
    if kind == 7:
        return ["", "   "]
    if kind == 8:
        return [f"Loading shards: {i % 100}% Completed | {i}/163 [00:01<00:02,  1.09it/s]", "plain words"]
    if kind == 9:
        return [f"\x1b[32m{p}Load weight begin. avail mem=7{i % 10}.1 GB\x1b[0m"]
    if kind == 11:  # two vLLM workers' tracebacks interleaved, each line behind its worker's wrapper (the
        # same two workers each time: a cut one stays open across other lines)
        body = [
            "Traceback (most recent call last):",
            '  File "/vllm/worker.py", line 3, in run',
            "    step()",
        ]
        body.append(f"RuntimeError: worker {i}")
        pairs = [
            (f"(VllmWorker rank=0 pid={i}) {a}", f"(VllmWorker rank=1 pid={i + 1}) {b}")
            for a, b in zip(body, body, strict=True)
        ]
        return [line for pair in pairs[: 1 + tp] for line in pair]
    return [
        f"{p}Prefill batch. #new-seq: 1, #new-token: {i}, #cached-token: 0, cache hit rate: 1{i % 9}.5%, token usage: 0.01, #running-req: 0, #queue-req: 0"
    ]


@st.composite
def logs(draw) -> bytes:
    kinds = draw(st.lists(st.integers(0, 11), min_size=1, max_size=120))
    lines: list[str] = []
    for i, kind in enumerate(kinds):
        lines.extend(_record(kind, i, draw(st.integers(0, 3))))
    ending = draw(st.sampled_from(["\n", "", "\n\n"]))
    return ("\n".join(lines) + ending).encode()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.lists(logs(), min_size=1, max_size=3),
    block=st.integers(64, 8192),
    range_size=st.integers(128, 16384),
    jobs=st.sampled_from([1, 1, 1, 2]),
)
def test_dataset_equals_whole_file_parse_for_any_blocks_ranges_and_workers(
    tmp_path_factory, data: list[bytes], block: int, range_size: int, jobs: int
) -> None:
    folder = tmp_path_factory.mktemp("logs")
    paths = []
    for i, content in enumerate(data):
        path = folder / f"host{i}.log"
        path.write_bytes(content)
        paths.append(path)
    want = parse_paths(paths, ParseOptions(base_date=BASE_DATE))
    out = tmp_path_factory.mktemp("out")
    options = EngineOptions(jobs=jobs, block_bytes=block, range_bytes=range_size, base_date=BASE_DATE)
    report = parse_to_dataset([str(p) for p in paths], str(out), options)
    assert not report.problems
    assert_same_tables(read_dataset(out), want)


def test_sample_logs_in_small_ranges_on_two_workers(tmp_path: Path) -> None:
    names = ["sweep_and_crash.log", "era_2024_timeonly.log", "wrappers.log", "era_2025_dp_attention.log"]
    paths = [SAMPLE_LOGS / n for n in names]
    options = EngineOptions(jobs=2, block_bytes=8 << 10, range_bytes=48 << 10, base_date=BASE_DATE)
    parse_to_dataset([str(p) for p in paths], str(tmp_path / "out"), options)
    assert_same_tables(read_dataset(tmp_path / "out"), parse_paths(paths, ParseOptions(base_date=BASE_DATE)))
    # The manifest's records give back the JSON they were read from, in the layout datasets always had.
    data = json.loads((tmp_path / "out" / mf.MANIFEST).read_text())
    assert mf.to_json(mf.load_manifest(data)) == data
    assert set(data) == {
        "version",
        "tracelens",
        "inputs",
        "tasks",
        "faults",
        "sources",
        "rows",
        "sizes",
        "digests",
    }
    assert len(data["tasks"]) > len(paths) and data["faults"]  # ranges of one file, and crash groups
    task = next(iter(data["tasks"].values()))
    assert set(task) == {"units", "sources", "files", "rows"}
    assert set(task["units"][0]) == {"input", "start", "end", "first_line", "run_offset", "base_date"}
    assert set(next(iter(data["inputs"].values()))) == {
        "container",
        "compression",
        "size",
        "mtime",
        "head",
        "tail",
    }
    assert set(next(iter(data["sources"].values()))) == {
        *("input", "size", "mtime", "head", "tail"),
        *("lines", "lines_by_kind", "errors"),
    }


def test_many_small_logs_are_spread_over_the_workers(tmp_path: Path) -> None:
    """Small files are grouped by what a source costs, not by bytes: forty copies of a 14 KB log (0.6 MB,
    far less than a range) go to a few tasks per worker and to the worker processes, not to one task
    parsed on one core (2,000 such logs took 100-112 s that way, 47-50 s spread)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    text = (SAMPLE_LOGS / "era_2024_gpu.log").read_bytes()
    paths = [logs / f"rank{i:02d}.log" for i in range(40)]
    for path in paths:
        path.write_bytes(text)
    options = EngineOptions(base_date=BASE_DATE)  # no --jobs: the engine decides
    parse_to_dataset([str(logs)], str(tmp_path / "out"), options)
    tasks = json.loads((tmp_path / "out" / mf.MANIFEST).read_text())["tasks"]
    workers = os.cpu_count() or 1
    if workers > 1:
        assert workers <= len(tasks) <= 4 * workers + 1
    units = sorted(unit["input"] for task in tasks.values() for unit in task["units"])
    assert units == sorted(str(p) for p in paths)  # each log in exactly one task
    assert_same_tables(read_dataset(tmp_path / "out"), parse_paths(paths, ParseOptions(base_date=BASE_DATE)))


# --- inputs: archives, compression, broken members --------------------------------------------------------


def _tar_gz(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))


def test_archive_members_are_sources_and_a_broken_member_is_reported(tmp_path: Path) -> None:
    fixed = (SAMPLE_LOGS / "eagle3_fixed.log").read_bytes()
    rank = (SAMPLE_LOGS / "era_2024_rank.log").read_bytes()
    logs_dir = tmp_path / "in"
    logs_dir.mkdir()
    _tar_gz(logs_dir / "hosts.tar.gz", {"a/fixed.log": fixed, "b/rank.log.gz": gzip.compress(rank)})
    with zipfile.ZipFile(logs_dir / "more.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("rank.log", rank)
        archive.writestr("broken.log", fixed[:50_000])
    # A truncated gzip: what was read before the break is kept.
    (logs_dir / "cut.log.gz").write_bytes(gzip.compress(fixed)[:20_000])
    # Corrupt the zip's second member in place (its stored CRC no longer matches).
    raw = bytearray((logs_dir / "more.zip").read_bytes())
    at = raw.find(b"broken.log") + len(b"broken.log") + 200
    raw[at : at + 50] = bytes(50)
    (logs_dir / "more.zip").write_bytes(bytes(raw))
    out = tmp_path / "out"
    result = subprocess.run(
        [*TRACELENS, "parse", str(logs_dir), "-o", str(out), "-q", "-j", "1"], capture_output=True, text=True
    )
    assert result.returncode == 1, result.stderr
    skipped = [line for line in result.stderr.splitlines() if line.startswith("tracelens: read in part: ")]
    assert all(line.endswith("the lines before the break are kept") for line in skipped), result.stderr
    assert any("cut.log.gz: unreadable after" in line for line in skipped), result.stderr
    assert any("more.zip:broken.log" in line for line in skipped), result.stderr
    assert "Traceback" not in result.stderr
    lines = read_dataset(out)[T.LINES]
    by_source = dict(lines.group_by(C.SOURCE).len().iter_rows())
    fixed_lines = fixed.count(b"\n")
    assert by_source[f"{logs_dir / 'hosts.tar.gz'}:a/fixed.log"] == fixed_lines
    assert by_source[f"{logs_dir / 'hosts.tar.gz'}:b/rank.log.gz"] == rank.count(b"\n")
    assert by_source[f"{logs_dir / 'more.zip'}:rank.log"] == rank.count(b"\n")
    assert 0 < by_source[str(logs_dir / "cut.log.gz")] < fixed_lines


@pytest.mark.parametrize("chunk", [1 << 20, 3 << 20, 700_001])
def test_the_scan_finds_run_starts_across_windows_chunks_and_long_lines(tmp_path: Path, chunk: int) -> None:
    """`scan_range` looks for `server_args=` in 1 MiB windows first: a head that straddles a window's or
    a chunk's end, or sits in a line longer than a chunk, is still found, and newlines still add up."""
    lines = [b"x" * 99] * 40_000  # 4 MB of lines of 100 bytes
    heads = {
        10_485: b"[2026-11-20 09:00:00] " + b"z" * 48 + b"server_args=ServerArgs(model_path='/m')",
        20_971: b"INFO 11-20 09:00:00 [api_server.py:1] vLLM API server version 0.6.3",
        30_000: b"y" * (1 << 20) + b" server_args=ServerArgs(tp_size=8)",  # a line longer than a chunk
    }
    for at, head in heads.items():
        lines[at] = head
    data = b"\n".join(lines) + b"\n"
    for needle, window_end in ((b"server_args=", 1 << 20), (b"vLLM API server version", 2 << 20)):
        at = data.find(needle)
        assert at < window_end < at + len(needle)  # the first two heads straddle a window's end
    log = tmp_path / "server.log"
    log.write_bytes(data)
    whole = scan_range(str(log), 0, len(data), chunk)
    assert whole.newlines == len(lines)
    assert whole.candidates == [heads[k] for k in sorted(heads)]
    start = data.index(b"\n", 2_500_000) + 1  # a range that starts after the first two heads
    part = scan_range(str(log), start, len(data), chunk)
    assert part.newlines == data.count(b"\n", start)
    assert part.candidates == [heads[30_000]]
    assert scan_range(str(log), 0, 1 << 20, chunk).candidates == []  # the first head ends past 1 MiB


def test_glob_and_all_read_is_exit_0(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run(
        [*TRACELENS, "parse", str(SAMPLE_LOGS / "era_2024_*.log"), "-o", str(out), "-q", "-j", "1"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    sources = set(read_dataset(out)[T.LINES].get_column(C.SOURCE))
    assert sources == {str(p) for p in SAMPLE_LOGS.glob("era_2024_*.log")}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "spark"], "--executor must be one of"),
        (["--block-size", "lots"], "--block-size wants a size"),
        (["--executor", "dask"], "needs --scheduler"),
    ],
)
def test_bad_engine_options_are_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = subprocess.run(
        [*TRACELENS, "parse", str(SAMPLE_LOGS / "era_2024_rank.log"), "-o", str(tmp_path / "o"), *args],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


# --- the second look ---------------------------------------------------------------------------------------


def test_rerun_skips_unchanged_and_a_grown_log_is_read_from_its_last_range(tmp_path: Path) -> None:
    text = (SAMPLE_LOGS / "sweep_and_crash.log").read_bytes()
    head, tail = text[: len(text) // 2], text[len(text) // 2 :]
    cut = head.rfind(b"\n") + 1
    head, tail = text[:cut], text[cut:]
    log = tmp_path / "server.log"
    log.write_bytes(head)
    other = tmp_path / "other.log"
    other.write_bytes((SAMPLE_LOGS / "era_2025_dp_attention.log").read_bytes())
    out = tmp_path / "out"
    options = EngineOptions(jobs=1, block_bytes=16 << 10, range_bytes=64 << 10, base_date=BASE_DATE)
    paths = [str(log), str(other)]
    first = parse_to_dataset(paths, str(out), options)
    assert first.read == 2 and first.bytes_read == len(head) + other.stat().st_size

    again = parse_to_dataset(paths, str(out), options)
    assert (again.unchanged, again.read, again.bytes_read) == (2, 0, 0)

    with log.open("ab") as fh:
        fh.write(tail)
    grown = parse_to_dataset(paths, str(out), options)
    assert (grown.grown, grown.unchanged) == (1, 1)
    assert 0 < grown.bytes_read < len(text), "a grown log is read from its last range, not from the start"
    assert_same_tables(read_dataset(out), parse_paths([log, other], ParseOptions(base_date=BASE_DATE)))


def test_changed_and_removed_inputs_are_replaced(tmp_path: Path) -> None:
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes((SAMPLE_LOGS / "era_2024_rank.log").read_bytes())
    b.write_bytes((SAMPLE_LOGS / "era_2024_gpu.log").read_bytes())
    out = tmp_path / "out"
    options = EngineOptions(jobs=1, base_date=BASE_DATE)
    parse_to_dataset([str(a), str(b)], str(out), options)
    a.write_bytes((SAMPLE_LOGS / "era_2026_comma.log").read_bytes())
    parse_to_dataset([str(a)], str(out), options)
    assert_same_tables(read_dataset(out), parse_paths([a], ParseOptions(base_date=BASE_DATE)))


def _a_dataset_and_more_to_read(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, pl.DataFrame]]:
    """A dataset of one small log, and a 7 MB log to add to it: long enough to stop mid-way."""
    big = tmp_path / "big.log"
    with big.open("wb") as fh:
        for _ in range(8):
            fh.write((SAMPLE_LOGS / "eagle3_embed_capture.log").read_bytes())
    small = tmp_path / "small.log"
    small.write_bytes((SAMPLE_LOGS / "era_2024_rank.log").read_bytes())
    out = tmp_path / "out"
    parse_to_dataset([str(small)], str(out), EngineOptions(jobs=1, base_date=BASE_DATE))
    before = read_dataset(out)
    return small, big, out, before


def _wait_for_staged_parts(out: Path) -> Path:
    staging = out / META / "staging"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(staging.rglob("*.parquet")):
        time.sleep(0.05)
    return staging


def test_killed_run_leaves_a_consistent_dataset_and_the_next_run_completes_it(tmp_path: Path) -> None:
    small, big, out, before = _a_dataset_and_more_to_read(tmp_path)
    cmd = [*TRACELENS, "parse", str(small), str(big), "-o", str(out), "-q", "-j", "2", "--range-size", "256K"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    staging = _wait_for_staged_parts(out)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # Still the dataset of the first run: nothing half-written is visible.
    middle = read_dataset(out)
    for table in TABLES:
        assert middle[table].equals(before[table]), table
    assert not [p for p in out.rglob("*.tmp") if META not in p.parts]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    want = parse_paths(
        [small, big], ParseOptions(base_date=dt.datetime.fromtimestamp(big.stat().st_mtime).date())
    )
    got = read_dataset(out)
    assert got[T.LINES].height == want[T.LINES].height
    assert not (staging.exists() and any(staging.iterdir()))


def test_ctrl_c_stops_cleanly_and_keeps_the_previous_dataset(tmp_path: Path) -> None:
    small, big, out, before = _a_dataset_and_more_to_read(tmp_path)
    cmd = [*TRACELENS, "parse", str(small), str(big), "-o", str(out), "-j", "2", "--range-size", "256K"]
    # A terminal sends Ctrl-C to the whole foreground process group: the command and its workers.
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    staging = _wait_for_staged_parts(out)
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert not any(staging.rglob("*")), "what the run staged is removed"
    after = read_dataset(out)
    for table in TABLES:
        assert after[table].equals(before[table]), table


def test_an_interrupted_commit_is_replayed(tmp_path: Path) -> None:
    from tracelens.engine import manifest as mf
    from tracelens.engine.engine import recover
    from tracelens.engine.store import Store

    out = tmp_path / "out"
    log = SAMPLE_LOGS / "era_2024_rank.log"
    parse_to_dataset([str(log)], str(out), EngineOptions(jobs=1))
    store = Store(str(out))
    manifest = store.read_json(mf.MANIFEST)
    # A commit stopped after its journal was written and one of its files was moved.
    lines_file = manifest["tasks"][next(iter(manifest["tasks"]))]["files"][T.LINES][0]
    staged = f"{META}/staging/x/{T.LINES}/moved.parquet"
    store.move(lines_file, staged)
    store.write_json(mf.JOURNAL, {"moves": [[staged, lines_file]], "deletes": [], "manifest": manifest})
    recover(store)
    assert not store.exists(mf.JOURNAL)
    assert pl.read_parquet(out / lines_file).height == log.read_bytes().count(b"\n")


def test_an_fsspec_url_is_a_dataset_location_too() -> None:
    import fsspec

    paths = [SAMPLE_LOGS / "sweep_and_crash.log", SAMPLE_LOGS / "wrappers.log"]
    options = EngineOptions(jobs=1, range_bytes=128 << 10, base_date=BASE_DATE)
    url = f"memory://tracelens-test-{os.getpid()}"
    report = parse_to_dataset([str(p) for p in paths], url, options)
    assert not report.problems
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    got = {}
    for table in TABLES:
        frames = []
        for name in fs.ls(f"/{root}/{table}", detail=False):
            with fs.open(name, "rb") as fh:
                frames.append(pl.read_parquet(fh))
        got[table] = pl.concat(frames)
    assert_same_tables(got, parse_paths(paths, ParseOptions(base_date=BASE_DATE)))
    assert parse_to_dataset([str(p) for p in paths], url, options).unchanged == 2
    fs.rm(f"/{root}", recursive=True)


# --- Dask ---------------------------------------------------------------------------------------------------


def test_dask_local_cluster_gives_the_local_engines_tables(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    paths = [str(SAMPLE_LOGS / "sweep_and_crash.log"), str(SAMPLE_LOGS / "eagle3_embed_capture.log.gz")]
    local = tmp_path / "local"
    dask = tmp_path / "dask"
    small = {"block_bytes": 32 << 10, "range_bytes": 128 << 10, "base_date": BASE_DATE}
    parse_to_dataset(paths, str(local), EngineOptions(jobs=1, **small))
    parse_to_dataset(paths, str(dask), EngineOptions(jobs=2, executor="dask-local", **small))
    got, want = read_dataset(dask), read_dataset(local)
    for table in TABLES:
        keys = _KEYS.get(table, [C.SOURCE, C.LINE_NO])
        assert (
            got[table].sort(keys, maintain_order=True).equals(want[table].sort(keys, maintain_order=True))
        ), table


@pytest.mark.parametrize(("executor", "jobs"), [("local", 1), ("local", 2), ("dask-local", 2)])
def test_a_task_that_raises_is_an_error_of_the_run(executor: str, jobs: int) -> None:
    """What a task raises on a worker fails the run in one line (exit 2 through `InputError`), on every
    executor: never an internal error, never an input read in part."""
    if executor.startswith("dask"):
        pytest.importorskip("distributed")
    from tracelens.engine.executors import TaskFailed, make_executor

    pool = make_executor(executor, jobs, None)
    try:
        with pytest.raises(TaskFailed) as failed:
            dict(pool.run(math.sqrt, [4.0, -1.0]))  # a real error raised in the worker: no mock
    finally:
        pool.close()
    assert str(failed.value) == "a worker task failed (ValueError: math domain error)"


def test_a_vllm_start_with_its_logo_off_is_a_run_boundary_every_reader_counts(tmp_path: Path) -> None:
    """vLLM with its logo off (`VLLM_DISABLE_LOG_LOGO`, a logging config of its own) starts with `vLLM
    server version X, serving model M`: each restart in the same log is a run of its own, in a whole-file
    parse and in a dataset read in byte ranges (the planner counts the starts before each range)."""

    def start(pid: int, minute: int) -> list[str]:
        lead = f"(APIServer pid={pid}) INFO 11-20 10:{minute:02d}:00"
        return [
            f"{lead} [api_server.py:1805] vLLM server version 0.12.0, serving model Qwen/Qwen3-8B",
            f"{lead} [api_utils.py:273] non-default args: {{'model': 'Qwen/Qwen3-8B', 'port': 8000}}",
        ]

    # SGLang's lines between the starts (a router's or a neighbour's) are where a range may begin
    sglang = [
        f"[2026-11-20 10:{i // 60:02d}:{i % 60:02d}] INFO: filler line {i:06d} " + "x" * 60
        for i in range(1500)
    ]
    lines = [*start(1000, 0), *sglang[:700], *start(2000, 30), *sglang[700:]]
    path = tmp_path / "vllm.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    whole = parse_paths([path], ParseOptions(base_date=BASE_DATE))
    assert whole[T.RUNS].get_column(C.START_LINE).to_list() == [1, 703]
    assert scan_range(str(path), 0, path.stat().st_size).candidates == [
        lines[0].encode(),
        lines[702].encode(),
    ]
    assert server_args_heads([[lines[0].encode()], [lines[702].encode()]]) == [1, 1]
    out = tmp_path / "out"
    options = EngineOptions(jobs=1, block_bytes=8 << 10, range_bytes=16 << 10, base_date=BASE_DATE)
    report = parse_to_dataset([str(path)], str(out), options)
    assert not report.problems
    assert_same_tables(read_dataset(out), whole)
