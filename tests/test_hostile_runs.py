"""Many server starts cost what their lines cost: a dataset's rows are read per run in one pass (a
scan for the row counts, one per batch of runs), not one scan of the whole table per run, which
made `check` of a log with 18,182 runs run for minutes; short runs' series are made together
(`per_run.GROUP_LINES`), with the figures each gets alone. The rows of every run stay as they were."""

from __future__ import annotations

import datetime as dt
import resource
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tracelens.analysis import per_run
from tracelens.analysis.result import analyze_tables
from tracelens.tables.frames import Tables, collect
from tracelens.tables.names import C, T

from conftest import SAMPLE_LOGS

TRACELENS = [sys.executable, "-m", "tracelens.cli"]
RUNS = 4000


def _many_runs(path: Path, runs: int) -> None:
    at = dt.datetime(2026, 11, 20)
    lines = []
    for i in range(runs):
        stamp = (at + dt.timedelta(seconds=4 * i)).strftime("%Y-%m-%d %H:%M:%S")
        lines += [
            f"[{stamp}] server_args=ServerArgs(model_path='/models/m{i % 3}', tp_size=1, port=30000)",
            f"[{stamp} TP0] Load weight begin. avail mem=78.94 GB",
            f"[{stamp} TP0] Decode batch, #running-req: 1, #token: {i}, token usage: 0.02, "
            "gen throughput (token/s): 91.09, #queue-req: 0, ",
            f"[{stamp} TP0] Decode batch, #running-req: 2, #token: {i + 1}, token usage: 0.02, "
            "gen throughput (token/s): 92.09, #queue-req: 0, ",
        ]
    path.write_text("\n".join(lines) + "\n")


def test_rows_per_run_take_one_pass_and_stay_the_same(tmp_path: Path) -> None:
    log = tmp_path / "starts.log"
    _many_runs(log, RUNS)
    dataset = tmp_path / "ds"
    done = subprocess.run([*TRACELENS, "parse", "-q", str(log), "-o", str(dataset)], capture_output=True)
    assert done.returncode == 0, done.stderr
    tables = Tables.read_dataset(dataset)
    keys = [(s, r) for s, r in tables[T.RUNS].select(C.SOURCE, C.RUN).iter_rows()]
    assert len(keys) == RUNS
    columns = [C.SOURCE, C.RUN, C.LINE_NO, C.TS]
    started = time.perf_counter()
    collect(tables.scan(T.BATCHES).select(columns))
    one_scan = time.perf_counter() - started
    started = time.perf_counter()
    by_run = list(tables.per_run(T.BATCHES, keys, columns, pl.col(C.LINE_NO) % 4 == 0))
    per_run = time.perf_counter() - started
    # one scan per run took about 1 ms each (4 s here); one pass is a few scans' worth
    assert per_run < 1.0 + 20 * one_scan, f"{per_run:.2f} s for {RUNS} runs, a scan {one_scan:.3f} s"
    whole = tables[T.BATCHES].filter(pl.col(C.LINE_NO) % 4 == 0).select(columns)
    for (source, run), rows in by_run:
        expected = whole.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
        assert rows.equals(expected), (source, run)
    in_memory = Tables({T.BATCHES: tables[T.BATCHES]})
    for (key, rows), (same, again) in zip(
        by_run, in_memory.per_run(T.BATCHES, keys, columns, pl.col(C.LINE_NO) % 4 == 0), strict=True
    ):
        assert key == same and rows.equals(again)


