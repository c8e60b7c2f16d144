"""The report's figures over time: acceptance, acceptance rate and throughput per decode line, and the
start-up phases with the faults. Drawn from frames of the `Analysis`; nothing is computed here but which
rows to draw (`tracelens.analysis.plotdata`) and where they sit on the page's time axes.

Time axes. Every time figure is built in minutes since its run's start (the `t_since_start_s` of the
analysis); each of its traces carries its run's start (`meta.origin`, milliseconds since the epoch of
the log's own clock) so the page can switch every time figure to wall-clock time and back, and keep the
range picked in one figure in step with the others.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import polars as pl

from tracelens.analysis import Analysis
from tracelens.analysis.plotdata import TIME_POINTS, decimate, keep_peaks
from tracelens.report.escape import plot_text
from tracelens.report.figure_base import (
    PALETTE,
    Plot,
    X,
    baselines,
    epoch_ms,
    minutes,
    rgba,
    runs_with,
    time_layout,
)
from tracelens.tables.schema import A, C


def _series_figure(
    analysis: Analysis,
    colors: dict[str, str],
    origins: dict[str, float],
    value: str,
    median: str | None,
    band: tuple[str, str] | None,
    what: str,
    fmt: str,
    per_model: bool = False,
) -> tuple[go.Figure, bool] | None:
    """The figure, and whether a run had more lines than it draws."""
    runs = runs_with(analysis.series, value)
    if not runs:
        return None
    fig = go.Figure()
    thinned = False
    base = baselines(analysis)
    changes = analysis.changes.filter(pl.col(A.METRIC) == value)
    axes = _model_axes(analysis, [label for label, _ in runs]) if per_model else {}
    for label, part in runs:
        color, origin = colors.get(label, PALETTE[0]), origins.get(label, 0.0)
        meta = {"origin": origin}
        name = plot_text(label)
        part = part.with_columns((pl.col(A.T_SINCE_START) / 60.0).alias(X))
        first = len(fig.data)
        thinned = thinned or part.height > TIME_POINTS
        if band is not None:
            edge = decimate(part, X, list(band))
            x = edge.get_column(X).to_numpy()
            common = {"legendgroup": label, "showlegend": False, "hoverinfo": "skip", "meta": meta}
            fig.add_scatter(x=x, y=edge.get_column(band[0]).to_numpy(), mode="lines", line_width=0, **common)
            fig.add_scatter(
                x=x,
                y=edge.get_column(band[1]).to_numpy(),
                mode="lines",
                line_width=0,
                fill="tonexty",
                fillcolor=rgba(color, 0.18),
                **common,
            )
        raw = keep_peaks(part, X, value)
        fig.add_scatter(
            x=raw.get_column(X).to_numpy(),
            y=raw.get_column(value).to_numpy(),
            customdata=raw.get_column(C.LINE_NO).to_numpy().astype(np.int32),
            mode="markers",
            marker={"size": 3, "color": color, "opacity": 0.45},
            name=name,
            legendgroup=label,
            showlegend=False,
            meta=meta,
            hovertemplate=f"%{{fullData.name}}<br>{what} %{{y:{fmt}}}<br>line %{{customdata}}<extra></extra>",
        )
        if median is None:
            _events(fig, analysis, label, part, value, color, meta)
            continue
        mid = decimate(part, X, [median])
        fig.add_scatter(
            x=mid.get_column(X).to_numpy(),
            y=mid.get_column(median).to_numpy(),
            mode="lines",
            line={"color": color, "width": 2, "dash": "dash" if label in base else "solid"},
            name=name,
            legendgroup=label,
            meta=meta,
            hovertemplate=f"%{{fullData.name}}<br>rolling median {what} %{{y:{fmt}}}<extra></extra>",
        )
        steps = changes.filter(pl.col(A.LABEL) == label)
        if steps.height:
            steps = steps.with_columns(minutes(pl.col(C.TS), origin))
            fig.add_scatter(
                x=steps.get_column(X).to_numpy(),
                y=steps.get_column(A.AFTER).to_numpy(),
                customdata=np.stack(
                    [steps.get_column(A.BEFORE).to_numpy(), steps.get_column(C.LINE_NO).to_numpy()], axis=1
                ),
                mode="markers",
                marker={"symbol": "diamond-open", "size": 12, "color": color, "line": {"width": 2}},
                name=name,
                legendgroup=label,
                showlegend=False,
                meta=meta,
                hovertemplate=(
                    f"%{{fullData.name}}<br>{what} steps from %{{customdata[0]:{fmt}}} to %{{y:{fmt}}}"
                    "<br>line %{customdata[1]}<extra>change point</extra>"
                ),
            )
        _events(fig, analysis, label, part, value, color, meta)
        axis = axes.get(label)
        if axis:
            for trace in fig.data[first:]:
                trace.yaxis = axis
    _baseline_lines(fig, analysis, runs, value, colors, axes, fmt)
    time_layout(fig, what, height=420 if not axes else max(420, 240 * len(set(axes.values()))))
    if axes:
        _stack_axes(fig, analysis, axes, what)
    return fig, thinned


def _events(
    fig: go.Figure, analysis: Analysis, label: str, part: pl.DataFrame, value: str, color: str, meta: dict
) -> None:
    """A dotted vertical line where the run crashed, and one where it ended and the server was started
    again: what a step or a gap in the series means is in plain view."""
    values = part.get_column(value).drop_nulls()
    if not values.len():
        return
    low, high = float(values.min()), float(values.max())  # type: ignore[arg-type]
    run = analysis.runs.filter(pl.col(A.LABEL) == label)
    marks: list[tuple[float, str]] = []
    crashes = analysis.incidents.filter(
        (pl.col(A.LABEL) == label)
        & pl.col(C.FAULT_KIND).is_in(["exception", "oom", "nccl", "watchdog", "sigquit"])
    )
    origin = meta["origin"]
    for (ts,) in crashes.select(A.FIRST_TS).iter_rows():
        if ts is not None:
            marks.append(((epoch_ms(ts) - origin) / 60000.0, "crash"))
    if run.height:
        row = run.row(0, named=True)
        later = analysis.runs.filter((pl.col(C.SOURCE) == row[C.SOURCE]) & (pl.col(C.RUN) > row[C.RUN]))
        if later.height and row[C.END_TS] is not None:
            marks.append(((epoch_ms(row[C.END_TS]) - origin) / 60000.0, "restart"))
    for x, what in marks:
        fig.add_scatter(
            x=[x, x],
            y=[low, high],
            mode="lines+text",
            text=["", plot_text(what)],
            textposition="top left",
            textfont={"color": color, "size": 10},
            line={"color": color, "width": 1.5, "dash": "dot"},
            name=plot_text(label),
            legendgroup=label,
            showlegend=False,
            meta=meta,
            hovertemplate=f"%{{fullData.name}}<br>{plot_text(what)}<extra></extra>",
        )


def _baseline_lines(
    fig: go.Figure,
    analysis: Analysis,
    runs: list[tuple[str, pl.DataFrame]],
    value: str,
    colors: dict[str, str],
    axes: dict[str, str],
    fmt: str,
) -> None:
    """Each baseline's steady-state mean as a dashed horizontal line across the figure."""
    column = {C.ACCEPT_LEN: A.MEAN_ACCEPT_LEN, C.GEN_THROUGHPUT: A.MEAN_GEN_THROUGHPUT}.get(value)
    if column is None:
        return
    longest = max(
        (float(p.select(pl.col(A.T_SINCE_START).max()).item() or 0.0) / 60.0 for _, p in runs), default=0.0
    )
    for label in sorted(baselines(analysis)):
        row = analysis.runs.filter(pl.col(A.LABEL) == label)
        if not row.height or row.item(0, column) is None:
            continue
        mean = float(row.item(0, column))
        fig.add_scatter(
            x=[0.0, longest],
            y=[mean, mean],
            mode="lines",
            line={"color": colors.get(label, PALETTE[0]), "width": 1, "dash": "longdash"},
            name=plot_text(f"{label} mean (baseline)"),
            legendgroup=label,
            yaxis=axes.get(label, "y"),
            hovertemplate=f"baseline %{{fullData.name}}: %{{y:{fmt}}}<extra></extra>",
        )


