"""The report page: header, run cards, figures, tables, all in one HTML text.

Every value from a log passes through `escape.text` (HTML) or was made safe for Plotly in `figures`;
the page's own scripts are allowed by their SHA-256 in the Content Security Policy, which also forbids
any network access, so the file behaves the same on an air-gapped machine.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import PurePath
from typing import Any

import plotly.io as pio
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from tracelens.analysis import Analysis
from tracelens.analysis.capture import run_layer_ids
from tracelens.analysis.findings import SEVERITIES, Finding
from tracelens.report.downsample import TIME_POINTS
from tracelens.report.escape import clip, safe_json_text, text
from tracelens.report.figures import Plot, baselines, run_colors
from tracelens.tables.schema import A, C, T

EVIDENCE_CHARS = 1000  # of one evidence line (a log line can be megabytes)
TRACEBACK_CHARS = 20000
MAX_INCIDENT_ROWS = 300
DATA_ID = "tl-data"


def _asset(name: str) -> str:
    return resources.files("tracelens.report").joinpath("assets", name).read_text(encoding="utf-8")


def _sha256(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


# ----------------------------------------------------------------------------- formatting


def _num(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    total = round(value)
    if total < 120:
        return f"{total} s"
    if total < 7200:
        return f"{total // 60} min {total % 60:02d} s"
    return f"{total // 3600} h {total % 3600 // 60:02d} min"


def _time(value: dt.datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _spec(run: dict[str, Any]) -> str:
    algorithm = run[C.SPEC_ALGORITHM]
    if not algorithm:
        return "none"
    parts = [str(algorithm)]
    for key, name in (
        (C.SPEC_NUM_STEPS, "steps"),
        (C.SPEC_EAGLE_TOPK, "topk"),
        (C.SPEC_NUM_DRAFT_TOKENS, "draft"),
    ):
        if run[key] is not None:
            parts.append(f"{name}={run[key]}")
    return " ".join(parts)


def _speedup(run: dict[str, Any]) -> str:
    if run[A.SPEEDUP] is None:
        return "-"
    low, high = run[A.SPEEDUP_LOW], run[A.SPEEDUP_HIGH]
    interval = "" if low is None or high is None else f" [{low:.2f}-{high:.2f}]"
    return f"{run[A.SPEEDUP]:.2f}x{interval}"


def _swatch(color: str) -> str:
    return f'<span class="swatch" style="--run:{color}"></span>'


def _run_cell(label: str | None, colors: dict[str, str]) -> str:
    if label is None:
        return "-"
    return f'<span class="run">{_swatch(colors.get(label, "#888"))}{text(label)}</span>'


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """Cells are HTML already (escaped by the caller); headers are plain text."""
    head = "".join(f"<th>{text(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


# ----------------------------------------------------------------------------- sections


def _header(analysis: Analysis, title: str, version: str, generated: dt.datetime) -> str:
    sources = analysis.tables[T.RUNS].get_column(C.SOURCE).unique(maintain_order=True).to_list()
    runs = analysis.runs
    start = runs.get_column(C.START_TS).drop_nulls()
    end = runs.get_column(C.END_TS).drop_nulls()
    span = "-"
    if start.len() or end.len():
        first = start.min() if start.len() else end.min()
        last = end.max() if end.len() else start.max()
        span = f"{_time(first)} to {_time(last)}"  # type: ignore[arg-type]
    items = "".join(f"<li>{text(s)}</li>" for s in sources)
    names = ", ".join(PurePath(s).name for s in sources[:4]) + (
        f" and {len(sources) - 4} more" if len(sources) > 4 else ""
    )
    counts = {s: 0 for s in SEVERITIES}
    for finding in analysis.findings:
        counts[finding.severity] = counts.get(finding.severity, 0) + 1
    verdict = " ".join(
        f'<a class="badge sev-{s}" href="#findings">{counts[s]} {s}{"s" if counts[s] != 1 and s != "info" else ""}</a>'
        for s in SEVERITIES
    )
    return f"""
