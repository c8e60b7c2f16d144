"""The report's Plotly figures, each drawn from frames of the `Analysis` (nothing is computed here but
which rows to draw, see `downsample`, and where they sit on the page's time axes).

Time axes. Every time figure is built in minutes since its run's start (the `t_since_start_s` of the
analysis); each of its traces carries its run's start (`meta.origin`, milliseconds since the epoch of
the log's own clock) so the page can switch every time figure to wall-clock time and back, and keep the
range picked in one figure in step with the others.

Colours. A run has one colour everywhere (`run_colors`), in the order of `Analysis.runs`; baselines
draw dashed lines. Strings from logs go through `escape.plot_text` before Plotly sees them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import polars as pl

from tracelens.analysis import Analysis
from tracelens.analysis.acceptance import steady_rows
from tracelens.report.downsample import TIME_POINTS, decimate, keep_peaks, pair_counts, quantile_sample
from tracelens.report.escape import plot_text
from tracelens.tables.schema import A, C

PALETTE = (
    # Tableau 10 and further hues, without the reds and greens: those say a run's status (broken,
    # healthy), so a run's own colour, which follows its position, must not look like one.
    "#4e79a7",
    "#f28e2b",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#9c755f",
    "#bab0ac",
    "#17becf",
    "#bcbd22",
    "#8c6bb1",
    "#e7298a",
    "#a6761d",
    "#1f78b4",
    "#fdbf6f",
    "#6a3d9a",
    "#b15928",
    "#a6cee3",
    "#cab2d6",
)

_X = "_x"  # minutes since the run's start
MINUTES = "minutes since run start"


@dataclass
class Plot:
    """One figure of the page."""

    key: str  # the element id
    title: str
    note: str  # one sentence under the title: what is drawn and from what (plain text)
    figure: go.Figure
    time_axis: bool = False  # switches between time since start and wall clock with the others


def run_colors(analysis: Analysis) -> dict[str, str]:
    """label -> colour, one per run: runs with decode lines first (they share the plots, so they get the
    most distinct colours), each group in the order of `Analysis.runs`."""
    labels = analysis.runs.get_column(A.LABEL).to_list()
    plotted = set(analysis.series.get_column(A.LABEL).unique().to_list())
    ordered = [label for label in labels if label in plotted] + [
        label for label in labels if label not in plotted
    ]
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(ordered)}


def baselines(analysis: Analysis) -> set[str]:
    """Labels of the runs others are compared against."""
    return set(analysis.runs.get_column(A.BASELINE).drop_nulls().to_list())


def _ms(value: dt.datetime) -> float:
    return value.replace(tzinfo=dt.UTC).timestamp() * 1000.0


def run_origins(analysis: Analysis) -> dict[str, float]:
    """label -> the instant `t_since_start_s` counts from (ms since the epoch): the run's start, or for a
    run without a `server_args` line its first decode line, as the analysis measured it."""
    out: dict[str, float] = {}
    for label, start in analysis.runs.select(A.LABEL, C.START_TS).iter_rows():
        if start is not None:
            out[label] = _ms(start)
    firsts = analysis.series.group_by(A.LABEL, maintain_order=True).agg(
        pl.col(C.TS).drop_nulls().first(), pl.col(A.T_SINCE_START).drop_nulls().first()
    )
    for label, ts, since in firsts.iter_rows():
        if label not in out and ts is not None and since is not None:
            out[label] = _ms(ts) - since * 1000.0
    return out


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _layout(fig: go.Figure, *, x_title: str, y_title: str, height: int = 420) -> None:
    fig.update_layout(
        template=go.layout.Template(),
        height=height,
        margin={"l": 60, "r": 20, "t": 10, "b": 50},
        hovermode="closest",
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12},
        legend={"orientation": "h", "yanchor": "top", "y": -0.18, "x": 0, "groupclick": "togglegroup"},
        xaxis={"title": {"text": x_title}, "zeroline": False},
        yaxis={"title": {"text": y_title}, "zeroline": False},
    )


def _time_layout(fig: go.Figure, y_title: str, height: int = 420) -> None:
    _layout(fig, x_title=MINUTES, y_title=y_title, height=height)
    fig.update_layout(xaxis={"type": "linear"})


def _minutes(ts: pl.Expr, origin: float) -> pl.Expr:
    return ((ts.dt.epoch("ms").cast(pl.Float64) - origin) / 60000.0).alias(_X)


def _by_label(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    if frame.is_empty():
        return {}
    return {label: part for (label,), part in frame.group_by(A.LABEL, maintain_order=True)}


def _runs_with(series: pl.DataFrame, column: str) -> list[tuple[str, pl.DataFrame]]:
    data = series.filter(pl.col(column).is_not_null())
    return [(label, part) for (label,), part in data.group_by(A.LABEL, maintain_order=True)]


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
    runs = _runs_with(analysis.series, value)
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
        part = part.with_columns((pl.col(A.T_SINCE_START) / 60.0).alias(_X))
        first = len(fig.data)
        thinned = thinned or part.height > TIME_POINTS
        if band is not None:
            edge = decimate(part, _X, list(band))
            x = edge.get_column(_X).to_numpy()
            common = {"legendgroup": label, "showlegend": False, "hoverinfo": "skip", "meta": meta}
            fig.add_scatter(x=x, y=edge.get_column(band[0]).to_numpy(), mode="lines", line_width=0, **common)
            fig.add_scatter(
                x=x,
                y=edge.get_column(band[1]).to_numpy(),
                mode="lines",
                line_width=0,
                fill="tonexty",
                fillcolor=_rgba(color, 0.18),
                **common,
            )
        raw = keep_peaks(part, _X, value)
        fig.add_scatter(
            x=raw.get_column(_X).to_numpy(),
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
        mid = decimate(part, _X, [median])
        fig.add_scatter(
            x=mid.get_column(_X).to_numpy(),
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
            steps = steps.with_columns(_minutes(pl.col(C.TS), origin))
            fig.add_scatter(
                x=steps.get_column(_X).to_numpy(),
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
    _time_layout(fig, what, height=420 if not axes else max(420, 240 * len(set(axes.values()))))
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
            marks.append(((_ms(ts) - origin) / 60000.0, "crash"))
    if run.height:
        row = run.row(0, named=True)
        later = analysis.runs.filter((pl.col(C.SOURCE) == row[C.SOURCE]) & (pl.col(C.RUN) > row[C.RUN]))
        if later.height and row[C.END_TS] is not None:
            marks.append(((_ms(row[C.END_TS]) - origin) / 60000.0, "restart"))
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
    longest = max((float(p.get_column(A.T_SINCE_START).max() or 0.0) / 60.0 for _, p in runs), default=0.0)
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
        "decode line (one definition for every SGLang version, see the README); dotted vertical lines mark "
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


def accept_by_batch(analysis: Analysis, colors: dict[str, str]) -> Plot | None:
    steady = steady_rows(analysis.series)
    runs = [
        (label, part)
        for label, part in _runs_with(steady, C.ACCEPT_LEN)
        if part.get_column(A.BATCH_SIZE).is_not_null().any()
    ]
    if not runs:
        return None
    fig = go.Figure()
    sizes = []
    made = _by_label(analysis.batch_pairs)
    for label, part in runs:
        # a run too long to keep whole: its pairs as the analysis counted them on every round
        pairs = made[label] if label in made else pair_counts(part, A.BATCH_SIZE, C.ACCEPT_LEN)
        counts = pairs.get_column("count").to_numpy()
        sizes.append(pairs.get_column(A.BATCH_SIZE).to_numpy())
        fig.add_scatter(
            x=pairs.get_column(A.BATCH_SIZE).to_numpy(),
            y=pairs.get_column(C.ACCEPT_LEN).to_numpy(),
            customdata=counts.astype(np.int32),
            mode="markers",
            marker={
                "color": colors.get(label, PALETTE[0]),
                "size": 5 + 13 * np.sqrt(counts / counts.max()),
                "opacity": 0.6,
                "line": {"width": 0},
            },
            name=plot_text(label),
            legendgroup=label,
            hovertemplate="%{fullData.name}<br>batch size %{x}<br>accept len %{y:.2f}<br>%{customdata} decode line(s)<extra></extra>",
        )
    _layout(fig, x_title="batch size (running requests)", y_title="accept len")
    every = np.concatenate(sizes)
    if every.size and every.min() > 0 and every.max() / every.min() >= 16:
        fig.update_xaxes(type="log")
    return Plot(
        "batch",
        "Accept length against batch size",
        "Steady-state decode lines; a dot per distinct (batch size, accept len), larger for more lines.",
        fig,
    )


def accept_distribution(analysis: Analysis, colors: dict[str, str]) -> Plot | None:
    steady = steady_rows(analysis.series)
    runs = _runs_with(steady, C.ACCEPT_LEN)
    if not runs:
        return None
    fig = go.Figure()
    made = _by_label(analysis.distributions)
    for label, part in runs:
        color = colors.get(label, PALETTE[0])
        # a run too long to keep whole: its distribution as the analysis sampled it from every round
        values = (
            made[label].get_column(C.ACCEPT_LEN).to_numpy()
            if label in made
            else quantile_sample(part.get_column(C.ACCEPT_LEN))
        )
        fig.add_violin(
            y=values,
            x0=plot_text(label),
            name=plot_text(label),
            legendgroup=label,
            showlegend=False,
            line={"color": color, "width": 1.5},
            fillcolor=_rgba(color, 0.35),
            box={"visible": True, "width": 0.15},
            meanline={"visible": True},
            points=False,
            spanmode="hard",
            scalemode="width",
            hoveron="violins+kde",
        )
    _layout(fig, x_title="run", y_title="accept len")
    fig.update_layout(violinmode="overlay", showlegend=False)
    # Many runs: labels turn and the axis makes room for them, so none is cut off.
    many = len(runs) > 4
    fig.update_xaxes(automargin=True, tickangle=-35 if many else 0, title={"text": "" if many else "run"})
    if many:
        longest = max(len(label) for label, _ in runs)
        fig.update_layout(height=420 + 6 * min(longest, 60), margin={"b": 20})
    return Plot(
        "distribution",
        "Distribution of accept length per run",
        "Steady-state decode lines (after warm-up). Box: quartiles; line: mean.",
        fig,
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
            origin = _ms(min(stamps)) if stamps else 0.0
        name = plot_text(label)
        if own.height:
            rows += own.height
            own = own.with_columns(_minutes(pl.col(A.START), origin))
            seconds = own.get_column(A.DURATION_S).to_numpy()
            fig.add_bar(
                y=[[name] * own.height, [plot_text(p) for p in own.get_column(A.PHASE_NAME)]],
                x=seconds / 60.0,
                base=own.get_column(_X).to_numpy(),
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
            faults = faults.with_columns(_minutes(pl.col(A.FIRST_TS), origin))
            what = [
                plot_text(f"{kind}: {message or ''}"[:200])
                for kind, message in faults.select(C.FAULT_KIND, C.MESSAGE).iter_rows()
            ]
            fig.add_scatter(
                y=[[name] * faults.height, ["faults"] * faults.height],
                x=faults.get_column(_X).to_numpy(),
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
    _time_layout(fig, "", height=max(260, 70 + 22 * rows))
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


def speedup(analysis: Analysis, colors: dict[str, str]) -> Plot | None:
    runs = analysis.runs.filter(pl.col(A.SPEEDUP).is_not_null())
    if not runs.height:
        return None
    fig = go.Figure()
    for row in runs.iter_rows(named=True):
        label, value = row[A.LABEL], row[A.SPEEDUP]
        low, high = row[A.SPEEDUP_LOW], row[A.SPEEDUP_HIGH]
        fig.add_scatter(
            x=[value],
            y=[plot_text(label)],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [max(high - value, 0.0) if high is not None else 0.0],
                "arrayminus": [max(value - low, 0.0) if low is not None else 0.0],
                "thickness": 2,
                "width": 6,
            },
            customdata=[[plot_text(row[A.BASELINE]), low, high]],
            mode="markers",
            marker={"size": 11, "color": colors.get(label, PALETTE[0])},
            name=plot_text(label),
            legendgroup=label,
            showlegend=False,
            hovertemplate=(
                "%{fullData.name}<br>%{x:.3f}x over %{customdata[0]}"
                "<br>95% interval %{customdata[1]:.3f}-%{customdata[2]:.3f}<extra></extra>"
            ),
        )
    _layout(fig, x_title="speedup over the baseline (tok/s ratio at matched batch sizes)", y_title="")
    fig.add_vline(x=1.0, line_dash="dot", line_width=1, line_color="#888")
    fig.update_layout(
        height=max(200, 80 + 34 * runs.height),
        margin={"l": 20, "b": 50},
        showlegend=False,
        yaxis={"autorange": "reversed", "automargin": True},
    )
    return Plot(
        "speedup",
        "Speedup over the baseline",
        "Steady-state throughput ratio at the batch sizes both runs saw, with its 95% bootstrap interval; "
        "right of the dotted line is faster than the baseline.",
        fig,
    )


def position_curves(analysis: Analysis, colors: dict[str, str]) -> Plot | None:
    curves = analysis.spec_curves.filter(pl.col(A.LABEL).is_not_null())
    if not curves.height:
        return None
    fig = go.Figure()
    for (label,), part in curves.group_by(A.LABEL, maintain_order=True):
        part = part.sort(A.POSITION)
        fig.add_scatter(
            x=part.get_column(A.POSITION).to_numpy() + 1,
            y=part.get_column(A.RATE).to_numpy(),
            mode="lines+markers",
            line={"color": colors.get(label, PALETTE[0]), "width": 2},
            name=plot_text(label),
            legendgroup=label,
            hovertemplate="%{fullData.name}<br>position %{x}: %{y:.1%} accepted<extra></extra>",
        )
    _layout(fig, x_title="draft position", y_title="acceptance rate")
    fig.update_layout(
        yaxis={"tickformat": ".0%", "rangemode": "tozero"}, xaxis={"dtick": 1}, height=360, showlegend=True
    )
    return Plot(
        "curves",
        "vLLM acceptance per draft position",
        "Mean acceptance rate of each draft position per run, from vLLM's per-position metrics.",
        fig,
    )


def build_plots(analysis: Analysis) -> list[Plot]:
    """Every figure the analysis has data for, in page order."""
    colors, origins = run_colors(analysis), run_origins(analysis)
    makers: list[Callable[[], Plot | None]] = [
        lambda: speedup(analysis, colors),
        lambda: acceptance_over_time(analysis, colors, origins),
        lambda: acceptance_rate_over_time(analysis, colors, origins),
        lambda: throughput_over_time(analysis, colors, origins),
        lambda: accept_by_batch(analysis, colors),
        lambda: accept_distribution(analysis, colors),
        lambda: startup_timeline(analysis, colors, origins),
        lambda: position_curves(analysis, colors),
    ]
    return [plot for make in makers if (plot := make()) is not None]
