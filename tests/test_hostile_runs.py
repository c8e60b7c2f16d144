"""Many server starts cost what their lines cost: a dataset's rows are read per run in one pass (a
scan for the row counts, one per batch of runs), not one scan of the whole table per run, which
made `check` of a log with 18,182 runs run for minutes. The rows of every run stay as they were."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

from tracelens.tables.frames import Tables, collect
from tracelens.tables.names import C, T

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
