"""The report's per-request and depth figures (analysis/positions.py): each run's per-request acceptance
lengths as a histogram, and the speculation depth in force with the rate against it (adaptive runs)."""

from __future__ import annotations

import plotly.graph_objects as go
import polars as pl

from tracelens.analysis import Analysis
from tracelens.analysis.positions import LENGTH_BIN, NOT_PAID_ACCEPT_LEN
from tracelens.report.escape import plot_text
from tracelens.report.figure_base import PALETTE, Plot, by_label, layout
from tracelens.tables.schema import A, C


def request_lengths(analysis: Analysis, colors: dict[str, str]) -> Plot | None:
    bins = analysis.length_histogram
    if not bins.height or not bins.filter(pl.col(A.LABEL).is_not_null()).height:
        return None
    engines = (
        dict(analysis.requests.select(A.LABEL, A.ENGINE).iter_rows()) if analysis.requests.height else {}
    )
    fig = go.Figure()
    for label, part in by_label(bins.filter(pl.col(A.LABEL).is_not_null())).items():
        fig.add_bar(
            x=(part.get_column(A.BIN_FROM) + LENGTH_BIN / 2).to_numpy(),
            y=part.get_column(A.COUNT).to_numpy(),
            width=LENGTH_BIN * 0.9,
            name=plot_text(f"{label} ({engines.get(label, '?')})"),
            marker={"color": colors.get(label, PALETTE[0])},
            opacity=0.7,
            hovertemplate="%{fullData.name}<br>accept len %{x}: %{y} requests<extra></extra>",
        )
    layout(
        fig, x_title="accept length of the request (tokens per verify step)", y_title="requests", height=360
    )
    fig.add_vline(x=NOT_PAID_ACCEPT_LEN, line_dash="dot", line_width=1, line_color="#888")
    fig.update_layout(barmode="overlay", showlegend=True)
    return Plot(
        "request-lengths",
        "Acceptance length per request",
        f"Finished requests of each run by their acceptance length (bins of {LENGTH_BIN} tokens), from the "
        f"engines' per-request metrics; left of the dotted line ({NOT_PAID_ACCEPT_LEN}) speculation did not pay.",
        fig,
    )


def depth_timeline(analysis: Analysis, colors: dict[str, str]) -> Plot | None:
    depth = analysis.depth.filter(pl.col(A.LABEL).is_not_null() & pl.col(C.TS).is_not_null())
    if not depth.height:
        return None
    fig = go.Figure()
    for label, part in by_label(depth.sort(C.TS)).items():
        color = colors.get(label, PALETTE[0])
        fig.add_scatter(
            x=part.get_column(C.TS).to_list(),
            y=part.get_column(A.ACCEPTANCE_RATE).to_numpy(),
            customdata=part.select(A.DEPTH, C.ACCEPT_LEN).to_numpy(),
            mode="lines+markers",
            line={"color": color, "width": 2, "shape": "hv"},
            name=plot_text(f"{label} (sglang server_info)"),
            hovertemplate=(
                "%{fullData.name}<br>rate %{y:.1%} at depth %{customdata[0]}, accept len %{customdata[1]:.2f}"
                "<extra></extra>"
            ),
        )
    layout(fig, x_title="time", y_title="acceptance rate against the depth in force", height=360)
    fig.update_layout(yaxis={"tickformat": ".0%", "rangemode": "tozero"}, showlegend=True)
    return Plot(
        "depth",
        "Acceptance against the depth in force",
        "(accept len - 1) / the speculative depth each /server_info snapshot reports, which adaptive "
        "speculation changes while serving; hover for the depth.",
        fig,
    )
