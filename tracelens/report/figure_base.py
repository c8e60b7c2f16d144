"""What every figure of the report shares: the `Plot` record, a run's colour and time origin, the
layout, and the small frame helpers the figures draw with.

Colours. A run has one colour everywhere (`run_colors`), in the order of `Analysis.runs`; baselines
draw dashed lines. Strings from logs go through `escape.plot_text` before Plotly sees them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import plotly.graph_objects as go
import polars as pl

from tracelens.analysis import Analysis
from tracelens.tables.schema import A, C, W

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

X = W.MINUTES  # the x of a time figure: minutes since the run's start
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


def epoch_ms(value: dt.datetime) -> float:
    return value.replace(tzinfo=dt.UTC).timestamp() * 1000.0


def run_origins(analysis: Analysis) -> dict[str, float]:
    """label -> the instant `t_since_start_s` counts from (ms since the epoch): the run's start, or for a
    run without a `server_args` line its first decode line, as the analysis measured it."""
    out: dict[str, float] = {}
    for label, start in analysis.runs.select(A.LABEL, C.START_TS).iter_rows():
        if start is not None:
            out[label] = epoch_ms(start)
    firsts = analysis.series.group_by(A.LABEL, maintain_order=True).agg(
        pl.col(C.TS).drop_nulls().first(), pl.col(A.T_SINCE_START).drop_nulls().first()
    )
    for label, ts, since in firsts.iter_rows():
        if label not in out and ts is not None and since is not None:
            out[label] = epoch_ms(ts) - since * 1000.0
    return out


def rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def layout(fig: go.Figure, *, x_title: str, y_title: str, height: int = 420) -> None:
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


def time_layout(fig: go.Figure, y_title: str, height: int = 420) -> None:
    layout(fig, x_title=MINUTES, y_title=y_title, height=height)
    fig.update_layout(xaxis={"type": "linear"})


def minutes(ts: pl.Expr, origin: float) -> pl.Expr:
    return ((ts.dt.epoch("ms").cast(pl.Float64) - origin) / 60000.0).alias(X)


def by_label(frame: pl.DataFrame) -> dict[str, pl.DataFrame]:
    if frame.is_empty():
        return {}
    return {label: part for (label,), part in frame.group_by(A.LABEL, maintain_order=True)}


def runs_with(series: pl.DataFrame, column: str) -> list[tuple[str, pl.DataFrame]]:
    data = series.filter(pl.col(column).is_not_null())
    return [(label, part) for (label,), part in data.group_by(A.LABEL, maintain_order=True)]
