"""Debug lines read by template (their `norm=` value cut out, each template read once, the value put
back) come out as the reference read of each whole body: `parse_debug(rows, templates=False)`.

On every debug line of the sample logs and the real corpus, on the awkward cases by name, and on blocks of
generated lines that place `norm=` wherever it can go (before the header, in the site, in a list or a
torch.Size, after `x` or `.`, twice, cut off, beside a NUL, with values a float cast reads or not).
"""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracelens.parsers import debug
from tracelens.parsers.debug import parse_debug
from tracelens.parsers.pipeline import add_kinds
from tracelens.parsers.prefix import add_prefix_columns
from tracelens.sources.files import lines_of_text
from tracelens.tables.schema import COMMON_COLUMNS, C, Kind, T, W, polars_schema

from conftest import SAMPLE_LOGS, real_corpus_files

LOGS = sorted(SAMPLE_LOGS.glob("*.log")) + real_corpus_files()


def routed(text: str) -> pl.DataFrame:
    """The lines of ``text`` the router sends to the debug parser, with their prefix columns."""
    df = add_kinds(add_prefix_columns(lines_of_text(text), None))
    return df.filter(pl.col(C.KIND) == Kind.DEBUG).with_columns(pl.lit(0, dtype=pl.Int32).alias(C.RUN))


def bodies(lines: list[str]) -> pl.DataFrame:
    """Rows as the pipeline hands them to `parse_debug`, one per body, whatever the router would do."""
    schema = polars_schema(T.DEBUG)
    common = {name: pl.Series(name, [None] * len(lines), schema[name]) for name in COMMON_COLUMNS}
    common[C.SOURCE] = pl.Series(C.SOURCE, ["x"] * len(lines), pl.String)
    common[C.LINE_NO] = pl.Series(C.LINE_NO, range(1, len(lines) + 1), pl.Int64)
    return pl.DataFrame([*common.values(), pl.Series(W.BODY, lines, pl.String)])


def assert_read_alike(rows: pl.DataFrame) -> pl.DataFrame:
    """Both reads agree, with the templates unknown (read in this block) and known (from the memo)."""
    reference = parse_debug(rows, templates=False)
    debug._MEMO.known = None
    cold = parse_debug(rows)
    warm = parse_debug(rows)
    assert cold.equals(reference), _first_difference(cold, reference)
    assert warm.equals(reference), _first_difference(warm, reference)
    return cold


def _first_difference(got: pl.DataFrame, want: pl.DataFrame) -> str:
    if got.height != want.height:
        return f"{got.height} rows, the reference {want.height}"
    for name in want.columns:
        for i, (a, b) in enumerate(
            zip(got.get_column(name).to_list(), want.get_column(name).to_list(), strict=True)
        ):
            if a != b and not (
                isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
            ):
                return f"row {i} {name}: {a!r}, the reference {b!r}"
    return "equal values, different types or nulls"


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_every_debug_line_of_the_logs_reads_as_its_whole_body(path: Path) -> None:
    assert_read_alike(routed(path.read_text(encoding="utf-8", errors="replace")))


AWKWARD = [
    "EAGLE3_DEBUG[dsv2] aux capture: layer_id=30 shape=torch.Size([1, 7168]) norm=40.9112",
    "EAGLE3_DEBUG[llama_eagle3] input hidden: shape=torch.Size([1, 21504]) norm=44.42",
    "EAGLE3_DEBUG[dsv2] aux capture: layer_id=30 shape=torch.Size([1, 7168]) norm=nan",
    "EAGLE3_DEBUG[dsv2] aux capture: layer_id=30 norm=1e-05, shape=torch.Size([1, 7168])",
    "EAGLE3_DEBUG[dsv2] aux capture: norm=-3",
    "EAGLE3_DEBUG[dsv2] aux capture: layer_id=30 shape=torch.Size([1, 7168]) norm=",
    "EAGLE3_DEBUG[dsv2] aux capture: norm=1.5 norm=2.5",
    "EAGLE3_DEBUG[dsv2] two: xnorm=7 norm=2.5",
    "EAGLE3_DEBUG[dsv2] dotted: a.norm=7 norm=2.5",
    "EAGLE3_DEBUG[dsv2] in a list: norms=[norm=1.5, 2] norm=3",
    "EAGLE3_DEBUG[dsv2] in a size: shape=torch.Size([norm=1, 7168]) b=1",
    "EAGLE3_DEBUG[dsv2] cut: shapes=[torch.Size([1, 7168]), norm=4.5",
    "EAGLE3_DEBUG[dsv2] unit: norm=4.5%",
    "EAGLE3_DEBUG[dsv2] bracket: norm=4.5]",
    "EAGLE3_DEBUG[dsv2] accent: norm=4.5é",
    "EAGLE3_DEBUG[dsv2] nul: norm=4.5 z=\x00",
    "EAGLE3_DEBUG[dsv2] tab: norm=4.5\tk=1",
    "EAGLE3_DEBUG[norm=5,x] site: norm=6",
    "norm=5 EAGLE3_DEBUG[dsv2] before: norm=6",
    "EAGLE3_DEBUG[dsv2]norm=5",
    "EAGLE3_DEBUG[dsv2 norm=5",
    "EAGLE3_DEBUG[dsv2] tag in the value: norm=X_DEBUG[y] z=1",
    "EAGLE3_DEBUG[dsv2] norm=7: an event after it",
    "EAGLE3_DEBUG[dsv2] aux capture: layer_id=30 shape=torch.Size([1, 71",
    "EAGLE3_DEBUG[dsv2] too big: layer_id=99999999999999999999 num_aux=3 norm=1.5",
    "no header: norm=5",
]


