"""`sglang.bench_serving` result blocks pasted into a server log: every line of a block is a row of
`benchmarks`, the block's figures are read by `analysis.benchmarks`, and `compare` and the report show
them beside the server-side figures of the run they were pasted into."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl

from tracelens import analyze
from tracelens.analysis.benchmarks import benchmarks_beside_runs
from tracelens.engine import EngineOptions, parse_to_dataset
from tracelens.engine.ingest import parse_paths
from tracelens.report import write_report
from tracelens.tables.schema import A, C, T

from conftest import SAMPLE_LOGS

RAW = """\
============ Serving Benchmark Result ============
Backend:                                 sglang
Traffic request rate:                    inf
Max request concurrency:                 16
Successful requests:                     200
Benchmark duration (s):                  61.27
Total input tokens:                      64520
Total generated tokens:                  51200
Total generated tokens (retokenized):    51176
Request throughput (req/s):              3.26
Input token throughput (tok/s):          1053.04
Output token throughput (tok/s):         835.64
Total token throughput (tok/s):          1888.68
Concurrency:                             15.87
Accept length:                           2.83
----------------End-to-End Latency----------------
Mean E2E Latency (ms):                   4862.21
Median E2E Latency (ms):                 4790.12
---------------Time to First Token----------------
Mean TTFT (ms):                          112.40
Median TTFT (ms):                        98.77
P99 TTFT (ms):                           402.91
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          18.62
Median TPOT (ms):                        18.40
P99 TPOT (ms):                           25.10
---------------Inter-token Latency----------------
Mean ITL (ms):                           18.59
Median ITL (ms):                         12.31
P95 ITL (ms):                            41.00
P99 ITL (ms):                            60.20
Max ITL (ms):                            310.55
==================================================
"""
# bench_serving pads each value to a column: the trailing spaces are part of the real lines
BLOCK = "".join(f"{line}    \n" if ":" in line else f"{line}\n" for line in RAW.splitlines())


def _log(tmp_path: Path) -> Path:
    log = tmp_path / "eagle3_with_bench.log"
    log.write_bytes((SAMPLE_LOGS / "eagle3_fixed.log").read_bytes() + b"\n" + BLOCK.encode())
    return log


def test_every_line_of_a_block_is_a_row_and_nothing_is_lost(tmp_path: Path) -> None:
    tables = parse_paths([_log(tmp_path)])
    rows = tables[T.BENCHMARKS]
    assert rows.height == BLOCK.count("\n")
    assert rows.get_column(C.BENCH_ITEM).value_counts().sort(C.BENCH_ITEM).rows() == [
        ("footer", 1),
        ("header", 1),
        ("metric", 27),
        ("section", 4),
    ]
    assert tables[T.UNPARSED].filter(pl.col(C.TEXT).str.contains("ms)", literal=True)).height == 0


def test_block_figures_sit_beside_the_runs_server_side_figures(tmp_path: Path) -> None:
    analysis = analyze([_log(tmp_path)])
    (row,) = benchmarks_beside_runs(analysis.runs, analysis.tables).iter_rows(named=True)
    assert row[A.LABEL] == "eagle3_with_bench.log#1"
    assert row[A.BENCH_BACKEND] == "sglang"
    assert (row[A.BENCH_REQUESTS], row[A.BENCH_ACCEPT_LENGTH], row[A.BENCH_OUTPUT_THROUGHPUT]) == (
        200,
        2.83,
        835.64,
    )
    assert (row[A.BENCH_MEAN_TTFT_MS], row[A.BENCH_MEAN_TPOT_MS], row[A.BENCH_MEAN_ITL_MS]) == (
        112.4,
        18.62,
        18.59,
    )
    server = analysis.runs.filter(pl.col(A.LABEL) == row[A.LABEL]).row(0, named=True)
    assert row[A.MEAN_ACCEPT_LEN] == server[A.MEAN_ACCEPT_LEN] is not None


def test_compare_and_report_show_the_block(tmp_path: Path) -> None:
    log = _log(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "tracelens.cli", "compare", str(log), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "client-side benchmarks (sglang.bench_serving)" in result.stdout
    line = next(
        t for t in result.stdout.splitlines() if t.startswith("│ eagle3_with_bench.log#1") and "835.6" in t
    )
    assert "2.83" in line and "112.4" in line
    written = write_report(analyze([log]), tmp_path / "r.html")
    page = written.path.read_text()
    section = page[page.index('<section id="benchmarks">') :]
    assert "2.83" in section[: section.index("</section>")]
    nav = page[page.index('<nav class="toc">') :]
    assert '<a href="#benchmarks">Benchmarks</a>' in nav[: nav.index("</nav>")]


def test_batch_engine_writes_the_same_rows(tmp_path: Path) -> None:
    log = _log(tmp_path)
    parse_to_dataset([str(log)], str(tmp_path / "out"), EngineOptions(jobs=1))
    engine = pl.read_parquet(tmp_path / "out" / T.BENCHMARKS / "*.parquet").sort(C.LINE_NO)
    memory = parse_paths([log])[T.BENCHMARKS]
    assert engine.drop(C.TS).equals(memory.drop(C.TS))
