"""The batch parser's three paths (literal layouts, shapes, key by key) give the same rows.

`parse_batches(rows, literal=False)` skips the literal path; every batch line of the sample logs, the
real corpus and a block of awkward values must come out the same both ways.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tracelens.parsers.batch import LAYOUT_SAMPLE, parse_batches
from tracelens.parsers.pipeline import add_kinds
from tracelens.parsers.prefix import add_prefix_columns
from tracelens.schema import Kind
from tracelens.sources import lines_of_text

from conftest import SAMPLE_LOGS, real_corpus_files

LOGS = sorted(SAMPLE_LOGS.glob("*.log")) + real_corpus_files()


def batch_rows(text: str) -> pl.DataFrame:
    """The lines of ``text`` the router sends to the batch parser, with their prefix columns."""
    df = add_kinds(add_prefix_columns(lines_of_text(text), None))
    return df.filter(pl.col("kind") == Kind.BATCH).with_columns(pl.lit(0, dtype=pl.Int32).alias("run"))


def assert_paths_agree(rows: pl.DataFrame) -> pl.DataFrame:
    literal, other = parse_batches(rows), parse_batches(rows, literal=False)
    assert literal.equals(other)
    return literal


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_literal_path_reads_every_log_as_the_shape_path_does(path: Path) -> None:
    rows = batch_rows(path.read_text(encoding="utf-8", errors="replace"))
    assert_paths_agree(rows)


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
