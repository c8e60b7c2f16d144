"""A dataset whose part files were deleted or damaged after the commit is not read as if whole: a read
checks each part against its manifest (one stat each) and says which is wrong in one line (exit 2);
a parse of the same logs reads the damaged input again and mends the dataset. A part changed in place
at the same size is found by its content hash, which only `parse --verify` and `cache --verify` read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
LOGS = [SAMPLE_LOGS / "era_2024_gpu.log", SAMPLE_LOGS / "era_2026_comma.log"]


def run(*args: object, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
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


def _parsed(tmp_path: Path) -> tuple[Path, str]:
    """A dataset of the logs, and its count of lines as `sql` prints it."""
    dataset = tmp_path / "ds"
    assert run("parse", "-q", *LOGS, "-o", dataset).returncode == 0
    return dataset, count(dataset).stdout


def _alter_in_place(part: Path, how: str) -> None:
    """Change a part file's bytes, its size kept: ``scramble`` every byte of its column pages (between
    the leading magic and the footer, whose length the last 8 bytes give: no page decodes), or
    ``rename`` the writer named in its footer (every reader still reads it)."""
    data = bytearray(part.read_bytes())
    if how == "scramble":
        footer = int.from_bytes(data[-8:-4], "little")
        for i in range(4, len(data) - 8 - footer):
            data[i] ^= 0x5A
    else:
        at = data.rindex(b"parquet-cpp")
        data[at : at + 7] = b"PARQUET"
    assert len(data) == part.stat().st_size
    part.write_bytes(bytes(data))


def test_a_part_scrambled_in_place_is_named_on_read_and_mended_by_verify(tmp_path: Path) -> None:
    dataset, whole = _parsed(tmp_path)
    part = sorted((dataset / "lines").glob("*.parquet"))[0]
    _alter_in_place(part, "scramble")
    for command in (["summary", "-q"], ["sql", "-q", "select max(text) from lines"], ["check", "-q"]):
        done = run(*command, dataset)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert f"lines/{part.name} is damaged" in done.stderr, done.stderr
    plain = run("parse", "-q", *LOGS, "-o", dataset)  # a stat each: the same size passes
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr
    mended = run("parse", "--verify", "-q", *LOGS, "-o", dataset)
    assert mended.returncode == 0, mended.stderr
    assert mended.stderr.count("\n") == 1 and f"lines/{part.name} is damaged" in mended.stderr, mended.stderr
    assert count(dataset).stdout == whole
    again = run("parse", "--verify", "-q", *LOGS, "-o", dataset)
    assert again.returncode == 0 and again.stderr == "", again.stderr


def test_only_the_content_hash_finds_a_part_that_still_reads(tmp_path: Path) -> None:
    dataset, whole = _parsed(tmp_path)
    part = sorted((dataset / "batches").glob("*.parquet"))[0]
    _alter_in_place(part, "rename")
    assert count(dataset).stdout == whole  # reads see nothing wrong: no hash on a read
    mended = run("parse", "--verify", "-q", *LOGS, "-o", dataset)
    assert mended.returncode == 0, mended.stderr
    assert f"batches/{part.name} is damaged (its bytes differ from those committed)" in mended.stderr
    manifest = json.loads((dataset / ".tracelens" / "manifest.json").read_text())
    assert set(manifest["digests"]) == set(manifest["sizes"])  # every part, the new ones too
    assert run("parse", "--verify", "-q", *LOGS, "-o", dataset).stderr == ""


def test_a_dataset_without_hashes_reads_and_verifies_by_decoding(tmp_path: Path) -> None:
    dataset, whole = _parsed(tmp_path)
    path = dataset / ".tracelens" / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["digests"]  # as written before hashes were recorded
    path.write_text(json.dumps(manifest))
    assert count(dataset).stdout == whole
    part = sorted((dataset / "lines").glob("*.parquet"))[0]
    _alter_in_place(part, "scramble")
    mended = run("parse", "--verify", "-q", *LOGS, "-o", dataset)
    assert mended.returncode == 0, mended.stderr
    assert f"lines/{part.name} is damaged (it cannot be read" in mended.stderr, mended.stderr
    assert count(dataset).stdout == whole


def test_cache_verify_names_and_drops_a_cached_dataset_altered_in_place(tmp_path: Path) -> None:
    cache = tmp_path / "xdg"
    first = run("sql", "--csv", "-q", "select count(*) as n from batches", *LOGS, cache=cache)
    assert first.returncode == 0, first.stderr
    clean = run("cache", "--verify", cache=cache)
    assert clean.returncode == 0 and clean.stderr == "", clean.stderr
    assert "verified 1 cached dataset(s): 0 with a bad part file" in clean.stdout
    (folder,) = (cache / "tracelens" / "datasets").iterdir()
    part = sorted((folder / "batches").glob("*.parquet"))[0]
    _alter_in_place(part, "rename")
    found = run("cache", "--verify", cache=cache)
    assert found.returncode == 2, found.stdout + found.stderr
    assert found.stderr.count("\n") == 1 and f"batches/{part.name} is damaged" in found.stderr, found.stderr
    assert not folder.exists()
    again = run("sql", "--csv", "-q", "select count(*) as n from batches", *LOGS, cache=cache)
    assert again.returncode == 0 and again.stdout == first.stdout, again.stderr