def _model_axes(analysis: Analysis, labels: list[str]) -> dict[str, str]:
    """label -> y axis ("y", "y2", ...), one per model, when the runs serve more than one model:
    unrelated models' throughputs differ by an order of magnitude and would squash each other."""
    models = dict(analysis.runs.select(A.LABEL, C.MODEL).iter_rows())
    order = list(dict.fromkeys(models.get(label) or "model unknown" for label in labels))
    if len(order) < 2:
        return {}
    names = {model: "y" if i == 0 else f"y{i + 1}" for i, model in enumerate(order)}
    out = {label: names[models.get(label) or "model unknown"] for label in labels}
    for label in baselines(analysis):
        out.setdefault(label, names.get(models.get(label) or "model unknown", "y"))
    return out


def _stack_axes(fig: go.Figure, analysis: Analysis, axes: dict[str, str], what: str) -> None:
    """One band of the figure per model, top to bottom, each with its own y axis and title."""
    models = dict(analysis.runs.select(A.LABEL, C.MODEL).iter_rows())
    names = sorted(set(axes.values()), key=lambda a: int(a[1:] or 1))
    titles = {axes[label]: models.get(label) or "model unknown" for label in axes}
    gap = 0.06
    height = (1.0 - gap * (len(names) - 1)) / len(names)
    layout = {}
    for i, axis in enumerate(names):
        top = 1.0 - i * (height + gap)
        key = "yaxis" if axis == "y" else f"yaxis{axis[1:]}"
        short = str(titles[axis]).rstrip("/").rsplit("/", 1)[-1][:28]
        layout[key] = {
            "domain": [max(top - height, 0.0), top],
            "anchor": "x",
            "title": {"text": plot_text(short), "font": {"size": 11}},
            "zeroline": False,
        }
    # The time axis sits under the lowest band.
    layout["xaxis"] = {"anchor": names[-1]}
    fig.update_layout(**layout)


