"""Per-run figures of a live session kept over the whole run, updated from new rows only.

An update analyses each source's newest lines (`window.LiveTables`), so the means of a run longer than
the window would be the window's. What the live status shows of a run (steady-state accept len,
acceptance rate and tok/s, the speedup over its baseline and the baseline's means, the capture per
debug site, the embedding-capture state) is made instead from sums kept per run as rows arrive, the
way the batch analysis defines each figure:

- decode rounds as `acceptance.decode_series` combines them: the k-th decode line of every DP rank is
  round k (accept len the ranks' mean, tok/s and running requests their sums, time the latest); a
  round is folded into the sums once every rank has printed it, and rounds some rank has not printed
  yet wait (a handful: ranks print together), as the batch series leaves out rounds after the last
  complete one;
- warm-up cut as `acceptance.is_warm`: by the run's ready line when it has one, else the first
  `WARMUP_LINES` rounds; a run without steady rounds is averaged over all of them (`steady_rows`);
- sums and counts per batch size (the run's steady tok/s per batch size is what a speedup compares,
  `compare.weighted_ratio`; a run sees a few dozen sizes), so the means and the speedup's point are
  those of the whole run, equal to `tracelens check` up to float rounding;
- the last `ROLLING_WINDOW` complete rounds, so the newest accept len and tok/s and their rolling
  medians are the batch series' last ones (the window's own DP rounds are numbered from where the
  window starts, which pairs ranks a round apart when a cut falls inside a round);
- per debug site: line count, last num_aux, num_items and shapes, sum, count, min and max of finite
  norms, bad norms (`capture.sites`); per run its debug line count and whether one captured the
  embedding (`capture.embed_states`).

What cannot be kept exactly in bounded memory stays the window's: medians and percentiles of the
steady state (`summary` prints them; the live view shows none), change points, the plots' series, the
speedup's bootstrap interval. A run whose rounds cannot be combined exactly from sums (a DP rank that
starts after the run's first `SETTLE_LINES` decode lines, one that stops printing for `PENDING_LIMIT`
rounds, a ready line parsed after rounds it would have made steady) keeps the window's figures, and
says so (`RunStatus.window_figures`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import polars as pl

from tracelens.analysis import Analysis
from tracelens.analysis.acceptance import ROLLING_WINDOW, SERIES_LINES, after_idle, is_warm, rolling_medians
from tracelens.analysis.capture import (
    SITE_KEY,
    bad_norms,
    embed_states,
    finite_norms,
    is_embed,
    last_printed,
)
from tracelens.analysis.compare import pick_baselines, weighted_ratio
from tracelens.analysis.runs import RUN_KEY
from tracelens.analysis.startup import ready_times
from tracelens.live.status import EMBED_WORDS, Level, RunStatus, Snapshot, site_statuses
from tracelens.tables.frames import Tables
from tracelens.tables.names import VLLM_V0_METRICS
from tracelens.tables.schema import A, C, T, W

RunKey = tuple[str, int]  # source label, run
SETTLE_LINES = 1_000  # a run's decode lines before any round is folded (its DP ranks have all printed)
PENDING_LIMIT = 10_000  # rounds waiting for a rank: beyond this the run's running figures are given up
# Figures of a run partly outside the window that a live status can only give of the window.
WINDOW_ALWAYS = ("series",)
WINDOW_MEANS = ("mean_accept_len", "mean_acceptance_rate", "mean_gen_throughput", "speedup")
_PARTIAL = (W.LEN_SUM, W.LEN_N, W.TPUT_SUM, W.TPUT_N, W.REQ_SUM, W.REQ_N, W.N, W.AFTER_IDLE)
_SUMS = (  # of a group of rounds, in the order of `_Sums.by_size`'s values
    pl.col(C.ACCEPT_LEN).sum().alias(W.LEN_SUM),
    pl.col(C.ACCEPT_LEN).count().alias(W.LEN_N),
    pl.col(C.GEN_THROUGHPUT).sum().alias(W.TPUT_SUM),
    pl.col(C.GEN_THROUGHPUT).count().alias(W.TPUT_N),
    pl.len().alias(W.N),
)


@dataclass
class _Sums:
    """Decode rounds of one kind (all, steady), per batch size: [accept-len sum, count, tok/s sum,
    count, rounds]."""

    by_size: dict[Any, list[float]] = field(default_factory=dict)

    def add(self, rounds: pl.DataFrame) -> None:
        for size, *values in rounds.group_by(A.BATCH_SIZE).agg(*_SUMS).iter_rows():
            self.put(size, values)

    def put(self, size: Any, values: list[Any]) -> None:
        held = self.by_size.setdefault(size, [0.0, 0, 0.0, 0, 0])
        for i, value in enumerate(values):
            held[i] += value

    def plus(self, rounds: pl.DataFrame) -> _Sums:
        out = _Sums({size: list(values) for size, values in self.by_size.items()})
        if rounds.height:
            out.add(rounds)
        return out

    @property
    def rounds(self) -> int:
        return int(sum(v[4] for v in self.by_size.values()))

    def means(self) -> tuple[float | None, float | None]:
        """(mean accept len, mean tok/s) over these rounds, nulls left out."""
        length = sum(v[0] for v in self.by_size.values()), sum(v[1] for v in self.by_size.values())
        tput = sum(v[2] for v in self.by_size.values()), sum(v[3] for v in self.by_size.values())
        return (length[0] / length[1] if length[1] else None, tput[0] / tput[1] if tput[1] else None)

    def tput_by_size(self) -> dict[int, tuple[float, int]]:
        """Batch size -> (mean tok/s, rounds with a tok/s), as `compare._groups` groups steady rows."""
        return {int(s): (v[2] / v[3], int(v[3])) for s, v in self.by_size.items() if s is not None and v[3]}


@dataclass
class _RunDecode:
    """One run's decode rounds, combined and folded as they complete."""

    counters: dict[int, int] = field(default_factory=dict)  # per DP rank (-1: none), its lines so far
    pending: pl.DataFrame | None = None  # partial sums of rounds some rank has not printed yet
    settled: int = 0  # rounds folded (0 .. settled-1)
    ready: dt.datetime | None = None
    early_last: dt.datetime | None = None  # the latest round folded before the ready time was known
    all: _Sums = field(default_factory=_Sums)
    idle: pl.DataFrame | None = None  # which DP ranks were idle after their last decode line
    early_steady: _Sums = field(default_factory=_Sums)  # steady by index, folded before ready was known
    steady: _Sums = field(default_factory=_Sums)  # steady by the ready time, folded after it was known
    broken: str | None = None  # why the sums cannot give the batch figures (the window's are shown)
    tail: pl.DataFrame | None = None  # the last `ROLLING_WINDOW` rounds folded: the newest values
    # an ended run's figures and newest values, once its frames are dropped (`close`)
    final: tuple[tuple[_Sums, _Sums], dict[str, float | None]] | None = None

    def close(self) -> None:
        """The run has ended (a later start of its source): its figures are final. They are kept (an
        ended run can be another's baseline) and the frames they came from are dropped: a session of
        many short runs would otherwise hold two frames per run it ever saw."""
        if self.final is None:
            self.final = (self.figures(), self.newest())
            self.pending = self.tail = None

    def rounds(self) -> int:
        """Decode rounds as `per_run.decode_rounds` counts them: the longest rank's lines with DP
        ranks, else every line."""
        if not self.counters:
            return 0
        return self.counters.get(-1, 0) if set(self.counters) == {-1} else max(self.counters.values())

    def set_ready(self, ready: dt.datetime) -> None:
        if self.ready is not None and ready >= self.ready:
            return
        if self.ready is not None and self.settled:
            self.broken = "an earlier ready line was parsed after rounds were judged"
        elif self.early_last is not None and not _warm_at(self.early_last, ready):
            self.broken = "the ready line was parsed after rounds it makes steady"
        self.ready = ready

    def add(self, rows: pl.DataFrame) -> None:
        """New decode lines and idle lines (`acceptance.SERIES_LINES`) of the run (in line order)."""
        if self.final is not None:  # a line of an ended run parsed late: its figures are not kept
            self.broken = self.broken or "lines of the run were parsed after it ended"
            return
        rows, self.idle = after_idle(rows, self.idle)
        if not rows.height:
            return
        if (
            not self.broken
            and self.settled
            and set(self.counters) == {-1}
            and rows.get_column(C.DP).is_null().all()
        ):
            # no DP ranks, and the run's first lines are folded: each line is a round of its own, complete
            start = self.counters[-1]
            self.counters[-1] = self.settled = start + rows.height
            self._fold_rounds(
                rows.select(
                    pl.int_range(start, start + rows.height, dtype=pl.Int64).alias(W.ROUND),
                    C.TS,
                    C.ACCEPT_LEN,
                    pl.when(~pl.col(W.AFTER_IDLE)).then(pl.col(C.GEN_THROUGHPUT)).alias(C.GEN_THROUGHPUT),
                    pl.col(C.RUNNING_REQ).alias(A.BATCH_SIZE),
                )
            )
            return
        rows = rows.with_columns(pl.col(C.DP).fill_null(-1).cast(pl.Int64).alias(W.DP_KEY))
        counts = dict(rows.group_by(W.DP_KEY).len().iter_rows())
        if self.settled and not set(counts) <= set(self.counters):
            self.broken = "a DP rank began printing after the run's first rounds"
        known = list(self.counters)
        offset = pl.col(W.DP_KEY).replace_strict(
            known, [self.counters[k] for k in known], default=0, return_dtype=pl.Int64
        )
        for key, count in counts.items():
            self.counters[key] = self.counters.get(key, 0) + count
        if self.broken:
            return
        partial = rows.with_columns((pl.int_range(pl.len()).over(W.DP_KEY) + offset).alias(W.ROUND))
        partial = partial.group_by(W.ROUND).agg(
            pl.col(C.TS).max(),
            pl.col(C.ACCEPT_LEN).sum().alias(W.LEN_SUM),
            pl.col(C.ACCEPT_LEN).count().alias(W.LEN_N),
            pl.col(C.GEN_THROUGHPUT).sum().alias(W.TPUT_SUM),
            pl.col(C.GEN_THROUGHPUT).count().alias(W.TPUT_N),
            pl.col(C.RUNNING_REQ).sum().alias(W.REQ_SUM),
            pl.col(C.RUNNING_REQ).count().alias(W.REQ_N),
            pl.len().alias(W.N),
            pl.col(W.AFTER_IDLE).cast(pl.Int64).sum().alias(W.AFTER_IDLE),  # the round's lines after idle
        )
        if self.pending is not None and self.pending.height:
            partial = (
                pl.concat([self.pending, partial], how="vertical_relaxed")
                .group_by(W.ROUND)
                .agg(pl.col(C.TS).max(), *(pl.col(c).sum() for c in _PARTIAL))
            )
        # every rank has printed the rounds before `done`; a run's first lines wait, since its DP ranks may
        # not all have printed yet (a rank that begins later would join rounds already folded)
        done = min(self.counters.values()) if sum(self.counters.values()) >= SETTLE_LINES else 0
        self._fold(partial.filter(pl.col(W.ROUND) < done))
        self.pending = partial.filter(pl.col(W.ROUND) >= done)
        self.settled = done
        if self.pending.height > PENDING_LIMIT:
            self.broken = f"a DP rank printed nothing for {PENDING_LIMIT:,} rounds"
            self.pending = None

    def _fold(self, partial: pl.DataFrame) -> None:
        if partial.height:
            self._fold_rounds(_rounds(partial))

    def _fold_rounds(self, rounds: pl.DataFrame) -> None:
        """Add complete rounds to every round's sums and to the steady ones (warm-up judged as now)."""
        ready = pl.lit(self.ready) if self.ready is not None else pl.lit(None, pl.Datetime("us"))
        grouped = (
            rounds.with_columns(is_warm(ready, pl.col(W.ROUND)).alias(W.WARM))
            .group_by(W.WARM, A.BATCH_SIZE)
            .agg(*_SUMS, pl.col(C.TS).max())
        )
        newest = rounds.select(W.ROUND, C.ACCEPT_LEN, C.GEN_THROUGHPUT)
        if self.tail is not None:
            newest = pl.concat([self.tail, newest], how="vertical_relaxed")
        self.tail = newest.sort(W.ROUND).tail(ROLLING_WINDOW)
        steady = self.steady if self.ready is not None else self.early_steady
        for warm, size, *values, last in grouped.iter_rows():
            self.all.put(size, values)
            if not warm:
                steady.put(size, values)
            if (
                self.ready is None
                and last is not None
                and (self.early_last is None or last > self.early_last)
            ):
                self.early_last = last

    def _waiting(self) -> pl.DataFrame:
        """The waiting rounds the batch series keeps: while none is folded, those up to the last one
        with the most ranks (the last complete one)."""
        if self.settled or self.pending is None or not self.pending.height:
            return pl.DataFrame()
        most = pl.col(W.N) == pl.col(W.N).max()
        last = self.pending.filter(most).get_column(W.ROUND).max()
        return _rounds(self.pending.filter(pl.col(W.ROUND) <= last))

    def newest(self) -> dict[str, float | None]:
        """The last round's accept len and tok/s (the last non-null ones) and their rolling medians, as
        the run's series ends (`status.run_status`)."""
        if self.final is not None:
            return self.final[1]
        parts = [] if self.tail is None else [self.tail]
        waiting = self._waiting()
        if waiting.height:
            parts.append(waiting.select(W.ROUND, C.ACCEPT_LEN, C.GEN_THROUGHPUT))
        names = (C.ACCEPT_LEN, C.GEN_THROUGHPUT, A.ROLLING_MEDIAN, A.TPUT_ROLLING_MEDIAN)
        if not parts:
            return dict.fromkeys(names)
        rows = pl.concat(parts, how="vertical_relaxed").sort(W.ROUND).tail(ROLLING_WINDOW)
        rolled = rows.with_columns(*rolling_medians())
        out: dict[str, float | None] = {}
        for name in names:
            values = rolled.get_column(name).drop_nulls()
            out[name] = float(values[-1]) if len(values) else None
        return out

    def figures(self) -> tuple[_Sums, _Sums]:
        """(every round, the steady rounds `steady_rows` keeps) as the batch series has them now: the
        folded rounds, and the waiting ones the batch keeps (only while none is folded: a folded round
        has every rank, so the last complete round is folded and every waiting one comes after it)."""
        if self.final is not None:
            return self.final[0]
        extra = self._waiting()
        every = self.all.plus(extra)
        if self.ready is None:
            steady = self.early_steady.plus(
                extra.filter(~is_warm(pl.lit(None, pl.Datetime("us")), pl.col(W.ROUND)))
                if extra.height
                else extra
            )
        else:
            steady = self.steady.plus(
                extra.filter(~is_warm(pl.lit(self.ready), pl.col(W.ROUND))) if extra.height else extra
            )
        return every, steady if steady.rounds else every


