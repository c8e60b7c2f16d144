"""One way in: `tracelens.analyze` reads what it is given exactly as the commands read their paths (files,
folders, glob patterns, compressed files, archives, datasets), through `engine.logs.opened_logs`. Each
input shape is checked both ways on the same input: the JSON summary of `analyze` equals what
`tracelens summary --json` prints for it."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tracelens import analyze
from tracelens.analysis.summary import summarize
from tracelens.errors import InputError

from conftest import SAMPLE_LOGS

LOG = SAMPLE_LOGS / "eagle3_fixed.log"
OTHER = SAMPLE_LOGS / "sweep_and_crash.log"


def _summary_command(paths: list[str], cwd: Path) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "tracelens.cli", "summary", "--json", *paths],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _inputs(tmp_path: Path) -> dict[str, list[str]]:
    """Every shape of input, each holding the two sample logs (or one), as a user names them."""
    folder = tmp_path / "folder"
    folder.mkdir()
    for log in (LOG, OTHER):
        shutil.copy(log, folder / log.name)
    gz = tmp_path / "one.log.gz"
    gz.write_bytes(gzip.compress(LOG.read_bytes()))
    tgz = tmp_path / "logs.tar.gz"
    with tarfile.open(tgz, "w:gz") as tar:
        tar.add(LOG, "run/eagle3_fixed.log")
    zipped = tmp_path / "logs.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.write(LOG, "eagle3_fixed.log")
        zf.write(OTHER, "sweep_and_crash.log")
    dataset = tmp_path / "ds"
    subprocess.run(
        [sys.executable, "-m", "tracelens.cli", "parse", str(LOG), "-o", str(dataset), "-q"], check=True
    )
    return {
        "file": [str(LOG)],
        "folder": [str(folder)],
        "glob": [str(folder / "*.log")],
        "relative glob": ["folder/*.log"],
        "gzip": [str(gz)],
        "tar.gz": [str(tgz)],
        "zip": [str(zipped)],
        "dataset": [str(dataset)],
    }


def test_analyze_reads_every_input_shape_as_the_commands_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for shape, paths in _inputs(tmp_path).items():
        mine = summarize(analyze(paths))
        assert mine == _summary_command(paths, tmp_path), shape
        assert mine["runs"], shape


def test_an_archive_is_read_by_its_members(tmp_path: Path) -> None:
    """A one-member tar.gz is that member's log: its source is `archive:member`, no tar header or
    padding among its lines, the same runs and lines as the plain file."""
    paths = _inputs(tmp_path)
    plain = summarize(analyze([str(LOG)]))
    archived = summarize(analyze(paths["tar.gz"]))
    assert archived["sources"] == [f"{paths['tar.gz'][0]}:run/eagle3_fixed.log"]
    assert [r["lines"] for r in archived["runs"]] == [r["lines"] for r in plain["runs"]]
    tables = analyze(paths["tar.gz"]).tables
    assert tables["unparsed"].height == analyze([str(LOG)]).tables["unparsed"].height


def test_a_glob_is_expanded_and_a_glob_of_nothing_is_one_clear_error(tmp_path: Path) -> None:
    paths = _inputs(tmp_path)
    by_glob = summarize(analyze(paths["glob"]))
    assert len(by_glob["sources"]) == 2
    with pytest.raises(InputError, match="no files match"):
        analyze([str(tmp_path / "nothing-*.log")])
    result = subprocess.run(  # the command says the same
        [sys.executable, "-m", "tracelens.cli", "summary", str(tmp_path / "nothing-*.log")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2 and "no files match" in result.stderr


def test_explain_finds_its_one_file_as_the_commands_do(tmp_path: Path) -> None:
    """`explain PATH:LINE` finds PATH with the same function (a glob of one file, a compressed file);
    a folder or an archive without a member is one clear line, exit 2."""
    paths = _inputs(tmp_path)

    def explain(where: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "tracelens.cli", "explain", where]
        return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)

    plain = explain(f"{LOG}:3")
    assert plain.returncode == 0, plain.stderr
    found = {
        f"{tmp_path / 'folder' / 'eagle3_*.log'}:3": tmp_path / "folder" / LOG.name,
        f"{paths['gzip'][0]}:3": paths["gzip"][0],
    }
    for where, file in found.items():
        result = explain(where)
        assert result.returncode == 0, result.stderr
        assert result.stdout.replace(str(file), "LOG") == plain.stdout.replace(str(LOG), "LOG"), where
    folder = explain(f"{tmp_path / 'folder'}:3")
    assert (folder.returncode, folder.stderr.strip()) == (
        2,
        f"tracelens: error: {tmp_path / 'folder'} names 2 files: explain reads a line of one file",
    )
    archive = explain(f"{paths['tar.gz'][0]}:3")
    assert archive.returncode == 2
    assert "is an archive: name the line as" in archive.stderr
