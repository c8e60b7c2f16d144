"""The report page: header, run cards, figures, tables, all in one HTML text.

The markup lives in Jinja templates (`templates/*.html.j2`) with autoescape on, so every value from a
log is escaped unless it was made safe on purpose: only the page's own CSS and scripts, the Content
Security Policy and the figures' JSON (made inert by `escape.safe_json_text`) are marked `safe`, each
with a comment in the template. This module turns the `Analysis` into plain records for the templates,
its numbers formatted by `tracelens.formatting`. The page's own scripts are allowed by their SHA-256 in
the Content Security Policy, which also forbids any network access, so the file behaves the same on an
air-gapped machine.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from importlib import resources
from typing import Any

import jinja2
import plotly.io as pio
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from tracelens.analysis import Analysis, Severity, Status
from tracelens.analysis.benchmarks import benchmarks_beside_runs
from tracelens.analysis.capture import run_layer_ids
from tracelens.analysis.findings import SEVERITIES
from tracelens.analysis.plotdata import TIME_POINTS
from tracelens.analysis.speculation import LINES
from tracelens.formatting import (
    BENCH_COLUMNS,
    duration,
    number,
    percent,
    significant,
    speculative_of_run,
    speedup,
    speedup_interval,
    timestamp,
    whose_rate,
)
from tracelens.report.escape import clip, safe_json_text
from tracelens.report.figure_base import Plot, baselines, run_colors
from tracelens.tables.schema import A, C, T

EVIDENCE_CHARS = 1000  # of one evidence line (a log line can be megabytes)
TRACEBACK_CHARS = 20000
MAX_INCIDENT_ROWS = 300
DATA_ID = "tl-data"


def _missing(value: Any) -> Any:
    """A value the page has not got shows as `-` (the templates' `finalize`)."""
    return "-" if value is None else value


TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("tracelens.report", "templates"),
    autoescape=True,  # every value is log text until proven otherwise
    finalize=_missing,
    undefined=jinja2.StrictUndefined,  # a misspelt name fails the render, never prints nothing
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def _asset(name: str) -> str:
    return resources.files("tracelens.report").joinpath("assets", name).read_text(encoding="utf-8")


def _sha256(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


# ----------------------------------------------------------------------------- records for the templates


def _header(analysis: Analysis, generated: dt.datetime) -> dict[str, Any]:
    sources = analysis.tables[T.RUNS].get_column(C.SOURCE).unique(maintain_order=True).to_list()
    runs = analysis.runs
    start = runs.get_column(C.START_TS).drop_nulls()
    end = runs.get_column(C.END_TS).drop_nulls()
    span = "-"
    if start.len() or end.len():
        first = start.min() if start.len() else end.min()
        last = end.max() if end.len() else start.max()
        span = f"{timestamp(first)} to {timestamp(last)}"  # type: ignore[arg-type]
    names = ", ".join(analysis.names.get(s, s) for s in sources[:4]) + (
        f" and {len(sources) - 4} more" if len(sources) > 4 else ""
    )
    counts = dict.fromkeys(SEVERITIES, 0)
    for finding in analysis.findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    return {
        "sources": [analysis.shown_source(s) for s in sources],
        "names": names,
        "span": span,
        "runs": runs.height,
        # (severity, count, "2 warnings") per severity; "info" is a mass noun
        "counts": [
            (s, counts[s], f"{s}{'s' if counts[s] != 1 and s != Severity.INFO else ''}") for s in SEVERITIES
        ],
        "made": generated.strftime("%Y-%m-%d %H:%M:%S %Z").strip(),
    }


def _nav(analysis: Analysis, plots: list[Plot], benchmarks: dict[str, Any]) -> list[tuple[str, str]]:
    extra = [("comparison", "Comparison")]
    if benchmarks["rows"]:
        extra.append(("benchmarks", "Benchmarks"))
    extra.append(("findings", "Findings"))
    if analysis.incidents.height:
        extra.append(("faults", "Faults"))
    if analysis.capture.height:
        extra.append(("capture", "Capture"))
    return [("verdicts", "Verdicts"), ("runs", "Runs"), *((p.key, p.title) for p in plots), *extra]


def _verdict(run: dict[str, Any]) -> str:
    """`good` / `bad` when the whole speedup interval is above / below 1 (the analysis' numbers)."""
    low, high = run[A.SPEEDUP_LOW], run[A.SPEEDUP_HIGH]
    if low is not None and low > 1:
        return "good"
    if high is not None and high < 1:
        return "bad"
    return ""


def _cards(analysis: Analysis, colors: dict[str, str]) -> list[dict[str, Any]]:
    base = baselines(analysis)
    embed = dict(analysis.embed.select(A.LABEL, A.EMBED_STATE).iter_rows())
    debug_ids = {
        (source, run): ids for source, run, ids in run_layer_ids(analysis.tables.scan(T.DEBUG)).iter_rows()
    }
    warnings: dict[str, int] = {}
    for finding in analysis.findings:
        if finding.severity == Severity.WARNING:
            warnings[finding.label] = warnings.get(finding.label, 0) + 1
    cards = []
    for run in analysis.runs.iter_rows(named=True):
        label = run[A.LABEL]
        # (class, words) of each badge beside the label
        badges = [("status", run.get(A.STATUS) or Status.INCOMPLETE)]
        if label in base:
            badges.append(("", "baseline"))
        if run[A.ERRORS]:
            badges.append(("sev-error", f"{run[A.ERRORS]} error(s)"))
        if warnings.get(label):
            badges.append(("sev-warning", f"{warnings[label]} warning(s)"))
        if run[A.ENDED_CLEANLY] is False:
            badges.append(("sev-warning", "crashed"))
        parallel = ", ".join(
            f"{name}={run[key]}"
            for key, name in ((C.TP_SIZE, "tp"), (C.DP_SIZE, "dp"), (C.PP_SIZE, "pp"), (C.EP_SIZE, "ep"))
            if run[key] is not None and (run[key] != 1 or key == C.TP_SIZE)
        )
        subs = [[v for v in (run[C.MODEL] or "model unknown", parallel) if v]]
        if run[A.SPECULATIVE]:
            subs.append([v for v in (speculative_of_run(run), run[C.SPEC_DRAFT_MODEL]) if v])
        else:
            subs.append(["no speculative decoding"])
        stats = [
            (number(run[A.MEAN_ACCEPT_LEN]), "accept len", ""),
            (percent(run[A.MEAN_ACCEPTANCE_RATE]), _rate_words(run[A.RATE_ENGINE], run[A.RATE_FROM]), ""),
            (number(run[A.MEAN_GEN_THROUGHPUT], 1), "tok/s", ""),
        ]
        if run[A.BASELINE] is not None:
            interval = speedup_interval(run[A.SPEEDUP_LOW], run[A.SPEEDUP_HIGH])
            stats.append((speedup(run[A.SPEEDUP]), f"speedup {interval}".strip(), _verdict(run)))
        # (name, value, kind): kind "run" draws a run's label and colour, "findings" a link to them
        rows: list[tuple[str, Any, str]] = []
        if run[A.BASELINE] is not None:
            rows.append(("baseline", run[A.BASELINE], "run"))
        if run[A.SPEEDUP] is None and run[A.SPEEDUP_NOTE] and label not in base:  # why no speedup
            rows.append(("no speedup", run[A.SPEEDUP_NOTE], ""))
        if run[A.SPECULATIVE]:
            ids = debug_ids.get((run[C.SOURCE], run[C.RUN]))
            if ids is not None:
                rows.append(("layer ids", "[" + ", ".join(str(i) for i in ids) + "] (debug lines)", ""))
            if run[A.CAPTURED_LAYERS]:
                rows.append(("draft receives", run[A.CAPTURED_LAYERS], ""))
            if label in embed:
                rows.append(("embed capture", embed[label], ""))
        ready = duration(run[A.TIME_TO_READY_S])
        if run[A.EXPECTED_TIME_TO_READY_S] is not None and run[A.TIME_TO_READY_S] is not None:
            ready += f" (usually {duration(run[A.EXPECTED_TIME_TO_READY_S])})"
        rows += [
            ("duration", duration(run[A.DURATION_S]), ""),
            ("ready in", ready, ""),
            ("findings", run[A.FINDINGS], "findings"),
        ]
        cards.append(
            {
                "label": label,
                "status": badges[0][1],
                "color": colors.get(label, "#888"),
                "badges": badges,
                "headline": run.get(A.HEADLINE) or "",
                "subs": subs,
                "stats": stats,
                "rows": rows,
            }
        )
    return cards


def _rate_words(engine: str | None, place: str | None) -> str:
    """A card's acceptance label, with the engine whose figure the rate is and, when not the run's decode
    or metrics lines, where it came from."""
    whose = " ".join(w for w in (engine, None if place in LINES else place) if w)
    return f"acceptance ({whose})" if whose else "acceptance"


def _comparison(analysis: Analysis) -> dict[str, Any]:
    sizes_of = dict(analysis.comparison.select(A.LABEL, A.MATCHED_BATCH_SIZES).iter_rows())
    rows = [
        {
            "label": run[A.LABEL],
            "model": run[C.MODEL],
            "spec": speculative_of_run(run),
            "accept_len": number(run[A.MEAN_ACCEPT_LEN]),
            "acceptance": whose_rate(run[A.MEAN_ACCEPTANCE_RATE], run[A.RATE_ENGINE], run[A.RATE_FROM]),
            "throughput": number(run[A.MEAN_GEN_THROUGHPUT], 1),
            "baseline": run[A.BASELINE],
            "speedup": speedup(run[A.SPEEDUP], run[A.SPEEDUP_LOW], run[A.SPEEDUP_HIGH]),
            "batch_sizes": [str(s) for s in sizes_of.get(run[A.LABEL]) or []],
            "ready": duration(run[A.TIME_TO_READY_S]),
            "findings": run[A.FINDINGS],
        }
        for run in analysis.runs.iter_rows(named=True)
    ]
    diffs = [
        {
            "run_a": run_a,
            "run_b": run_b,
            "rows": list(diff.select(C.KEY, A.VALUE_A, A.VALUE_B).iter_rows()),
        }
        for (run_a, run_b), diff in analysis.config_diff.group_by([A.RUN_A, A.RUN_B], maintain_order=True)
    ]
    return {"rows": rows, "diffs": diffs}


def _benchmarks(analysis: Analysis) -> dict[str, Any]:
    bench = benchmarks_beside_runs(analysis.runs, analysis.tables)
    rows = [
        (
            row[A.LABEL],
            row[A.BENCH_LINE],
            [number(row[column], digits) for _, column, digits in BENCH_COLUMNS],
        )
        for row in bench.iter_rows(named=True)
    ]
    return {"headers": [h for h, _, _ in BENCH_COLUMNS], "rows": rows}


def _findings(analysis: Analysis) -> dict[str, Any]:
    rows = [
        {
            "severity": f.severity if f.severity in SEVERITIES else Severity.INFO,
            "label": f.label,
            "time": timestamp(f.ts),
            "code": f.code,
            "message": f.message,
            "evidence": [(e.where, clip(e.text, EVIDENCE_CHARS)) for e in f.evidence],
        }
        for f in analysis.findings
    ]
    return {"rows": rows, "runs": analysis.runs.height, "severities": SEVERITIES}


def _incidents(analysis: Analysis) -> dict[str, Any]:
    rows = []
    for inc in analysis.incidents.head(MAX_INCIDENT_ROWS).iter_rows(named=True):
        where = f"{analysis.shown_source(inc[C.SOURCE])}:{inc[C.FIRST_LINE]}" + (
            f"-{inc[C.LAST_LINE]}" if inc[C.LAST_LINE] not in (None, inc[C.FIRST_LINE]) else ""
        )
        traceback = inc[C.TRACEBACK] or ""
        rows.append(
            {
                "label": inc[A.LABEL],
                "time": timestamp(inc[A.FIRST_TS]),
                "kind": inc[C.FAULT_KIND],
                "component": inc[C.COMPONENT],
                "message": clip(inc[C.MESSAGE] or "", EVIDENCE_CHARS),
                "last_frames": inc[A.LAST_FRAMES],
                # the traceback only when it says more than the message
                "traceback": clip(traceback, TRACEBACK_CHARS) if traceback != inc[C.MESSAGE] else "",
                "ranks": ", ".join(str(r) for r in inc[A.RANKS] or []) or None,
                "count": inc[A.COUNT],
                "where": where,
            }
        )
    return {"rows": rows, "more": analysis.incidents.height - MAX_INCIDENT_ROWS}


def _capture(analysis: Analysis) -> list[dict[str, Any]]:
    rows = []
    for site in analysis.capture.iter_rows(named=True):
        shapes = site[C.SHAPES]
        norm = "-"
        if site[A.NORM_MEAN] is not None:
            low, high = significant(site[A.NORM_MIN]), significant(site[A.NORM_MAX])
            norm = f"{significant(site[A.NORM_MEAN])} [{low}-{high}]"
        rows.append(
            {
                "label": site[A.LABEL],
                "tag": site[C.TAG],
                "site": site[C.SITE],
                "event": site[C.EVENT],
                "count": site[A.COUNT],
                "num_aux": site[C.NUM_AUX],
                "num_items": site[C.NUM_ITEMS],
                "shapes": ", ".join(str(list(s)) for s in shapes) if shapes else None,
                "norm": norm,
            }
        )
    return rows


def _data_block(plots: list[Plot]) -> str:
    """The figures as one JSON text, safe inside `<script type="application/json">`."""
    parts = []
    for plot in plots:
        figure = pio.to_json(plot.figure, validate=False, engine="json")
        parts.append(f'{{"key":"{plot.key}","time":{str(plot.time_axis).lower()},"figure":{figure}}}')
    return safe_json_text('{"plots":[' + ",".join(parts) + "]}")


def render_page(
    analysis: Analysis, plots: list[Plot], title: str, version: str, generated: dt.datetime
) -> str:
    """The whole HTML text."""
    plotly_js = get_plotlyjs().replace("</script", "<\\/script")
    app_js = _asset("report.js")
    csp = "; ".join(
        [
            "default-src 'none'",
            f"script-src '{_sha256(plotly_js)}' '{_sha256(app_js)}'",
            "style-src 'unsafe-inline'",
            "img-src data: blob:",
            "font-src data:",
            "connect-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    colors = run_colors(analysis)
    benchmarks = _benchmarks(analysis)
    return TEMPLATES.get_template("page.html.j2").render(
        title=title,
        version=version,
        csp=csp,
        css=_asset("report.css"),
        plotly_js=plotly_js,
        plotly_version=get_plotlyjs_version(),
        app_js=app_js,
        data_id=DATA_ID,
        data=_data_block(plots),
        time_points=TIME_POINTS,
        colors=colors,
        header=_header(analysis, generated),
        nav=_nav(analysis, plots, benchmarks),
        plots=plots,
        verdicts=analysis.verdicts,
        cards=_cards(analysis, colors),
        comparison=_comparison(analysis),
        benchmarks=benchmarks,
        findings=_findings(analysis),
        incidents=_incidents(analysis),
        capture=_capture(analysis),
    )
