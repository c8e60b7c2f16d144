"""vLLM lines carry `MM-DD HH:MM:SS` without a year: their time is read with the year of --date (the
first line's date) or of the file's modification time (at or after the last line), rolled over at New
Year; each vLLM server start begins a run, in memory and in the batch engine alike."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import polars as pl

from tracelens.engine import EngineOptions, parse_to_dataset
from tracelens.engine.ingest import parse_paths
from tracelens.parsers import ParseOptions
from tracelens.tables.schema import C, T

from conftest import SAMPLE_LOGS

NEW_YEAR = """\
(APIServer pid=7) INFO 12-31 23:59:40 [api_server.py:1885] vLLM API server version 0.11.0
(APIServer pid=7) INFO 12-31 23:59:50 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.51, Accepted throughput: 40.1 tokens/s, Drafted throughput: 80.0 tokens/s, Accepted: 401 tokens, Drafted: 800 tokens, Per-position acceptance rate: 0.700, 0.500, Avg Draft acceptance rate: 50.1%
(APIServer pid=7) INFO 01-01 00:00:00 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.49, Accepted throughput: 39.9 tokens/s, Drafted throughput: 80.0 tokens/s, Accepted: 399 tokens, Drafted: 800 tokens, Per-position acceptance rate: 0.690, 0.500, Avg Draft acceptance rate: 49.9%
(APIServer pid=9) INFO 01-01 00:10:00 [api_server.py:1885] vLLM API server version 0.11.0
(APIServer pid=9) INFO 01-01 00:10:10 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: 2.60, Accepted throughput: 42.0 tokens/s, Drafted throughput: 80.0 tokens/s, Accepted: 420 tokens, Drafted: 800 tokens, Per-position acceptance rate: 0.720, 0.520, Avg Draft acceptance rate: 52.5%
"""
EXPECTED = [
    (2, dt.datetime(2025, 12, 31, 23, 59, 50), 1),
    (3, dt.datetime(2026, 1, 1, 0, 0, 0), 1),
    (5, dt.datetime(2026, 1, 1, 0, 10, 10), 2),
]


def _rows(tables) -> list[tuple]:
    return tables[T.SPEC_METRICS].select(C.LINE_NO, C.TS, C.RUN).rows()


def test_year_from_date_of_the_first_line_rolls_over(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(NEW_YEAR)
    assert _rows(parse_paths([log], ParseOptions(base_date=dt.date(2025, 12, 31)))) == EXPECTED


def test_year_from_the_file_time_rolls_back(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(NEW_YEAR)
    stamp = dt.datetime(2026, 1, 2, 8, 0).timestamp()
    os.utime(log, (stamp, stamp))
    assert _rows(parse_paths([log])) == EXPECTED


def test_server_starts_split_runs_and_runs_have_times(tmp_path: Path) -> None:
    tables = parse_paths([SAMPLE_LOGS / "vllm_spec_decode.log"], ParseOptions(base_date=dt.date(2025, 2, 3)))
    assert tables[T.SPEC_METRICS].get_column(C.TS).null_count() == 0
    runs = tables[T.RUNS].select(C.RUN, C.START_LINE, C.START_TS).rows()
    assert runs == [
        (1, 1, dt.datetime(2025, 2, 3, 23, 1, 50)),
        (2, 14, dt.datetime(2025, 4, 2, 18, 3, 1)),
        (3, 31, dt.datetime(2025, 6, 18, 7, 41, 12)),
        (4, 48, dt.datetime(2025, 10, 14, 9, 30, 2)),
    ]


def test_batch_engine_reads_the_same_times_and_runs(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(NEW_YEAR * 3)
    options = EngineOptions(jobs=1, base_date=dt.date(2025, 12, 31))
    parse_to_dataset([str(log)], str(tmp_path / "out"), options)
    engine = pl.read_parquet(tmp_path / "out" / T.SPEC_METRICS / "*.parquet").sort(C.LINE_NO)
    memory = parse_paths([log], ParseOptions(base_date=dt.date(2025, 12, 31)))[T.SPEC_METRICS]
    assert engine.select(C.LINE_NO, C.TS, C.RUN).rows() == memory.select(C.LINE_NO, C.TS, C.RUN).rows()
    assert engine.get_column(C.RUN).unique().to_list() == [1, 2, 3, 4, 5, 6]


def test_vllm_style_lines_in_an_sglang_log_take_the_year_of_the_dated_lines(tmp_path: Path) -> None:
    # SGLang 2024 printed some lines through vLLM's logger (`INFO 12-07 02:43:34 file.py:N]`): they take
    # the year of SGLang's own dated lines around them, not the file's, which was copied years later
    # (read with the file's year they were a year away, a year-long "startup stall").
    log = tmp_path / "sglang.log"
    log.write_text(
        "[2024-12-07 02:43:33 TP0] Init torch distributed begin.\n"
        "INFO 12-07 02:43:34 pynccl_wrapper.py:188] Found nccl from library librccl.so.1\n"
        "[2024-12-07 02:54:35 TP0] Load weight begin.\n"
        "INFO 01-02 00:00:01 custom_all_reduce.py:260] Registering 0 cuda graph addresses\n"
    )
    stamp = dt.datetime(2026, 11, 30, 8, 0).timestamp()
    os.utime(log, (stamp, stamp))
    lines = parse_paths([log])[T.LINES].sort(C.LINE_NO)
    assert lines.get_column(C.TS).to_list() == [
        dt.datetime(2024, 12, 7, 2, 43, 33),
        dt.datetime(2024, 12, 7, 2, 43, 34),
        dt.datetime(2024, 12, 7, 2, 54, 35),
        dt.datetime(2025, 1, 2, 0, 0, 1),  # past New Year: the next year
    ]
