"""Inputs that can be read only once: a named pipe (FIFO) and bash's process substitution. Each is read
to its end once, its lines named as the user named the pipe, for `parse`, `check` and `follow`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
LOG = SAMPLE_LOGS / "era_2024_gpu.log"
SPOOL = Path(tempfile.gettempdir()) / f"tracelens-spool-{os.getuid()}"


def run(*args: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    # Before pipes were read once, the second open of the pipe waited for a writer that had gone.
    return subprocess.run([*TRACELENS, *map(str, args)], capture_output=True, text=True, env=env, timeout=120)


@contextmanager
def fifo_writing(tmp_path: Path, data: Path) -> Iterator[Path]:
    """A named pipe that a real writer (`cat`, its own process) fills with ``data`` once it is opened."""
    pipe = tmp_path / "server.log"
    os.mkfifo(pipe)
    writer = subprocess.Popen(["sh", "-c", 'exec cat "$1" > "$2"', "sh", str(data), str(pipe)])
    try:
        yield pipe
    finally:
        writer.kill()
        writer.wait()


def spooled() -> set[str]:
    return set(os.listdir(SPOOL)) if SPOOL.exists() else set()


def test_parse_reads_a_named_pipe_once_to_its_end(tmp_path: Path) -> None:
    before = spooled()
    with fifo_writing(tmp_path, LOG) as pipe:
        done = run("parse", "-q", pipe, "-o", tmp_path / "ds")
    assert done.returncode == 0, done.stderr
    lines = pl.read_parquet(tmp_path / "ds" / "lines" / "*.parquet")
    # Every line, the first 4 KiB too, under the pipe's own name, not its copy's.
    assert lines.height == len(LOG.read_bytes().splitlines())
    assert lines.get_column("source").unique().to_list() == [str(pipe)]
    assert spooled() == before  # the copy is gone with the command


def test_check_reads_a_named_pipe_as_the_file_it_carries(tmp_path: Path) -> None:
    alone = run("check", "--no-cache", LOG)
    with fifo_writing(tmp_path, LOG) as pipe:
        done = run("check", "--no-cache", pipe)
    assert done.returncode == alone.returncode, done.stderr
    assert done.stdout.replace("server.log", LOG.name) == alone.stdout


def test_check_reads_a_compressed_process_substitution() -> None:
    if shutil.which("bash") is None or shutil.which("gzip") is None:
        raise AssertionError("bash and gzip are needed")
    command = " ".join([*TRACELENS, "check", "--no-cache", f'<(gzip -c "{LOG}")'])
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    alone = run("check", "--no-cache", LOG)
    assert done.returncode == alone.returncode, done.stderr
    assert done.stdout.splitlines()[0].split(":", 1)[1] == alone.stdout.splitlines()[0].split(":", 1)[1]


def test_follow_reads_a_named_pipe_until_its_writer_closes_it(tmp_path: Path) -> None:
    with fifo_writing(tmp_path, LOG) as pipe:
        done = run("follow", "--json", pipe)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    states = [e["state"] for e in events if e["event"] == "source"]
    assert states == ["connected", "ended"], states
    assert "Illegal seek" not in done.stdout
    assert any(e["event"] == "stats" for e in events)
