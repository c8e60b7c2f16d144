"""The bundled sample logs tell the story our users live, and the parsers read that story back."""

from __future__ import annotations

import datetime as dt
import gzip
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tracelens.engine.ingest import parse_paths
from tracelens.parsers import ParseOptions
from tracelens.tables.frames import Tables
from tracelens.tables.schema import C, T

from conftest import ROOT, SAMPLE_LOGS


@pytest.fixture(scope="module")
def story() -> Tables:
    names = ["baseline_tp8.log", "eagle3_embed_capture.log", "eagle3_fixed.log", "sweep_and_crash.log"]
    return parse_paths([SAMPLE_LOGS / n for n in names])


def of(tables: Tables, table: str, name: str) -> pl.DataFrame:
    return tables[table].filter(pl.col(C.SOURCE).str.ends_with(name))


def decode(tables: Tables, name: str) -> pl.DataFrame:
    return of(tables, T.BATCHES, name).filter(pl.col(C.PHASE) == "decode")


def test_generator_rewrites_every_committed_file_byte_for_byte(tmp_path: Path) -> None:
    """`python -m sample_logs --out DIR`, as the README says, writes exactly the committed logs (the
    .gz copy too: written with mtime 0), so that splitting or editing the generator cannot drift."""
    subprocess.run([sys.executable, "-m", "sample_logs", "--out", str(tmp_path)], cwd=ROOT, check=True)
    written = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in SAMPLE_LOGS.iterdir() if p.name.endswith((".log", ".log.gz")))
    assert written == committed
    differ = [n for n in written if (tmp_path / n).read_bytes() != (SAMPLE_LOGS / n).read_bytes()]
    assert not differ, f"regenerated files differ from the committed ones: {differ}"


def test_baseline_is_tp8_without_speculation_at_about_90_tokens_per_second(story: Tables) -> None:
    (run,) = of(story, T.RUNS, "baseline_tp8.log").filter(pl.col(C.RUN) == 1).iter_rows(named=True)
    assert run[C.TP_SIZE] == 8
    assert run[C.SPEC_ALGORITHM] is None
    assert 85 <= decode(story, "baseline_tp8.log")[C.GEN_THROUGHPUT].mean() <= 95
    loads = of(story, T.LIFECYCLE, "baseline_tp8.log")
    begin = loads.filter(pl.col(C.EVENT) == "weight_load_begin")[C.TS].min()
    end = loads.filter(pl.col(C.EVENT) == "weight_load_end")[C.TS].max()
    assert dt.timedelta(minutes=8) <= end - begin <= dt.timedelta(minutes=13)


def test_embed_capture_run_shows_the_mistake(story: Tables) -> None:
    debug = of(story, T.DEBUG, "eagle3_embed_capture.log")
    embed = debug.filter(pl.col(C.EVENT) == "embed capture")
    assert embed.height > 100
    assert set(embed[C.LAYER_ID]) == {-1}
    assert 10.0 <= embed[C.NORM].mean() <= 11.2
    assert embed[C.SHAPES].to_list()[0] == [[1, 7168]]
    forward = debug.filter(pl.col(C.EVENT) == "forward end")
    assert set(forward[C.NUM_AUX]) == {3}
    assert forward[C.SHAPES].to_list()[0] == [[1, 7168]] * 3
    assert debug.filter(pl.col(C.LAYER_IDS).is_not_null())[C.LAYER_IDS].to_list()[0] == [-1, 2, 30]
    rows = decode(story, "eagle3_embed_capture.log")
    assert 1.6 <= rows[C.ACCEPT_LEN].mean() <= 1.8
    assert 50 <= rows[C.GEN_THROUGHPUT].mean() <= 60


