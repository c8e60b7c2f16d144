"""One acceptance table across engines, per run: the normalised rate and the acceptance length from every
place the run has them, each saying which engine's figure it is and where it came from; per position; per
request; and the depth in force. `check --json` prints it under `acceptance` (docs/acceptance.md).

The normalised rate is accepted draft tokens / drafted tokens: vLLM's `draft_acceptance_rate` and
(accept len - 1) / k for a chain of k drafts. SGLang's interval `accept rate` (2026: accept len / (k + 1),
the bonus token counted) is shown as logged beside it, never in its place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from tracelens.analysis import vllm_metrics
from tracelens.analysis.per_run import stat_column
from tracelens.analysis.positions import (
    LENGTH_BIN,
    NOT_PAID_ACCEPT_LEN,
    PERCENTILES,
    SGLANG,
    VLLM,
    depth_spans,
)
from tracelens.analysis.runs import RUN_KEY
from tracelens.analysis.speculation import LINES
from tracelens.tables.schema import A, C, T

if TYPE_CHECKING:
    from tracelens.analysis.result import Analysis

LISTED = 20
DEFINITION = "accepted draft tokens / drafted tokens = (accept_len - 1) / k for a chain of k drafts"


def _rounded(value: Any) -> Any:
    return round(float(value), 4) if isinstance(value, float) else value


def _iso(value: Any) -> str | None:
    return value.isoformat(sep=" ") if value is not None else None


def _by_run(frame: pl.DataFrame) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    if not frame.height:
        return out
    for row in frame.iter_rows(named=True):
        out.setdefault((row[C.SOURCE], row[C.RUN]), []).append(row)
    return out


def acceptance_table(analysis: Analysis) -> list[dict[str, Any]]:
    """Per run with any acceptance figure: its engine, the interval figures, the request figures
    (pooled and per-request means), the per-position curves of every basis, and the depth timeline."""
    vllm_lines = _vllm_lines(analysis.tables[T.SPEC_METRICS])
    vllm_runs = set(vllm_lines)
    stats = (
        {(r[C.SOURCE], r[C.RUN]): r for r in analysis.rate_stats.to_dicts()}
        if analysis.rate_stats.height
        else {}
    )
    requests = _by_run(analysis.requests)
    positions = _by_run(analysis.positions)
    curves = _by_run(analysis.spec_curves)
    depth = _by_run(analysis.depth)
    spans = _by_run(depth_spans(analysis.depth)) if analysis.depth.height else {}
    bins = _by_run(analysis.length_histogram)
    gauges = _by_run(analysis.gauges)
    unpaid = (
        _by_run(analysis.request_lengths.filter(~pl.col(A.PAID))) if analysis.request_lengths.height else {}
    )
    out = []
    for run in analysis.runs.iter_rows(named=True):
        key = (run[C.SOURCE], run[C.RUN])
        asked = requests.get(key, [])
        curve = curves.get(key, [])
        # whose figures: the requests', else the curve's (vLLM's counters), else the lines'
        engine = (
            asked[0][A.ENGINE]
            if asked
            else curve[0][A.ENGINE]
            if curve
            else VLLM
            if key in vllm_runs
            else SGLANG
        )
        interval = _interval(run, stats.get(key, {}), vllm_lines.get(key))
        if interval is None and not asked and not {key} & (positions.keys() | depth.keys() | gauges.keys()):
            continue
        gauge = gauges.get(key, [None])[0]
        by_basis: dict[str, list[float]] = {}
        for row in sorted(positions.get(key, []), key=lambda r: r[A.POSITION]):
            by_basis.setdefault(row[A.BASIS], []).append(_rounded(row[A.RATE]))
        out.append(
            {
                "label": run[A.LABEL],
                "source": run[C.SOURCE],
                "run": run[C.RUN],
                "engine": engine,
                "definition": DEFINITION,
                "interval": interval,
                "gauges": None
                if gauge is None
                else {
                    "engine": SGLANG,
                    "from": "sglang /metrics gauges (newest snapshot)",
                    "accept_len": _rounded(gauge[C.ACCEPT_LEN]),
                    "rate": _rounded(gauge[A.ACCEPTANCE_RATE]),
                    "logged_rate": _rounded(gauge[A.ACCEPT_RATE_LOGGED]),
                },
                "requests": _requests(asked[0], bins.get(key, []), unpaid.get(key, [])) if asked else None,
                "positions": {
                    "basis": curve[0][A.BASIS] if curve else None,
                    "rates": [_rounded(r[A.RATE]) for r in sorted(curve, key=lambda r: r[A.POSITION])],
                    "by_basis": by_basis,
                    "position_0": "the first drafted token",
                },
                "depth": [
                    {
                        "ts": _iso(r[C.TS]),
                        "depth": r[A.DEPTH],
                        "launch_depth": r[A.LAUNCH_DEPTH],
                        "accept_len": _rounded(r[C.ACCEPT_LEN]),
                        "rate": _rounded(r[A.ACCEPTANCE_RATE]),
                    }
                    for r in depth.get(key, [])
                ],
                # the timeline in brief: each stretch at one depth, the mean of its snapshots
                "depth_spans": [
                    {
                        "depth": r[A.DEPTH],
                        "launch_depth": r[A.LAUNCH_DEPTH],
                        "from": _iso(r[A.FIRST_TS]),
                        "to": _iso(r[A.LAST_TS]),
                        "lines": [r[C.FIRST_LINE], r[C.LAST_LINE]],
                        "snapshots": r[A.SAMPLES],
                        "accept_len": _rounded(r[C.ACCEPT_LEN]),
                        "rate": _rounded(r[A.ACCEPTANCE_RATE]),
                    }
                    for r in spans.get(key, [])
                ],
            }
        )
    return out


def _vllm_lines(spec_metrics: pl.DataFrame) -> dict[tuple[str, int], dict[str, Any]]:
    """Per vLLM run: its metrics lines' accepted / drafted tokens (pooled) and their depth (positions)."""
    if not spec_metrics.height:
        return {}
    pooled = (
        vllm_metrics.intervals(spec_metrics)
        .group_by(RUN_KEY)
        .agg(
            (pl.col(C.ACCEPTED).sum() / pl.col(C.DRAFTED).sum()).alias(A.POOLED_RATE),
            pl.coalesce(pl.col(C.PER_POSITION).list.len().max(), pl.col(C.NUM_SPEC_TOKENS).max()).alias(
                A.DEPTH
            ),
        )
    )
    return {(r[C.SOURCE], r[C.RUN]): r for r in pooled.iter_rows(named=True)}


