"""Each foreign format's literal tests (`starts`, `contains`) are implied by its pattern: every line the
pattern matches passes them, so skipping a format whose tests no line passes changes no table."""

from __future__ import annotations

import gzip

import polars as pl
import pytest

from tracelens.parsers.foreign import FOREIGN_FORMATS, ForeignFormat, formats_of, may_match_expr
from tracelens.parsers.kinds import SAMPLES
from tracelens.tables.first_match import first_match
from tracelens.tables.schema import Kind, W

from conftest import SAMPLE_LOGS, real_corpus_files

# Lines of the formats that have no sample in `kinds.SAMPLES`, and other spellings of those that have.
EXTRA = (
    "/usr/lib/python3/dist-packages/torch/cuda/__init__.py:61: UserWarning: pynvml is deprecated",
    "/opt/x/y.py:12: FutureWarning: `foo` is deprecated",
    "/w/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0] Assertion `idx < n` failed.",
    "WARNING 11-20 09:39:00 [scheduler.py:88] Prefill is slow for this batch",
    "DEBUG 01-02 03:04:05.678 metrics.py:9] x",
    "I0528 06:32:54.247906 735017 tcp_transport.cpp:136] ok",
    "W208 00:25:40.123456 socket.cpp:752] [c10d] retry",
    "[E208 00:25:40.123456 12 socket.cpp:752] [c10d] failed",
    "2025-02-21 21:53:17,414 - CRITICAL - boom",
    "2025-04-16 10:00:00,123 WARNING worker.py:1 -- lost",
    "node1:1:2 [0] NCCL WARN Call to connect returned",
    "Capturing batches (bs=8 avail_mem=12.3 GB):  50%|█████     | 2/4 [00:01<00:01,  1.20it/s]",
    " 10%|█         | 1/10 [00:05<00:45,  5.00s/it]",
    "Loading safetensors checkpoint shards: 100% Completed | 163/163 [02:30<00:00,  1.09it/s]",
)


def _sample_lines() -> list[str]:
    return [s.line for s in SAMPLES[Kind.FOREIGN]] + list(EXTRA)


def _log_lines() -> list[str]:
    lines: list[str] = []
    for path in sorted(SAMPLE_LOGS.glob("*.log*")) + real_corpus_files():
        raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        lines += raw.decode("utf-8", "replace").replace("\r", "\n").split("\n")
    return lines


def _tested(lines: list[str], fmt: ForeignFormat) -> pl.DataFrame:
    return pl.DataFrame({W.CLEAN: lines}).select(
        pl.col(W.CLEAN),
        pl.col(W.CLEAN).str.contains(fmt.pattern).alias("matches"),
        may_match_expr(fmt).alias("may"),
    )


@pytest.mark.parametrize("fmt", FOREIGN_FORMATS, ids=lambda f: f.name)
def test_every_format_has_a_matching_sample_that_passes_its_tests(fmt: ForeignFormat) -> None:
    tested = _tested(_sample_lines(), fmt).filter("matches")
    assert tested.height, f"no sample line of {fmt.name}"
    assert tested.get_column("may").all(), tested.filter(~pl.col("may")).get_column(W.CLEAN).to_list()


@pytest.mark.parametrize("fmt", FOREIGN_FORMATS, ids=lambda f: f.name)
def test_no_log_line_matches_a_format_without_passing_its_tests(fmt: ForeignFormat) -> None:
    wrong = _tested(_log_lines() + _sample_lines(), fmt).filter(pl.col("matches") & ~pl.col("may"))
    assert wrong.is_empty(), wrong.get_column(W.CLEAN).to_list()


def test_formats_of_is_the_first_matching_pattern() -> None:
    lines = _log_lines() + _sample_lines()
    chain = first_match(
        (pl.col(W.CLEAN).str.contains(fmt.pattern), pl.lit(fmt.name)) for fmt in FOREIGN_FORMATS
    )
    want = pl.DataFrame({W.CLEAN: lines}).select(chain).to_series()
    got = formats_of(pl.Series(W.CLEAN, lines))
    assert got.cast(pl.String).fill_null("-").to_list() == want.cast(pl.String).fill_null("-").to_list()
