"""What every detector reads (`Context`) and the helpers they share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tracelens.analysis.chain import Chain
from tracelens.analysis.debug_digest import RunDebug, digests
from tracelens.analysis.defaults import DEFAULT_POSITION_MARGIN
from tracelens.analysis.expectations import Expectations
from tracelens.analysis.findings import MAX_EVIDENCE, Evidence, Finding, Severity
from tracelens.analysis.runs import RUN_KEY
from tracelens.sources.naming import run_label
from tracelens.tables.frames import Tables
from tracelens.tables.schema import A


@dataclass
class Context:
    """What the detectors read."""

    tables: Tables
    runs: pl.DataFrame  # interesting runs with labels and overview columns
    series: pl.DataFrame  # acceptance.decode_series
    expect: Expectations
    incidents: pl.DataFrame
    stalls: pl.DataFrame
    hangs: pl.DataFrame  # hangs.hangs: runs that stopped with work in hand while the log went on
    readiness: pl.DataFrame  # startup.time_to_ready
    changes: pl.DataFrame  # acceptance.change_points
    speedups: pl.DataFrame
    curves: pl.DataFrame  # positions.preferred_curves, labelled: one per-position curve per run
    # source, run, baseline label of every run (`compare.pick_baselines`; null: none applies)
    baselines: pl.DataFrame = field(default_factory=pl.DataFrame)
    position_margin: float = DEFAULT_POSITION_MARGIN  # detectors/positions.position_regressed
    # Each run's debug lines as the detectors read them (`debug_pass` makes every run's once);
    # `digest_of` makes a run's that is not here.
    digests: dict[tuple[str, int], RunDebug] = field(default_factory=dict)
    chains: dict[tuple[str, int], Chain] = field(default_factory=dict)  # chain.chains: each run's failures
    names: dict[str, str] = field(default_factory=dict)  # source -> short name (`Analysis.names`)
    _labels: dict[tuple[str, int], str] | None = field(default=None, init=False, repr=False)

    def label(self, source: str, run: int) -> str:
        if self._labels is None:  # one lookup table, not a filter of `runs` per finding
            self._labels = {(s, r): label for s, r, label in self.runs.select(*RUN_KEY, A.LABEL).iter_rows()}
        return self._labels.get((source, run)) or run_label(self.names.get(source, source), run)

    def finding(
        self,
        severity: Severity,
        code: str,
        source: str,
        run: int,
        ts: Any,
        message: str,
        lines: Iterable[int] = (),
    ) -> Finding:
        evidence = [Evidence(source, int(n)) for n in list(dict.fromkeys(lines))[:MAX_EVIDENCE]]
        return Finding(severity, code, source, int(run), self.label(source, run), ts, message, evidence)

    def digest_of(self, source: str, run: int) -> RunDebug:
        """One run's debug lines as `debug_digest` gives them."""
        key = (source, int(run))
        if key not in self.digests:
            self.digests.update(digests(self.tables, [key]))
        return self.digests[key]


def _fmt_ids(ids: Iterable[int]) -> str:
    return "[" + ", ".join(str(i) for i in ids) + "]"


def _spec_runs(ctx: Context) -> list[dict[str, Any]]:
    return ctx.runs.filter(pl.col(A.SPECULATIVE)).to_dicts()
