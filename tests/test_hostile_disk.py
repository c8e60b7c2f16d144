"""A full disk, on a real (small) tmpfs: one line and exit 2, no traceback, nothing left behind, and the
dataset as it was, which readers go on reading while the disk stays full. The space left is stepped
across every stage of a run (part files, the commit's own files, its journal), so that the disk fills
in each of them once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
SMALL = [SAMPLE_LOGS / "era_2024_gpu.log"]
MORE = [*SMALL, SAMPLE_LOGS / "era_2024_rank.log", SAMPLE_LOGS / "era_2026_comma.log"]


def run(*args: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.run([*TRACELENS, *map(str, args)], capture_output=True, text=True, env=env, timeout=300)


def fill(disk: Path, name: str, leave_kib: int = 0) -> None:
    """Fill ``disk`` until ``leave_kib`` are free (every byte with 0)."""
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize - leave_kib * 1024
    with (disk / name).open("wb") as out:
        chunk = b"\0" * 65536
        try:
            while free > 0:
                free -= out.write(chunk[: min(len(chunk), free)])
            out.flush()
        except OSError:  # already full
            pass


def lines_in(dataset: Path) -> int:
    done = run("sql", "--csv", "-q", "select count(*) as n from lines", dataset)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[1])


def litter(disk: Path) -> list[str]:
    return sorted(
        str(p.relative_to(disk))
        for p in disk.rglob("*")
        if p.name.endswith((".tmp", ".partial")) or (p.is_dir() and p.name == "staging" and any(p.iterdir()))
    )


def assert_one_line(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("parsed ")]
    assert len(errors) == 1 and errors[0].startswith("tracelens: error: "), done.stderr


def test_a_disk_that_fills_at_any_stage_of_a_parse_leaves_the_dataset_readable(tmpfs: Path) -> None:
    dataset = tmpfs / "ds"
    failed = 0
    for leave in range(0, 100, 12):
        if not dataset.exists():
            assert run("parse", "-q", "-j", "1", *SMALL, "-o", dataset).returncode == 0
        before = lines_in(dataset)
        fill(tmpfs, "filler", leave)
        done = run("parse", "-q", "-j", "1", *MORE, "-o", dataset)
        if done.returncode != 0:
            failed += 1
            assert_one_line(done)
            assert litter(tmpfs) == [], f"{leave} KiB free"
            fill(tmpfs, "filler-2")  # the disk stays full while a reader reads
            assert lines_in(dataset) == before, f"{leave} KiB free"
        for name in ("filler", "filler-2"):
            (tmpfs / name).unlink(missing_ok=True)
        if done.returncode == 0:
            assert lines_in(dataset) > before
            subprocess.run(["rm", "-rf", str(dataset)], check=True)
    assert failed >= 3  # the steps crossed the run's stages


def test_a_parallel_parse_on_a_full_disk_prints_one_line(tmpfs: Path, tmp_path: Path) -> None:
    """Two workers writing part files when the disk fills: no writer's traceback on stderr."""
    log = tmp_path / "mix.log"
    with log.open("wb") as out:
        for _ in range(4):
            for path in sorted(SAMPLE_LOGS.glob("*.log")):
                out.write(path.read_bytes())
    for leave in (1000, 500):
        fill(tmpfs, "filler", leave)
        done = run("parse", "-j", "2", log, "-o", tmpfs / "ds")
        assert_one_line(done)
        assert litter(tmpfs) == []
        (tmpfs / "filler").unlink()


def test_a_report_on_a_full_disk_leaves_no_partial_file(tmpfs: Path) -> None:
    fill(tmpfs, "filler", 200)
    done = run("report", "-q", "--no-cache", SAMPLE_LOGS / "eagle3_fixed.log", "-o", tmpfs / "r.html")
    assert_one_line(done)
    assert sorted(p.name for p in tmpfs.iterdir()) == ["filler"]
