"""Fault injection into the batch engine (`tracelens parse -o`), with real processes and a real small
file system: a worker killed mid-task, the disk full, the output removed during a run. Each is one line
on stderr with exit 2, the dataset is the one before the run (or none), and the next run completes
with the right rows."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import psutil
import pytest

from tracelens.engine.ingest import parse_paths
from tracelens.tables.schema import C, T

from conftest import SAMPLE_LOGS

pytestmark = pytest.mark.timeout(600)
TRACELENS = [sys.executable, "-m", "tracelens.cli"]
COPIES = 24  # inputs of ~1 MB each: enough tasks for a run to last a few seconds on 2 cores


def _inputs(folder: Path, copies: int = COPIES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = (SAMPLE_LOGS / "eagle3_fixed.log").read_bytes()
    for i in range(copies):
        (folder / f"host{i:02d}.log").write_bytes(data)
    return folder


def _parse(logs: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.Popen(
        [*TRACELENS, "parse", str(logs), "-o", str(out), "-q", "--range-size", "256K", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=300)
    return proc.returncode, err


def _snapshot(out: Path) -> dict[str, object]:
    """What a reader of the dataset sees: the manifest and every table's rows."""
    manifest = json.loads((out / ".tracelens" / "manifest.json").read_text())
    lines = pl.read_parquet(out / T.LINES / "*.parquet")
    return {"rows": manifest["rows"], "inputs": sorted(manifest["inputs"]), "lines": lines.height}


def _expected_lines(logs: Path) -> int:
    return sum(f.read_bytes().count(b"\n") for f in logs.glob("*.log"))


def _one_line(err: str, words: str) -> None:
    lines = [line for line in err.strip().splitlines() if line]
    assert len(lines) == 1, err
    assert lines[0].startswith("tracelens: error: ") and words in lines[0], err


def _wait_for_staging(out: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    staging = out / ".tracelens" / "staging"
    while time.monotonic() < deadline and proc.poll() is None:
        if staging.is_dir() and any(staging.rglob("*.parquet*")):
            return
        time.sleep(0.01)
    pytest.fail(f"the run ended (or did not stage a part) before the fault could be injected: {proc.poll()}")


def test_a_worker_killed_mid_task(tmp_path: Path) -> None:
    logs = _inputs(tmp_path / "logs", 2)
    out = tmp_path / "out"
    assert _finish(_parse(logs, out, "-j", "2"))[0] == 0
    before = _snapshot(out)
    _inputs(tmp_path / "logs")  # more inputs: the next run has work to do
    proc = _parse(logs, out, "-j", "2")
    _wait_for_staging(out, proc)
    me = psutil.Process(proc.pid)
    workers = [p for p in me.children(recursive=True) if p.ppid() != proc.pid]  # forked by the fork server
    assert workers, "no worker processes"
    os.kill(workers[0].pid, signal.SIGKILL)
    code, err = _finish(proc)
    assert code == 2, err
    _one_line(err, "a worker process died")
    assert _snapshot(out) == before  # what it staged is dropped by the next run, before it starts
    assert _finish(_parse(logs, out, "-j", "2"))[0] == 0
    assert _snapshot(out)["lines"] == _expected_lines(logs)


def test_the_disk_full(tmp_path: Path, tmpfs: Path) -> None:
    logs = _inputs(tmp_path / "logs", 1)
    out = tmpfs / "out"
    code, err = _finish(_parse(logs, out, "-j", "1"))
    assert code == 0, err
    before = _snapshot(out)
    _inputs(tmp_path / "logs")  # 24 MB of logs: their dataset does not fit in what is left
    code, err = _finish(_parse(logs, out, "-j", "1"))
    assert code == 2, err
    _one_line(err, "No space left on device")
    assert _snapshot(out) == before
    subprocess.run(["mount", "-o", "remount,size=256m", str(tmpfs)], check=True)
    code, err = _finish(_parse(logs, out, "-j", "1"))
    assert code == 0, err
    assert _snapshot(out)["lines"] == _expected_lines(logs)


def test_the_output_removed_during_a_run(tmp_path: Path) -> None:
    logs = _inputs(tmp_path / "logs")
    out = tmp_path / "out"
    proc = _parse(logs, out, "-j", "2")
    _wait_for_staging(out, proc)
    shutil.rmtree(out, ignore_errors=True)
    code, err = _finish(proc)
    assert code == 2, err
    _one_line(err, str(out))
    code, err = _finish(_parse(logs, out, "-j", "2"))
    assert code == 0, err
    assert _snapshot(out)["lines"] == _expected_lines(logs)
    tables = parse_paths([logs])
    assert _snapshot(out)["rows"][T.BATCHES] == tables[T.BATCHES].height
    assert pl.read_parquet(out / T.BATCHES / "*.parquet").get_column(C.SOURCE).n_unique() == COPIES