def test_the_awkward_cases_read_as_their_whole_body() -> None:
    lines = AWKWARD + [AWKWARD[0].replace("40.9112", f"{i}.{i}") for i in range(50)]
    read = assert_read_alike(bodies(lines))
    assert read.height == len(lines) - 1  # the line without a header is dropped by both
    norms = read.get_column(C.NORM).to_list()
    assert norms[0] == 40.9112 and math.isnan(norms[2]) and norms[3] == 1e-05 and norms[4] == -3
    assert norms[5] is None and norms[6] == 1.5 and norms[12] is None  # `norm=` cut off, twice, `4.5%`
    assert {"key": "norm", "value": "40.9112"} in read.get_column(C.ITEMS)[0].to_list()
    # an integer past int64 is null where it stands, not the end of the parse
    big = read.row(24, named=True)
    assert (big[C.LAYER_ID], big[C.NUM_AUX], big[C.NORM]) == (None, 3, 1.5)
    # the 50 lines that differ by their value only are one template, read once
    known = debug._MEMO.known
    assert known is not None and known.height < len(set(lines)) - 40


HEADS = [
    "EAGLE3_DEBUG[dsv2] ",
    "EAGLE3_DEBUG[logits] ",
    "X_DEBUG[",
    "EAGLE3_DEBUG[norm=5,a] ",
    "A_DEBUG[s]",
    "",
]
PRE = ["", "", "norm=1 ", "x: ", "[2026-11-20 09:00:00 TP0] "]
EVENTS = ["aux capture: ", "input hidden: ", "forward end: ", "", "norm=2: ", "a b "]
KEYS = ["norm", "norm", "norm", "xnorm", "a.norm", "layer_id", "num_aux", "layer_ids", "shape", "NORM", "é"]
VALUES = [
    "40.9112",
    "nan",
    "1e-05",
    "-3",
    "+.5",
    "inf",
    "1_0",
    "",
    "7]",
    "7)",
    "7:",
    "7=",
    "7é",
    "\x00",
    "4\x00",
    "X_DEBUG[y]",
    "[1, 2, 30]",
    "[norm=4, 5]",
    "torch.Size([1, 7168])",
    "torch.Size([norm=1, 2])",
    "[torch.Size([1, 2]), norm=3",
    "(1",
]
SEPARATORS = [" ", ", ", ",", "\t", "", "  "]


@st.composite
def debug_line(draw: st.DrawFn) -> str:
    items = draw(
        st.lists(
            st.tuples(st.sampled_from(KEYS), st.sampled_from(VALUES), st.sampled_from(SEPARATORS)),
            max_size=4,
        )
    )
    line = draw(st.sampled_from(PRE)) + draw(st.sampled_from(HEADS)) + draw(st.sampled_from(EVENTS))
    line += "".join(f"{key}={value}{sep}" for key, value, sep in items)
    cut = draw(st.integers(0, len(line)))
    return line[:cut] if draw(st.booleans()) else line


@settings(max_examples=200, deadline=None)
@given(st.lists(debug_line(), min_size=1, max_size=12), st.lists(st.floats(allow_nan=True), max_size=6))
def test_generated_debug_lines_read_as_their_whole_body(lines: list[str], norms: list[float]) -> None:
    # lines that differ by their `norm=` value only share a template: the value must come back per line
    lines = lines + [f"EAGLE3_DEBUG[dsv2] aux capture: layer_id=3 norm={value} shape=[1]" for value in norms]
    assert_read_alike(bodies(lines))


def test_a_block_of_counting_lines_reads_as_its_whole_bodies_and_is_not_remembered() -> None:
    # every line a template of its own: the block is read by body, and the memo does not fill with them
    lines = [f"EAGLE3_DEBUG[dsv2] step: step={i} norm={i}.5 shape=torch.Size([1, {i}])" for i in range(300)]
    debug._MEMO.known = None
    parse_debug(bodies(AWKWARD[:2] * 10))  # two templates known
    read = parse_debug(bodies(lines + AWKWARD[:2]))
    assert read.equals(parse_debug(bodies(lines + AWKWARD[:2]), templates=False))
    assert read.get_column(C.NORM).to_list()[:2] == [0.5, 1.5]
    known = debug._MEMO.known
    assert known is not None and known.height == 2
