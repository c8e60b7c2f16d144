"""The literal paths of the parsers read what their regex paths read.

`parse_batches(rows, literal=False)` skips the batch parser's literal path (layouts) for its shape
and key paths; `parse_http(rows, literal=False)` reads uvicorn's access lines by the capture pattern.
Every such line of the sample logs, the real corpus and blocks of awkward values must come out the
same both ways.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracelens.parsers.batch import LAYOUT_SAMPLE, parse_batches
from tracelens.parsers.http import parse_http
from tracelens.parsers.pipeline import add_kinds
from tracelens.parsers.prefix import add_prefix_columns
from tracelens.sources.files import lines_of_text
from tracelens.tables.schema import Kind

from conftest import SAMPLE_LOGS, real_corpus_files

LOGS = sorted(SAMPLE_LOGS.glob("*.log")) + real_corpus_files()


def routed(text: str, kind: str = Kind.BATCH) -> pl.DataFrame:
    """The lines of ``text`` the router sends to ``kind``'s parser, with their prefix columns."""
    df = add_kinds(add_prefix_columns(lines_of_text(text), None))
    return df.filter(pl.col("kind") == kind).with_columns(pl.lit(0, dtype=pl.Int32).alias("run"))


def batch_rows(text: str) -> pl.DataFrame:
    return routed(text, Kind.BATCH)


def assert_paths_agree(rows: pl.DataFrame) -> pl.DataFrame:
    literal, other = parse_batches(rows), parse_batches(rows, literal=False)
    assert literal.equals(other)
    return literal


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_literal_paths_read_every_log_as_the_regex_paths_do(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    assert_paths_agree(batch_rows(text))
    access = routed(text, Kind.HTTP)
    assert parse_http(access).equals(parse_http(access, literal=False))


def test_access_lines_of_other_shapes_read_the_same() -> None:
    lines = [
        '[2026-11-20 09:00:00] INFO:     10.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
        '[2026-11-20 09:00:00] INFO:     10.0.0.1:5000 - "GET /health HTTP/1.1" 2000',
        '[2026-11-20 09:00:00] INFO:     - "GET /health HTTP/1.1" 200 OK',
        '[2026-11-20 09:00:00] INFO:     10.0.0.1 [20/Nov/2026:09:00:00 +0000] "GET /x HTTP/1.0" 404 12',
        '[2026-11-20 09:00:00] INFO:     10.0.0.1:5000 - "GET /a b HTTP/1.1" 200 OK',
        '[2026-11-20 09:00:00] INFO:     10.0.0.1:5000 - "get /x HTTP/1.1" 200 OK',
    ]
    access = routed("\n".join(lines) + "\n", Kind.HTTP)
    literal = parse_http(access)
    assert literal.equals(parse_http(access, literal=False))
    assert literal.get_column("status").to_list()[:2] == [200, 200]


DECODE = (
    "[2026-11-20 09:00:00 TP0] Decode batch, #running-req: {r}, #token: {t}, token usage: {u}, "
    "accept len: {a}, cuda graph: {g}, gen throughput (token/s): {x}, #queue-req: 0, "
)
ODD = [
    {"r": "5.", "t": "10", "u": "0.5", "a": "2.0", "g": "True", "x": "1.0"},
    {"r": "3", "t": ".5", "u": "0.5", "a": "2.0", "g": "True", "x": "1.0"},
    {"r": "3", "t": "10", "u": "1e5", "a": "2.0", "g": "True", "x": "1.0"},
    {"r": "-3", "t": "10", "u": "12%", "a": "nan", "g": "False", "x": "inf"},
    {"r": "3", "t": "1.2.3", "u": "0.5", "a": "2..0", "g": "true", "x": "1.0"},
    {"r": "12.0", "t": "10", "u": "0.5", "a": "2.0", "g": "True", "x": "-"},
    {"r": "3", "t": "full=5, swa=7", "u": "0.5", "a": "2.0", "g": "True", "x": "1.0"},
    {"r": "3", "t": "10", "u": "0.5", "a": "2.0", "g": "True", "x": "1.0 (x)"},
]


def test_awkward_values_leave_the_literal_path_or_read_the_same() -> None:
    plain = {"r": "3", "t": "10", "u": "0.5", "a": "2.0", "g": "True", "x": "1.0"}
    lines = [DECODE.format(**plain)] * LAYOUT_SAMPLE  # the block's layout
    lines += [DECODE.format(**odd) for odd in ODD]
    lines += [
        DECODE.format(**plain).rstrip(", ") + ",",
        DECODE.format(**plain).replace(", #queue", ". #queue"),
    ]
    lines += [DECODE.format(**plain) + "new key: 4, "]
    read = assert_paths_agree(batch_rows("\n".join(lines) + "\n"))
    assert read.height == len(lines)
    assert read.get_column("running_req")[0] == 3
