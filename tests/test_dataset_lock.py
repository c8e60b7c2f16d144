"""A dataset under concurrency and bad dataset paths, with real processes: writers take the dataset's
lock (a second one waits, or exits 2 naming the holder), readers never see a half-made commit, a writer
killed by `kill -9` while holding the lock leaves nothing that blocks or corrupts the next one."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from tracelens.engine.lock import writing
from tracelens.tables.schema import T

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
FIXED = SAMPLE_LOGS / "eagle3_fixed.log"
BASELINE = SAMPLE_LOGS / "baseline_tp8.log"


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.run([*TRACELENS, *args], capture_output=True, text=True, env=env, timeout=timeout)


def start(*args: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.Popen(
        [*TRACELENS, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def big_log(path: Path, copies: int) -> Path:
    """A log long enough that parsing it takes a while: the same server log, restarted ``copies`` times."""
    data = FIXED.read_bytes()
    with path.open("wb") as fh:
        for _ in range(copies):
            fh.write(data)
    return path


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.blake2b(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith("lock.")
    }


def files_in_manifest(folder: Path) -> set[str]:
    manifest = json.loads((folder / ".tracelens" / "manifest.json").read_text())
    listed = {f for task in manifest["tasks"].values() for files in task["files"].values() for f in files}
    return listed | set(manifest["faults"].values())


def table_files(folder: Path) -> set[str]:
    """Part files of the tables (and the faults before sharing): each must be in the manifest."""
    found = {str(p.relative_to(folder)) for p in folder.rglob("*.parquet")}
    return {f for f in found if not f.endswith("empty.parquet") and not f.startswith("runs/")}


def lines_count(folder: Path) -> int:
    return pl.scan_parquet(str(folder / T.LINES / "*.parquet")).select(pl.len()).collect().item()


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# --------------------------------------------------------------------------------------------- writers


def test_a_second_writer_waits_with_a_message_or_exits_2_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert run("parse", str(FIXED), "-o", str(out), "-q").returncode == 0
    before = snapshot(out)
    with writing(out / ".tracelens", str(out), timeout=5):
        refused = run("parse", str(FIXED), str(BASELINE), "-o", str(out), "-q", "--lock-timeout", "1")
        assert refused.returncode == 2
        assert "Traceback" not in refused.stderr
        # The line it printed when it began to wait, then the one that says it gave up.
        waited, line = refused.stderr.strip().splitlines()
        assert waited.startswith(f"tracelens: waiting up to 1 s for {out}, locked by pid {os.getpid()} on ")
        assert line.startswith(f"tracelens: error: {out} is still locked by pid {os.getpid()} on ")
        assert "after 1 s (--lock-timeout)" in line
        assert snapshot(out) == before, "nothing in the dataset changes"
        waiting = start("parse", str(FIXED), str(BASELINE), "-o", str(out), "-q")
        deadline = time.monotonic() + 60
        first = ""
        while not first and time.monotonic() < deadline:
            first = waiting.stderr.readline()  # the waiting message, while we hold the lock
        assert first.startswith(f"tracelens: waiting up to 600 s for {out}, locked by pid {os.getpid()}")
        time.sleep(0.5)
        assert waiting.poll() is None, "it waits while the lock is held"
    stdout, stderr = waiting.communicate(timeout=120)
    assert waiting.returncode == 0, stderr
    assert "2 input(s): 1 read, 1 unchanged" in stdout


def test_two_writers_at_once_leave_one_consistent_dataset(tmp_path: Path) -> None:
    log = big_log(tmp_path / "big.log", 12)
    out = tmp_path / "ds"
    writers = [start("parse", str(log), str(BASELINE), "-o", str(out), "-q", "-j", "1") for _ in range(2)]
    results = [w.communicate(timeout=300) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], results
    assert table_files(out) == files_in_manifest(out), "no part file outside the manifest"
    alone = tmp_path / "alone"
    assert run("parse", str(log), str(BASELINE), "-o", str(alone), "-q").returncode == 0
    assert lines_count(out) == lines_count(alone), "no log counted twice"
    assert not (out / ".tracelens" / "staging").exists()


def test_a_writer_killed_while_it_holds_the_lock_blocks_nothing(tmp_path: Path) -> None:
    log = big_log(tmp_path / "big.log", 40)
    out = tmp_path / "ds"
    writer = subprocess.Popen(
        [*TRACELENS, "parse", str(log), "-o", str(out), "-q", "-j", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    owner = out / ".tracelens" / "lock.owner"
    staging = out / ".tracelens" / "staging"
    deadline = time.monotonic() + 120
    while not (owner.exists() and staging.exists() and any(staging.rglob("*"))):
        assert writer.poll() is None, "the writer ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert json.loads(owner.read_text())["pid"] == writer.pid
    os.killpg(writer.pid, signal.SIGKILL)
    writer.wait()
    # A reader is not blocked either, and sees no half-made dataset.
    again = run("parse", str(log), "-o", str(out), "-q", "--lock-timeout", "10")
    assert again.returncode == 0, again.stderr
    assert not staging.exists()
    alone = tmp_path / "alone"
    assert run("parse", str(log), "-o", str(alone), "-q").returncode == 0
    assert lines_count(out) == lines_count(alone)
    assert table_files(out) == files_in_manifest(out)


# --------------------------------------------------------------------------------------------- readers


def test_readers_never_see_a_half_made_commit(tmp_path: Path) -> None:
    """Writers switch the dataset between two sets of logs while readers count its lines: every count is
    one set's or the other's, never a mix."""
    a = big_log(tmp_path / "a.log", 3)
    b = tmp_path / "b.log"
    b.write_bytes(BASELINE.read_bytes())
    out = tmp_path / "ds"
    counts = set()
    for logs in ([a], [b], [a]):
        assert run("parse", *map(str, logs), "-o", str(out), "-q").returncode == 0
        counts.add(lines_count(out))
    assert len(counts) == 2
    query = "SELECT count(*) AS n FROM lines"
    seen: list[str] = []
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys\n"
            "for logs in (sys.argv[1], sys.argv[2]) * 3:\n"
            "    subprocess.run([sys.executable, '-m', 'tracelens.cli', 'parse', logs, '-o', sys.argv[3], '-q'],"
            " check=True, capture_output=True)\n",
            str(b),
            str(a),
            str(out),
        ]
    )
    while writer.poll() is None:
        result = run("sql", query, str(out), "--csv", "-q")
        assert result.returncode == 0, result.stderr
        seen.append(result.stdout.splitlines()[1])
    assert writer.returncode == 0
    assert seen and {int(n) for n in seen} <= counts, seen


# --------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("command", ["parse", "summary"])
def test_a_dataset_path_that_is_a_file_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("keep me\n")
    args = ["-o", str(target)] if command == "parse" else ["--dataset", str(target)]
    result = run(command, str(FIXED), *args, "-q")
    assert result.returncode == 2
    assert one_line(result.stderr) == (
        f"tracelens: error: {target} is a file, not a dataset folder: name a folder (new or a dataset)"
    )
    assert target.read_text() == "keep me\n"


def test_a_dataset_of_another_format_is_refused_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert run("parse", str(FIXED), "-o", str(out), "-q").returncode == 0
    manifest = out / ".tracelens" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["version"], data["tracelens"] = 99, "9.0.0"
    manifest.write_text(json.dumps(data))
    before = snapshot(out)
    for args in (
        ["parse", str(FIXED), str(BASELINE), "-o", str(out)],
        ["summary", str(out)],
        ["check", str(FIXED), "--dataset", str(out)],
    ):
        result = run(*args, "-q")
        assert result.returncode == 2, result.stderr
        line = one_line(result.stderr)
        assert line.startswith(f"tracelens: error: {out} was written by tracelens 9.0.0 in dataset format 99")
        assert snapshot(out) == before, args


def _first_task(data: dict) -> dict:
    return data["tasks"][next(iter(data["tasks"]))]


# Damage a manifest could take (a hand edit, another tool, a disk): each is refused by name.
DAMAGED = {
    "a field of the wrong type": (
        lambda data: _first_task(data)["units"][0].__setitem__("start", "zero"),
        ".units[0].start should be an integer, not a string",
    ),
    "a missing field": (
        lambda data: _first_task(data)["sources"][0].pop("first_line"),
        ".sources[0].first_line is missing",
    ),
    "a table's files not a list": (
        lambda data: _first_task(data)["files"].__setitem__(T.LINES, "lines/x.parquet"),
        f"['{T.LINES}'] should be a list, not a string",
    ),
    "inputs not an object": (
        lambda data: data.__setitem__("inputs", []),
        "manifest.inputs should be an object",
    ),
}


@pytest.mark.parametrize("damage", DAMAGED)
def test_a_damaged_manifest_is_one_line_and_exit_2_and_nothing_is_lost(damage: str, tmp_path: Path) -> None:
    change, said = DAMAGED[damage]
    out = tmp_path / "ds"
    assert run("parse", str(FIXED), "-o", str(out), "-q").returncode == 0
    manifest = out / ".tracelens" / "manifest.json"
    data = json.loads(manifest.read_text())
    change(data)
    manifest.write_text(json.dumps(data))
    before = snapshot(out)
    for args in (
        ["parse", str(FIXED), str(BASELINE), "-o", str(out)],
        ["summary", str(out)],
        ["check", str(FIXED), "--dataset", str(out)],
    ):
        result = run(*args, "-q")
        assert result.returncode == 2, result.stderr
        line = one_line(result.stderr)
        assert line.startswith(
            f"tracelens: error: {out}: its manifest (.tracelens/manifest.json) is damaged ("
        )
        assert said in line, line
        assert snapshot(out) == before, args


def test_a_manifest_that_does_not_name_its_writer_still_reads(tmp_path: Path) -> None:
    """Manifests of this format written before the writer's version was recorded (no `tracelens`
    key) are datasets like any other, not damaged ones."""
    out = tmp_path / "ds"
    assert run("parse", str(FIXED), "-o", str(out), "-q").returncode == 0
    manifest = out / ".tracelens" / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["tracelens"]
    manifest.write_text(json.dumps(data))
    result = run("summary", str(out), "-q")
    assert result.returncode == 0, result.stderr
    again = run("parse", str(FIXED), "-o", str(out), "-q")
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("version", [1, 99])
def test_a_damaged_or_foreign_commit_journal_is_one_line_and_exit_2_and_nothing_is_lost(
    version: int, tmp_path: Path
) -> None:
    """A journal is replayed by the next run (a commit stopped half way): one that does not fit, or that
    another dataset format wrote, is refused before any of its moves or deletes."""
    out = tmp_path / "ds"
    assert run("parse", str(FIXED), "-o", str(out), "-q").returncode == 0
    manifest = json.loads((out / ".tracelens" / "manifest.json").read_text())
    files = sorted(files_in_manifest(out))
    if version == 1:  # a delete that is not a path
        journal = {"moves": [], "deletes": [files[0], 7], "manifest": manifest}
        said = "journal.deletes[1] should be a string, not a number"
    else:
        journal = {"moves": [], "deletes": files, "manifest": {**manifest, "version": 99}}
        said = "dataset format 99"
    (out / ".tracelens" / "journal.json").write_text(json.dumps(journal))
    before = snapshot(out)
    for args in (["parse", str(FIXED), "-o", str(out)], ["summary", str(out)]):
        result = run(*args, "-q")
        assert result.returncode == 2, result.stderr
        line = one_line(result.stderr)
        assert line.startswith(
            f"tracelens: error: {out}: its commit journal (.tracelens/journal.json) cannot be used"
        )
        assert said in line, line
        assert snapshot(out) == before, args


def test_a_cache_dataset_with_a_damaged_manifest_is_rebuilt(tmp_path: Path) -> None:
    """The cache behind `summary LOG` can always be rebuilt: a damaged manifest there is not an error."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("TRACELENS_DEBUG", None)

    def summary() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*TRACELENS, "summary", str(FIXED), "--json", "-q"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )

    first = summary()
    assert first.returncode == 0, first.stderr
    (manifest,) = (tmp_path / "cache").rglob("manifest.json")
    data = json.loads(manifest.read_text())
    _first_task(data)["units"][0]["start"] = "zero"
    manifest.write_text(json.dumps(data))
    again = summary()
    assert again.returncode == 0, again.stderr
    assert again.stdout == first.stdout
    assert _first_task(json.loads(manifest.read_text()))["units"][0]["start"] == 0


