"""Per source and run: what happened, in numbers. The layout of `summarize` is the stable JSON of
`tracelens summary --json` (documented in the README); add keys, never rename or remove them."""

from __future__ import annotations

from typing import Any

import polars as pl

from tracelens.analysis import Analysis
from tracelens.analysis.per_run import RATE_MEAN, RATE_MEDIAN
from tracelens.schema import KINDS, C, T
from tracelens.tables import collect

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


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _iso(value: Any) -> str | None:
    return value.isoformat(sep=" ") if value is not None else None


def summarize(analysis: Analysis) -> dict[str, Any]:
    """The summary of every run of every source."""
    tables = analysis.tables
    runs = tables[T.RUNS]
    findings: dict[tuple[str, int], int] = {}
    for finding in analysis.findings:
        findings[(finding.source, finding.run)] = findings.get((finding.source, finding.run), 0) + 1
    kind_counts = collect(tables.scan(T.LINES).group_by(C.SOURCE, C.RUN, C.KIND).len())
    # Each run's decode lines are read alone, two columns of them: a dataset never loads `batches`.
    decode = tables.per_run(
        T.BATCHES,
        runs.select(C.SOURCE, C.RUN).iter_rows(),
        [C.SOURCE, C.RUN, C.ACCEPT_LEN, C.GEN_THROUGHPUT],
        pl.col(C.PHASE) == "decode",
    )
    rates = {
        (source, run): {"mean": _round(mean), "median": _round(median)}
        for source, run, n, mean, median in analysis.rate_stats.select(
            C.SOURCE, C.RUN, "_rates", RATE_MEAN, RATE_MEDIAN
        ).iter_rows()
        if n
    }
    out_runs = []
    for run, (_, run_decode) in zip(runs.iter_rows(named=True), decode, strict=True):
        key = (pl.col(C.SOURCE) == run[C.SOURCE]) & (pl.col(C.RUN) == run[C.RUN])
        counts = dict(kind_counts.filter(key).select(C.KIND, "len").iter_rows())
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
                "accept_len": _stats(run_decode.get_column(C.ACCEPT_LEN), quantiles=True),
                "gen_throughput": _stats(run_decode.get_column(C.GEN_THROUGHPUT), quantiles=False),
                "acceptance_rate": rates.get((run[C.SOURCE], run[C.RUN]), {"mean": None, "median": None}),
                "faults": tables[T.FAULTS].filter(key).height,
                "unparsed": counts.get("unparsed", 0),
                "findings": findings.get((run[C.SOURCE], run[C.RUN]), 0),
            }
        )
    return {"version": SUMMARY_VERSION, "sources": sorted(set(runs.get_column(C.SOURCE))), "runs": out_runs}