THINNED = (
    f" Runs with more than {TIME_POINTS} decode lines: dots are each time bucket's lowest and highest "
    "line, the median and band are drawn at each bucket's middle line."
)


def acceptance_over_time(
    analysis: Analysis, colors: dict[str, str], origins: dict[str, float]
) -> Plot | None:
    made = _series_figure(
        analysis,
        colors,
        origins,
        C.ACCEPT_LEN,
        A.ROLLING_MEDIAN,
        (A.ROLLING_P10, A.ROLLING_P90),
        "accept len",
        ".2f",
    )
    if made is None:
        return None
    return _time_plot(
        "acceptance",
        "Acceptance over time",
        "Accept length per decode line (dots), its rolling median (line; dashed for a baseline) and rolling "
        "p10-p90 spread (band); diamonds mark a change point, dotted vertical lines a crash or a restart. "
        "DP ranks are combined per round.",
        made,
    )


def acceptance_rate_over_time(
    analysis: Analysis, colors: dict[str, str], origins: dict[str, float]
) -> Plot | None:
    made = _series_figure(analysis, colors, origins, A.ACCEPTANCE_RATE, None, None, "acceptance rate", ".0%")
    if made is None:
        return None
    made[0].update_layout(yaxis={"tickformat": ".0%", "rangemode": "tozero"})
    return _time_plot(
        "rate",
        "Acceptance rate over time (%)",
        "The share of drafted tokens accepted per verify step, (accept len - 1) / speculative_num_steps, per "
        "decode line (one definition for every SGLang version, see docs/findings.md); dotted vertical lines mark "
        "a crash or a restart.",
        made,
    )


def _time_plot(key: str, title: str, note: str, made: tuple[go.Figure, bool]) -> Plot:
    fig, thinned = made
    return Plot(key, title, note + (THINNED if thinned else ""), fig, time_axis=True)