def test_a_locked_dataset_read_with_no_wait_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    assert run("parse", str(FIXED), "-o", str(out), "-q").returncode == 0
    with writing(out / ".tracelens", str(out), timeout=5):
        result = run("summary", str(out), "--lock-timeout", "0")
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert line.startswith(f"tracelens: error: {out} is locked by pid {os.getpid()} on ")
    assert line.endswith("not waiting (--lock-timeout 0)")


def test_a_dataset_this_user_cannot_write_is_still_read() -> None:
    """Another user's dataset (here: root's, read by `nobody`): read without its lock, which would need
    a write."""
    import shutil
    import tempfile

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to read a dataset as another user")
    prefix = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import tracelens"], capture_output=True, cwd="/")
    if probe.returncode != 0:
        pytest.skip("user nobody cannot read this checkout's virtualenv (a private home folder)")
    folder = Path(tempfile.mkdtemp(prefix="tracelens-ro-"))
    try:
        folder.chmod(0o755)
        out = folder / "ds"
        assert run("parse", str(FIXED), "-o", str(out), "-q").returncode == 0
        for path in [out, *out.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        before = snapshot(out)
        result = subprocess.run(
            [*prefix, *TRACELENS, "summary", "--json", str(out)],
            capture_output=True,
            text=True,
            cwd="/",
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["sources"] == [str(FIXED)]
        assert snapshot(out) == before
    finally:
        shutil.rmtree(folder)


def test_a_command_on_logs_whose_cache_dataset_is_being_written_waits_for_it(tmp_path: Path) -> None:
    from tracelens.engine.cache import dataset_for, resolve_args

    log = tmp_path / "a.log"
    log.write_bytes(FIXED.read_bytes())
    folder = dataset_for(resolve_args([str(log)]), None)
    with writing(folder / ".tracelens", str(folder), timeout=5):
        refused = run("summary", str(log), "-q", "--lock-timeout", "0")
        assert refused.returncode == 2
        assert one_line(refused.stderr).startswith(
            f"tracelens: error: {folder} is locked by pid {os.getpid()}"
        )
        waiting = start("summary", "--json", str(log), "-q")
        first = waiting.stderr.readline()
        assert first.startswith(f"tracelens: waiting up to 600 s for {folder}")
    stdout, stderr = waiting.communicate(timeout=300)
    assert waiting.returncode == 0, stderr
    assert json.loads(stdout)["sources"] == [str(log)]
