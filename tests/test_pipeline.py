"""Every command that takes log paths reads them through the batch engine into a dataset (the cache's,
one named by --dataset, or a temporary one): archives, compressed files, globs, partial reads and exit
codes behave the same in all of them. Real subprocesses on real files."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
FIXED = SAMPLE_LOGS / "eagle3_fixed.log"
BASELINE = SAMPLE_LOGS / "baseline_tp8.log"


def run(
    *args: str, cache: Path, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"} | (env or {})
    full["XDG_CACHE_HOME"] = str(cache)
    return subprocess.run([*TRACELENS, *args], capture_output=True, text=True, cwd=cwd, env=full, timeout=300)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "xdg-cache"


@pytest.fixture
def good_zip(tmp_path: Path) -> Path:
    path = tmp_path / "good.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(FIXED, FIXED.name)
        archive.write(BASELINE, BASELINE.name)
    return path


@pytest.fixture
def two_tar_gz(tmp_path: Path) -> Path:
    path = tmp_path / "two.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(FIXED, FIXED.name)
        tar.add(BASELINE, BASELINE.name)
    return path


@pytest.fixture
def cut_gz(tmp_path: Path) -> Path:
    """A gzip cut in the middle: what was read before the break is kept."""
    path = tmp_path / "cut.log.gz"
    path.write_bytes(gzip.compress(FIXED.read_bytes())[:30_000])
    return path


def summary_json(*args: str, cache: Path) -> dict:
    result = run("summary", "--json", *args, cache=cache)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_summary_of_a_zip_reads_its_members_not_its_compressed_bytes(good_zip: Path, cache: Path) -> None:
    data = summary_json(str(good_zip), cache=cache)
    assert data["sources"] == [f"{good_zip}:{BASELINE.name}", f"{good_zip}:{FIXED.name}"]
    assert all(r["unparsed"] == 0 for r in data["runs"])
    assert sum(r["decode_lines"] for r in data["runs"]) > 4000


def test_summary_of_a_tar_gz_keeps_its_members_apart(two_tar_gz: Path, cache: Path) -> None:
    data = summary_json(str(two_tar_gz), cache=cache)
    assert data["sources"] == [f"{two_tar_gz}:{BASELINE.name}", f"{two_tar_gz}:{FIXED.name}"]
    plain = summary_json(str(FIXED), str(BASELINE), cache=cache)

    # The same runs as the plain files: each member is a log of its own, not glued to the other. The
    # headline names the baseline run by its source, so the archive's name is taken out of it.
    def strip(runs: list[dict], prefix: str = "") -> list[dict]:
        return [
            {
                k: (v.replace(prefix, "") if k == "headline" and prefix else v)
                for k, v in r.items()
                if k != "source"
            }
            for r in runs
        ]

    assert sorted(strip(plain["runs"]), key=str) == sorted(
        strip(data["runs"], f"{two_tar_gz.name}:"), key=str
    )


def test_compare_of_a_tar_gz_compares_the_members_runs(two_tar_gz: Path, cache: Path) -> None:
    result = run("compare", str(two_tar_gz), cache=cache)
    assert result.returncode == 0, result.stderr
    assert f"{FIXED.name}#1" in result.stdout and f"{BASELINE.name}#1" in result.stdout


def test_report_of_a_zip_has_its_runs(good_zip: Path, cache: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = run("report", str(good_zip), "-o", str(out), "-q", cache=cache)
    assert result.returncode == 0, result.stderr
    assert "2 run(s)" in result.stdout
    assert out.stat().st_size > 100_000


def test_a_glob_is_read_in_every_command(cache: Path) -> None:
    pattern = str(SAMPLE_LOGS / "eagle3_f*.log")
    data = summary_json(pattern, cache=cache)
    assert data["sources"] == [str(FIXED)]
    result = run("sql", "SELECT count(*) AS n FROM lines", pattern, "--csv", cache=cache)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == str(len(FIXED.read_bytes().splitlines()))


@pytest.mark.parametrize(
    "args",
    [
        ["summary"],
        ["summary", "--json"],
        ["check"],
        ["compare"],
        ["report", "-o", "{tmp}/r.html"],
        ["sql", "SELECT count(*) AS n FROM batches"],
    ],
)
def test_a_partial_read_keeps_what_was_read_says_how_far_and_exits_1(
    args: list[str], cut_gz: Path, cache: Path, tmp_path: Path
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    at = 2 if args[0] == "sql" else 1  # after the command (and the query)
    args = [*args[:at], str(cut_gz), *args[at:]]
    for _ in range(2):  # the second time from the cache: the same words and the same exit code
        result = run(*args, "-q", cache=cache)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        (line,) = [s for s in result.stderr.splitlines() if s.startswith("tracelens: read in part: ")]
        assert f"{cut_gz}: unreadable after " in line and " bytes " in line
    if args[0] == "summary" and "--json" in args:
        decode = json.loads(result.stdout)["runs"][0]["decode_lines"]
        assert decode > 0, "what was read before the break is kept"


def test_a_second_command_on_the_same_logs_reads_nothing_again(cache: Path, tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(FIXED.read_bytes())
    first = summary_json(str(log), cache=cache)
    (dataset,) = (cache / "tracelens" / "datasets").iterdir()
    parts = {p: p.stat().st_mtime_ns for p in dataset.rglob("*.parquet")}
    manifest = json.loads((dataset / ".tracelens" / "manifest.json").read_text())
    # The same logs named another way (relative, from their folder) are the same dataset.
    result = run("check", "a.log", "--json", cache=cache, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert [p.name for p in (cache / "tracelens" / "datasets").iterdir()] == [dataset.name]
    assert {p: p.stat().st_mtime_ns for p in dataset.rglob("*.parquet")} == parts
    assert json.loads((dataset / ".tracelens" / "manifest.json").read_text()) == manifest
    # A log that grew: only its new bytes are read, into the same dataset.
    with log.open("ab") as fh:
        fh.write(BASELINE.read_bytes().split(b"\n", 200)[-1])
    grown = summary_json(str(log), cache=cache)
    assert grown["runs"][-1]["lines"] > first["runs"][-1]["lines"]


def test_a_changed_parser_never_answers_from_the_old_parsers_dataset(cache: Path, tmp_path: Path) -> None:
    # an upgrade that parses a line differently must parse again: a copy of the package whose parser
    # changed (an edit is enough) gets a dataset of its own; the same code reuses its own (run from
    # tmp_path: `-m` puts the working folder before PYTHONPATH)
    package = Path(__import__("tracelens").__file__).parent
    copy = tmp_path / "code"
    shutil.copytree(package, copy / "tracelens", ignore=shutil.ignore_patterns("__pycache__"))
    env = {"PYTHONPATH": str(copy)}

    def datasets() -> set[str]:
        return {p.name for p in (cache / "tracelens" / "datasets").iterdir()}

    assert run("summary", str(FIXED), cache=cache, env=env, cwd=tmp_path).returncode == 0
    first = datasets()
    assert run("summary", str(FIXED), cache=cache, env=env, cwd=tmp_path).returncode == 0
    assert datasets() == first
    with (copy / "tracelens" / "parsers" / "pipeline.py").open("a") as fh:
        fh.write("\n# a parser of another release\n")
    assert run("summary", str(FIXED), cache=cache, env=env, cwd=tmp_path).returncode == 0
    assert len(datasets()) == 2, datasets()


def test_dataset_option_names_the_dataset_and_no_cache_leaves_nothing(cache: Path, tmp_path: Path) -> None:
    named = tmp_path / "ds"
    data = summary_json(str(FIXED), "--dataset", str(named), cache=cache)
    assert (named / ".tracelens" / "manifest.json").is_file()
    assert not (cache / "tracelens").exists()
    # The named dataset is then a dataset like the output of `parse -o`.
    assert summary_json(str(named), cache=cache)["runs"] == data["runs"]
    assert summary_json(str(FIXED), "--no-cache", cache=cache)["runs"] == data["runs"]
    assert not (cache / "tracelens").exists()


def test_cache_lists_and_clears(cache: Path, good_zip: Path) -> None:
    summary_json(str(FIXED), cache=cache)
    summary_json(str(good_zip), cache=cache)
    listed = run("cache", cache=cache)
    assert listed.returncode == 0, listed.stderr
    assert f"{cache / 'tracelens'}: 2 dataset(s)" in listed.stdout
    assert str(good_zip) in listed.stdout
    cleared = run("cache", "--clear", cache=cache)
    assert cleared.returncode == 0, cleared.stderr
    assert "deleted 2 cached dataset(s)" in cleared.stdout
    assert list((cache / "tracelens" / "datasets").iterdir()) == []


def test_the_cache_evicts_the_least_recently_used_datasets_above_its_limit(
    cache: Path, good_zip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = cache / "tracelens" / "datasets"
    summary_json(str(FIXED), cache=cache)
    (first,) = datasets.iterdir()
    summary_json(str(BASELINE), cache=cache)
    (second,) = set(datasets.iterdir()) - {first}
    os.utime(first / ".tracelens" / "used", (1, 1))  # FIXED's dataset: the least recently used
    # Below one dataset's size: every dataset but the one the command reads goes, oldest first.
    monkeypatch.setenv("TRACELENS_CACHE_LIMIT", "1K")
    result = run("summary", "--json", str(good_zip), cache=cache)
    assert result.returncode == 0, result.stderr
    (line,) = [s for s in result.stderr.splitlines() if "cache:" in s]
    assert line.startswith("tracelens: cache: deleted 2 least recently used dataset(s)")
    assert "TRACELENS_CACHE_LIMIT=1K" in line
    assert not first.exists() and not second.exists()
    assert len(list(datasets.iterdir())) == 1, "the dataset just read is kept, even above the limit"
    # 0: no limit; a size it cannot read is one line and exit 2.
    monkeypatch.setenv("TRACELENS_CACHE_LIMIT", "0")
    summary_json(str(FIXED), cache=cache)
    assert len(list(datasets.iterdir())) == 2
    monkeypatch.setenv("TRACELENS_CACHE_LIMIT", "lots")
    bad = run("summary", str(FIXED), cache=cache)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "tracelens: error: TRACELENS_CACHE_LIMIT wants a size such as 4M or 65536, got 'lots'"
    ]
    listed = run("cache", cache=cache)
    assert "(limit lots, $TRACELENS_CACHE_LIMIT)" in listed.stdout


def test_demo_goes_through_the_cache_too(cache: Path, tmp_path: Path) -> None:
    result = run("demo", "-q", "-o", str(tmp_path / "demo.html"), cache=cache)
    assert result.returncode == 0, result.stderr
    assert len(list((cache / "tracelens" / "datasets").iterdir())) == 1