def _interval(
    run: dict[str, Any], stats: dict[str, Any], vllm: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The run's interval-line figures: SGLang's decode lines (steady mean accept len, the rate recomputed
    against the launch depth) or vLLM's metrics lines (mean acceptance length, accepted / drafted tokens
    over all its intervals)."""
    # a run without lines has its mean from another place (`A.RATE_FROM`), shown as that place's
    lined = run.get(A.RATE_FROM) in LINES
    length = stats.get(stat_column(C.ACCEPT_LEN, "mean")) or (run.get(A.MEAN_ACCEPT_LEN) if lined else None)
    if length is None:
        return None
    steps = run.get(C.SPEC_NUM_STEPS) or (vllm or {}).get(A.DEPTH)
    rate = (vllm or {}).get(A.POOLED_RATE) if vllm else stats.get(stat_column(A.ACCEPTANCE_RATE, "mean"))
    if rate is None and steps:
        rate = (length - 1) / steps
    return {
        "engine": VLLM if vllm else SGLANG,
        "from": "vllm SpecDecoding metrics lines" if vllm else "sglang Decode batch lines (steady rounds)",
        "accept_len": _rounded(length),
        "rate": _rounded(rate),
        "depth": steps,
        "logged_rate_definition": None if vllm else run.get(A.ACCEPT_RATE_DEFINITION),
    }


def _requests(
    row: dict[str, Any], bins: list[dict[str, Any]], unpaid: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "engine": row[A.ENGINE],
        "from": f"{row[A.ENGINE]} per-request metrics",
        "count": row[A.REQUESTS],
        "pooled": {"accept_len": _rounded(row[A.POOLED_ACCEPT_LEN]), "rate": _rounded(row[A.POOLED_RATE])},
        "per_request_mean": {
            "accept_len": _rounded(row[A.REQUEST_MEAN_ACCEPT_LEN]),
            "rate": _rounded(row[A.REQUEST_MEAN_RATE]),
        },
        "accept_len_percentiles": {
            f"p{round(q * 100)}": _rounded(row[f"{A.ACCEPT_LEN_P}{round(q * 100)}"]) for q in PERCENTILES
        },
        "accept_len_histogram": [
            {"from": b[A.BIN_FROM], "to": b[A.BIN_FROM] + LENGTH_BIN, "count": b[A.COUNT]} for b in bins
        ],
        "not_paid": row[A.NOT_PAID],
        "not_paid_below_accept_len": NOT_PAID_ACCEPT_LEN,
        # the requests that did not pay, lowest acceptance first (at most `LISTED`)
        "not_paid_requests": [
            {"rid": r[C.RID], "accept_len": _rounded(r[C.ACCEPT_LEN])}
            for r in sorted(unpaid, key=lambda r: r[C.ACCEPT_LEN])[:LISTED]
        ],
    }
