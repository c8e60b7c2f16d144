"""The panels above the log: header, acceptance, capture and findings. Views only: they render a
`LiveSession`'s state and `tracelens.live.status` snapshots; they compute nothing about the log."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

import polars as pl
from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tracelens.analysis import Finding, Severity, Status
from tracelens.analysis.findings import severity_rank
from tracelens.analysis.verdicts import STATUSES, causal_rank, status_rank
from tracelens.formatting import (
    SEVERITY_STYLE,
    STATUS_BADGE_STYLE,
    ago,
    clip_words,
    megabytes,
    number,
    severity_tag,
    significant,
    speedup,
)
from tracelens.live import LiveSession
from tracelens.live.status import CRASHED, READY, Level, RunKey, RunStatus, Snapshot
from tracelens.sources import events as src
from tracelens.tables.schema import A, C, W
from tracelens.tui.plot import braille_plot

STATE_STYLE = {
    src.CONNECTING: "yellow",
    src.CONNECTED: "green",
    src.RECONNECTING: "bold red",
    src.ENDED: "dim",
    src.FAILED: "bold red",
}
PHASE_STYLE = {READY: "bold green", CRASHED: "bold white on red"}
LEVEL_STYLE = {Level.OK: "green", Level.WARNING: "yellow", Level.ERROR: "bold red", Level.UNKNOWN: "dim"}
FINDINGS_SHOWN = 500  # in `findings_order`; the rest stay in the analysis and the report


class HeaderBar(Static):
    """Sources with their connection state and staleness, each source's current run, its phase and
    config: one row a source."""

    DEFAULT_CSS = "HeaderBar { height: auto; background: $panel; padding: 0 1; }"

    def __init__(self, session: LiveSession, clock: Callable[[], float], **kwargs) -> None:
        super().__init__(**kwargs)
        self.session = session
        self.clock = clock
        self.snapshot = Snapshot()
        self.paused = False

    def show(self, snapshot: Snapshot | None = None) -> None:
        if snapshot is not None:
            self.snapshot = snapshot
        self.update(self.render_text())

    def on_resize(self) -> None:
        self.update(self.render_text())

    def render_text(self) -> Text:
        now = self.clock()
        text = Text()
        text.append("tracelens", style="bold")
        text.append(f"  {self.session.index.count():,} lines")
        if self.paused:
            text.append("  PAUSED", style="bold black on yellow")
        for source in self.session.sources:
            text.append("\n")
            text.append(source.label, style="bold")
            text.append("  ")
            text.append(source.state, style=STATE_STYLE.get(source.state, ""))
            if source.state == src.RECONNECTING or source.ended:
                text.append(f" ({source.detail})", style="dim")
            text.append(f" · {ago(source.staleness(now))}", style="dim")
            if source.backfill is not None:
                done, total = source.backfill
                text.append(
                    f" · reading {100 * done / max(total, 1):.0f}% of {megabytes(total, digits=0)}",
                    style="yellow",
                )
            run = self.snapshot.run_of(source.label)
            if run is None:
                continue
            # on the source's line (cut to the width below): a row a source, as many as fit at 80x24
            text.append(" · ", style="dim")
            text.append(run.label or "no run yet", style="cyan")
            text.append("  ")
            text.append(run.phase, style=PHASE_STYLE.get(run.phase, "yellow"))
            if run.phase_detail:
                text.append(f" ({run.phase_detail})", style="dim")
            if run.speculative:
                text.append(f"  {run.speculative}")
        width = self.size.width - 2  # padding
        if width <= 0:
            return text
        # one row per line, cut to the width: a wrapped line would take a row the panels need at 80x24
        lines = text.split("\n")
        for line in lines:
            line.truncate(width, overflow="ellipsis")
        return Text("\n").join(lines)


def strip_order(runs: Iterable[RunStatus]) -> list[RunStatus]:
    """Every run in view, worst first (the order `check` lists verdicts in), then by source and run; a
    run not judged yet last. A source with no run yet is not a run."""
    sources: dict[str, int] = {}
    for run in runs:
        sources.setdefault(run.source, len(sources))

    def rank(run: RunStatus) -> int:
        return status_rank(run.status) if run.status in STATUSES else len(STATUSES)

    seen = [r for r in runs if r.run is not None]
    return sorted(seen, key=lambda r: (rank(r), sources[r.source], r.run))


class VerdictStrip(OptionList):
    """One line per run in view (earlier runs of a source and other sources' runs included), worst first:
    its status and what is wrong, cut at a word boundary (`v` shows it whole). A few lines high, and
    scrolled when more runs are in view; the run the panels show is marked, and choosing a line (enter,
    a click, or moving on it) shows that run in the panels."""

    DEFAULT_CSS = """
    VerdictStrip { height: auto; max-height: 4; padding: 0 1; background: $background; }
    VerdictStrip:focus { background-tint: $foreground 5%; }
    """

    class RunPicked(Message):
        def __init__(self, run: RunStatus) -> None:
            super().__init__()
            self.run = run

    def __init__(self, **kwargs) -> None:
        super().__init__(compact=True, **kwargs)
        self.runs: list[RunStatus] = []  # in the strip's order
        self.current: RunKey | None = None
        self._width = 0

    def show(self, runs: Iterable[RunStatus], current: RunKey | None) -> None:
        self.runs, self.current = strip_order(runs), current
        self._redraw()

    def on_resize(self) -> None:
        if self.size.width != self._width:
            self._redraw()

    def _redraw(self) -> None:
        self._width = self.size.width
        width = max(self.scrollable_content_region.width, 20)
        self.clear_options()
        if not self.runs:
            self.add_option(Option(Text("no verdict yet: waiting for the first analysis", style="dim")))
            return
        for run in self.runs:
            self.add_option(Option(self.line_of(run, width)))
        at = next((i for i, r in enumerate(self.runs) if r.key == self.current), None)
        if at is not None:
            with self.prevent(OptionList.OptionHighlighted):
                self.highlighted = at
            self.scroll_to_highlight()

    def render_text(self) -> Text:
        """The strip's lines as it draws them (every run, not only those scrolled into view)."""
        lines = [self.get_option_at_index(i).prompt for i in range(self.option_count)]
        return Text("\n").join(line if isinstance(line, Text) else Text(str(line)) for line in lines)

    def line_of(self, run: RunStatus, width: int) -> Text:
        line = Text("▶ " if run.key == self.current else "  ")
        status = run.status or ""
        line.append(f" {status.upper() or '…'} ", style=STATUS_BADGE_STYLE.get(status, "dim"))
        line.append(f" {run.label}", style="bold")
        line.append(" (ended)" if run.ended else "", style="dim")
        line.append(": ")
        if run.headline:
            line.append(clip_words(run.headline, width - line.cell_len)[0])
        return line

    def pick(self, step: int) -> RunStatus | None:
        """The run ``step`` lines from the current one in the strip's order (wrapping around)."""
        if not self.runs:
            return None
        keys = [r.key for r in self.runs]
        at = keys.index(self.current) if self.current in keys else -1
        return self.runs[(at + step) % len(self.runs)]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.runs):
            self.post_message(self.RunPicked(self.runs[event.option_index]))

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        if self.has_focus and 0 <= event.option_index < len(self.runs):
            self.post_message(self.RunPicked(self.runs[event.option_index]))


