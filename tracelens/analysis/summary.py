"""Per source and run: what happened, in numbers. The layout of `summarize` is the stable JSON of
`tracelens summary --json` (documented in docs/json.md); add keys, never rename or remove them."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracelens.analysis import Analysis
from tracelens.analysis.per_run import STEADY_STATS, stat_column
from tracelens.analysis.speculation import SERVER_ARGS, speculative_spec
from tracelens.tables.frames import collect
from tracelens.tables.schema import KINDS, A, C, T

SUMMARY_VERSION = 1


def _steady(row: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """A run's `STEADY_STATS` (from `Analysis.rate_stats`) as the summary's nested figures, rounded."""
    out: dict[str, dict[str, float | None]] = {}
    for column, stats in STEADY_STATS:
        values = {stat: row.get(stat_column(column, stat)) for stat in stats}
        out[column] = {stat: None if v is None else round(float(v), 4) for stat, v in values.items()}
    return out


def _iso(value: Any) -> str | None:
    return value.isoformat(sep=" ") if value is not None else None


def summarize(analysis: Analysis) -> dict[str, Any]:
    """The summary of every run of every source."""
    tables = analysis.tables
    runs = tables[T.RUNS]
    # The figures come from the analysis' per-run numbers (DP-combined rounds, steady state, vLLM's
    # metrics lines), the ones `compare`, the report and the TUI show; made on every round of a run,
    # even when its series keeps only the rows a plot draws.
    steady = {(r[C.SOURCE], r[C.RUN]): r for r in analysis.rate_stats.to_dicts()}
    overview = {(r[C.SOURCE], r[C.RUN]): r for r in analysis.runs.to_dicts()}
    findings: dict[tuple[str, int], int] = {}
    for finding in analysis.findings:
        findings[(finding.source, finding.run)] = findings.get((finding.source, finding.run), 0) + 1
    # Counted in queries: a dataset never loads `lines` or `batches` for them.
    kind_counts = collect(tables.scan(T.LINES).group_by(C.SOURCE, C.RUN, C.KIND).len())
    decode_lines = {
        (s, r): n
        for s, r, n in collect(
            tables.scan(T.BATCHES).filter(pl.col(C.PHASE) == "decode").group_by(C.SOURCE, C.RUN).len()
        ).iter_rows()
    }
    out_runs = []
    for run in runs.iter_rows(named=True):
        run_key = (run[C.SOURCE], run[C.RUN])
        key = (pl.col(C.SOURCE) == run[C.SOURCE]) & (pl.col(C.RUN) == run[C.RUN])
        counts = dict(kind_counts.filter(key).select(C.KIND, "len").iter_rows())
        seen = overview.get(run_key, {})
        figures = _steady(steady.get(run_key, {}))
        # vLLM has no decode rows: its mean accept len and rate are the run's, from its metrics lines
        for column, mean in ((C.ACCEPT_LEN, A.MEAN_ACCEPT_LEN), (A.ACCEPTANCE_RATE, A.MEAN_ACCEPTANCE_RATE)):
            if figures[column]["mean"] is None and seen.get(mean) is not None:
                figures[column]["mean"] = round(float(seen[mean]), 4)
        # the analysis' one decision (`analysis.speculation`); a run it leaves out by its args alone
        spec = speculative_spec(seen if seen else {**run, A.SPECULATIVE: run[C.SPEC_ALGORITHM] is not None})
        if spec is not None and spec.get("seen_in") is None:
            spec["seen_in"] = SERVER_ARGS
        out_runs.append(
            {
                "source": run[C.SOURCE],
                "run": run[C.RUN],
                "label": analysis.label_of(run[C.SOURCE], run[C.RUN]),
                "start": _iso(run[C.START_TS]),
                "end": _iso(run[C.END_TS]),
                "model": run[C.MODEL],
                "tp_size": run[C.TP_SIZE],
                "dp_size": run[C.DP_SIZE],
                "speculative": spec,
                "lines": run[C.LINE_COUNT],
                "lines_by_kind": {k: counts.get(k, 0) for k in KINDS},
                "decode_lines": decode_lines.get(run_key, 0),
                "accept_len": figures[C.ACCEPT_LEN],
                "gen_throughput": figures[C.GEN_THROUGHPUT],
                "acceptance_rate": figures[A.ACCEPTANCE_RATE],
                "acceptance_rate_engine": seen.get(A.RATE_ENGINE),
                # the run's decode or metrics lines, else requests, /metrics counters or gauges, /server_info
                "acceptance_from": seen.get(A.RATE_FROM),
                "status": seen.get(A.STATUS),
                "headline": seen.get(A.HEADLINE),
                "faults": tables[T.FAULTS].filter(key).height,
                "unparsed": counts.get("unparsed", 0),
                "findings": findings.get(run_key, 0),
            }
        )
    return {"version": SUMMARY_VERSION, "sources": sorted(set(runs.get_column(C.SOURCE))), "runs": out_runs}
