"""Failures a user meets with real files: each named in one line, the rest of the input used, the exit
code saying which (1: partial input, 2: unusable input or output). Real subprocesses; as root (CI) the
commands run as `nobody` through setpriv so that file modes bite."""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS, as_nobody

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
GOOD = SAMPLE_LOGS / "eagle3_fixed.log"


@functools.cache
def _shared_cache() -> str:
    """A cache folder `nobody` can write: the session's private one belongs to root."""
    folder = tempfile.mkdtemp(prefix="tracelens-nobody-cache-")
    os.chmod(folder, 0o777)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def run(*args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    if prefix:
        env["XDG_CACHE_HOME"] = _shared_cache()
    return subprocess.run(
        [*(prefix or []), *TRACELENS, *args], capture_output=True, text=True, cwd="/", env=env, timeout=300
    )


@pytest.fixture
def world_folder() -> Iterator[Path]:
    """A folder outside any private home, so that `nobody` can reach it."""
    folder = Path(tempfile.mkdtemp(prefix="tracelens-trust-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in folder.rglob("*"):
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(folder)


def _logs_with_holes(folder: Path) -> Path:
    """good.log (readable), secret.log (not), locked/ (a subfolder that cannot be listed)."""
    logs = folder / "logs"
    logs.mkdir(mode=0o755)
    shutil.copy(GOOD, logs / "good.log")
    (logs / "good.log").chmod(0o644)
    (logs / "secret.log").write_text("[2025-01-01 00:00:00] secret\n")
    (logs / "secret.log").chmod(0o600 if os.geteuid() == 0 else 0)
    locked = logs / "locked"
    locked.mkdir()
    (locked / "hidden.log").write_text("[2025-01-01 00:00:00] hidden\n")
    locked.chmod(0o700 if os.geteuid() == 0 else 0)
    return logs


def test_unreadable_log_and_subfolder_are_named_and_the_rest_is_read(world_folder: Path) -> None:
    prefix = as_nobody()
    logs = _logs_with_holes(world_folder)
    result = run("summary", "--json", str(logs), prefix=prefix)
    assert result.returncode == 1, result.stderr
    assert f"tracelens: not read: permission denied: {logs / 'secret.log'}" in result.stderr.splitlines()
    assert f"tracelens: not read: cannot list folder {logs / 'locked'}: Permission denied" in result.stderr
    assert "Traceback" not in result.stderr
    sources = {run["source"] for run in json.loads(result.stdout)["runs"]}
    assert sources == {str(logs / "good.log")}


def test_parse_names_the_unreadable_and_writes_the_rest(world_folder: Path) -> None:
    prefix = as_nobody()
    logs = _logs_with_holes(world_folder)
    out = world_folder / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)
    result = run("parse", str(logs), "-o", str(out), "-q", "-j", "1", prefix=prefix)
    assert result.returncode == 1, result.stderr
    problems = [line for line in result.stderr.splitlines() if line.startswith("tracelens: not read: ")]
    assert sorted(problems) == [
        f"tracelens: not read: cannot list folder {logs / 'locked'}: Permission denied",
        f"tracelens: not read: permission denied: {logs / 'secret.log'}",
    ], result.stderr
    import polars as pl

    lines = pl.read_parquet(out / "lines" / "*.parquet")
    assert lines["source"].unique().to_list() == [str(logs / "good.log")]
    assert lines.height == GOOD.read_bytes().count(b"\n")


def _one_line_exit_2(result: subprocess.CompletedProcess[str], words: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("tracelens: error: "), result.stderr
    assert words in result.stderr, result.stderr


def test_output_onto_a_regular_file_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.write_text("something else\n")
    result = run("parse", str(GOOD), "-o", str(target), "-q")
    _one_line_exit_2(result, "is a file, not a dataset folder")
    assert target.read_text() == "something else\n"
    result = run("report", str(GOOD), "-o", str(target / "report.html"), "-q")
    _one_line_exit_2(result, "cannot write")


def test_output_into_a_read_only_folder_is_one_line(world_folder: Path) -> None:
    prefix = as_nobody()
    folder = world_folder / "ro"
    folder.mkdir(mode=0o555)
    folder.chmod(0o555)
    # -j 1: no worker processes, whose fork server some sandboxes refuse to user nobody
    result = run("parse", str(GOOD), "-o", str(folder / "out"), "-q", "-j", "1", prefix=prefix)
    _one_line_exit_2(result, "Permission denied")
    result = run("report", str(GOOD), "-o", str(folder / "r.html"), "-q", prefix=prefix)
    _one_line_exit_2(result, "Permission denied")
    assert list(folder.iterdir()) == []


def test_output_onto_a_read_only_file_system_is_one_line(tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    result = run("parse", str(GOOD), "-o", str(tmpfs / "out"), "-q")
    _one_line_exit_2(result, "Read-only file system")
    result = run("report", str(GOOD), "-o", str(tmpfs / "r.html"), "-q")
    _one_line_exit_2(result, "Read-only file system")


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ('[expect]\naux = "3"\n', "aux wants an integer, got '3' (str)"),
        ("[expect]\naux = true\n", "aux wants an integer, got True (bool)"),
        ('[expect]\naux_layer_ids = [1, "x"]\n', "aux_layer_ids wants a list of integers"),
        ('[expect]\nembed_capture = "yes"\n', "embed_capture wants true or false, got 'yes'"),
        ("[expect]\nhidden-size = 8192\n", "unknown key 'hidden-size' (did you mean hidden_size?"),
        ("hiden_size = 8192\n", "did you mean hidden_size?"),
    ],
)
def test_expectations_file_mistakes_are_named(tmp_path: Path, toml: str, words: str) -> None:
    path = tmp_path / "expect.toml"
    path.write_text(toml)
    result = run("check", str(GOOD), "--expectations", str(path), "-q")
    _one_line_exit_2(result, words)


def test_follow_says_it_waits_for_a_missing_file(tmp_path: Path) -> None:
    log = tmp_path / "later.log"
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    proc = subprocess.Popen(
        [*TRACELENS, "follow", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == f"tracelens: waiting for {log} to appear (it does not exist yet)\n"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    result = run("follow", str(tmp_path / "no-folder" / "x.log"))
    _one_line_exit_2(result, "no such file or folder")


def test_a_truncated_zst_is_named_not_read_as_empty(tmp_path: Path) -> None:
    """Found by tests/test_fuzz.py: zstandard's stream reader ends quietly inside a frame."""
    import zstandard

    data = GOOD.read_bytes()
    packed = zstandard.ZstdCompressor().compress(data)
    cut = tmp_path / "cut.log.zst"
    cut.write_bytes(packed[: len(packed) // 2])
    whole = tmp_path / "whole.log.zst"
    whole.write_bytes(packed + packed)  # two frames one after the other
    result = run("parse", str(tmp_path), "-o", str(tmp_path / "out"), "-q", "-j", "1")
    assert result.returncode == 1, result.stderr
    assert f"tracelens: read in part: {cut}: unreadable after" in result.stderr
    assert "truncated zstd stream" in result.stderr
    import polars as pl

    lines = pl.read_parquet(tmp_path / "out" / "lines" / "*.parquet")
    assert lines.filter(pl.col("source") == str(whole)).height == 2 * data.count(b"\n")
