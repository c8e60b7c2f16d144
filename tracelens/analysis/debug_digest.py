"""Each run's debug lines as a few rows: what the hidden-state detectors read of them, in memory bounded
by a piece of the run, whatever its length.

An EAGLE-3 server prints a handful of debug lines per decode step for weeks, and they repeat: the same
site, event, aux count, shapes and layer id, with another norm. The detectors ask of them which values
occur, how many lines show each, where each first and last occurs and its first few lines (a finding
cites `FIRST_LINES`), and of the finite norms their sum, count and range. So a run's debug lines become
one row per distinct `DIGEST_KEY` with those figures (`RunDebug.groups`, in the order of their first
lines), made a piece of the run at a time and merged: exact, whatever the run's length.

A norm outlier is judged against its site's median and median absolute deviation over the whole run:
- a run of at most `PIECE_ROWS` debug lines is read whole, and both are exact;
- a longer run keeps its finite, non-zero norms as `sketch.ValueCounts` per (site, event, layer id):
  exact while a site has at most `sketch.DISTINCT_LIMIT` distinct norms, else within 5e-5 of the value.
  Its lines are then read a second time, a piece at a time, for the outliers' count and first lines.
The same holds for the median norm of the embedding captures.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import polars as pl

from tracelens.analysis.capture import is_embed
from tracelens.analysis.findings import MAX_EVIDENCE
from tracelens.analysis.runs import RUN_KEY
from tracelens.analysis.sketch import ValueCounts
from tracelens.tables.frames import Tables, collect
from tracelens.tables.schema import A, C, T, W, empty

# Debug lines read at a time; a run with no more is read whole. A piece of 200,000 lines (strings: tag,
# site, shapes) was the peak of a whole analysis of one 1 GiB run (346 MiB resident, 267 at 50,000, for
# 7% more CPU: bench/RESULTS.md, "The live session").
PIECE_ROWS = 50_000
FIRST_LINES = MAX_EVIDENCE  # line numbers kept per row of the digest: as many as a finding cites
NORM_OUTLIER_Z = 8.0  # robust standard deviations from the site's median
NORM_OUTLIER_MIN = 20  # norms a site needs before one is called an outlier
DIGEST_KEY = (C.TAG, C.SITE, C.EVENT, C.NUM_AUX, C.NUM_ITEMS, C.SHAPES, C.LAYER_ID, W.BAD_NORM)
NORM_GROUP = (C.SITE, C.EVENT, C.LAYER_ID)
READ = (
    *RUN_KEY,
    C.LINE_NO,
    C.TS,
    C.TAG,
    C.SITE,
    C.EVENT,
    C.NUM_AUX,
    C.NUM_ITEMS,
    C.SHAPES,
    C.LAYER_ID,
    C.NORM,
)
NORM_READ = (*RUN_KEY, C.LINE_NO, C.TS, *NORM_GROUP, C.NORM)
GOOD_NORM = pl.col(C.NORM).is_finite() & (pl.col(C.NORM) != 0)
# NaN, infinite or zero: a broken capture, kept in the key so each such value keeps its lines
BAD_NORM = pl.when(~pl.col(C.NORM).is_finite() | (pl.col(C.NORM) == 0)).then(pl.col(C.NORM))
_FINITE = pl.col(C.NORM).filter(pl.col(C.NORM).is_finite())


@dataclass(frozen=True)
class Outliers:
    """A run's norm outliers: how many, the first one, and the first lines."""

    count: int
    ts: dt.datetime | None
    site: str | None
    event: str | None
    norm: float
    lines: list[int]


@dataclass(frozen=True)
class RunDebug:
    """One run's debug lines as the detectors read them."""

    groups: pl.DataFrame  # one row per distinct `DIGEST_KEY`: `W.N` lines, first/last line and time, ...
    embed_norm: float | None  # the median norm of the embedding captures
    outliers: Outliers | None


@functools.cache
def empty_digest() -> pl.DataFrame:
    """The digest of no debug lines."""
    return _digest(empty(T.DEBUG).select(READ))


@functools.cache
def _no_debug() -> RunDebug:
    return RunDebug(empty_digest(), None, None)


def first_lines(groups: pl.DataFrame) -> list[int]:
    """The first `FIRST_LINES` line numbers of the lines the rows of ``groups`` stand for."""
    return sorted(groups.get_column(W.LINES).explode().drop_nulls().to_list())[:FIRST_LINES]


