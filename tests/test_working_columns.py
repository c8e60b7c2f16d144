"""Working columns (`tracelens/tables/working.py`) stay inside the computations that make them: each has
its own name, the parsers' patterns name theirs from `W`, and no table or analysis frame keeps one."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

import tracelens.parsers
from tracelens.analysis import Analysis, analyze_tables
from tracelens.engine import EngineOptions, parse_to_dataset
from tracelens.engine.ingest import parse_paths
from tracelens.tables.frames import Tables
from tracelens.tables.schema import SCHEMAS, TABLES, W

from conftest import SAMPLE_LOGS

# Logs that between them reach every parser and every analysis step: batches of three eras, debug
# lines, tracebacks and crash groups, wrapped lines, vLLM metrics, time-only prefixes, DP attention.
LOGS = [
    "sweep_and_crash.log",
    "eagle3_embed_capture.log",
    "era_2024_gpu.log",
    "era_2024_rank.log",
    "era_2024_timeonly.log",
    "era_2025_dp_attention.log",
    "era_2026_comma.log",
    "vllm_spec_decode.log",
    "wrappers.log",
]


def working_names() -> list[str]:
    return [value for name, value in vars(W).items() if name.isupper()]


def leaked(frame: pl.DataFrame) -> list[str]:
    return [c for c in frame.columns if c.startswith("_")]


def test_working_names_are_distinct_and_never_a_table_column() -> None:
    names = working_names()
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert all(n.startswith("_") for n in names)
    assert not [c for schema in SCHEMAS.values() for c in schema.names if c.startswith("_")]


def test_every_working_group_of_a_parser_pattern_is_named_in_w() -> None:
    known = set(working_names())
    groups: dict[str, set[str]] = {}
    for info in pkgutil.iter_modules(tracelens.parsers.__path__):
        module = importlib.import_module(f"tracelens.parsers.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, str):
                for group in re.findall(r"\(\?P<(_\w+)>", value):
                    groups.setdefault(group, set()).add(f"{info.name}.{name}")
    assert {"_date", "_time", "_gpu", "_head", "_close"} <= set(groups)  # the scan finds the patterns
    assert {g: sorted(where) for g, where in groups.items() if g not in known} == {}


def frames_of(analysis: Analysis) -> dict[str, pl.DataFrame]:
    return {
        f.name: getattr(analysis, f.name)
        for f in dataclasses.fields(analysis)
        if isinstance(getattr(analysis, f.name), pl.DataFrame)
    }


def test_no_table_part_file_or_analysis_frame_keeps_a_working_column(tmp_path: Path) -> None:
    paths = [SAMPLE_LOGS / name for name in LOGS]
    out = tmp_path / "out"
    parse_to_dataset([str(p) for p in paths], str(out), EngineOptions(jobs=1))
    part_files = sorted(out.rglob("*.parquet"))
    assert len(part_files) >= len(TABLES)
    assert {str(f.relative_to(out)): bad for f in part_files if (bad := leaked_names(f))} == {}

    in_memory = parse_paths(paths)
    assert {name: leaked(in_memory[name]) for name in TABLES if leaked(in_memory[name])} == {}

    for tables in (Tables.read_dataset(out), in_memory):
        analysis = analyze_tables(tables)
        frames = frames_of(analysis)
        assert frames["runs"].height and frames["series"].height and frames["incidents"].height
        assert {name: leaked(frame) for name, frame in frames.items() if leaked(frame)} == {}


def leaked_names(part_file: Path) -> list[str]:
    return [c for c in pq.read_schema(part_file).names if c.startswith("_")]
