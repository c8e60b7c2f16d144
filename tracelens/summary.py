"""Per source and run: what happened, in numbers. The layout of `summarize` is the stable JSON of
`tracelens summary --json` (documented in the README); add keys, never rename or remove them."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracelens.analysis import Analysis, acceptance
from tracelens.schema import KINDS, A, C, T

SUMMARY_VERSION = 1


def _stats(series: pl.Series, quantiles: bool) -> dict[str, float | None]:
    clean = series.drop_nulls().drop_nans() if series.dtype.is_float() else series.drop_nulls()
    if clean.is_empty():
        out: dict[str, float | None] = {"mean": None, "median": None}
        if quantiles:
            out |= {"p10": None, "p90": None}
        return out
    out = {"mean": round(float(clean.mean()), 4), "median": round(float(clean.median()), 4)}  # type: ignore[arg-type]
    if quantiles:
        out["p10"] = round(float(clean.quantile(0.1, "linear")), 4)  # type: ignore[arg-type]
        out["p90"] = round(float(clean.quantile(0.9, "linear")), 4)  # type: ignore[arg-type]
    return out


def _iso(value: Any) -> str | None:
    return value.isoformat(sep=" ") if value is not None else None


def summarize(analysis: Analysis) -> dict[str, Any]:
    """The summary of every run of every source."""
    tables = analysis.tables
    runs = tables[T.RUNS]
    series = analysis.series
    # The figures come from the analysis' per-run numbers (DP-combined rounds, steady state, vLLM's
    # metrics lines), the ones `compare`, the report and the TUI show.
    steady = acceptance.steady_rows(series)
    overview = {(r[C.SOURCE], r[C.RUN]): r for r in analysis.runs.to_dicts()}
    findings: dict[tuple[str, int], int] = {}
    for finding in analysis.findings:
        findings[(finding.source, finding.run)] = findings.get((finding.source, finding.run), 0) + 1
    lines = tables[T.LINES]
    kind_counts = lines.group_by(C.SOURCE, C.RUN, C.KIND).len()
    decode = tables[T.BATCHES].filter(pl.col(C.PHASE) == "decode")
    out_runs = []
    for run in runs.iter_rows(named=True):
        key = (pl.col(C.SOURCE) == run[C.SOURCE]) & (pl.col(C.RUN) == run[C.RUN])
        counts = dict(kind_counts.filter(key).select(C.KIND, "len").iter_rows())
        run_decode = decode.filter(key)
        run_steady = steady.filter(key)
        seen = overview.get((run[C.SOURCE], run[C.RUN]), {})
        accept = _stats(run_steady.get_column(C.ACCEPT_LEN), quantiles=True)
        if accept["mean"] is None and seen.get(A.MEAN_ACCEPT_LEN) is not None:
            accept["mean"] = round(float(seen[A.MEAN_ACCEPT_LEN]), 4)  # vLLM: its metrics lines'
        spec = None
        if run[C.SPEC_ALGORITHM]:
            spec = {
                "algorithm": run[C.SPEC_ALGORITHM],
                "num_steps": run[C.SPEC_NUM_STEPS],
                "eagle_topk": run[C.SPEC_EAGLE_TOPK],
                "num_draft_tokens": run[C.SPEC_NUM_DRAFT_TOKENS],
                "draft_model": run[C.SPEC_DRAFT_MODEL],
            }
        out_runs.append(
            {
                "source": run[C.SOURCE],
                "run": run[C.RUN],
                "start": _iso(run[C.START_TS]),
                "end": _iso(run[C.END_TS]),
                "model": run[C.MODEL],
                "tp_size": run[C.TP_SIZE],
                "dp_size": run[C.DP_SIZE],
                "speculative": spec,
                "lines": run[C.LINE_COUNT],
                "lines_by_kind": {k: counts.get(k, 0) for k in KINDS},
                "decode_lines": run_decode.height,
                "accept_len": accept,
                "gen_throughput": _stats(run_steady.get_column(C.GEN_THROUGHPUT), quantiles=False),
                "acceptance_rate": _stats(run_steady.get_column(A.ACCEPTANCE_RATE), quantiles=False),
                "status": seen.get(A.STATUS),
                "headline": seen.get(A.HEADLINE),
                "faults": tables[T.FAULTS].filter(key).height,
                "unparsed": counts.get("unparsed", 0),
                "findings": findings.get((run[C.SOURCE], run[C.RUN]), 0),
            }
        )
    return {"version": SUMMARY_VERSION, "sources": sorted(set(runs.get_column(C.SOURCE))), "runs": out_runs}
