"""What the live screen and `follow` show, computed from an `Analysis`: every run of every source (its
verdict and fix, the server's phase, the speculative config, acceptance and throughput, the EAGLE-3
capture per debug site), each source's current run (the last server start) among them. Headless: plain
data that any view renders.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from tracelens.analysis import Analysis, Finding, Severity, Status
from tracelens.analysis.plotdata import decimate
from tracelens.analysis.positions import SGLANG
from tracelens.formatting import acceptance_words, duration, speculative_words
from tracelens.tables.frames import Tables
from tracelens.tables.schema import A, C, T

if TYPE_CHECKING:
    from tracelens.analysis.verdicts import Verdict

RunKey = tuple[str, int]  # source label, run

# The server's phases, as the header names them.
SNAPSHOT_POINTS = 2000  # rows of a run's series a screen snapshot carries
# rows of an ended run's series: every snapshot carries every run, and a plot is a few hundred dots wide
ENDED_POINTS = 500
WAITING = "waiting for a server start"
STARTING = "starting"
LOADING = "loading weights"
KV_CACHE = "allocating KV cache"
CAPTURING = "capturing graphs"
WARMING = "warming up"
READY = "ready"
CRASHED = "crashed"
SHUT_DOWN = "shut down"


class Level(StrEnum):
    """How a state shown on the screen should look: a finding's severities, and fine or not known yet."""

    OK = "ok"
    WARNING = Severity.WARNING.value
    ERROR = Severity.ERROR.value
    UNKNOWN = "unknown"


# The embedding-capture state in plain words, and how it should look.
EMBED_WORDS: dict[str, tuple[str, Level]] = {
    "as expected": ("embedding capture as expected", Level.OK),
    "seen": (
        "embedding capture seen (layer_id -1): fine only if the draft was trained with it",
        Level.WARNING,
    ),
    "not seen": ("no embedding capture seen", Level.OK),
    "missing": ("embedding capture missing: the draft expects it (layer_id -1)", Level.ERROR),
    "unexpected": ("embedding capture unexpected: the draft was not trained with it", Level.ERROR),
    "no debug lines": ("no capture debug lines yet", Level.UNKNOWN),
}


@dataclass(frozen=True)
class SiteStatus:
    """One debug site of the current run: its last num_aux, shapes and norm."""

    site: str  # TAG[site] event
    count: int
    num_aux: int | None
    shapes: str
    norm: float | None
    norm_range: str
    bad_norms: int = 0  # NaN, infinite or zero norms (left out of norm and norm_range)


@dataclass(frozen=True)
class RunStatus:
    source: str
    run: int | None
    label: str | None
    phase: str
    phase_detail: str = ""
    elapsed_s: float | None = None
    expected_s: float | None = None
    speculative: str | None = None
    accept_len: float | None = None
    accept_len_median: float | None = None
    gen_throughput: float | None = None
    gen_throughput_median: float | None = None
    baseline: str | None = None
    baseline_gen_throughput: float | None = None
    baseline_accept_len: float | None = None
    speedup: float | None = None
    # The run's figures from the analysis' per-run table (steady-state means, as `summary`, `compare` and
    # the report show them) and its verdict; accept_len and gen_throughput above are the newest values.
    mean_accept_len: float | None = None
    mean_acceptance_rate: float | None = None
    mean_gen_throughput: float | None = None
    status: Status | None = None
    headline: str | None = None
    fix: str | None = None  # the verdict's fix, when one can be derived
    # A later server start of the source was seen: the run is over, and keeps the verdict it had then
    # (`kept.KeptRuns`).
    ended: bool = False
    embed_state: str | None = None
    embed_words: str = ""
    embed_level: Level = Level.UNKNOWN
    sites: tuple[SiteStatus, ...] = ()
    # Acceptance from the request logs, snapshots and vLLM's lines (analysis/positions.py): per position
    # (0 = the first draft token), the basis and engine it came from, the depth in force, the requests'
    # pooled normalised rate; `acceptance` says it in words (formatting.acceptance_words).
    engine: str | None = None
    positions: tuple[float, ...] = ()
    positions_basis: str | None = None
    # what the run's metrics endpoint serves: SGLang's gauges of the newest `/metrics`, else the newest
    # `/server_info`'s mean accept length; the normalised rate against the depth in force, where from
    served_accept_len: float | None = None
    served_rate: float | None = None
    served_from: str | None = None
    depth: int | None = None
    requests: int = 0
    request_rate: float | None = None
    acceptance: str = ""
    # decode series of the run: t_since_start_s, accept_len, gen_throughput, rolling medians
    series: pl.DataFrame = field(default_factory=pl.DataFrame)
    # The findings shown for the run (the session's kept findings, `kept.KeptFindings`), errors among them.
    findings: int = 0
    errors: int = 0
    # The fields above that are those of the worker's window, not of the whole run: of a run longer than
    # the window, its series (the plots); its means too when they cannot be kept exactly (`live/running.py`).
    window_figures: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("series", "sites") and not isinstance(v, pl.DataFrame)
        }
        out["sites"] = [s.__dict__ for s in self.sites]
        out["decode_points"] = self.series.height
        out["verdict"] = self.verdict_json()
        return out

    @property
    def phase_words(self) -> str:
        """The phase as the views say it: an ended run's last phase ("ready") no longer holds once its
        server was started again, unless it says how the run ended."""
        if self.ended and self.phase not in (CRASHED, SHUT_DOWN):
            return "over (the server started again)"
        return self.phase

    @property
    def key(self) -> RunKey | None:
        return None if self.run is None else (self.source, self.run)

    def verdict_json(self) -> dict[str, Any]:
        """The run's verdict as every `follow --json` event about the run carries it."""
        return {"run": self.label, "status": self.status, "headline": self.headline, "fix": self.fix}


