"""The `tracelens` command as a user runs it: a real subprocess, real files, real exit codes."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]


def _commands() -> dict[str, list[str]]:
    """Every command the app registers, with the option names each declares (typer's command tree)."""
    import typer

    from tracelens.cli.app import app

    group = typer.main.get_command(app)
    return {
        name: [opt for param in command.params for opt in param.opts if opt.startswith("-")]
        for name, command in group.commands.items()  # type: ignore[attr-defined]
    }


COMMANDS = _commands()


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRACELENS_DEBUG"}
    return subprocess.run([*TRACELENS, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


def test_help_lists_every_command() -> None:
    result = run("--help")
    assert result.returncode == 0
    listed = result.stdout.split("Commands", 1)[1].splitlines()[1:]
    names = [line.strip(" │").split()[0] for line in listed if line.strip(" │╰─")]
    assert sorted(names) == sorted(COMMANDS)
    assert len(COMMANDS) == 11


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_documents_its_options(command: str) -> None:
    result = run(command, "--help")
    assert result.returncode == 0, result.stderr
    usage = result.stdout.lstrip().splitlines()[0]
    assert usage.startswith("Usage: ") and f" {command} [OPTIONS]" in usage, usage
    for option in COMMANDS[command]:
        assert option in result.stdout, (command, option)


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("tracelens ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["summary", "/no/such/log"], "no such file or directory"),
        (["parse", "/no/such/log", "-o", "/tmp/x"], "no such file or directory"),
        (["explain", "nocolon"], "expected PATH:LINE"),
        (["explain"], "give either PATH:LINE or --line TEXT"),
        (
            ["summary", "--date", "yesterday", str(SAMPLE_LOGS / "era_2024_timeonly.log")],
            "--date wants YYYY-MM-DD",
        ),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_directory_without_logs_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("not a log")
    result = run("summary", str(tmp_path))
    assert result.returncode == 2
    assert "no log files" in result.stderr


def test_permission_denied_is_exit_2() -> None:
    """As root (CI) every file is readable, so the command runs as `nobody` through setpriv."""
    folder = Path(tempfile.mkdtemp(prefix="tracelens-perm-"))
    try:
        folder.chmod(0o755)
        path = folder / "secret.log"
        path.write_text("x\n")
        path.chmod(0o600 if os.geteuid() == 0 else 0)
        prefix: list[str] = []
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: cannot make a file unreadable")
            prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
            probe = subprocess.run(
                [*prefix, sys.executable, "-c", "import tracelens"], capture_output=True, cwd="/"
            )
            if probe.returncode != 0:
                pytest.skip("user nobody cannot read this checkout's virtualenv (a private home folder)")
        result = subprocess.run(
            [*prefix, *TRACELENS, "summary", str(path)], capture_output=True, text=True, cwd="/", timeout=120
        )
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == f"tracelens: error: permission denied: {path}"
    finally:
        shutil.rmtree(folder)


def test_unreadable_file_as_root_is_still_reported(tmp_path: Path) -> None:
    # A directory named like a log inside a directory scan is skipped, a FIFO-free way to check that
    # odd entries do not crash the scan.
    (tmp_path / "dir.log").mkdir()
    (tmp_path / "real.log").write_text("[2025-01-01 00:00:00 TP0] Decode batch. #running-req: 1\n")
    result = run("summary", "--json", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["runs"][0]["decode_lines"] == 1


def test_parse_writes_one_folder_of_parquet_parts_per_table(tmp_path: Path) -> None:
    import polars as pl

    from tracelens.tables.schema import TABLES, C, T, polars_schema

    out = tmp_path / "out"
    result = run("parse", str(SAMPLE_LOGS / "eagle3_fixed.log"), "-o", str(out), "-q")
    assert result.returncode == 0, result.stderr
    folders = sorted(p.name for p in out.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert folders == sorted(TABLES)
    assert all(list((out / name).glob("*.parquet")) for name in TABLES)
    # As the README reads a table: every part file holds the whole schema, so a glob needs no options.
    batches = pl.read_parquet(out / T.BATCHES / "*.parquet")
    assert batches.schema == polars_schema(T.BATCHES)
    assert batches.filter(pl.col(C.PHASE) == "decode").height > 100
    assert "lines" in result.stdout and "batches" in result.stdout


# Run the command as `python -m tracelens.cli` does, then name the modules it loaded (on stderr, last line).
LOADED = """
import runpy, sys
sys.argv = ["tracelens", *sys.argv[1:]]
try:
    runpy.run_module("tracelens.cli", run_name="__main__")
finally:
    sys.stderr.write("\\nloaded: " + " ".join(sorted(sys.modules)) + "\\n")
"""
# What `parse` (and `--help`) never need: the analysis, the live session, the views' libraries.
NOT_FOR_PARSE = (
    "tracelens.analysis.result",
    "tracelens.analysis.detectors",
    "tracelens.live.session",
    "tracelens.report",
    "tracelens.tui",
    "textual",
    "plotly",
    "jinja2",
)


def loaded_by(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    result = subprocess.run(
        [sys.executable, "-c", LOADED, *args], capture_output=True, text=True, timeout=120
    )
    last = result.stderr.rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("loaded: "), result.stderr
    return result, set(last.removeprefix("loaded: ").split())


def test_a_second_parse_loads_neither_the_analysis_nor_a_view_library(tmp_path: Path) -> None:
    """The second look at an unchanged dataset costs the process's start-up, mostly imports: `parse`
    imports only what it uses."""
    log, out = str(SAMPLE_LOGS / "eagle3_fixed.log"), str(tmp_path / "out")
    assert run("parse", log, "-o", out, "-q").returncode == 0
    result, modules = loaded_by("parse", log, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    assert "1 unchanged" in result.stdout
    assert not {m for m in modules if m.startswith(NOT_FOR_PARSE)}
    result, modules = loaded_by("--help")
    assert result.returncode == 0, result.stderr
    assert not {m for m in modules if m.startswith(NOT_FOR_PARSE)}


# What a second look never needs: it compares the inputs with the manifest and prints the manifest's row
# counts, so no table library, no parser, nothing that reads logs or plans ranges; and for a local
# folder, no fsspec (typer still loads pydantic, to coerce the option values).
NOT_FOR_A_SECOND_LOOK = (
    "polars",
    "pyarrow",
    "numpy",
    "fsspec",
    "tracelens.parsers",
    "tracelens.engine.ranges",
    "tracelens.engine.task",
    "tracelens.sources.files",
    "tracelens.tables.schema",
)


def inside(modules: set[str], packages: tuple[str, ...]) -> set[str]:
    """The ``modules`` that are one of ``packages`` or inside one (`numpy.linalg`, not `numpydoc`)."""
    return {m for m in modules if m in packages or m.startswith(tuple(f"{p}." for p in packages))}


def test_a_second_look_at_an_unchanged_dataset_loads_no_table_library(tmp_path: Path) -> None:
    """The second look reads the manifest, not a table: it loads no table library, no parser and (for a
    local folder) no fsspec, and prints the same row counts as the parse that wrote them."""
    log, out = str(SAMPLE_LOGS / "eagle3_fixed.log"), str(tmp_path / "out")
    first = run("parse", log, "-o", out, "-q")
    assert first.returncode == 0, first.stderr
    result, modules = loaded_by("parse", log, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    assert "1 unchanged" in result.stdout
    assert not inside(modules, NOT_FOR_A_SECOND_LOOK)
    assert result.stdout.splitlines()[1:] == first.stdout.splitlines()[1:]  # the table of rows per table


# Run the command, and name the modules loaded when the workers hold the last tasks (the engine then
# loads what the commit needs), and whether the commit found them loaded.
LOADED_AT_COMMIT = """
import runpy, sys
from tracelens.engine import engine
load, commit_run = engine.load_table_libraries, engine.commit_run
def loading():
    sys.stderr.write("\\nloaded: " + " ".join(sorted(sys.modules)) + "\\n")
    load()
def committing(*args, **kwargs):
    sys.stderr.write("\\ncommit with polars: " + str("polars" in sys.modules) + "\\n")
    return commit_run(*args, **kwargs)
engine.load_table_libraries, engine.commit_run = loading, committing
sys.argv = ["tracelens", *sys.argv[1:]]
runpy.run_module("tracelens.cli", run_name="__main__")
"""


def test_a_parse_in_byte_ranges_leaves_the_table_library_to_the_workers(tmp_path: Path) -> None:
    """Planning, scanning and parsing a big log all run on the workers: the parent loads no table
    library and no parser until the workers hold the last tasks, so it holds none of their memory while
    they parse, and it has loaded them when it commits. The rows are those of the same log read in one
    piece."""
    log = tmp_path / "big.log"
    log.write_bytes((SAMPLE_LOGS / "eagle3_fixed.log").read_bytes() * 2)
    args = ("parse", str(log), "-q", "-j", "2", "--range-size", "256K")
    result = subprocess.run(
        [sys.executable, "-c", LOADED_AT_COMMIT, *args, "-o", str(tmp_path / "split")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    modules = set(result.stderr.split("loaded: ", 1)[1].split("\n", 1)[0].split())
    assert "tracelens.engine.engine" in modules
    assert not inside(modules, ("polars", "pyarrow", "numpy", "tracelens.parsers", "tracelens.engine.ranges"))
    assert "commit with polars: True" in result.stderr
    whole = run("parse", str(log), "-q", "-j", "1", "-o", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    # `evidence` cites each block's first lines of a run, so its count follows where blocks are cut
    split = [line for line in result.stdout.splitlines()[1:] if "evidence" not in line]
    one_piece = [line for line in whole.stdout.splitlines()[1:] if "evidence" not in line]
    assert split == [line.replace(str(tmp_path / "whole"), str(tmp_path / "split")) for line in one_piece]


def test_summary_json_has_the_documented_layout() -> None:
    result = run("summary", "--json", str(SAMPLE_LOGS / "eagle3_embed_capture.log"))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["version"] == 1
    (run_,) = [r for r in data["runs"] if r["decode_lines"]]
    assert set(run_) >= {
        "source",
        "run",
        "start",
        "end",
        "model",
        "speculative",
        "lines_by_kind",
        "decode_lines",
        "accept_len",
        "gen_throughput",
        "faults",
        "unparsed",
    }
    assert run_["speculative"]["algorithm"] == "EAGLE3"
    assert set(run_["accept_len"]) == {"mean", "median", "p10", "p90"}
    assert 1.6 <= run_["accept_len"]["mean"] <= 1.8


def test_explain_a_file_line_and_a_text_line() -> None:
    log = SAMPLE_LOGS / "eagle3_embed_capture.log"
    number = next(i for i, line in enumerate(log.read_text().splitlines(), 1) if "embed capture" in line)
    result = run("explain", f"{log}:{number}")
    assert result.returncode == 0, result.stderr
    assert "kind   debug" in result.stdout
    assert "layer_id = -1" in result.stdout

    result = run(
        "explain", "--line", "INFO 02-21 21:52:48 __init__.py:190 Automatically detected platform cuda."
    )
    assert result.returncode == 0, result.stderr
    assert "closest kind: foreign (vllm)" in result.stdout
    assert "__init__.py:190⟨stops here⟩" in result.stdout


def test_explain_line_past_the_end_is_exit_2() -> None:
    result = run("explain", f"{SAMPLE_LOGS / 'era_2024_rank.log'}:999999")
    assert result.returncode == 2
    assert "there is no line 999999" in result.stderr


def test_demo_prints_the_sample_story() -> None:
    result = run("demo", "-q")
    assert result.returncode == 0, result.stderr
    for name in ("baseline_tp8.log", "eagle3_embed_capture.log", "eagle3_fixed.log", "sweep_and_crash.log"):
        assert name in result.stdout


def _verdict_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.split(" ", 1)[0] in ("BROKEN", "DEGRADED", "HEALTHY")]


def test_demo_prints_the_verdicts_and_the_command_to_run_next(tmp_path: Path) -> None:
    result = run("demo", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    verdicts = _verdict_lines(result.stdout)
    # the status column, then the label after at least one space (an INCOMPLETE fills the column)
    assert re.match(r"BROKEN +eagle3_embed_capture\.log#1: ", verdicts[0]), verdicts[0]
    assert any(re.match(r"HEALTHY +eagle3_fixed\.log#1: ", line) for line in verdicts), verdicts
    (step,) = [line for line in result.stdout.splitlines() if line.startswith("next: ")]
    command = shlex.split(step.removeprefix("next: "))
    assert command[:2] == ["tracelens", "check"]
    # the command as printed runs, from where the demo ran, and explains the same verdicts
    checked = run(*command[1:], cwd=tmp_path)
    assert checked.returncode == 1, checked.stderr  # errors among the findings: check gates CI
    assert _verdict_lines(checked.stdout) == verdicts
    assert "fix:" in checked.stdout
