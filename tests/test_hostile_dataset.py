"""A dataset whose part files were deleted or damaged after the commit is not read as if whole: a read
checks each part against its manifest (one stat each) and says which is wrong in one line (exit 2);
a parse of the same logs reads the damaged input again and mends the dataset."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
LOGS = [SAMPLE_LOGS / "era_2024_gpu.log", SAMPLE_LOGS / "era_2026_comma.log"]


def run(*args: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.run([*TRACELENS, *map(str, args)], capture_output=True, text=True, env=env, timeout=300)


def count(target: object, *more: object) -> subprocess.CompletedProcess[str]:
    return run("sql", "--csv", "-q", "select count(*) as n from lines", target, *more)


def _damage(part: Path, how: str) -> None:
    if how == "deleted":
        part.unlink()
    elif how == "cut":
        part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    else:  # overwritten by something else
        part.write_bytes(b"not a parquet file\n" * 3)


@pytest.mark.parametrize("how", ["deleted", "cut", "overwritten"])
def test_a_damaged_part_file_is_one_line_and_a_parse_mends_it(tmp_path: Path, how: str) -> None:
    dataset = tmp_path / "ds"
    assert run("parse", "-q", *LOGS, "-o", dataset).returncode == 0
    whole = count(dataset)
    assert whole.returncode == 0
    part = sorted((dataset / "lines").glob("*.parquet"))[0]
    _damage(part, how)
    for command in (["summary", "-q"], ["sql", "-q", "select count(*) from lines"], ["check", "-q"]):
        done = run(*command, dataset)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"lines/{part.name}" in done.stderr and ("missing" in done.stderr or "damaged" in done.stderr)
    assert run("parse", "-q", *LOGS, "-o", dataset).returncode == 0
    assert count(dataset).stdout == whole.stdout


def test_a_cached_dataset_that_lost_a_part_is_read_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = count(*LOGS, "--dataset", cache)
    assert first.returncode == 0, first.stderr
    next(iter(sorted((cache / "lines").glob("*.parquet")))).unlink()
    again = count(*LOGS, "--dataset", cache)
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout


def test_a_table_that_gains_files_loses_its_empty_placeholder(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    assert run("parse", "-q", LOGS[0], "-o", dataset).returncode == 0
    assert (dataset / "faults" / "empty.parquet").exists()  # no fault in that log
    crash = SAMPLE_LOGS / "sweep_and_crash.log"
    assert run("parse", "-q", LOGS[0], crash, "-o", dataset).returncode == 0
    assert sorted(p.name for p in (dataset / "faults").iterdir()) != ["empty.parquet"]
    assert not (dataset / "faults" / "empty.parquet").exists()
    litter = [p for p in dataset.rglob("*") if p.name.endswith(".tmp")]
    assert litter == []
    faults = run("sql", "--csv", "-q", "select count(*) as n from faults", dataset)
    assert int(faults.stdout.split()[1]) > 0
