"""`tui` and `follow` on a compressed log or an archive: each file (each log member, `ARCHIVE:MEMBER`)
is a source read once to its end by the batch engine's readers, then ended. Real files, a real
`LiveSession` with its worker process, and `check` and `follow` as real subprocesses.

What must hold: each source shows every line of its log and finds what `check` finds in it; it ends
"ended"; a truncated `.gz` keeps the lines before the break and ends saying it was read in part (and
how far, as `check` says), and `follow` then exits 1, as `check` does.
"""

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
from live_support import source_texts, wait_for

from tracelens.live import LiveSession, expand_recorded, parse_spec
from tracelens.sources import events as src

from conftest import SAMPLE_LOGS

pytestmark = pytest.mark.timeout(300)
TRACELENS = [sys.executable, "-m", "tracelens.cli"]
LOGS = {"a.log": "sweep_and_crash.log", "b.log": "eagle3_fixed.log"}


def _logs(folder: Path) -> dict[str, Path]:
    out = {}
    for name, sample in LOGS.items():
        out[name] = folder / name
        shutil.copy(SAMPLE_LOGS / sample, out[name])
    return out


def _made(kind: str, folder: Path) -> tuple[Path, dict[str, Path]]:
    """The input to read, and the plain log behind each source label it holds."""
    (folder / "plain").mkdir()
    logs = _logs(folder / "plain")
    if kind == "gz":
        path = folder / "a.log.gz"
        path.write_bytes(gzip.compress(logs["a.log"].read_bytes()))
        return path, {str(path): logs["a.log"]}
    if kind == "zip":
        path = folder / "two.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, log in logs.items():
                zf.write(log, f"logs/{name}")
            zf.writestr("logs/README.md", "not a log: `check` leaves it out, so does the session\n")
    else:
        path = folder / "two.tar.gz"
        with tarfile.open(path, "w:gz") as tar:
            tar.add(SAMPLE_LOGS / "README.md", "README.md")  # not a log: left out, as `check` does
            for name, log in logs.items():
                tar.add(log, f"logs/{name}")
    return path, {f"{path}:logs/{name}": log for name, log in logs.items()}


def _read(path: Path) -> LiveSession:
    """A session on ``path`` (as `tui`/`follow` expand it), once every source ended and was analysed."""
    session = LiveSession(expand_recorded(parse_spec(str(path))), interval=0.1)
    session.start()
    assert wait_for(lambda: session.all_ended, timeout=120), [(s.label, s.state) for s in session.sources]
    assert session.wait_idle(timeout=120)
    return session


def _checked(path: Path) -> tuple[int, list[tuple], str]:
    """`check --json` on ``path``: its exit code, its findings as (source, severity, code, run,
    message), and its stderr."""
    result = subprocess.run(
        [*TRACELENS, "check", "--json", "--no-cache", str(path)], capture_output=True, text=True, timeout=180
    )
    data = json.loads(result.stdout)
    found = sorted((f["source"], f["severity"], f["code"], f["run"], f["message"]) for f in data["findings"])
    return result.returncode, found, result.stderr


@pytest.mark.parametrize("kind", ["gz", "tar.gz", "zip"])
def test_each_source_shows_its_lines_ends_and_finds_what_check_finds(tmp_path: Path, kind: str) -> None:
    path, behind = _made(kind, tmp_path.resolve())
    session = _read(path)
    try:
        assert [s.label for s in session.sources] == list(behind)  # the labels `check` prints
        for i, log in enumerate(behind.values()):
            state = session.sources[i]
            assert state.spec.kind == "recorded"
            assert (state.state, state.detail) == (
                src.ENDED,
                f"read to its end ({log.stat().st_size:,} bytes)",
            )
            assert source_texts(session, i) == log.read_text().splitlines()
        analysis = session.analysis
        assert analysis is not None
        live = sorted((f.source, f.severity, f.code, f.run, f.message) for f in analysis.findings)
    finally:
        session.stop()
    code, checked, _ = _checked(path)
    assert checked and {f[0] for f in checked} == {f[0] for f in live}
    assert live == checked
    assert code == 1  # sweep_and_crash.log crashes: an error finding, the same exit code as a plain log


def test_a_truncated_gz_keeps_its_lines_and_ends_read_in_part(tmp_path: Path) -> None:
    whole = (SAMPLE_LOGS / "sweep_and_crash.log").read_bytes()
    path = tmp_path / "cut.log.gz"
    path.write_bytes(gzip.compress(whole)[:20_000])
    session = _read(path)
    try:
        state = session.sources[0]
        assert state.state == src.FAILED
        assert state.detail.startswith("read in part: unreadable after ")
        texts = source_texts(session, 0)
    finally:
        session.stop()
    lines = whole.decode().splitlines()
    assert 1000 < len(texts) < len(lines)  # the lines before the break are kept
    assert texts[:-1] == lines[: len(texts) - 1] and lines[len(texts) - 1].startswith(texts[-1])
    code, _, err = _checked(path)
    how_far = state.detail.removeprefix("read in part: ").split(";")[0]  # "unreadable after N bytes (...)"
    assert code == 1 and how_far in err  # as far as `check` read it


def _follow(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TRACELENS, "follow", "--json", str(path)], capture_output=True, text=True, timeout=180
    )


def test_follow_on_a_zip_prints_its_findings_and_exits_when_its_sources_ended(tmp_path: Path) -> None:
    path, behind = _made("zip", tmp_path.resolve())
    result = _follow(path)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    ended = {e["source"] for e in events if e.get("event") == "source" and e["state"] == src.ENDED}
    assert ended == set(behind)
    # each member's runs are reported under its own label (a.log crashes; b.log is healthy)
    assert {e["source"] for e in events if e.get("event") == "stats" and e["run"] is not None} == set(behind)
    assert {e["source"] for e in events if e.get("event") == "finding"} == {f"{path}:logs/a.log"}


def test_follow_on_a_truncated_gz_names_it_read_in_part_and_exits_1(tmp_path: Path) -> None:
    path = tmp_path / "cut.log.gz"
    path.write_bytes(gzip.compress((SAMPLE_LOGS / "sweep_and_crash.log").read_bytes())[:20_000])
    result = _follow(path)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert f"{path}: read in part: unreadable after " in result.stderr
