"""The report's Plotly figures, each drawn from frames of the `Analysis` (nothing is computed here but
which rows to draw, see `tracelens.analysis.plotdata`): the figures over time are in `time_figures`,
the others (accept length by batch size, its distribution, the speedup, vLLM's per-position acceptance)
here, and `build_plots` puts them in page order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import polars as pl

from tracelens.analysis import Analysis
from tracelens.analysis.acceptance import steady_rows
from tracelens.analysis.plotdata import pair_counts, quantile_sample
from tracelens.report.escape import plot_text
from tracelens.report.figure_base import (
    PALETTE,
    Plot,
    by_label,
    layout,
    rgba,
    run_colors,
    run_origins,
    runs_with,
)
from tracelens.report.request_figures import depth_timeline, request_lengths
from tracelens.report.time_figures import (
    acceptance_over_time,
    acceptance_rate_over_time,
    startup_timeline,
    throughput_over_time,
)
from tracelens.tables.schema import A, C


def accept_by_batch(analysis: Analysis, colors: dict[str, str]) -> Plot | None:
    steady = steady_rows(analysis.series)
    runs = [
        (label, part)
        for label, part in runs_with(steady, C.ACCEPT_LEN)
        if part.get_column(A.BATCH_SIZE).is_not_null().any()
    ]
    if not runs:
        return None
    fig = go.Figure()
    sizes = []
    made = by_label(analysis.batch_pairs)
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
    layout(fig, x_title="batch size (running requests)", y_title="accept len")
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
    runs = runs_with(steady, C.ACCEPT_LEN)
    if not runs:
        return None
    fig = go.Figure()
    made = by_label(analysis.distributions)
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
            fillcolor=rgba(color, 0.35),
            box={"visible": True, "width": 0.15},
            meanline={"visible": True},
            points=False,
            spanmode="hard",
            scalemode="width",
            hoveron="violins+kde",
        )
    layout(fig, x_title="run", y_title="accept len")
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
    layout(fig, x_title="speedup over the baseline (tok/s ratio at matched batch sizes)", y_title="")
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
        whose = f"{part.item(0, A.ENGINE)}, {part.item(0, A.BASIS).replace('_', ' ')}"
        fig.add_scatter(
            x=part.get_column(A.POSITION).to_numpy() + 1,
            y=part.get_column(A.RATE).to_numpy(),
            mode="lines+markers",
            line={"color": colors.get(label, PALETTE[0]), "width": 2},
            name=plot_text(f"{label} ({whose})"),
            legendgroup=label,
            hovertemplate="%{fullData.name}<br>position %{x}: %{y:.1%} accepted<extra></extra>",
        )
    layout(fig, x_title="draft position", y_title="acceptance rate")
    fig.update_layout(
        yaxis={"tickformat": ".0%", "rangemode": "tozero"}, xaxis={"dtick": 1}, height=360, showlegend=True
    )
    return Plot(
        "curves",
        "Acceptance per draft position",
        "P(the draft token at each position is accepted), per run, run against run, from the most exact "
        "figures the run has: vLLM's per-position counters, the requests' acceptance histograms (SGLang or "
        "vLLM), or vLLM's per-position metrics lines (docs/acceptance.md).",
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
        lambda: request_lengths(analysis, colors),
        lambda: depth_timeline(analysis, colors),
    ]
    return [plot for make in makers if (plot := make()) is not None]