def test_fixed_run_has_no_embed_capture_and_better_acceptance(story: Tables) -> None:
    debug = of(story, T.DEBUG, "eagle3_fixed.log")
    assert debug.filter(pl.col(C.LAYER_ID) == -1).height == 0
    assert debug.filter(pl.col(C.LAYER_IDS).is_not_null())[C.LAYER_IDS].to_list()[0] == [2, 30, 58]
    rows = decode(story, "eagle3_fixed.log")
    assert rows[C.ACCEPT_RATE].mean() == pytest.approx(0.47, abs=0.02)
    assert rows[C.GEN_THROUGHPUT].mean() == pytest.approx(94, abs=3)
    (run,) = of(story, T.RUNS, "eagle3_fixed.log").filter(pl.col(C.RUN) == 1).iter_rows(named=True)
    assert (run[C.SPEC_ALGORITHM], run[C.SPEC_NUM_STEPS], run[C.SPEC_NUM_DRAFT_TOKENS]) == ("EAGLE3", 4, 5)


def test_sweep_has_three_runs_a_cut_debug_line_and_an_eight_rank_crash(story: Tables) -> None:
    runs = of(story, T.RUNS, "sweep_and_crash.log").filter(pl.col(C.RUN) > 0)
    assert runs[C.SPEC_NUM_STEPS].to_list() == [2, 3, 5]
    cut = of(story, T.DEBUG, "sweep_and_crash.log").filter(pl.col(C.TRUNCATED))
    assert cut.filter(pl.col(C.SITE) == "eagle")[C.RUN].to_list() == [2]
    faults = of(story, T.FAULTS, "sweep_and_crash.log")
    crash = faults.filter(pl.col(C.COMPONENT) == "Scheduler")
    assert sorted(crash[C.TP]) == list(range(8))
    assert set(crash[C.EXCEPTION_TYPE]) == {"torch.OutOfMemoryError"}
    assert set(crash[C.FAULT_KIND]) == {"oom"}
    # Interleaved unprefixed frames cannot be told apart by rank: they join the last head, and the
    # group shares its exception type (see faults._share_within_interleaved_group).
    assert max(tb.count("\n") for tb in crash[C.TRACEBACK]) >= 5
    assert faults.filter(pl.col(C.FAULT_KIND) == "sigquit").height == 1


def test_gzip_copy_parses_like_the_plain_file() -> None:
    plain = parse_paths([SAMPLE_LOGS / "eagle3_embed_capture.log"])
    packed = parse_paths([SAMPLE_LOGS / "eagle3_embed_capture.log.gz"])
    with gzip.open(SAMPLE_LOGS / "eagle3_embed_capture.log.gz", "rb") as fh:
        assert fh.read() == (SAMPLE_LOGS / "eagle3_embed_capture.log").read_bytes()
    for table in (T.LINES, T.BATCHES, T.DEBUG, T.FAULTS, T.RUNS):
        assert packed[table].drop(C.SOURCE).equals(plain[table].drop(C.SOURCE)), table


@pytest.mark.parametrize(
    ("name", "check"),
    [
        (
            "era_2024_rank.log",
            lambda t: t[T.BATCHES].filter(pl.col(C.PHASE) == "prefill")[C.NEW_TOKEN].min() > 0,
        ),
        ("era_2024_gpu.log", lambda t: t[T.BATCHES][C.CACHE_HIT_RATE].drop_nulls().max() <= 1),
        ("era_2025_dp_attention.log", lambda t: set(t[T.BATCHES][C.DP].drop_nulls()) == {0, 1, 2, 3}),
        ("era_2026_comma.log", lambda t: t[T.BATCHES][C.FORWARD_ITER].drop_nulls().len() > 0),
        (
            "vllm_spec_decode.log",
            lambda t: set(t[T.SPEC_METRICS][C.LAYOUT]) == {"vllm_v0", "vllm_v1", "vllm_v1_early"},
        ),
        ("wrappers.log", lambda t: t[T.UNPARSED].height == 0),
    ],
)
def test_era_samples_parse(name: str, check) -> None:
    tables = parse_paths([SAMPLE_LOGS / name])
    assert check(tables)


def test_time_only_prefix_crosses_midnight() -> None:
    tables = parse_paths([SAMPLE_LOGS / "era_2024_timeonly.log"], ParseOptions(base_date=dt.date(2024, 9, 2)))
    ts = tables[T.LINES][C.TS].drop_nulls()
    assert ts.min().date() == dt.date(2024, 9, 2)
    assert ts.max().date() == dt.date(2024, 9, 3)
    assert ts.is_sorted() or (ts.diff().drop_nulls() >= dt.timedelta(hours=-1)).all()
