"""The HTML acceptance report: one self-contained file (Plotly inside, nothing fetched) that answers
"did this change help, and why".

    from tracelens import analyze
    from tracelens.report import write_report
    write_report(analyze(["logs/"]), "report.html", title="EAGLE-3 layer ids fixed")

A view: it renders the frames and findings of an `Analysis` and computes nothing of its own. The only
data work here is choosing which rows to draw so that a large log still makes a light file (see
`tracelens.analysis.plotdata`).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from tracelens import __version__
from tracelens.analysis import Analysis
from tracelens.report.figure_base import Plot
from tracelens.report.figures import build_plots
from tracelens.report.page import render_page
from tracelens.tables.schema import C, T

__all__ = ["WrittenReport", "default_title", "render_html", "write_report"]


@dataclass(frozen=True)
class WrittenReport:
    """What `write_report` wrote: the file, its size, and what is in it."""

    path: Path
    bytes: int
    plots: tuple[str, ...]  # keys of the figures, in page order
    runs: int
    findings: int


def default_title(analysis: Analysis) -> str:
    sources = analysis.tables[T.RUNS].get_column(C.SOURCE).unique(maintain_order=True).to_list()
    if not sources:
        return "tracelens report"
    names = [analysis.names.get(s, s) for s in sources]
    more = f" and {len(names) - 2} more" if len(names) > 2 else ""
    return f"tracelens report: {', '.join(names[:2])}{more}"


def render_html(
    analysis: Analysis, title: str | None = None, *, generated: dt.datetime | None = None
) -> tuple[str, list[Plot]]:
    """The page's HTML text and the figures on it."""
    plots = build_plots(analysis)
    when = generated or dt.datetime.now().astimezone()
    return render_page(analysis, plots, title or default_title(analysis), __version__, when), plots


def write_report(
    analysis: Analysis,
    path: str | os.PathLike[str],
    title: str | None = None,
    *,
    generated: dt.datetime | None = None,
) -> WrittenReport:
    """Write the report of ``analysis`` to ``path`` (a temporary file renamed into place, so a reader
    never sees half a report)."""
    page, plots = render_html(analysis, title, generated=generated)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    data = page.encode("utf-8")
    try:
        partial.write_bytes(data)
        partial.replace(target)
    except BaseException:  # a full disk, Ctrl-C: no half report left beside the target
        partial.unlink(missing_ok=True)
        raise
    return WrittenReport(
        path=target,
        bytes=len(data),
        plots=tuple(p.key for p in plots),
        runs=analysis.runs.height,
        findings=len(analysis.findings),
    )
