"""Smaller hostile inputs: a date past what dates hold, links that lead nowhere, a dataset on a file
system remounted read-only. Each is one clear line with the right exit code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]


def run(*args: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.run([*TRACELENS, *map(str, args)], capture_output=True, text=True, env=env, timeout=300)


def test_a_date_at_the_end_of_time_is_one_line() -> None:
    for date in ("9999-12-31", "0001-01-01"):
        done = run("summary", "-q", "--no-cache", "--date", date, SAMPLE_LOGS / "era_2024_timeonly.log")
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("tracelens: error: --date") and done.stderr.count("\n") == 1, (
            done.stderr
        )


def test_dangling_links_and_link_loops_are_named_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(SAMPLE_LOGS / "era_2024_gpu.log", folder / "good.log")
    (folder / "gone.log").symlink_to(tmp_path / "nowhere.log")
    (folder / "loop.log").symlink_to(folder / "loop.log")
    done = run("summary", "-q", "--no-cache", folder)
    assert done.returncode == 1, done.stderr  # read in part
    assert "good.log" in done.stdout
    assert f"not read: cannot follow the link {folder / 'gone.log'}: its target does not exist" in done.stderr
    assert f"not read: cannot follow the link {folder / 'loop.log'}: a loop of links" in done.stderr


def test_a_dataset_on_a_file_system_made_read_only_says_so(tmpfs: Path) -> None:
    dataset = tmpfs / "ds"
    assert run("parse", "-q", SAMPLE_LOGS / "era_2024_gpu.log", "-o", dataset).returncode == 0
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    done = run(
        "parse", "-q", SAMPLE_LOGS / "era_2024_gpu.log", SAMPLE_LOGS / "era_2024_rank.log", "-o", dataset
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "read-only file system" in done.stderr, done.stderr
    assert "permission denied" not in done.stderr


def test_a_usage_error_is_one_line() -> None:
    for args in (
        ["summary", "--bogus", "x"],
        ["summary"],
        ["sumary", "x"],
        ["check", "--stall-seconds", "0", "x"],
    ):
        done = run(*args)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("tracelens: error: "), done.stderr
        assert "--help" in done.stderr


def test_a_log_whose_lines_end_by_lone_crs_is_read_line_by_line(tmp_path: Path) -> None:
    import gzip

    lines = (SAMPLE_LOGS / "era_2026_comma.log").read_bytes().splitlines()
    text = b"\r".join(lines) + b"\r"
    for name, data in (("cr.log", text), ("cr.log.gz", gzip.compress(text))):
        path = tmp_path / name
        path.write_bytes(data)
        done = run("sql", "--csv", "-q", "--no-cache", "select count(*) from lines", path)
        assert done.returncode == 0, done.stderr
        assert int(done.stdout.split()[1]) == len(lines), name
    plain = run(
        "sql",
        "--csv",
        "-q",
        "--no-cache",
        "select count(*) as n from batches",
        SAMPLE_LOGS / "era_2026_comma.log",
    )
    from_cr = run(
        "sql", "--csv", "-q", "--no-cache", "select count(*) as n from batches", tmp_path / "cr.log"
    )
    assert plain.stdout == from_cr.stdout