@dataclass(frozen=True)
class Snapshot:
    # Every run seen, per source in the sources' order and by run number: ended runs (with the verdict
    # they had when they ended) before the source's current one; a source with no run yet as a waiting
    # status (`run` None).
    every_run: tuple[RunStatus, ...] = ()
    lines: int = 0

    @property
    def runs(self) -> tuple[RunStatus, ...]:
        """Each source's current run (its newest), in the sources' order."""
        return tuple(r for r in self.every_run if not r.ended)

    def run_of(self, source: str) -> RunStatus | None:
        """The current run of ``source``."""
        return next((r for r in self.runs if r.source == source), None)

    def by_key(self) -> dict[RunKey, RunStatus]:
        return {r.key: r for r in self.every_run if r.key is not None}


def _phase(analysis: Analysis, source: str, run: int, last_ts: dt.datetime | None, row: dict[str, Any]):
    """(phase, detail, elapsed, expected) of a run from its lifecycle lines and faults."""
    lifecycle = analysis.tables[T.LIFECYCLE].filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
    events = set(lifecycle.get_column(C.EVENT).to_list())
    start = row.get(C.START_TS)
    elapsed = (last_ts - start).total_seconds() if last_ts is not None and start is not None else None
    expected = row.get(A.EXPECTED_TIME_TO_READY_S)
    if row.get(A.ENDED_CLEANLY) is False:
        return CRASHED, "", elapsed, expected
    if "shutdown" in events:
        return SHUT_DOWN, "", elapsed, expected
    if "ready" in events:
        ready = row.get(A.TIME_TO_READY_S)
        return (
            READY,
            f"ready after {duration(ready, compact=True, missing='?')}" if ready is not None else "",
            elapsed,
            expected,
        )
    if "graph_capture_begin" in events:
        phase = CAPTURING
    elif "uvicorn_running" in events or "server_process_started" in events:
        phase = WARMING
    elif "kv_cache_allocated" in events or "memory_pool_end" in events:
        phase = KV_CACHE
    elif "weight_load_begin" in events:
        phase = LOADING
    else:
        phase = STARTING
    detail = f"{duration(elapsed, compact=True, missing='?')} since start"
    if expected is not None:
        detail += f", earlier starts were ready after {duration(expected, compact=True, missing='?')}"
    return phase, detail, elapsed, expected


def _sites(analysis: Analysis, source: str, run: int) -> tuple[SiteStatus, ...]:
    capture = analysis.capture.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
    return site_statuses(capture.to_dicts())


def site_statuses(rows: Iterable[dict[str, Any]]) -> tuple[SiteStatus, ...]:
    """The capture panel's rows from `capture.sites` rows (or the live worker's running ones)."""
    out = []
    for row in rows:
        shapes = row.get(C.SHAPES) or []
        lo, hi = row.get(A.NORM_MIN), row.get(A.NORM_MAX)
        out.append(
            SiteStatus(
                site=f"{row.get(C.TAG) or ''}[{row.get(C.SITE) or ''}] {row.get(C.EVENT) or ''}".strip(),
                count=int(row.get(A.COUNT) or 0),
                num_aux=row.get(C.NUM_AUX),
                shapes=" ".join("[" + ", ".join(str(d) for d in s) + "]" for s in shapes) or "-",
                norm=row.get(A.NORM_MEAN),
                norm_range=f"{lo:.3g}-{hi:.3g}" if lo is not None and hi is not None else "",
                bad_norms=int(row.get(A.BAD_NORMS) or 0),
            )
        )
    return tuple(out)