def digests(tables: Tables, keys: Iterable[tuple[str, int]]) -> Iterator[tuple[tuple[str, int], RunDebug]]:
    """(key, `RunDebug`) of each run of ``keys``, in that order: runs of at most `PIECE_ROWS` debug
    lines read and digested together, up to about `PIECE_ROWS` lines at a time (a log of thousands of
    short runs costs what its lines cost), a longer run a piece at a time."""
    wanted = list(keys)
    scan = tables.scan(T.DEBUG)
    extent = {
        (str(s), int(r)): (int(n), int(lo), int(hi))
        for s, r, n, lo, hi in collect(
            scan.group_by(RUN_KEY).agg(
                pl.len(),
                pl.col(C.LINE_NO).min().alias(W.FIRST_SEEN),
                pl.col(C.LINE_NO).max().alias(W.LAST_SEEN),
            )
        ).iter_rows()
    }
    short = [k for k in wanted if extent.get(k, (0, 0, 0))[0] <= PIECE_ROWS]
    whole = set(short)
    made: dict[tuple[str, int], RunDebug] = {}
    batch: list[pl.DataFrame] = []
    held = 0
    read = tables.per_run(T.DEBUG, short, READ)
    for key in wanted:
        if key in whole and key not in made:
            # read ahead to the end of a batch: every short run in it is digested at once
            for found, rows in read:
                batch.append(rows)
                held += rows.height
                made[found] = _no_debug()  # a run without debug lines has no rows in the batch
                if key in made and held >= PIECE_ROWS:
                    break
            made.update(_whole(pl.concat(batch)))
            batch, held = [], 0
        yield key, made.pop(key) if key in whole else _long(tables, key, *extent[key])


def _whole(rows: pl.DataFrame) -> dict[tuple[str, int], RunDebug]:
    """The `RunDebug` of every run of ``rows``, each run's rows whole."""
    rows = rows.sort(*RUN_KEY, C.LINE_NO, maintain_order=True)
    norms = rows.filter(GOOD_NORM).select(NORM_READ)
    stats = norms.group_by(*RUN_KEY, *NORM_GROUP).agg(
        pl.col(C.NORM).median().alias(W.MEDIAN),
        (pl.col(C.NORM) - pl.col(C.NORM).median()).abs().median().alias(W.MAD),
        pl.len().alias(W.N),
    )
    embed = rows.filter(is_embed()).group_by(RUN_KEY).agg(pl.col(C.NORM).drop_nulls().median())
    medians = {(s, r): _float(m) for s, r, m in embed.iter_rows()}
    far = _outliers([norms], stats)
    return {
        (str(s), int(r)): RunDebug(groups, medians.get((s, r)), far.get((s, r)))
        for (s, r), groups in _digest(rows).partition_by(*RUN_KEY, as_dict=True, maintain_order=True).items()
    }


def _long(tables: Tables, key: tuple[str, int], count: int, first: int, last: int) -> RunDebug:
    groups: pl.DataFrame | None = None
    sites: dict[tuple[object, ...], ValueCounts] = {}
    embeds = ValueCounts()
    for piece in _pieces(tables, key, count, first, last, READ):
        part = _digest(piece)
        groups = part if groups is None else _merge(groups, part)
        for site, norms in piece.filter(GOOD_NORM).group_by(NORM_GROUP):
            sites.setdefault(site, ValueCounts()).add(norms.get_column(C.NORM))
        embeds.add(piece.filter(is_embed()).get_column(C.NORM))
    stats = pl.DataFrame(
        [(*key, *site, *_median_and_mad(counts)) for site, counts in sites.items()],
        schema={
            C.SOURCE: pl.String,
            C.RUN: pl.Int32,
            C.SITE: pl.String,
            C.EVENT: pl.String,
            C.LAYER_ID: pl.Int64,
            W.MEDIAN: pl.Float64,
            W.MAD: pl.Float64,
            W.N: pl.UInt32,
        },
        orient="row",
    )
    again = (p.filter(GOOD_NORM) for p in _pieces(tables, key, count, first, last, NORM_READ))
    assert groups is not None  # a long run has debug lines
    return RunDebug(groups, embeds.quantile(0.5), _outliers(again, stats).get(key))


def _median_and_mad(counts: ValueCounts) -> tuple[float | None, float | None, int]:
    median = counts.quantile(0.5)
    if median is None:
        return None, None, 0
    return median, counts.deviations(median).quantile(0.5), counts.total()