def _rounds(partial: pl.DataFrame) -> pl.DataFrame:
    """Rounds from their partial sums, with the values `acceptance._dp_rounds` gives a round."""
    return partial.select(
        W.ROUND,
        C.TS,
        pl.when(pl.col(W.LEN_N) > 0).then(pl.col(W.LEN_SUM) / pl.col(W.LEN_N)).alias(C.ACCEPT_LEN),
        # a round with an idle line has no speed (`acceptance.after_idle`)
        pl.when((pl.col(W.TPUT_N) > 0) & (pl.col(W.AFTER_IDLE) == 0))
        .then(pl.col(W.TPUT_SUM))
        .alias(C.GEN_THROUGHPUT),
        pl.when(pl.col(W.REQ_N) > 0).then(pl.col(W.REQ_SUM)).alias(A.BATCH_SIZE),
    )


def _warm_at(ts: dt.datetime, ready: dt.datetime) -> bool:
    one = pl.DataFrame({C.TS: [ts]}, schema={C.TS: pl.Datetime("us")})
    return bool(one.select(is_warm(pl.lit(ready), pl.lit(0))).item())


@dataclass
class _Site:
    count: int = 0
    num_aux: Any = None
    num_items: Any = None
    shapes: Any = None
    finite_sum: float = 0.0
    finite_n: int = 0
    low: float | None = None
    high: float | None = None
    bad: int = 0


