"""A run too long to hold is made in pieces (`analysis.long_run`): every figure equals the whole run's.

The sample logs and the real corpus are analysed twice, once whole and once with every run read in
pieces of a few dozen decode lines (so that cuts fall inside DP rounds, inside rolling windows and
between a run's warm-up and steady rounds), and every frame the analysis keeps of the series is
compared: the steady means and statistics, the logged rate's definition, the change points, the round
counts, the throughput a speedup compares, the distribution and pairs the report draws.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tracelens import analyze
from tracelens.analysis import long_run, per_run, sketch, startup
from tracelens.analysis.runs import RUN_KEY, with_run_labels
from tracelens.tables.schema import A, C, T

from conftest import SAMPLE_LOGS


def _series(paths: list[Path], monkeypatch: pytest.MonkeyPatch, piece: int | None) -> per_run.RunSeries:
    tables = analyze(paths).tables
    runs = with_run_labels(tables[T.RUNS], {})
    keys = set(runs.select(RUN_KEY).iter_rows())
    if piece is not None:
        monkeypatch.setattr(long_run, "LONG_RUN", 0)
        monkeypatch.setattr(long_run, "PIECE_LINES", piece)
    made = per_run.series_by_run(
        tables, runs, startup.ready_times(tables[T.LIFECYCLE]), keys, per_run.decode_rounds(tables)
    )
    monkeypatch.undo()
    return made


def _same(a: pl.DataFrame, b: pl.DataFrame) -> None:
    order = [c for c in (*RUN_KEY, A.METRIC, C.LINE_NO) if c in a.columns]
    assert_frame_equal(a.sort(order), b.sort(order), check_exact=False, rel_tol=1e-9, abs_tol=1e-12)


def _compare(paths: list[Path], monkeypatch: pytest.MonkeyPatch, piece: int) -> None:
    whole = _series(paths, monkeypatch, None)
    pieces = _series(paths, monkeypatch, piece)
    for name in ("steady_means", "rate_stats", "definitions", "changes", "rounds"):
        _same(getattr(whole, name), getattr(pieces, name))
    assert whole.speed_groups.keys() == pieces.speed_groups.keys()
    for key, groups in whole.speed_groups.items():
        assert groups.keys() == pieces.speed_groups[key].keys(), key
        for size, values in groups.items():
            assert sorted(values) == sorted(pieces.speed_groups[key][size]), (key, size)
    for (source, run), part in whole.series.group_by(RUN_KEY):
        distribution, pairs = per_run.plot_samples(part)
        mine = (pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run)
        assert distribution.get_column(C.ACCEPT_LEN).to_list() == (
            pieces.distributions.filter(mine).get_column(C.ACCEPT_LEN).to_list()
        )
        _same(pairs, pieces.batch_pairs.filter(mine))
    # the rows the plots draw are rows of the whole series, every value (rolling ones included) equal
    on = [*RUN_KEY, C.LINE_NO]
    assert pieces.series.join(whole.series, on=on, how="anti").height == 0
    _same(pieces.series, whole.series.join(pieces.series.select(on), on=on).select(pieces.series.columns))


@pytest.mark.parametrize("piece", [7])
def test_sample_runs_in_pieces_equal_the_whole_runs(monkeypatch: pytest.MonkeyPatch, piece: int) -> None:
    # era_2025_dp_attention.log has attention-DP rounds that the cuts split
    _compare(sorted(SAMPLE_LOGS.glob("*.log")), monkeypatch, piece)


def test_real_runs_in_pieces_equal_the_whole_runs(monkeypatch: pytest.MonkeyPatch, real_corpus: Path) -> None:
    logs = [p for p in sorted(real_corpus.glob("*.log")) if p.stat().st_size < 1_000_000]
    _compare(logs, monkeypatch, 300)


def test_counted_quantiles_are_polars_quantiles() -> None:
    rng = np.random.default_rng(1)
    values = pl.Series(np.round(rng.uniform(1, 4, 5001), 2))  # two decimals, many ties
    counts = sketch.ValueCounts()
    for start in range(0, values.len(), 999):
        counts.add(values.slice(start, 999))
    for q in (0.0, 0.1, 0.5, 0.9, 1.0):
        assert counts.quantile(q) == pytest.approx(values.quantile(q, "linear"), rel=1e-12)
    assert counts.mean() == pytest.approx(values.mean(), rel=1e-12)
    ranks = np.linspace(0, values.len() - 1, 800).round().astype(np.int64)
    assert counts.ranks_sample(800).tolist() == values.sort().to_numpy()[ranks].tolist()


def test_too_many_distinct_values_are_rounded_within_the_stated_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sketch, "DISTINCT_LIMIT", 100)
    values = pl.Series(np.random.default_rng(2).uniform(10, 5000, 20_000))
    counts = sketch.ValueCounts()
    counts.add(values)
    assert counts.rounded and counts.counts.height < values.len()
    for q in (0.1, 0.5, 0.9):
        assert counts.quantile(q) == pytest.approx(values.quantile(q, "linear"), rel=5e-5)


def test_blocks_average_consecutive_values_and_keep_each_blocks_first_row() -> None:
    rows = pl.DataFrame({"v": [1.0, 3.0, None, 5.0, 7.0, 9.0], "ts": list(range(6)), "line": list(range(6))})
    blocks = sketch.Blocks(2)
    blocks.add(rows.head(3), "v", "ts", "line")
    blocks.add(rows.tail(3), "v", "ts", "line")
    means, starts = blocks.finish("v")
    assert means.tolist() == [2.0, 6.0, 9.0]
    assert starts.get_column("line").to_list() == [0, 3, 5]