def _last(frame: pl.DataFrame, column: str) -> float | None:
    values = frame.get_column(column).drop_nulls() if column in frame.columns else pl.Series([])
    return float(values[-1]) if len(values) else None


def run_status(
    analysis: Analysis, source: str, run: int | None = None, verdict: Verdict | None = None
) -> RunStatus:
    """The status of one run of ``source`` (default: its newest), with its ``verdict``'s fix."""
    runs = analysis.runs.filter(pl.col(C.SOURCE) == source).sort(C.RUN)
    lines = analysis.tables[T.LINES].filter(pl.col(C.SOURCE) == source)
    if not runs.height:
        return RunStatus(source, None, None, WAITING)
    newest = int(runs.item(-1, C.RUN))
    run = newest if run is None else run
    row = runs.filter(pl.col(C.RUN) == run).row(0, named=True)
    timed = lines.filter((pl.col(C.RUN) == run) & pl.col(C.TS).is_not_null())
    last_ts = cast("dt.datetime | None", timed.get_column(C.TS).max()) if timed.height else None
    phase, detail, elapsed, expected = _phase(analysis, source, run, last_ts, row)
    series = analysis.series.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
    embed = analysis.embed.filter((pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run))
    state = embed.item(0, A.EMBED_STATE) if embed.height else None
    words, level = EMBED_WORDS.get(state, ("", Level.UNKNOWN)) if state else ("", Level.UNKNOWN)
    baseline = row.get(A.BASELINE)
    base = analysis.runs.filter(pl.col(A.LABEL) == baseline) if baseline else analysis.runs.clear()
    keep = [A.T_SINCE_START, C.TS, C.LINE_NO, C.ACCEPT_LEN, C.GEN_THROUGHPUT]
    keep += [A.ROLLING_MEDIAN, A.TPUT_ROLLING_MEDIAN, A.STAGE]
    return RunStatus(
        source=source,
        run=run,
        label=row.get(A.LABEL),
        phase=phase,
        phase_detail=detail,
        elapsed_s=elapsed,
        expected_s=expected,
        speculative=speculative_words(row),
        accept_len=_last(series, C.ACCEPT_LEN),
        accept_len_median=_last(series, A.ROLLING_MEDIAN),
        gen_throughput=_last(series, C.GEN_THROUGHPUT),
        gen_throughput_median=_last(series, A.TPUT_ROLLING_MEDIAN),
        baseline=baseline,
        baseline_gen_throughput=base.item(0, A.MEAN_GEN_THROUGHPUT) if base.height else None,
        baseline_accept_len=base.item(0, A.MEAN_ACCEPT_LEN) if base.height else None,
        speedup=row.get(A.SPEEDUP),
        mean_accept_len=row.get(A.MEAN_ACCEPT_LEN),
        mean_acceptance_rate=row.get(A.MEAN_ACCEPTANCE_RATE),
        mean_gen_throughput=row.get(A.MEAN_GEN_THROUGHPUT),
        status=Status(row[A.STATUS]) if row.get(A.STATUS) else None,
        headline=row.get(A.HEADLINE),
        fix=verdict.fix if verdict is not None else None,
        ended=run < newest,
        embed_state=state,
        embed_words=words,
        embed_level=level,
        sites=_sites(analysis, source, run),
        **_acceptance(analysis, source, run),
        series=thin(series.select([c for c in keep if c in series.columns])),
    )