<header class="top">
  <div class="title-row">
    <h1>{text(title)}</h1>
    <div class="controls">
      <span class="control-label">Time axis</span>
      <div class="segmented" role="group" aria-label="time axis">
        <button type="button" data-time="since" aria-pressed="true">since run start</button>
        <button type="button" data-time="clock" aria-pressed="false">wall clock</button>
      </div>
      <button type="button" id="theme-toggle" title="colour scheme: follows the system, light or dark">theme: auto</button>
    </div>
  </div>
  <dl class="meta">
    <div><dt>sources</dt><dd><details><summary>{len(sources)} file(s): {text(names)}</summary><ul class="sources">{items}</ul></details></dd></div>
    <div><dt>time span</dt><dd>{text(span)}</dd></div>
    <div><dt>runs</dt><dd>{runs.height}</dd></div>
    <div><dt>findings</dt><dd>{verdict}</dd></div>
    <div><dt>made</dt><dd>{text(generated.strftime("%Y-%m-%d %H:%M:%S %Z").strip())} by tracelens {text(version)}</dd></div>
  </dl>
</header>"""


def _nav(plots: list[Plot], extra: list[tuple[str, str]]) -> str:
    links = [("verdicts", "Verdicts"), ("runs", "Runs"), *((p.key, p.title) for p in plots), *extra]
    return (
        '<nav class="toc">' + "".join(f'<a href="#{key}">{text(name)}</a>' for key, name in links) + "</nav>"
    )


def _stat(value: str, name: str, cls: str = "") -> str:
    return f'<div class="stat {cls}"><b>{text(value)}</b><span>{name}</span></div>'


def _verdict(run: dict[str, Any]) -> str:
    """`good` / `bad` when the whole speedup interval is above / below 1 (the analysis' numbers)."""
    low, high = run[A.SPEEDUP_LOW], run[A.SPEEDUP_HIGH]
    if low is not None and low > 1:
        return "good"
    if high is not None and high < 1:
        return "bad"
    return ""


def _banner(analysis: Analysis, colors: dict[str, str]) -> str:
    """Every run's verdict, worst first: status, run, what is wrong, and the fix when one is known."""
    if not analysis.verdicts:
        return ""
    items = []
    for v in analysis.verdicts:
        fix = f'<div class="fix"><b>fix:</b> {text(v.fix)}</div>' if v.fix else ""
        items.append(
            f'<li class="status-{v.status}" data-status="{v.status}"><span class="badge status">{v.status}</span> '
            f"{_run_cell(v.label, colors)}: {text(v.headline)}{fix}</li>"
        )
    return f'<section id="verdicts"><h2>Verdicts</h2><ul class="verdicts">{"".join(items)}</ul></section>'


def _cards(analysis: Analysis, colors: dict[str, str]) -> str:
    base = baselines(analysis)
    embed = dict(analysis.embed.select(A.LABEL, A.EMBED_STATE).iter_rows())
    debug_ids = {
        (source, run): ids for source, run, ids in run_layer_ids(analysis.tables.scan(T.DEBUG)).iter_rows()
    }
    warnings: dict[str, int] = {}
    for finding in analysis.findings:
        if finding.severity == "warning":
            warnings[finding.label] = warnings.get(finding.label, 0) + 1
    cards = []
    for run in analysis.runs.iter_rows(named=True):
        label = run[A.LABEL]
        status = run.get(A.STATUS) or "incomplete"
        badges = [f'<span class="badge status">{text(status)}</span>']
        if label in base:
            badges.append('<span class="badge">baseline</span>')
        if run[A.ERRORS]:
            badges.append(f'<span class="badge sev-error">{run[A.ERRORS]} error(s)</span>')
        if warnings.get(label):
            badges.append(f'<span class="badge sev-warning">{warnings[label]} warning(s)</span>')
        if run[A.ENDED_CLEANLY] is False:
            badges.append('<span class="badge sev-warning">crashed</span>')
        parallel = ", ".join(
            f"{name}={run[key]}"
            for key, name in ((C.TP_SIZE, "tp"), (C.DP_SIZE, "dp"), (C.PP_SIZE, "pp"), (C.EP_SIZE, "ep"))
            if run[key] is not None and (run[key] != 1 or key == C.TP_SIZE)
        )
        lines = [f'<div class="headline">{text(run.get(A.HEADLINE) or "")}</div>']
        lines.append(" · ".join(text(v) for v in (run[C.MODEL] or "model unknown", parallel) if v))
        if run[C.SPEC_ALGORITHM]:
            lines.append(" · ".join(text(v) for v in (_spec(run), run[C.SPEC_DRAFT_MODEL]) if v))
        else:
            lines.append("no speculative decoding")
        stats = [
            _stat(_num(run[A.MEAN_ACCEPT_LEN]), "accept len"),
            _stat(_pct(run[A.MEAN_ACCEPTANCE_RATE]), "acceptance"),
            _stat(_num(run[A.MEAN_GEN_THROUGHPUT], 1), "tok/s"),
        ]
        if run[A.BASELINE] is not None:
            low, high = run[A.SPEEDUP_LOW], run[A.SPEEDUP_HIGH]
            interval = "" if low is None or high is None else f"[{low:.2f}-{high:.2f}] "
            value = "-" if run[A.SPEEDUP] is None else f"{run[A.SPEEDUP]:.2f}x"
            stats.append(_stat(value, f"speedup {text(interval)}".strip(), _verdict(run)))
        rows: list[tuple[str, str]] = []
        if run[A.BASELINE] is not None:
            rows.append(("baseline", _run_cell(run[A.BASELINE], colors)))
        if run[C.SPEC_ALGORITHM]:
            ids = debug_ids.get((run[C.SOURCE], run[C.RUN]))
            if ids is not None:
                rows.append(("layer ids", text("[" + ", ".join(str(i) for i in ids) + "] (debug lines)")))
            if run[A.CAPTURED_LAYERS]:
                rows.append(("draft receives", text(run[A.CAPTURED_LAYERS])))
            if label in embed:
                rows.append(("embed capture", text(embed[label])))
        ready = _seconds(run[A.TIME_TO_READY_S])
        if run[A.EXPECTED_TIME_TO_READY_S] is not None and run[A.TIME_TO_READY_S] is not None:
            ready += f" (usually {_seconds(run[A.EXPECTED_TIME_TO_READY_S])})"
        rows += [
            ("duration", text(_seconds(run[A.DURATION_S]))),
            ("ready in", text(ready)),
            ("findings", f'<a href="#findings">{run[A.FINDINGS]}</a>'),
        ]
        body = "".join(f"<div><dt>{text(k)}</dt><dd>{v}</dd></div>" for k, v in rows)
        color = colors.get(label, "#888")
        cards.append(
            f'<article class="card status-{text(status)}" data-status="{text(status)}" style="--run:{color}">'
            f'<h3>{_swatch(color)}<span class="label">{text(label)}</span>{"".join(badges)}</h3>'
            + lines[0]
            + "".join(f'<div class="sub">{line}</div>' for line in lines[1:])
            + f'<div class="stats">{"".join(stats)}</div><dl>{body}</dl></article>'
        )
    return (
        '<section id="runs"><h2>Runs</h2><p class="note">Means are over steady-state decode lines (after '
        "warm-up); the speedup compares throughput at matched batch sizes, with its 95% interval.</p>"
        f'<div class="cards">{"".join(cards)}</div></section>'
    )


def _plot_section(plot: Plot) -> str:
    return (
        f'<section id="{plot.key}" class="plot-section"><h2>{text(plot.title)}</h2>'
        f'<p class="note">{text(plot.note)}</p>'
        f'<div class="plot" id="plot-{plot.key}" data-key="{plot.key}"></div></section>'
    )


def _comparison(analysis: Analysis, colors: dict[str, str]) -> str:
    headers = [
        "run",
        "model",
        "speculative",
        "accept len",
        "acceptance",
        "tok/s",
        "baseline",
        "speedup [95%]",
        "ready in",
        "findings",
    ]
    speedups = {
        label: sizes
        for label, sizes in analysis.comparison.select(A.LABEL, A.MATCHED_BATCH_SIZES).iter_rows()
    }
    rows = []
    for run in analysis.runs.iter_rows(named=True):
        sizes = speedups.get(run[A.LABEL])
        matched = "" if not sizes else f' <span class="dim">(batch {", ".join(str(s) for s in sizes)})</span>'
        rows.append(
            [
                _run_cell(run[A.LABEL], colors),
                text(run[C.MODEL]),
                text(_spec(run)),
                text(_num(run[A.MEAN_ACCEPT_LEN])),
                text(_pct(run[A.MEAN_ACCEPTANCE_RATE])),
                text(_num(run[A.MEAN_GEN_THROUGHPUT], 1)),
                _run_cell(run[A.BASELINE], colors),
                text(_speedup(run)) + matched,
                text(_seconds(run[A.TIME_TO_READY_S])),
                str(run[A.FINDINGS]),
            ]
        )
    diffs = []
    for (run_a, run_b), diff in analysis.config_diff.group_by([A.RUN_A, A.RUN_B], maintain_order=True):
        cells = [
            [f"<code>{text(key)}</code>", f"<code>{text(a)}</code>", f"<code>{text(b)}</code>"]
            for key, a, b in diff.select(C.KEY, A.VALUE_A, A.VALUE_B).iter_rows()
        ]
        table = _table(["server arg", str(run_a), str(run_b)], cells, "diff")
        diffs.append(
            f"<details open><summary>{_run_cell(run_a, colors)} vs {_run_cell(run_b, colors)}: "
            f"{diff.height} server arg(s) differ</summary>{table}</details>"
        )
    diff_html = "".join(diffs) or '<p class="note">No run has a baseline to compare its server args with.</p>'
    return (
        '<section id="comparison"><h2>Run comparison</h2>'
        + _table(headers, rows, "compare")
        + '<h3>Server args that differ from the baseline</h3><p class="note">Ports, hosts and seeds are left out.</p>'
        + diff_html
        + "</section>"
    )


def _evidence(finding: Finding) -> str:
    lines = "".join(
        f'<div class="ev"><span class="where">{text(e.where)}</span><code>{text(clip(e.text, EVIDENCE_CHARS))}</code></div>'
        for e in finding.evidence
    )
    return f'<div class="evidence">{lines}</div>' if lines else ""


def _findings(analysis: Analysis, colors: dict[str, str]) -> str:
    if not analysis.findings:
        return f'<section id="findings"><h2>Findings</h2><p class="note">No findings in {analysis.runs.height} run(s).</p></section>'
    rows = []
    for f in analysis.findings:
        severity = f.severity if f.severity in SEVERITIES else "info"
        rows.append(
            f'<tr data-severity="{severity}"><td><span class="badge sev-{severity}">{severity}</span></td>'
            f"<td>{_run_cell(f.label, colors)}</td><td class=nowrap>{text(_time(f.ts))}</td>"
            f"<td><code>{text(f.code)}</code></td><td><div class=what>{text(f.message)}</div>{_evidence(f)}</td></tr>"
        )
    filters = "".join(
        f'<label><input type="checkbox" data-filter="{s}" checked> {s}</label>' for s in SEVERITIES
    )
    head = "".join(f"<th>{h}</th>" for h in ("severity", "run", "time", "code", "what, with the log lines"))
    return (
        '<section id="findings"><h2>Findings</h2>'
        f'<p class="note">The most severe first within each run; each with the log lines it rests on '
        f'(<code>source:line</code>). <span class="filters">{filters}</span></p>'
        f'<div class="scroll"><table class="findings" id="findings-table"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div></section>"
    )


def _incidents(analysis: Analysis, colors: dict[str, str]) -> str:
    incidents = analysis.incidents
    if not incidents.height:
        return ""
    rows = []
    for inc in incidents.head(MAX_INCIDENT_ROWS).iter_rows(named=True):
        ranks = inc[A.RANKS] or []
        where = f"{inc[C.SOURCE]}:{inc[C.FIRST_LINE]}" + (
            f"-{inc[C.LAST_LINE]}" if inc[C.LAST_LINE] not in (None, inc[C.FIRST_LINE]) else ""
        )
        traceback = inc[C.TRACEBACK] or ""
        detail = (
            f"<details><summary>traceback</summary><pre>{text(clip(traceback, TRACEBACK_CHARS))}</pre></details>"
            if traceback and traceback != inc[C.MESSAGE]
            else ""
        )
        rows.append(
            [
                _run_cell(inc[A.LABEL], colors),
                f"<span class=nowrap>{text(_time(inc[A.FIRST_TS]))}</span>",
                text(inc[C.FAULT_KIND]),
                text(inc[C.COMPONENT]),
                f"<div class=what>{text(clip(inc[C.MESSAGE] or '', EVIDENCE_CHARS))}</div>"
                + (f'<div class="dim">{text(inc[A.LAST_FRAMES])}</div>' if inc[A.LAST_FRAMES] else "")
                + detail,
                text(", ".join(str(r) for r in ranks) or None),
                str(inc[A.COUNT]),
                f'<span class="where">{text(where)}</span>',
            ]
        )
    more = incidents.height - MAX_INCIDENT_ROWS
    note = f'<p class="note">{more} more incident(s) not shown.</p>' if more > 0 else ""
    return (
        '<section id="faults"><h2>Faults</h2><p class="note">Tracebacks of ranks that failed together '
        "are one incident.</p>"
        + _table(
            ["run", "first seen", "kind", "component", "what", "ranks", "lines", "where"], rows, "faults"
        )
        + note
        + "</section>"
    )


def _capture(analysis: Analysis, colors: dict[str, str]) -> str:
    capture = analysis.capture
    if not capture.height:
        return ""
    rows = []
    for site in capture.iter_rows(named=True):
        shapes = site[C.SHAPES]
        norm = "-"
        if site[A.NORM_MEAN] is not None:
            norm = f"{site[A.NORM_MEAN]:.3g} [{site[A.NORM_MIN]:.3g}-{site[A.NORM_MAX]:.3g}]"
        rows.append(
            [
                _run_cell(site[A.LABEL], colors),
                f"<code>{text(site[C.TAG])}[{text(site[C.SITE])}]</code>",
                text(site[C.EVENT]),
                str(site[A.COUNT]),
                text(site[C.NUM_AUX]),
                text(site[C.NUM_ITEMS]),
                text(", ".join(str(list(s)) for s in shapes) if shapes else None),
                text(norm),
            ]
        )
    return (
        '<section id="capture"><h2>EAGLE-3 capture (debug lines)</h2><p class="note">Per run and debug '
        "site: how often it printed, the last aux count, concatenated items and shapes, and the norms.</p>"
        + _table(
            ["run", "site", "event", "lines", "num_aux", "num_items", "shapes", "norm mean [min-max]"], rows
        )
        + "</section>"
    )


def _data_block(plots: list[Plot]) -> str:
    parts = []
    for plot in plots:
        figure = pio.to_json(plot.figure, validate=False, engine="json")
        parts.append(f'{{"key":"{plot.key}","time":{str(plot.time_axis).lower()},"figure":{figure}}}')
    return safe_json_text('{"plots":[' + ",".join(parts) + "]}")


def _benchmarks(analysis: Analysis, colors: dict[str, str]) -> str:
    """sglang.bench_serving results in the logs, beside the server-side figures of their run."""
    from tracelens.analysis.benchmarks import benchmarks_beside_runs
    from tracelens.formatting import BENCH_COLUMNS

    bench = benchmarks_beside_runs(analysis.runs, analysis.tables)
    if not bench.height:
        return ""
    rows = [
        [_run_cell(row[A.LABEL], colors), str(row[A.BENCH_LINE])]
        + [text(_num(row[column], digits)) for _, column, digits in BENCH_COLUMNS]
        for row in bench.iter_rows(named=True)
    ]
    return (
        '<section id="benchmarks"><h2>Client-side benchmarks</h2><p class="note">Result blocks of '
        "<code>sglang.bench_serving</code> found in the logs, beside the mean accept len and throughput of "
        "the run's decode lines.</p>"
        + _table(["run", "line"] + [h for h, _, _ in BENCH_COLUMNS], rows)
        + "</section>"
    )


def render_page(
    analysis: Analysis, plots: list[Plot], title: str, version: str, generated: dt.datetime
) -> str:
    """The whole HTML text."""
    colors = run_colors(analysis)
    plotly_js = get_plotlyjs().replace("</script", "<\\/script")
    app_js = _asset("report.js")
    css = _asset("report.css")
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
    sections = [_banner(analysis, colors), _cards(analysis, colors)]
    sections += [_plot_section(p) for p in plots if p.key not in ("timeline", "curves")]
    sections += [_comparison(analysis, colors), _benchmarks(analysis, colors), _findings(analysis, colors)]
    sections += [_plot_section(p) for p in plots if p.key == "timeline"]
    sections += [_incidents(analysis, colors), _capture(analysis, colors)]
    sections += [_plot_section(p) for p in plots if p.key == "curves"]
    extra = [("comparison", "Comparison"), ("findings", "Findings")]
    if analysis.incidents.height:
        extra.append(("faults", "Faults"))
    if analysis.capture.height:
        extra.append(("capture", "Capture"))
    footer = (
        f"Made by tracelens {text(version)}. A self-contained file: plotly.js {text(get_plotlyjs_version())} is inside "
        "it and it loads nothing from the network. Numbers come from the tracelens analysis; to keep the file "
        f"light, a time series of more than {TIME_POINTS} points per run is drawn as the lowest and highest "
        "value of each time bucket, and distributions from values at evenly spaced ranks."
    )
    return f"""<!DOCTYPE html>
<html lang="en" data-theme="auto">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="generator" content="tracelens {text(version)}">
<title>{text(title)}</title>
<style>{css}</style>
</head>
<body>
{_header(analysis, title, version, generated)}
{_nav([p for p in plots], extra)}
<main>
{"".join(sections)}
</main>
<footer>{footer}</footer>
<script type="application/json" id="{DATA_ID}">{_data_block(plots)}</script>
<script>{plotly_js}</script>
<script>{app_js}</script>
</body>
</html>
"""
