"""How many workers a parse starts, with what blocks and tasks: the memory bound (`--max-memory`), a few
tasks per worker, and no worker pool for a small input whatever --jobs asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracelens.engine.sizing import (
    DEFAULT_MAX_MEMORY,
    MIN_BLOCK_BYTES,
    MIN_MAX_MEMORY,
    TASKS_PER_WORKER,
    size_run,
    tree_bytes,
)
from tracelens.sizes import DEFAULT_BLOCK_BYTES, DEFAULT_RANGE_BYTES

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
MIB = 1 << 20
GIB = 1 << 30


def _size(jobs: int, todo: int, max_memory: int = DEFAULT_MAX_MEMORY):
    return size_run(jobs, todo, max_memory, DEFAULT_BLOCK_BYTES, DEFAULT_RANGE_BYTES)


def test_two_cores_keep_todays_blocks_and_ranges_on_a_big_log() -> None:
    for todo in (GIB, 4 * GIB):
        sizing = _size(2, todo)
        assert (sizing.workers, sizing.block_bytes, sizing.task_bytes) == (
            2,
            DEFAULT_BLOCK_BYTES,
            DEFAULT_RANGE_BYTES,
        )


@pytest.mark.parametrize("jobs", [2, 4, 8, 16, 64])
@pytest.mark.parametrize("todo", [64 * MIB, GIB, 4 * GIB])
@pytest.mark.parametrize("max_memory", [MIN_MAX_MEMORY, DEFAULT_MAX_MEMORY, 2 * GIB])
def test_the_modelled_tree_stays_under_the_bound(jobs: int, todo: int, max_memory: int) -> None:
    sizing = _size(jobs, todo, max_memory)
    assert 1 <= sizing.workers <= jobs
    assert MIN_BLOCK_BYTES <= sizing.block_bytes <= DEFAULT_BLOCK_BYTES
    assert tree_bytes(sizing.workers, sizing.block_bytes, sizing.task_bytes) <= max_memory
    # Every worker has a task, and the work is cut into a few tasks per worker when it is big enough.
    tasks = -(-todo // sizing.task_bytes)
    assert tasks >= sizing.workers
    if sizing.task_bytes < DEFAULT_RANGE_BYTES:
        assert tasks >= min(TASKS_PER_WORKER * sizing.workers, todo // (8 * MIB))


def test_more_memory_holds_more_workers() -> None:
    assert _size(16, GIB).workers < _size(16, GIB, 2 * GIB).workers == 16
    assert _size(16, 64 * MIB).task_bytes == 8 * MIB  # 8 tasks at least, not 2 of 32 MiB


def test_a_bound_below_one_worker_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes((SAMPLE_LOGS / "eagle3_fixed.log").read_bytes())
    result = subprocess.run(
        [*TRACELENS, "parse", str(log), "-o", str(tmp_path / "out"), "--max-memory", "100M"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "--max-memory must be at least" in result.stderr
    assert not (tmp_path / "out").exists()


WORKERS_STARTED = """
import multiprocessing.forkserver as fs, runpy, sys
sys.argv = ["tracelens", *sys.argv[1:]]
try:
    runpy.run_module("tracelens.cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\nfork server started: " + str(fs._forkserver._forkserver_pid is not None) + "\\n")
sys.exit(code)
"""


def _parse_reporting_workers(tmp_path: Path, log: Path, *args: str) -> tuple[bool, dict]:
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-c", WORKERS_STARTED, "parse", str(log), "-o", str(out), "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"},
    )
    assert result.returncode == 0, result.stderr
    started = result.stderr.rsplit("fork server started: ", 1)[1].startswith("True")
    return started, json.loads((out / ".tracelens" / "manifest.json").read_text())


def test_a_small_log_is_read_without_workers_whatever_jobs_asks(tmp_path: Path) -> None:
    """Starting the fork server and a worker costs more than a log of a couple of blocks takes."""
    started, manifest = _parse_reporting_workers(tmp_path, SAMPLE_LOGS / "eagle3_fixed.log", "-j", "16")
    assert not started
    assert manifest["rows"]["lines"] > 0


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores for two workers")
def test_small_ranges_still_go_to_the_workers(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes((SAMPLE_LOGS / "eagle3_fixed.log").read_bytes() * 2)
    started, manifest = _parse_reporting_workers(tmp_path, log, "-j", "2", "--range-size", "256K")
    assert started
    assert len(manifest["tasks"]) >= 4