# The columns of `batches` the running figures read of each decode line and idle line
# (`acceptance.SERIES_LINES`; `live.seed` reads only these).
DECODE_COLUMNS = (*RUN_KEY, C.LINE_NO, C.TS, C.DP, C.PHASE, C.ACCEPT_LEN, C.GEN_THROUGHPUT, C.RUNNING_REQ)
# ... and of each debug line (`_add_debug`): not its items (lists of key-value strings, most of the bytes)
DEBUG_COLUMNS = (*SITE_KEY, C.LAYER_ID, C.NUM_AUX, C.NUM_ITEMS, C.SHAPES, C.NORM)


class RunningFigures:
    """Every run's decode and capture sums, fed each parse's new rows (`add`)."""

    def __init__(self) -> None:
        self._decode: dict[RunKey, _RunDecode] = {}
        self._sites: dict[RunKey, dict[tuple[Any, Any, Any], _Site]] = {}
        self._debug: dict[RunKey, list[int]] = {}  # debug lines, embedding captures among them
        self._vllm: dict[RunKey, list[float]] = {}  # vLLM mean acceptance length: sum, count
        self._v0_counts: dict[RunKey, tuple[int, int]] = {}  # vLLM V0's last drafted and emitted counts

    def add(self, tables: Tables) -> None:
        """The new rows of one parse (each source's lines in order)."""
        lifecycle = tables[T.LIFECYCLE]
        if lifecycle.height:
            for source, run, ts in ready_times(lifecycle).filter(pl.col(C.TS).is_not_null()).iter_rows():
                self._run(source, run).set_ready(ts)
        decode = tables[T.BATCHES].filter(SERIES_LINES)
        if decode.height:
            for (source, run), rows in decode.select(DECODE_COLUMNS).group_by(RUN_KEY, maintain_order=True):
                self._run(str(source), int(run)).add(rows.sort(C.LINE_NO))
        self._add_debug(tables[T.DEBUG])
        metrics = tables[T.SPEC_METRICS]
        if metrics.height:
            v0 = pl.col(C.LAYOUT) == VLLM_V0_METRICS
            lengths = metrics.filter(~v0 & pl.col(C.MEAN_ACCEPTANCE_LENGTH).is_not_nan())
            grouped = lengths.group_by(RUN_KEY).agg(pl.col(C.MEAN_ACCEPTANCE_LENGTH).sum(), pl.len())
            for source, run, total, count in grouped.iter_rows():
                held = self._vllm.setdefault((source, run), [0.0, 0])
                held[0] += total
                held[1] += count
            self._add_v0(metrics.filter(v0))

    def _add_v0(self, metrics: pl.DataFrame) -> None:
        """vLLM V0's lines count from the server's start: each is the interval since the run's line before
        it, kept across parses (`analysis/vllm_metrics.py` reads them so), its length emitted tokens per
        step. A handful of lines a parse: one every few seconds."""
        counts = metrics.sort(C.LINE_NO).select(*RUN_KEY, C.DRAFTED, C.EMITTED, C.NUM_SPEC_TOKENS)
        for source, run, drafted, emitted, k in counts.iter_rows():
            if drafted is None or emitted is None:
                continue
            before = self._v0_counts.get((source, run))
            self._v0_counts[(source, run)] = (drafted, emitted)
            if before is not None and drafted >= before[0]:  # else the server started over
                drafted, emitted = drafted - before[0], emitted - before[1]
            if drafted > 0 and k:
                held = self._vllm.setdefault((source, run), [0.0, 0])
                held[0] += emitted / (drafted / k)
                held[1] += 1

    def end(self, runs: Iterable[RunKey]) -> None:
        """The ``runs`` have ended: their decode figures are final (`_RunDecode.close`)."""
        for key in runs:
            decode = self._decode.get(key)
            if decode is not None:
                decode.close()

    def _run(self, source: str, run: int) -> _RunDecode:
        return self._decode.setdefault((source, run), _RunDecode())

    def _add_debug(self, debug: pl.DataFrame) -> None:
        """Per run its debug lines and embedding captures, per debug site (lines with an event) its
        `capture.sites` figures, from one grouping of the new lines."""
        if not debug.height:
            return
        finite = finite_norms()
        grouped = debug.group_by(SITE_KEY, maintain_order=True).agg(
            pl.len().alias(A.COUNT),
            is_embed().any().alias(W.SEEN),
            *last_printed(),
            finite.sum().alias(W.FINITE_SUM),
            finite.count().alias(W.FINITE_N),
            finite.min().alias(A.NORM_MIN),
            finite.max().alias(A.NORM_MAX),
            bad_norms(),
        )
        for row in grouped.iter_rows(named=True):
            key = (row[C.SOURCE], row[C.RUN])
            counted = self._debug.setdefault(key, [0, 0])
            counted[0] += row[A.COUNT]
            counted[1] += int(bool(row[W.SEEN]))
            if row[C.EVENT] is None:  # counted for the run, not a site (`capture.sites` leaves them out)
                continue
            site = self._sites.setdefault(key, {}).setdefault(
                (row[C.TAG], row[C.SITE], row[C.EVENT]), _Site()
            )
            site.count += row[A.COUNT]
            for name, value in (("num_aux", C.NUM_AUX), ("num_items", C.NUM_ITEMS), ("shapes", C.SHAPES)):
                if row[value] is not None:
                    setattr(site, name, row[value])
            site.finite_sum += row[W.FINITE_SUM] or 0.0
            site.finite_n += row[W.FINITE_N]
            low, high = row[A.NORM_MIN], row[A.NORM_MAX]
            site.low = low if site.low is None or (low is not None and low < site.low) else site.low
            site.high = high if site.high is None or (high is not None and high > site.high) else site.high
            site.bad += row[A.BAD_NORMS]

    def rounds(self) -> pl.DataFrame:
        """source, run, _n: every run's decode rounds (what `compare.pick_baselines` ranks by)."""
        keys = list(self._decode)
        return pl.DataFrame(
            {
                C.SOURCE: [k[0] for k in keys],
                C.RUN: [k[1] for k in keys],
                W.N: [self._decode[k].rounds() for k in keys],
            },
            schema={C.SOURCE: pl.String, C.RUN: pl.Int32, W.N: pl.UInt32},
        )

    def sites(self, key: RunKey) -> list[dict[str, Any]]:
        """The run's debug sites as `capture.sites` gives them (the rows `status.site_statuses` reads)."""
        out = []
        for (tag, site_name, event), site in self._sites.get(key, {}).items():
            out.append(
                {
                    C.TAG: tag,
                    C.SITE: site_name,
                    C.EVENT: event,
                    A.COUNT: site.count,
                    C.NUM_AUX: site.num_aux,
                    C.NUM_ITEMS: site.num_items,
                    C.SHAPES: site.shapes,
                    A.NORM_MEAN: site.finite_sum / site.finite_n if site.finite_n else None,
                    A.NORM_MIN: site.low,
                    A.NORM_MAX: site.high,
                    A.BAD_NORMS: site.bad,
                }
            )
        return out

    def means(self, key: RunKey, steps: Any) -> dict[str, float | None] | None:
        """The run's steady means as the analysis' `runs` table has them (None: not kept exactly)."""
        decode = self._decode.get(key)
        if decode is not None and decode.broken:
            return None
        length = tput = rate = None
        if decode is not None:
            length, tput = decode.figures()[1].means()
            rate = (length - 1) / steps if length is not None and steps else None
        vllm = self._vllm.get(key)
        if length is None and vllm and vllm[1]:
            length = vllm[0] / vllm[1]
        return {A.MEAN_ACCEPT_LEN: length, A.MEAN_ACCEPTANCE_RATE: rate, A.MEAN_GEN_THROUGHPUT: tput}

    def _broken(self, key: RunKey) -> bool:
        decode = self._decode.get(key)
        return decode is not None and decode.broken is not None

    def speedup(self, key: RunKey, baseline: RunKey) -> float | None:
        """The speedup's point over ``baseline`` (`compare.speedups`), None when either run's rounds
        are not kept exactly or no batch size matches."""
        runs = [self._decode.get(key), self._decode.get(baseline)]
        if any(r is None or r.broken for r in runs):
            return None
        cand, base = (r.figures()[1].tput_by_size() for r in runs if r is not None)
        sizes = sorted(set(cand) & set(base))
        if not sizes:
            return None
        weights = np.array([cand[s][1] for s in sizes], dtype=float)
        return weighted_ratio([cand[s][0] for s in sizes], [base[s][0] for s in sizes], weights)

    def embed_state(self, analysis: Analysis, key: RunKey) -> str | None:
        counted = self._debug.get(key, [0, 0])
        stats = pl.DataFrame(
            {C.SOURCE: [key[0]], C.RUN: [key[1]], W.N: [counted[0]], W.SEEN: [counted[1] > 0]},
            schema={C.SOURCE: pl.String, C.RUN: pl.Int32, W.N: pl.UInt32, W.SEEN: pl.Boolean},
        )
        runs = analysis.runs.filter((pl.col(C.SOURCE) == key[0]) & (pl.col(C.RUN) == key[1]))
        states = embed_states(runs, stats, analysis.expectations)
        return states.item(0, A.EMBED_STATE) if states.height else None

    def apply(
        self,
        snap: Snapshot,
        analysis: Analysis,
        cut: Callable[[str, int], bool],
        baseline: str | None,
        kept: Container[RunKey] = (),
    ) -> Snapshot:
        """``snap`` (made from the window's analysis) with the whole-run figures of each run ``cut``
        says is partly outside the window, and of its baseline; the ``kept`` runs' statuses (ended, as
        they were then) stay as they are."""
        runs = tuple(r if r.key in kept else self._status(r, analysis, cut, baseline) for r in snap.every_run)
        return replace(snap, every_run=runs)

    def _status(
        self, status: RunStatus, analysis: Analysis, cut: Callable[[str, int], bool], named: str | None
    ) -> RunStatus:
        if status.run is None:
            return status
        key = (status.source, status.run)
        runs = analysis.runs
        labels = {(s, r): label for s, r, label in runs.select(*RUN_KEY, A.LABEL).iter_rows()}
        picked = pick_baselines(runs, self.rounds(), named) if runs.height else runs
        row = picked.filter((pl.col(C.SOURCE) == key[0]) & (pl.col(C.RUN) == key[1]))
        base_label = row.item(0, A.BASELINE) if row.height else None
        base_key = next((k for k, label in labels.items() if label == base_label), None)
        if not cut(*key) and (base_key is None or not cut(*base_key)):
            return status  # the window holds the run and its baseline whole: the analysis' figures
        changes: dict[str, Any] = {}
        windowed: list[str] = []
        if cut(*key):
            windowed += WINDOW_ALWAYS
            info = runs.filter((pl.col(C.SOURCE) == key[0]) & (pl.col(C.RUN) == key[1]))
            steps = info.item(0, C.SPEC_NUM_STEPS) if info.height else None
            means = self.means(key, steps)
            if means is None:
                windowed += WINDOW_MEANS
            else:
                changes.update(
                    mean_accept_len=means[A.MEAN_ACCEPT_LEN],
                    mean_acceptance_rate=means[A.MEAN_ACCEPTANCE_RATE],
                    mean_gen_throughput=means[A.MEAN_GEN_THROUGHPUT],
                )
            decode = self._decode.get(key)
            if decode is not None and not decode.broken:  # the window's rounds of a DP run may be cut apart
                newest = decode.newest()
                changes.update(
                    accept_len=newest[C.ACCEPT_LEN],
                    gen_throughput=newest[C.GEN_THROUGHPUT],
                    accept_len_median=newest[A.ROLLING_MEDIAN],
                    gen_throughput_median=newest[A.TPUT_ROLLING_MEDIAN],
                )
            changes["sites"] = site_statuses(self.sites(key))
            state = self.embed_state(analysis, key)
            words, level = EMBED_WORDS.get(state, ("", Level.UNKNOWN)) if state else ("", Level.UNKNOWN)
            changes.update(embed_state=state, embed_words=words, embed_level=level)
        if base_key is None:
            changes.update(
                baseline=None, baseline_accept_len=None, baseline_gen_throughput=None, speedup=None
            )
        elif self._broken(key) or self._broken(base_key):
            windowed.append("speedup")  # the window's baseline and speedup stay
        else:
            changes["baseline"] = base_label
            base_steps = runs.filter((pl.col(C.SOURCE) == base_key[0]) & (pl.col(C.RUN) == base_key[1]))
            base = self.means(base_key, base_steps.item(0, C.SPEC_NUM_STEPS) if base_steps.height else None)
            if base is not None:
                changes.update(
                    baseline_accept_len=base[A.MEAN_ACCEPT_LEN],
                    baseline_gen_throughput=base[A.MEAN_GEN_THROUGHPUT],
                )
            changes["speedup"] = self.speedup(key, base_key)
        changes["window_figures"] = tuple(dict.fromkeys(windowed))
        return replace(status, **changes)