def throughput_over_time(
    analysis: Analysis, colors: dict[str, str], origins: dict[str, float]
) -> Plot | None:
    made = _series_figure(
        analysis,
        colors,
        origins,
        C.GEN_THROUGHPUT,
        A.TPUT_ROLLING_MEDIAN,
        None,
        "tok/s",
        ".1f",
        per_model=True,
    )
    if made is None:
        return None
    return _time_plot(
        "throughput",
        "Throughput over time",
        "Generation throughput per decode line (dots, summed over DP ranks) and its rolling median (line); "
        "diamonds mark a change point, dotted vertical lines a crash or a restart, long dashes each "
        "baseline's steady mean. Runs of different models get a band of their own (tok/s, named by model).",
        made,
    )


def startup_timeline(analysis: Analysis, colors: dict[str, str], origins: dict[str, float]) -> Plot | None:
    phases = analysis.startup
    incidents = analysis.incidents.filter(pl.col(A.LABEL).is_not_null())
    labels = [
        label
        for label in analysis.runs.get_column(A.LABEL).to_list()
        if label in set(phases.get_column(A.LABEL)) or label in set(incidents.get_column(A.LABEL))
    ]
    if not labels:
        return None
    fig = go.Figure()
    rows = 0
    for label in labels:
        color, origin = colors.get(label, PALETTE[0]), origins.get(label)
        own = phases.filter(pl.col(A.LABEL) == label)
        faults = incidents.filter(pl.col(A.LABEL) == label)
        if origin is None:  # no start line and no decode line: measure from its first event
            stamps = [*own.get_column(A.START).drop_nulls(), *faults.get_column(A.FIRST_TS).drop_nulls()]
            origin = epoch_ms(min(stamps)) if stamps else 0.0
        name = plot_text(label)
        if own.height:
            rows += own.height
            own = own.with_columns(minutes(pl.col(A.START), origin))
            seconds = own.get_column(A.DURATION_S).to_numpy()
            fig.add_bar(
                y=[[name] * own.height, [plot_text(p) for p in own.get_column(A.PHASE_NAME)]],
                x=seconds / 60.0,
                base=own.get_column(X).to_numpy(),
                customdata=seconds,
                orientation="h",
                marker={"color": color, "line": {"width": 0}},
                name=name,
                legendgroup=label,
                showlegend=False,
                meta={"origin": origin, "bar": True},
                hovertemplate="%{fullData.name}<br>%{y}<br>%{customdata:.0f} s<extra></extra>",
            )
        if faults.height:
            rows += 1
            faults = faults.with_columns(minutes(pl.col(A.FIRST_TS), origin))
            what = [
                plot_text(f"{kind}: {message or ''}"[:200])
                for kind, message in faults.select(C.FAULT_KIND, C.MESSAGE).iter_rows()
            ]
            fig.add_scatter(
                y=[[name] * faults.height, ["faults"] * faults.height],
                x=faults.get_column(X).to_numpy(),
                customdata=np.stack(
                    [np.array(what, dtype=object), faults.get_column(A.COUNT).to_numpy().astype(object)],
                    axis=1,
                ),
                mode="markers",
                marker={"symbol": "x", "size": 12, "color": color, "line": {"width": 2, "color": color}},
                name=name,
                legendgroup=label,
                showlegend=False,
                meta={"origin": origin},
                hovertemplate="%{fullData.name}<br>%{customdata[0]}<br>%{customdata[1]} fault line(s)<extra>fault</extra>",
            )
    time_layout(fig, "", height=max(260, 70 + 22 * rows))
    fig.update_layout(
        barmode="overlay",
        showlegend=False,
        yaxis={"autorange": "reversed", "title": {"text": ""}, "automargin": True},
    )
    return Plot(
        "timeline",
        "Start-up phases and faults",
        "Per run: each start-up phase, from its first rank's begin to its last rank's end, and faults (a "
        "cross per incident: the tracebacks of ranks that failed together are one).",
        fig,
        time_axis=True,
    )
