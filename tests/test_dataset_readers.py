"""A dataset written by `tracelens parse -o` is plain Arrow: polars, pyarrow and DuckDB open each table's
part files with the obvious call and no options, and get the table's documented columns and types and
every row, `lines` with its rank columns and `record` as the in-memory parse has them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.dataset as pads
import pytest

from tracelens.engine import EngineOptions, parse_to_dataset
from tracelens.engine.ingest import parse_paths
from tracelens.parsers import ParseOptions
from tracelens.tables.schema import RANK_COLUMNS, SCHEMAS, TABLES, C, T, polars_schema

from conftest import SAMPLE_LOGS

BASE_DATE = dt.date(2026, 11, 20)
# Logs of several shapes: TP ranks, DP ranks, tracebacks (continuation lines: `record` != `line_no`),
# vLLM lines, wrappers. Small ranges make several tasks, so each table has several part files and most
# parts lack most columns (a batch field another SGLang version prints, a rank this log never has).
LOGS = [
    SAMPLE_LOGS / n for n in ("sweep_and_crash.log", "wrappers.log", "eagle3_fixed.log", "baseline_tp8.log")
]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("readers") / "ds"
    options = EngineOptions(jobs=1, range_bytes=64 << 10, base_date=BASE_DATE)
    report = parse_to_dataset([str(p) for p in LOGS], str(out), options)
    assert not report.problems and report.rows[T.LINES] > 1000
    assert len(list((out / T.LINES).glob("*.parquet"))) > 2
    return out


@pytest.fixture(scope="module")
def in_memory() -> dict[str, pl.DataFrame]:
    tables = parse_paths(LOGS, ParseOptions(base_date=BASE_DATE))
    return {t: tables[t] for t in TABLES}


@pytest.mark.parametrize("table", TABLES)
def test_polars_reads_a_tables_glob_with_no_options(dataset: Path, table: str) -> None:
    for pattern in ("*.parquet", "**/*.parquet"):
        frame = pl.read_parquet(dataset / table / pattern)
        assert frame.schema == polars_schema(table), (table, pattern)
    assert pl.scan_parquet(dataset / table / "*.parquet").collect().schema == polars_schema(table)


@pytest.mark.parametrize("table", TABLES)
def test_pyarrow_dataset_reads_a_table_with_no_options(dataset: Path, table: str) -> None:
    opened = pads.dataset(dataset / table, format="parquet")
    assert opened.schema.names == SCHEMAS[table].names
    frame = pl.read_parquet(dataset / table / "*.parquet")
    assert opened.count_rows() == frame.height
    # every part file has the same schema: pyarrow takes the first file's as the dataset's
    first = pads.dataset(sorted((dataset / table).glob("*.parquet"))[0], format="parquet").schema
    assert all(pads.dataset(p, format="parquet").schema.equals(first) for p in (dataset / table).glob("*"))


@pytest.mark.parametrize("table", TABLES)
def test_duckdb_reads_a_tables_glob_with_no_options(dataset: Path, table: str) -> None:
    with duckdb.connect() as db:
        query = db.sql(f"select * from '{dataset / table}/*.parquet'")
        assert query.columns == SCHEMAS[table].names
        (rows,) = db.execute(f"select count(*) from '{dataset / table}/*.parquet'").fetchone() or (None,)
    assert rows == pl.read_parquet(dataset / table / "*.parquet").height


def test_every_reader_gets_the_tables_of_an_in_memory_parse(
    dataset: Path, in_memory: dict[str, pl.DataFrame]
) -> None:
    """The rows themselves: `lines` keeps its ranks and `record` as parsed; the other tables equal too
    (sorted: a dataset keeps no global row order)."""
    for table in (T.LINES, T.BATCHES, T.MESSAGES, T.LIFECYCLE):
        keys = [C.SOURCE, C.LINE_NO]
        want = in_memory[table].sort(keys)
        by_polars = pl.read_parquet(dataset / table / "*.parquet").sort(keys)
        by_pyarrow = pl.from_arrow(pads.dataset(dataset / table, format="parquet").to_table())
        with duckdb.connect() as db:
            by_duckdb = db.sql(f"select * from '{dataset / table}/*.parquet'").pl()
        assert isinstance(by_pyarrow, pl.DataFrame)
        assert by_polars.equals(want), table
        assert by_pyarrow.sort(keys).equals(want), table
        assert by_duckdb.height == want.height
        assert by_duckdb.select(keys).sort(keys).equals(want.select(keys)), table
    lines = in_memory[T.LINES]
    # the logs hold what the lean layout used to drop: ranks on lines, continuation lines
    assert lines.filter(pl.col(C.TP).is_not_null()).height > 100
    assert lines.filter(pl.col(C.RECORD) != pl.col(C.LINE_NO)).height > 0
    with duckdb.connect() as db:
        ranked = db.execute(
            f"select count(*) from '{dataset}/lines/*.parquet' where tp is not null"
        ).fetchone()
        continued = db.execute(
            f"select count(*) from '{dataset}/lines/*.parquet' where record <> line_no"
        ).fetchone()
    assert ranked == (lines.filter(pl.col(C.TP).is_not_null()).height,)
    assert continued == (lines.filter(pl.col(C.RECORD) != pl.col(C.LINE_NO)).height,)
    assert set(RANK_COLUMNS) <= set(pl.read_parquet_schema(next((dataset / T.LINES).glob("*.parquet"))))
