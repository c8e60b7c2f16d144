"""Evidence that travels: every line `check` cites carries its text when its source is compressed, in an
archive, moved or deleted; a compressed source is read once for all its cited lines; `explain` opens
every label `check` prints."""

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

import tracelens.sources.archives as archives

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
# Logs whose findings cite debug, batch, fault and run-start lines (vLLM starts are `foreign` lines).
LOGS = ("eagle3_embed_capture.log", "sweep_and_crash.log", "vllm_spec_decode.log")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.run([*TRACELENS, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def cited(*args: str) -> list[tuple[str, str]]:
    """(label, text) of every evidence line of `check --json`."""
    result = run("check", "--json", "-q", *args)
    assert result.returncode in (0, 1), result.stderr
    findings = json.loads(result.stdout)["findings"]
    return [(e["where"], e["text"]) for f in findings for e in f["evidence"]]


def by_line(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Labels reduced to member/file name and line, to compare one packing with another."""
    return sorted((f"{Path(w.rsplit(':', 1)[0]).name}:{w.rsplit(':', 1)[1]}", t) for w, t in pairs)


@pytest.fixture
def plain(tmp_path: Path) -> tuple[Path, list[tuple[str, str]]]:
    folder = tmp_path / "plain"
    folder.mkdir()
    for name in LOGS:
        shutil.copy(SAMPLE_LOGS / name, folder / name)
    pairs = cited(str(folder))
    assert len(pairs) > 10 and all(text for _, text in pairs)
    return folder, pairs


def test_a_compressed_source_carries_its_evidence(plain, tmp_path: Path) -> None:
    folder, want = plain
    packed = tmp_path / "gz"
    packed.mkdir()
    for name in LOGS:
        (packed / f"{name}.gz").write_bytes(gzip.compress((folder / name).read_bytes()))
    got = cited(str(packed))
    assert [(w.replace(".log.gz:", ".log:"), t) for w, t in by_line(got)] == by_line(want)


@pytest.mark.parametrize("kind", ["tar.gz", "zip"])
def test_an_archive_member_carries_its_evidence_and_explain_opens_its_label(
    kind: str, plain, tmp_path: Path
) -> None:
    folder, want = plain
    archive = tmp_path / f"logs.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in LOGS:
                zf.write(folder / name, f"host1/{name}")
    else:
        with tarfile.open(archive, "w:gz") as tar:
            for name in LOGS:
                tar.add(folder / name, f"host1/{name}")
    got = cited(str(archive))
    assert all(w.startswith(f"{archive}:host1/") for w, _ in got)
    assert by_line(got) == by_line(want)
    label, text = got[0]
    explained = run("explain", label)
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.splitlines()[0] == label
    assert text[:60] in explained.stdout.replace("\n", "")


def test_evidence_survives_the_source_being_moved_or_deleted(plain, tmp_path: Path) -> None:
    folder, want = plain
    dataset = tmp_path / "ds"
    assert run("parse", str(folder), "-o", str(dataset), "-q").returncode == 0
    shutil.rmtree(folder)
    got = cited(str(dataset))
    assert got == want


def test_a_gz_source_is_read_once_for_all_its_cited_lines(tmp_path: Path, monkeypatch) -> None:
    log = SAMPLE_LOGS / "sweep_and_crash.log"
    packed = tmp_path / "a.log.gz"
    packed.write_bytes(gzip.compress(log.read_bytes()))
    raw = log.read_bytes()
    starts = [0]
    for i, byte in enumerate(raw):
        if byte == 0x0A:
            starts.append(i + 1)
    wanted = [5, 40, 41, 300, len(starts) - 2]
    spans = [(n, starts[n - 1], starts[n] - starts[n - 1] - 1) for n in reversed(wanted)]
    opened = []
    real = archives.open_source

    def counting(path: Path):
        opened.append(path)
        return real(path)

    monkeypatch.setattr(archives, "open_source", counting)
    got = archives.read_source_lines(str(packed), spans)
    assert opened == [packed]
    lines = raw.decode().split("\n")
    assert got == {n: lines[n - 1] for n in wanted}


def test_a_missing_source_gives_no_text_rather_than_an_error(tmp_path: Path) -> None:
    assert archives.read_source_lines(str(tmp_path / "gone.log"), [(1, 0, 10)]) == {}
    assert archives.read_source_lines(f"{tmp_path / 'gone.zip'}:a.log", [(1, 0, 10)]) == {}


def test_a_batch_line_of_a_gone_source_is_rebuilt_from_its_fields(tmp_path: Path) -> None:
    from tracelens.analysis.evidence import REBUILT, texts
    from tracelens.engine.ingest import parse_paths
    from tracelens.tables.schema import T

    log = tmp_path / "run.log"
    shutil.copy(SAMPLE_LOGS / "eagle3_embed_capture.log", log)
    original = log.read_text().splitlines()[411]  # line 412: a decode line mid-run
    tables = parse_paths([log])
    key = (str(log), 412)
    kept_nothing = tables.scan(T.EVIDENCE).filter(False)
    assert texts({key}, tables.scan(T.LINES), kept_nothing, tables.scan(T.BATCHES))[key] == original
    log.unlink()
    assert texts({key}, tables.scan(T.LINES), kept_nothing) == {}
    rebuilt = texts({key}, tables.scan(T.LINES), kept_nothing, tables.scan(T.BATCHES))[key]
    assert rebuilt.startswith("[2026-11-20 10:53:26] Decode batch, ") and rebuilt.endswith(REBUILT)
    for field in (
        "#running-req: 1",
        "#token: 1538",
        "accept len: 1.79",
        "accept rate: 0.20",
        "cuda graph: True",
    ):
        assert field in original and field in rebuilt
