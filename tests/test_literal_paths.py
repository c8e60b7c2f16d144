"""The literal paths of the parsers read what their regex paths read.

`parse_batches(rows, literal=False)` skips the batch parser's literal path (layouts) for its shape
and key paths; `parse_http(rows, literal=False)` reads uvicorn's access lines by the capture pattern.
Every such line of the sample logs, the real corpus and blocks of awkward values must come out the
same both ways.
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from tracelens.parsers.batch import LAYOUT_SAMPLE, _lanes, parse_batches
from tracelens.parsers.batch_lane import read_lanes
from tracelens.parsers.http import parse_http
from tracelens.parsers.pipeline import add_kinds
from tracelens.parsers.prefix import add_prefix_columns
from tracelens.sources.files import lines_of_text
from tracelens.tables.schema import Kind, W

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


# Values around the lanes' edges (batch_lane): 8 and 9 bytes, signs, dots at either end, exponents,
# case, non-ASCII digits, separators glued or doubled, and each key's value in another key's type.
LANE_VALUES = [
    "0", "7", "05", "-0", "-3", "+3", "12345678", "123456789", "9223372036854775808",
    "0.5", "0.00", "-0.0", "12345.67", "1234567.", ".5", "5.", "1.2.3", "1..2", "1e5", "1E5", "12%",
    "nan", "inf", "NaN", "Inf", "-inf", "infinity", "True", "False", "true", "T", "",
    "３", "1 2", "1,2", "1:2", "0x5", "1_0", "99999999", "9999999.9", "0.1234567", "nan\x00", "1\x002",
]  # fmt: skip
PREFILL = (
    "[2026-11-20 09:00:00 TP1] Prefill batch, #new-seq: {s}, #new-token: {n}, #cached-token: {c}, "
    "token usage: {u}, #running-req: {r}, #queue-req: {q}, "
)


def _lane_block(seed: int, lines: int) -> str:
    """A block whose first lines are plain (each phase's lane is learnt from them), then lines with
    one or two awkward values, cut or changed separators, in a seeded random order."""
    rng = random.Random(seed)
    plain_d = {"r": "3", "t": "10", "u": "0.5", "a": "2.0", "g": "True", "x": "1.0"}
    plain_p = {"s": "1", "n": "300", "c": "7", "u": "0.25", "r": "4", "q": "0"}
    out = [DECODE.format(**plain_d), PREFILL.format(**plain_p)] * 8
    for _ in range(lines):
        fmt, plain = (DECODE, plain_d) if rng.random() < 0.7 else (PREFILL, plain_p)
        values = dict(plain)
        for key in rng.sample(sorted(values), rng.choice((0, 1, 1, 2))):
            values[key] = rng.choice(LANE_VALUES)
        line = fmt.format(**values)
        edit = rng.random()
        if edit < 0.05:
            line = line[: rng.randrange(len(line))]  # cut anywhere
        elif edit < 0.10:
            line = line.rstrip(", ") + rng.choice(("", ",", ", , ", " ", ",  "))
        elif edit < 0.15:
            line = line.replace(", ", rng.choice((",", ",  ", ". ", ", , ")), 1 + rng.randrange(3))
        elif edit < 0.18:
            line = line.replace("#token", "#tokeX").replace("#new-seq", "#new-seq2")
        elif edit < 0.21:
            line = line + "new key: 4, "
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("seed", range(6))
def test_lanes_read_awkward_values_as_the_regex_paths_do(seed: int) -> None:
    rows = batch_rows(_lane_block(seed, 400))
    read = assert_paths_agree(rows)
    assert read.height == rows.height
    # The lanes read the plain lines (so this test exercises them), not the awkward ones.
    bodies = rows.get_column("_body")
    taken = read_lanes(bodies, _lanes(rows.select("_body"))).get_column(W.LAYOUT) >= 0
    assert taken.head(16).all()
    assert 0.1 < taken.mean() < 0.9  # type: ignore[operator]


def test_lanes_read_every_short_decimal_as_polars_casts_it() -> None:
    """A lane's float is the digits over a power of ten: the same float64 as polars' cast, for every
    length up to its 8 bytes and every place of the dot."""
    rng = random.Random(11)
    values = ["0.0", "1", "9.99", "0.1", "0.3", "2.675", "1.005", "8.125", "9999999", "0.0000001"]
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 7)))
        dot = rng.randint(0, len(digits))
        values.append(digits if dot in (0, len(digits)) else digits[:dot] + "." + digits[dot:])
    text = "".join(DECODE.format(r="3", t="10", u=v, a="2.0", g="True", x="1.0") + "\n" for v in values)
    read = assert_paths_agree(batch_rows(text))
    assert read.get_column("token_usage").to_list() == pl.Series(values).cast(pl.Float64).to_list()
