"""One huge line costs what the limit costs (1 MiB by default, `TRACELENS_MAX_LINE_BYTES`), in a plain
file and in every archive format: its head is kept with a marker that records its full length, the
lines after it keep their numbers and byte offsets, and the parse's peak memory stays near that of the
same log without the line. A .gz bomb (NULs, one line) is read to its end in bounded memory."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
HUGE = 40 << 20
LIMIT = 1 << 20
# Runs a command and prints the peak resident memory (KiB) of the processes it waited for.
PEAK = (
    "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
    "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def parse(log: Path, out: Path, **env: str) -> tuple[int, int]:
    """Exit code and peak memory (MiB) of `parse -j 1` of ``log``."""
    environment = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"} | env
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *TRACELENS, "parse", "-q", "-j", "1", str(log), "-o", str(out)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    peak = int(done.stderr.rsplit("PEAK", 1)[1].split()[0]) // 1024
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, peak


def sql(dataset: Path, query: str) -> list[str]:
    done = subprocess.run(
        [*TRACELENS, "sql", "--csv", "-q", query, str(dataset)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[1:]


def _text(huge: bool) -> bytes:
    head = (SAMPLE_LOGS / "era_2024_gpu.log").read_bytes()
    middle = b"x" * HUGE + b"\n" if huge else b"short\n"
    return head + middle + head


def _write(folder: Path, kind: str, data: bytes) -> Path:
    if kind == "plain":
        path = folder / "huge.log"
        path.write_bytes(data)
    elif kind == "gz":
        path = folder / "huge.log.gz"
        path.write_bytes(gzip.compress(data, compresslevel=1))
    elif kind == "zip":
        path = folder / "huge.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            archive.writestr("huge.log", data)
    else:
        path = folder / "huge.tar.gz"
        with tarfile.open(path, "w:gz", compresslevel=1) as archive:
            info = tarfile.TarInfo("huge.log")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("kind", ["plain", "gz", "zip", "tar.gz"])
def test_a_huge_line_is_kept_to_the_limit_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    (tmp_path / "short").mkdir()
    (tmp_path / "long").mkdir()
    code, baseline = parse(_write(tmp_path / "short", kind, _text(False)), tmp_path / "short-ds")
    assert code == 0
    code, peak = parse(_write(tmp_path / "long", kind, _text(True)), tmp_path / "long-ds")
    assert code == 0
    # The line's 40 MiB once or twice over is allowed (a compressed member's read), not 24 times.
    assert peak < baseline + 150, f"peak {peak} MiB, {baseline} MiB without the huge line"
    head_lines = (SAMPLE_LOGS / "era_2024_gpu.log").read_bytes().count(b"\n")
    dataset = tmp_path / "long-ds"
    (count,) = sql(dataset, "select count(*) from lines")
    assert int(count) == 2 * head_lines + 1
    (cut,) = sql(dataset, f"select length(text) from unparsed where line_no = {head_lines + 1}")
    assert LIMIT <= int(cut) <= LIMIT + 100
    (tail,) = sql(dataset, f"select right(text, 40) from unparsed where line_no = {head_lines + 1}")
    assert f"{HUGE:,} bytes long]" in tail
    # the line after it is where it is in the source
    (offset,) = sql(dataset, f"select byte_offset from lines where line_no = {head_lines + 2}")
    assert int(offset) == len((SAMPLE_LOGS / "era_2024_gpu.log").read_bytes()) + HUGE + 1


def test_the_limit_is_configurable(tmp_path: Path) -> None:
    log = _write(tmp_path, "plain", _text(True))
    code, _ = parse(log, tmp_path / "ds", TRACELENS_MAX_LINE_BYTES="4096")
    assert code == 0
    head_lines = (SAMPLE_LOGS / "era_2024_gpu.log").read_bytes().count(b"\n")
    (cut,) = sql(tmp_path / "ds", f"select length(text) from unparsed where line_no = {head_lines + 1}")
    assert 4096 <= int(cut) <= 4096 + 100


def test_a_gz_bomb_of_nuls_is_read_in_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.log.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as out:
        zeros = b"\0" * (1 << 20)
        for _ in range(256):  # 256 MiB of NULs, one line, in about 250 KB
            out.write(zeros)
    code, peak = parse(bomb, tmp_path / "ds")
    assert code == 0
    assert peak < 512, f"peak {peak} MiB"
    (count,) = sql(tmp_path / "ds", "select count(*) from lines")
    assert int(count) == 1


def test_a_followed_command_passes_a_huge_line_on_cut() -> None:
    import threading

    from tracelens.sources.command import CommandFollower
    from tracelens.sources.events import LinesAppended

    follower = CommandFollower(f"echo before; head -c {HUGE} /dev/zero | tr '\\0' x; echo; echo after")
    lines: list[bytes] = []

    def emit(event: object) -> None:
        if isinstance(event, LinesAppended):
            lines.extend(event.data.splitlines())

    follower.run(emit, threading.Event())
    assert [len(line) for line in lines[:1] + lines[2:]] == [6, 5]
    assert LIMIT <= len(lines[1]) <= LIMIT + 100 and lines[1].endswith(f"{HUGE:,} bytes long]".encode())