def _one_long_run(path: Path, size: int) -> None:
    """One server start and decode lines up to ``size`` bytes: the same bytes as many runs, one run."""
    at = dt.datetime(2026, 11, 20)
    lines = [
        "[2026-11-20 00:00:00] server_args=ServerArgs(model_path='/models/m0', tp_size=1, port=30000)",
        "[2026-11-20 00:00:00 TP0] Load weight begin. avail mem=78.94 GB",
    ]
    held, i = 0, 0
    while held < size:
        stamp = (at + dt.timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(
            f"[{stamp} TP0] Decode batch, #running-req: {1 + i % 3}, #token: {i}, token usage: 0.02, "
            f"gen throughput (token/s): {91 + i % 7}.09, #queue-req: 0, "
        )
        held += len(lines[-1]) + 1
        i += 1
    path.write_text("\n".join(lines) + "\n")


def _check_cpu_seconds(log: Path) -> float:
    """CPU seconds (user and system, the command and its workers) of `check --no-cache` on ``log``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([*TRACELENS, "check", "--no-cache", str(log)], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_check_of_2400_short_runs_costs_what_its_lines_cost(tmp_path: Path) -> None:
    many, one = tmp_path / "starts.log", tmp_path / "one.log"
    _many_runs(many, 2400)
    _one_long_run(one, many.stat().st_size)
    cost_many, cost_one = _check_cpu_seconds(many), _check_cpu_seconds(one)
    # issue 35's bound: within 5x of one run of the same bytes (was 10-20 CPU-s against 0.7)
    assert cost_many < 5 * cost_one, f"2,400 runs {cost_many:.2f} CPU-s, one run {cost_one:.2f} CPU-s"


def test_check_of_20000_day_roll_overs_costs_what_its_lines_cost(tmp_path: Path) -> None:
    # a time-only log whose clock goes past midnight 20,000 times: each day's gap is a stall, and each
    # stall was judged by five filters of the run's tables (36 s for 65,000 roll-overs)
    line = "[{} TP0] Decode batch, #running-req: 4, #token: 900, token usage: 0.01, gen throughput (token/s): 400.0"
    rolls, flat = tmp_path / "rolls.log", tmp_path / "flat.log"
    rolls.write_text("".join(f"{line.format('23:59:59')}\n{line.format('00:00:01')}\n" for _ in range(20000)))
    flat.write_text("".join(f"{line.format('23:59:59')}\n{line.format('23:59:59')}\n" for _ in range(20000)))
    cost_rolls, cost_flat = _check_cpu_seconds(rolls), _check_cpu_seconds(flat)
    assert cost_rolls < 3 * cost_flat, f"20,000 roll-overs {cost_rolls:.2f} CPU-s, none {cost_flat:.2f} CPU-s"


@pytest.fixture()
def series_made(monkeypatch: pytest.MonkeyPatch):
    """Every `RunSeries` the analysis makes, kept."""
    made: list[per_run.RunSeries] = []
    real = per_run.series_by_run

    def keep(*args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(per_run, "series_by_run", keep)
    return made


def test_short_runs_made_together_get_the_figures_they_get_alone(
    tmp_path: Path, series_made: list[per_run.RunSeries], monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "starts.log"
    _many_runs(log, 300)
    usual = per_run.ALONE_LINES
    for i, logs in enumerate(([log], sorted(SAMPLE_LOGS.iterdir()))):
        dataset = tmp_path / f"ds{i}"
        command = [*TRACELENS, "parse", "-q", *map(str, logs), "-o", str(dataset)]
        assert subprocess.run(command, capture_output=True).returncode == 0
        tables = Tables.read_dataset(dataset)
        together = analyze_tables(tables)
        monkeypatch.setattr(per_run, "ALONE_LINES", -1)  # every run alone, as before groups
        alone = analyze_tables(Tables.read_dataset(dataset))
        monkeypatch.setattr(per_run, "ALONE_LINES", usual)
        assert len(series_made) == 2 * (i + 1)
        grouped, single = series_made[-2:]
        assert grouped.series.equals(single.series)
        for name in ("rounds", "steady_means", "rate_stats", "definitions", "changes", "distributions"):
            # the means of a run's floats may differ in their last bit from one polars call to the next
            assert_frame_equal(getattr(grouped, name), getattr(single, name))
        assert [(f.code, f.label, f.message) for f in together.findings] == [
            (f.code, f.label, f.message) for f in alone.findings
        ]
        assert [(v.label, v.status, v.headline) for v in together.verdicts] == [
            (v.label, v.status, v.headline) for v in alone.verdicts
        ]