def _pieces(
    tables: Tables, key: tuple[str, int], count: int, first: int, last: int, columns: tuple[str, ...]
) -> Iterator[pl.DataFrame]:
    """The run's debug lines (``columns``) in order, in ranges of line numbers of about `PIECE_ROWS`
    lines each (if they are spread evenly over the run's lines: a dataset reads only those row groups)."""
    source, run = key
    scan = tables.scan(T.DEBUG).filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
    pieces = max(1, math.ceil(count / PIECE_ROWS))
    span = last - first + 1
    bounds = [first + span * i // pieces for i in range(pieces)] + [last + 1]
    for lo, hi in itertools.pairwise(bounds):
        rows = scan.filter((pl.col(C.LINE_NO) >= lo) & (pl.col(C.LINE_NO) < hi)).select(columns)
        yield rows.collect().sort(C.LINE_NO, maintain_order=True)


def _digest(rows: pl.DataFrame) -> pl.DataFrame:
    """One row per run and distinct `DIGEST_KEY` of ``rows`` (in line order), in the order of first lines."""
    return (
        rows.with_columns(BAD_NORM.alias(W.BAD_NORM))
        .group_by(*RUN_KEY, *DIGEST_KEY, maintain_order=True)
        .agg(
            pl.len().alias(W.N),
            pl.col(C.LINE_NO).first().alias(W.FIRST_SEEN),
            pl.col(C.TS).first().alias(W.FIRST_SEEN_TS),
            pl.col(C.LINE_NO).last().alias(W.LAST_SEEN),
            pl.col(C.TS).last().alias(W.LAST_SEEN_TS),
            pl.col(C.TS).min().alias(W.TS_MIN),
            pl.col(C.TS).max().alias(W.TS_MAX),
            pl.col(C.LINE_NO).head(FIRST_LINES).alias(W.LINES),
            _FINITE.sum().alias(W.FINITE_SUM),
            _FINITE.count().alias(W.FINITE_N),
            _FINITE.min().alias(A.NORM_MIN),
            _FINITE.max().alias(A.NORM_MAX),
        )
    )


def _merge(before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """The digest of two consecutive pieces of a run from theirs (``before``'s lines come first)."""
    return (
        pl.concat([before, after])
        .group_by(*RUN_KEY, *DIGEST_KEY, maintain_order=True)
        .agg(
            pl.col(W.N).sum(),
            pl.col(W.FIRST_SEEN).first(),
            pl.col(W.FIRST_SEEN_TS).first(),
            pl.col(W.LAST_SEEN).last(),
            pl.col(W.LAST_SEEN_TS).last(),
            pl.col(W.TS_MIN).min(),
            pl.col(W.TS_MAX).max(),
            pl.col(W.LINES).explode().head(FIRST_LINES),
            pl.col(W.FINITE_SUM).sum(),
            pl.col(W.FINITE_N).sum(),
            pl.col(A.NORM_MIN).min(),
            pl.col(A.NORM_MAX).max(),
        )
    )


def _outliers(pieces: Iterable[pl.DataFrame], stats: pl.DataFrame) -> dict[tuple[str, int], Outliers]:
    """Per run, the norms of ``pieces`` (finite, non-zero, each run's in line order) far from their
    site's median: ``stats`` holds each site's median, median absolute deviation and count over the
    whole run."""
    usual = stats.filter(pl.col(W.N) >= NORM_OUTLIER_MIN).select(*RUN_KEY, *NORM_GROUP, W.MEDIAN, W.MAD)
    if not usual.height:
        return {}
    median, mad = pl.col(W.MEDIAN), pl.col(W.MAD)
    z = (pl.col(C.NORM) - median).abs() / (1.4826 * mad + 1e-9 * median.abs() + 1e-12)
    heads, counts = [], []
    on = [*RUN_KEY, *NORM_GROUP]
    for piece in pieces:
        far = piece.join(usual, on=on, how="inner", maintain_order="left", nulls_equal=True).filter(
            z > NORM_OUTLIER_Z
        )
        heads.append(far.group_by(RUN_KEY, maintain_order=True).head(FIRST_LINES).select(NORM_READ))
        counts.append(far.group_by(RUN_KEY).len())
    found = (
        pl.concat(heads)
        .group_by(RUN_KEY, maintain_order=True)
        .agg(
            pl.col(C.TS).first(),
            pl.col(C.SITE).first(),
            pl.col(C.EVENT).first(),
            pl.col(C.NORM).first(),
            pl.col(C.LINE_NO).head(FIRST_LINES),
        )
    )
    total = {
        (s, r): n for s, r, n in pl.concat(counts).group_by(RUN_KEY).agg(pl.col("len").sum()).iter_rows()
    }
    return {
        (str(s), int(r)): Outliers(int(total[(s, r)]), ts, site, event, norm, lines)
        for s, r, ts, site, event, norm, lines in found.iter_rows()
    }


def _float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
