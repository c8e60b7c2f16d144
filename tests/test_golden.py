"""Golden files: each small sample log in, its expected tables out (tests/golden/<log>.json).

After an intended change of parser output, regenerate with
    TRACELENS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_golden.py
and review the diff of tests/golden/ like code.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from tracelens.engine.ingest import parse_paths
from tracelens.parsers import ParseOptions
from tracelens.tables.schema import TABLES, C, T

from conftest import SAMPLE_LOGS

GOLDEN = Path(__file__).parent / "golden"
INPUTS = [
    "era_2024_rank.log",
    "era_2024_gpu.log",
    "era_2024_timeonly.log",
    "era_2025_dp_attention.log",
    "era_2026_comma.log",
    "vllm_spec_decode.log",
    "wrappers.log",
]
# Time-only logs need a date; a fixed one keeps the golden independent of the checkout's file times.
BASE_DATE = dt.date(2024, 9, 2)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def snapshot(path: Path) -> dict[str, Any]:
    """Every table, rows without the source column and without null fields, in file order."""
    tables = parse_paths([path], ParseOptions(base_date=BASE_DATE))
    out: dict[str, Any] = {}
    kinds = tables[T.LINES].select(C.LINE_NO, C.KIND, C.RECORD).rows()
    out[T.LINES] = [f"{n} {kind}" + (f" <{rec}" if rec != n else "") for n, kind, rec in kinds]
    for name in TABLES:
        if name == T.LINES:
            continue
        rows = tables[name].drop(C.SOURCE).to_dicts()
        out[name] = [{k: _plain(v) for k, v in row.items() if v is not None and v != []} for row in rows]
    return out


@pytest.mark.parametrize("name", INPUTS)
def test_golden(name: str) -> None:
    golden = GOLDEN / f"{name}.json"
    got = snapshot(SAMPLE_LOGS / name)
    if os.environ.get("TRACELENS_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n")
    assert golden.exists(), f"no golden for {name}: run with TRACELENS_UPDATE_GOLDEN=1"
    want = json.loads(golden.read_text())
    for table in want:
        assert got[table] == want[table], f"{name}: table {table} differs from {golden}"