class FixLine(Static):
    """The fix of the run the panels show (two lines at most, cut at a word boundary; `v` shows it whole),
    or what to read when no fix could be derived."""

    DEFAULT_CSS = "FixLine { height: auto; max-height: 2; padding: 0 1; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.run: RunStatus | None = None

    def show(self, run: RunStatus | None) -> None:
        self.run = run
        self.display = run is not None and run.status not in (None, Status.HEALTHY, Status.INCOMPLETE)
        self.update(self.render_text())

    def on_resize(self) -> None:
        self.update(self.render_text())

    def render_text(self) -> Text:
        run = self.run
        if run is None:
            return Text()
        width = max(self.size.width - 2, 20)
        lead = Text("fix ", style="bold green")
        lead.append(f"{run.label}: ", style="bold")
        if not run.fix:
            lead.append("none derived: the findings say what was seen", style="dim")
            return lead
        lines = clip_words(run.fix, width, 2, first=width - lead.cell_len)
        lead.append("\n".join(lines))
        return lead


class AcceptancePanel(Static):
    """Accept len and tok/s over time for the current run: plot, current value, rolling median,
    baseline; below them each run's per-position acceptance, run against run."""

    DEFAULT_CSS = "AcceptancePanel { border: round $primary; padding: 0 1; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "acceptance"
        self.run: RunStatus | None = None
        self.every_run: tuple[RunStatus, ...] = ()  # every run in view, for the per-position curves
        self.latest_accept_len: float | None = None  # from the newest parsed decode line
        self.latest_gen_throughput: float | None = None
        self._redraw_pending = False

    def show(self, run: RunStatus | None, every_run: tuple[RunStatus, ...] = ()) -> None:
        self.run = run
        self.every_run = every_run
        self.refresh_view()

    def note_decode(self, accept_len: float | None, gen_throughput: float | None) -> None:
        if accept_len is not None:
            self.latest_accept_len = accept_len
        if gen_throughput is not None:
            self.latest_gen_throughput = gen_throughput
        if not self._redraw_pending:  # at most a few redraws a second, however fast lines come
            self._redraw_pending = True
            self.set_timer(0.25, self._redraw)

    def _redraw(self) -> None:
        self._redraw_pending = False
        self.refresh_view()

    @property
    def current_accept_len(self) -> float | None:
        if self.latest_accept_len is not None:
            return self.latest_accept_len
        return self.run.accept_len if self.run else None

    def on_resize(self) -> None:
        self.refresh_view()

    def refresh_view(self) -> None:
        run = self.run
        # the run is longer than the worker's window: its plots are of the newest lines
        more = ("plots: newest lines",) if run and "series" in run.window_figures else ()
        self.border_title = run_title("acceptance", run, self.size.width, *more)
        self.update(self.render_text())

    def render_text(self) -> Text:
        run = self.run
        text = Text()
        width = max(self.size.width - 4, 10)
        curves = position_rows(self.every_run, run.key if run else None, width)
        if run is None or run.series.is_empty():
            text.append("no decode lines yet", style="dim")
            if self.latest_accept_len is not None:
                text.append(f"\naccept len {number(self.latest_accept_len)}", style="bold")
            if run is not None and run.acceptance:
                text.append(f"\n{run.acceptance}", style="bold magenta")
            if curves:
                text.append("\n")
                text.append_text(curves)
            return text
        rows = max((self.size.height - 6 - len(curves.plain.splitlines())) // 2, 2)
        series = _binned(run.series, width * 2)
        xs = series.get_column(A.T_SINCE_START).to_list()
        text.append("accept len ", style="bold")
        text.append(number(self.current_accept_len), style="bold cyan")
        text.append(f"  median {number(run.accept_len_median)}")
        if run.baseline_accept_len is not None:
            text.append(f"  baseline {number(run.baseline_accept_len)}", style="dim")
        text.append("\n")
        accept = series.get_column(C.ACCEPT_LEN).fill_null(float("nan")).to_list()
        for line in braille_plot(xs, accept, width, rows):
            text.append(line + "\n", style="cyan")
        current_tput = (
            self.latest_gen_throughput if self.latest_gen_throughput is not None else run.gen_throughput
        )
        text.append("tok/s ", style="bold")
        text.append(number(current_tput, 1), style="bold green")
        text.append(f"  median {number(run.gen_throughput_median, 1)}")
        if run.baseline_gen_throughput is not None:
            text.append(f"  baseline {number(run.baseline_gen_throughput, 1)} ({run.baseline})", style="dim")
        if run.speedup is not None:
            text.append(f"  {speedup(run.speedup)}", style="bold")
        text.append("\n")
        tput = series.get_column(C.GEN_THROUGHPUT).fill_null(float("nan")).to_list()
        for line in braille_plot(xs, tput, width, rows, hline=run.baseline_gen_throughput):
            text.append(line + "\n", style="green")
        if run.acceptance:
            text.append(run.acceptance + "\n", style="bold magenta")
        text.append_text(curves)
        text.rstrip()
        return text


POSITION_RUNS_SHOWN = 6  # rows of the per-position table; the run the panels show is always one
POSITION_CELL = 5  # " 81%" and a space


def position_rows(runs: Iterable[RunStatus], current: RunKey | None, width: int) -> Text:
    """Each run's per-position acceptance (0 = the first drafted token), run against run: a row per run
    that has a curve, the run the panels show marked, its engine and basis at the end. Empty without
    any. The newest runs when there are more than `POSITION_RUNS_SHOWN`; the positions that fit."""
    shown = [r for r in runs if r.positions]
    if not shown:
        return Text()
    if len(shown) > POSITION_RUNS_SHOWN:
        others = [r.key for r in shown if r.key != current]
        room = POSITION_RUNS_SHOWN - (len(others) < len(shown))  # a row is the shown run's, if it has one
        kept = {current, *others[len(others) - room :]}
        shown = [r for r in shown if r.key in kept]
    names = [r.label or r.source for r in shown]
    head = "draft position"
    lead = max(max(len(n) for n in names) + 2, len(head) + 1)
    deepest = max(len(r.positions) for r in shown)
    cells = max(min(deepest, (width - lead) // POSITION_CELL), 1)
    text = Text()
    text.append(head.ljust(lead), style="bold")
    text.append("".join(f"{i:>{POSITION_CELL - 1}} " for i in range(cells)), style="bold")
    text.append(" (0 = first draft)" if deepest <= cells else f" (first {cells} of {deepest})", style="dim")
    for run, name in zip(shown, names, strict=True):
        shows = run.key == current
        text.append("\n" + ("▶ " if shows else "  ") + name.ljust(lead - 2), style="bold" if shows else "")
        rates = "".join(f"{round(rate * 100):>{POSITION_CELL - 2}}% " for rate in run.positions[:cells])
        text.append(rates.ljust(cells * POSITION_CELL), style="bold magenta" if shows else "magenta")
        whose = ", ".join(w for w in (run.engine, (run.positions_basis or "").replace("_", " ")) if w)
        text.append(f" {whose}", style="dim")
    return text


def run_title(name: str, run: RunStatus | None, width: int, *more: str) -> str:
    """A panel's title naming the run it shows: ``name · label`` (and ``more``) while it fits the
    border, else the run's label alone (the panel's rows say what it is; which run, only the title)."""
    if run is None or not run.label:
        return name
    for parts in ((name, run.label, *more), (name, run.label), (run.label,)):
        title = " · ".join(parts)
        if len(title) <= width - 6:  # the corners and the spaces around the title
            return title
    return run.label


def _binned(series: pl.DataFrame, columns: int) -> pl.DataFrame:
    """At most ``columns`` points: the mean per time bin (a long run has hundreds of thousands of
    decode lines, and the plot has a hundred dot columns)."""
    if series.height <= columns:
        return series
    t = pl.col(A.T_SINCE_START)
    span = (t.max() - t.min()).fill_null(0.0)
    bin_of = ((t - t.min()) / pl.when(span > 0).then(span).otherwise(1.0) * (columns - 1)).round()
    return (
        series.with_columns(bin_of.alias(W.BIN))
        .group_by(W.BIN)
        .agg(pl.col(A.T_SINCE_START, C.ACCEPT_LEN, C.GEN_THROUGHPUT).mean())
        .sort(W.BIN)
    )


class CapturePanel(Static):
    """Per debug site: last num_aux, shapes and norm; the embedding-capture state in words and colour."""

    DEFAULT_CSS = "CapturePanel { border: round $primary; padding: 0 1; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "EAGLE-3 capture"
        self.run: RunStatus | None = None

    @property
    def embed_state(self) -> str | None:
        return self.run.embed_state if self.run else None

    def show(self, run: RunStatus | None, findings: list[Finding] | None = None) -> None:
        self.run = run
        # The capture problems of this run: NaN norms, wrong counts or widths, an unexpected embedding.
        self.problems = [
            f
            for f in findings or []
            if run is not None
            and f.source == run.source
            and f.run == run.run
            and f.code in CAPTURE_CODES
            and f.severity != Severity.INFO
        ]
        self.border_title = run_title("EAGLE-3 capture", run, self.size.width)
        self.update(self.render_text())

    def on_resize(self) -> None:
        self.border_title = run_title("EAGLE-3 capture", self.run, self.size.width)

    def render_text(self) -> Text:
        run = self.run
        text = Text()
        if run is None or run.run is None:
            text.append("waiting for a server start", style="dim")
            return text
        problems = getattr(self, "problems", [])
        for finding in problems:
            text.append(
                "✗ " if finding.severity == Severity.ERROR else "! ", style=SEVERITY_STYLE[finding.severity]
            )
            text.append(_capture_words(finding) + "\n", style=SEVERITY_STYLE[finding.severity])
        said = any(f.code.startswith("embed-") for f in problems)
        if run.embed_words and not said and not (problems and run.embed_level == Level.OK):
            # Never "as expected" in green next to capture errors.
            text.append(run.embed_words, style=LEVEL_STYLE.get(run.embed_level, ""))
        elif not run.embed_words:
            text.append("no speculative decoding in this run", style="dim")
        text.rstrip()
        if not run.sites:
            text.append("\nno debug sites yet", style="dim")
        for site in run.sites:
            text.append("\n")
            text.append(site.site, style="bold")
            text.append(f" ×{site.count}", style="dim")
            details = []
            if site.num_aux is not None:
                details.append(f"num_aux={site.num_aux}")
            if site.shapes != "-":
                details.append(f"shapes {site.shapes}")
            if site.norm is not None:
                details.append(
                    f"norm {significant(site.norm)}" + (f" ({site.norm_range})" if site.norm_range else "")
                )
            if site.bad_norms:
                details.append(f"{site.bad_norms} NaN/inf/zero norm(s)")
            if details:
                text.append("\n  " + "  ".join(details), style="bold red" if site.bad_norms else "")
        return text


CAPTURE_CODES = frozenset(
    {
        "num-aux-mismatch",
        "num-items-mismatch",
        "num-aux-changed",
        "num-items-changed",
        "shapes-inconsistent",
        "concat-width-mismatch",
        "hidden-size-mismatch",
        "embed-capture-unexpected",
        "embed-capture-missing",
        "layer-ids-invalid",
        "layer-ids-mismatch",
        "norm-invalid",
        "norm-outlier",
        "debug-truncated",
    }
)


def _capture_words(finding: Finding) -> str:
    """A capture finding in a few words for the narrow panel (the findings list has the whole message)."""
    # The words name the problem; the severity says how sure: an error against the expectations.
    head = {
        "norm-invalid": "NaN/zero norms",
        "norm-outlier": "norm outliers",
        "embed-capture-unexpected": "unexpected embedding capture (layer_id -1)",
        "embed-capture-missing": "embedding capture missing",
        "num-aux-mismatch": "wrong aux count",
        "num-items-mismatch": "wrong concat item count",
        "num-aux-changed": "aux count changes",
        "num-items-changed": "concat item count changes",
        "concat-width-mismatch": "wrong concat width",
        "hidden-size-mismatch": "width does not fit the hidden size",
        "shapes-inconsistent": "sites disagree on shapes",
        "layer-ids-mismatch": "layer ids differ from the draft's",
        "layer-ids-invalid": "invalid layer ids",
        "debug-truncated": "debug line cut off",
    }.get(finding.code, finding.code)
    return f"{head} ({finding.severity})"


def findings_order(findings: list[Finding]) -> list[Finding]:
    """Errors pinned on top, then by severity and causal role (causes before the symptoms they explain),
    the newest first within each: the decisive line is never below a warning."""
    far = dt.datetime.min
    newest = sorted(findings, key=lambda f: f.ts or far, reverse=True)
    return sorted(newest, key=lambda f: (severity_rank(f.severity), causal_rank(f.code)))


class FindingsList(OptionList):
    """Findings of everything seen, errors first (see `findings_order`); selecting one jumps to its
    evidence."""

    DEFAULT_CSS = "FindingsList { border: round $primary; }"

    class EvidenceWanted(Message):
        def __init__(self, finding: Finding) -> None:
            super().__init__()
            self.finding = finding

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = "findings"
        self.findings: list[Finding] = []

    def show(self, findings: list[Finding]) -> None:
        highlighted = self.highlighted
        # Errors pinned, then severity and causal role; a list this long is read by its top, so only the
        # first FINDINGS_SHOWN are drawn.
        self.findings = findings_order(findings)[:FINDINGS_SHOWN]
        self.clear_options()
        for finding in self.findings:
            line = Text()
            line.append(f"{severity_tag(finding.severity)} ", style=SEVERITY_STYLE.get(finding.severity, ""))
            line.append(f"{finding.code} ", style="bold")
            line.append(f"{finding.label}: {finding.message}")
            self.add_option(Option(line))
        shown = "" if len(findings) <= FINDINGS_SHOWN else f", first {FINDINGS_SHOWN} shown"
        self.border_title = f"findings ({len(findings)}{shown})"
        if highlighted is not None and self.findings:
            self.highlighted = min(highlighted, len(self.findings) - 1)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.findings):
            self.post_message(self.EvidenceWanted(self.findings[event.option_index]))