def _acceptance(analysis: Analysis, source: str, run: int) -> dict[str, Any]:
    """The `RunStatus` acceptance fields of one run."""
    key = (pl.col(C.SOURCE) == source) & (pl.col(C.RUN) == run)
    curve = (
        analysis.spec_curves.filter(key).sort(A.POSITION) if analysis.spec_curves.height else pl.DataFrame()
    )
    asked = analysis.requests.filter(key) if analysis.requests.height else pl.DataFrame()
    depth = analysis.depth.filter(key).sort(C.LINE_NO) if analysis.depth.height else pl.DataFrame()
    gauges = analysis.gauges.filter(key) if analysis.gauges.height else pl.DataFrame()
    served: tuple[float | None, float | None, str] | None = None
    if gauges.height and gauges.item(0, C.ACCEPT_LEN) is not None:
        served = (gauges.item(0, C.ACCEPT_LEN), gauges.item(0, A.ACCEPTANCE_RATE), "sglang /metrics")
    elif depth.height:
        served = (depth.item(-1, C.ACCEPT_LEN), depth.item(-1, A.ACCEPTANCE_RATE), "sglang server_info")
    engine = asked.item(0, A.ENGINE) if asked.height else (curve.item(0, A.ENGINE) if curve.height else None)
    engine = engine or (SGLANG if served else None)  # both places are SGLang's
    out: dict[str, Any] = {
        "engine": engine,
        "positions": tuple(round(float(r), 4) for r in curve.get_column(A.RATE).to_list())
        if curve.height
        else (),
        "positions_basis": curve.item(0, A.BASIS) if curve.height else None,
        "depth": depth.item(-1, A.DEPTH) if depth.height else None,
        "requests": int(asked.item(0, A.REQUESTS)) if asked.height else 0,
        "request_rate": asked.item(0, A.POOLED_RATE) if asked.height else None,
        "served_accept_len": served[0] if served else None,
        "served_rate": served[1] if served else None,
        "served_from": served[2] if served else None,
    }
    out["acceptance"] = acceptance_words(
        out["positions"],
        out["positions_basis"],
        engine,
        out["depth"],
        out["requests"],
        out["request_rate"],
        served,
    )
    return out


def thin(series: pl.DataFrame, points: int = SNAPSHOT_POINTS) -> pl.DataFrame:
    """At most ``points`` rows of a run's series for the screen's plots (each time bucket's middle
    row, and the newest row): a snapshot is sent every analysis, so it must not grow with the run. The
    plots are a few hundred braille columns wide."""
    if series.height <= points or A.T_SINCE_START not in series.columns:
        return series
    thinned = decimate(series, A.T_SINCE_START, [], points)
    if thinned.height and thinned.row(-1) != series.row(-1):
        thinned = pl.concat([thinned, series.tail(1)])
    return thinned


def newest_decode(tables: Tables) -> tuple[float | None, float | None] | None:
    """(accept len, gen throughput) of the newest decode line of freshly parsed rows, None without one:
    the acceptance panel shows it before the next analysis has it."""
    decode = tables[T.BATCHES].filter(pl.col(C.PHASE) == "decode")
    if not decode.height:
        return None
    last = decode.row(-1, named=True)
    return last.get(C.ACCEPT_LEN), last.get(C.GEN_THROUGHPUT)


def with_finding_counts(snap: Snapshot, findings: list[Finding]) -> Snapshot:
    """``snap`` with each run's count of ``findings`` (those the session shows) and of errors among them."""
    counts: dict[tuple[str, int | None], list[int]] = {}
    for finding in findings:
        held = counts.setdefault((finding.source, finding.run), [0, 0])
        held[0] += 1
        held[1] += finding.severity == Severity.ERROR
    runs = []
    for run in snap.every_run:
        found, errors = counts.get((run.source, run.run), (0, 0))
        runs.append(replace(run, findings=found, errors=errors))
    return replace(snap, every_run=tuple(runs))


def with_verdicts(snap: Snapshot, verdicts: Mapping[RunKey, Verdict]) -> Snapshot:
    """``snap`` with the status, headline and fix of the runs ``verdicts`` judged (an ended run judged
    on all its rows, not on the window's)."""
    if not verdicts:
        return snap
    runs = []
    for run in snap.every_run:
        verdict = verdicts.get(run.key) if run.key is not None else None
        if verdict is not None:
            run = replace(run, status=verdict.status, headline=verdict.headline, fix=verdict.fix)
        runs.append(run)
    return replace(snap, every_run=tuple(runs))


def snapshot(
    analysis: Analysis,
    sources: list[str],
    lines: int | None = None,
    kept: Mapping[RunKey, RunStatus] | None = None,
) -> Snapshot:
    """Every run of each source (``kept`` statuses as they are, not made again); ``lines`` parsed in
    all (default: those of the analysis' tables)."""
    kept = kept or {}
    verdicts = {(v.source, v.run): v for v in analysis.verdicts}
    every: list[RunStatus] = []
    for source in sources:
        runs = analysis.runs.filter(pl.col(C.SOURCE) == source).get_column(C.RUN).sort().to_list()
        if not runs:
            every.append(RunStatus(source, None, None, WAITING))
        for run in runs:
            held = kept.get((source, int(run)))
            every.append(held or run_status(analysis, source, int(run), verdicts.get((source, int(run)))))
    return Snapshot(
        every_run=tuple(every),
        lines=analysis.tables[T.LINES].height if lines is None else lines,
    )
