"""`tracelens tui`: the live screen over a `LiveSession`.

The session (headless, its own threads) reads, parses and analyses; this app only draws what it
reports. Session events arrive as `SessionReported` messages (posted from the session's threads, which
Textual allows); panels redraw from the latest `Snapshot`, the log view from the session's index.
"""

from __future__ import annotations

import gc
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.css.query import NoMatches
from textual.message import Message
from textual.notifications import Notify
from textual.widgets import Footer, Input

from tracelens.analysis import Severity
from tracelens.errors import InputError
from tracelens.live import LiveSession
from tracelens.live import events as ev
from tracelens.live.status import RunKey, RunStatus
from tracelens.sources import events as src
from tracelens.tui.logview import LogView
from tracelens.tui.panels import (
    AcceptancePanel,
    CapturePanel,
    FindingsList,
    FixLine,
    HeaderBar,
    VerdictStrip,
    strip_order,
)
from tracelens.tui.screens import FilterScreen, HelpScreen, VerdictScreen

DEFAULT_REPORT = Path("tracelens-live-report.html")
EVENTS_KEPT = 1000  # session event names kept for inspection (tests, debugging)
TOASTS_KEPT = 5  # toasts on screen at once: a burst of failures shows the newest, not a wall of them


class SessionReported(Message):
    """The session reported an event (see `tracelens.live.events`)."""

    def __init__(self, event: Any) -> None:
        super().__init__()
        self.event = event


class TraceLensApp(App[None]):
    TITLE = "tracelens"
    CSS = """
    #panels { height: 16; max-height: 45%; }
    #panels > * { width: 1fr; height: 100%; }
    AcceptancePanel { width: 2fr; }
    LogView { height: 1fr; }
    #search { dock: bottom; display: none; }
    #search.visible { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "search"),
        Binding("n", "search_next(True)", "next match", show=False),
        Binding("N", "search_next(False)", "previous match", show=False),
        Binding("f", "filter", "filter"),
        Binding("p", "pause", "pause"),
        Binding("e", "next_fault", "next fault"),
        Binding("s", "switch_run", "next run"),
        Binding("v", "verdict", "verdict"),
        Binding("r", "report", "report"),
        Binding("question_mark", "help", "help"),
        Binding("q", "quit", "quit"),
    ]

    def __init__(
        self,
        session: LiveSession,
        *,
        report_path: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        start_session: bool = True,
    ) -> None:
        super().__init__()
        self.session = session
        self.report_path = report_path or DEFAULT_REPORT
        self.clock = clock
        self.start_session = start_session
        # names of the last session events handled, in order (bounded: a session runs for days)
        self.events_seen: deque[str] = deque(maxlen=EVENTS_KEPT)
        self.last_report: Path | None = None
        self.current_run: RunKey | None = None  # the run the panels show
        self.chosen_run: RunKey | None = None  # picked with `s` or on the strip; None: the strip's first
        self.toasted_errors = False  # at most one error toast per analysis, none for the first

    def on_notify(self, message: Notify) -> None:
        """A new toast: drop the oldest ones so that at most `TOASTS_KEPT` show with it (Textual keeps each
        one until it expires, so a burst of failures would fill the screen)."""
        older = [n for n in self._notifications if n is not message.notification]
        for old in older[: max(len(older) - (TOASTS_KEPT - 1), 0)]:
            self._unnotify(old, refresh=False)
        if len(older) >= TOASTS_KEPT:
            self._refresh_notifications()

    def compose(self) -> ComposeResult:
        yield HeaderBar(self.session, self.clock, id="header")
        yield VerdictStrip(id="verdicts")
        yield FixLine(id="fix")
        with Horizontal(id="panels"):
            yield AcceptancePanel(id="acceptance")
            yield CapturePanel(id="capture")
            yield FindingsList(id="findings")
        yield LogView(self.session.index, id="log")
        yield Input(placeholder="search (regex), enter to find, escape to close", id="search")
        yield Footer()

    @property
    def header(self) -> HeaderBar:
        return self.query_one(HeaderBar)

    @property
    def verdicts(self) -> VerdictStrip:
        return self.query_one(VerdictStrip)

    @property
    def fix_line(self) -> FixLine:
        return self.query_one(FixLine)

    @property
    def acceptance(self) -> AcceptancePanel:
        return self.query_one(AcceptancePanel)

    @property
    def capture(self) -> CapturePanel:
        return self.query_one(CapturePanel)

    @property
    def findings(self) -> FindingsList:
        return self.query_one(FindingsList)

    @property
    def log_view(self) -> LogView:
        return self.query_one(LogView)

    def on_mount(self) -> None:
        self.session.subscribe(self._from_session)
        self.header.show()
        self.set_interval(1.0, self.header.show)  # staleness ticks even when nothing arrives
        self.log_view.focus()
        # What is loaded by now (modules, classes, the widgets) lives as long as the screen: frozen,
        # it is left out of the collector's full passes, which otherwise walk it every few hundred
        # milliseconds while lines stream in and stall a frame for tens of milliseconds each time.
        gc.collect()
        gc.freeze()
        if self.start_session:
            self.session.start()

    def _from_session(self, event: Any) -> None:
        """Called on the session's threads: hand the event to the app's own thread."""
        self.post_message(SessionReported(event))

    async def on_unmount(self) -> None:
        self.session.stop()
        gc.unfreeze()  # back to the collector (another app, or tests, may run in this process)

    # ----- session events -----

    def on_session_reported(self, message: SessionReported) -> None:
        event = message.event
        self.events_seen.append(type(event).__name__)
        try:
            log_view = self.log_view  # the lookup the handlers make anyway (query_one keeps it)
        except NoMatches:
            # The app is closing: its widgets are removed before `on_unmount` stops the session, whose
            # threads may still report. There is no view left to update.
            return
        if isinstance(event, ev.LinesIndexed | ev.PreviewShown):
            log_view.refresh_index()
        elif isinstance(event, ev.LinesParsed):
            log_view.refresh_index()
            self._note_decode(event)
        elif isinstance(event, ev.SourceStateChanged):
            self.header.show()
            if event.state == src.RECONNECTING:
                log_view.refresh_index()
        elif isinstance(event, ev.AnalysisUpdated):
            self._show_analysis(event)
        elif isinstance(event, ev.SessionFailed):
            self.notify(event.message, severity="error", timeout=10)

    def _current_run(self) -> RunStatus | None:
        """The run the panels show: the one picked (with `s` or on the strip) while it is in view, else
        the strip's first (the worst run; among equals the first source's first run)."""
        every = self.session.snapshot.every_run
        picked = [r for r in every if r.key is not None and r.key == self.chosen_run]
        ordered = strip_order(every)
        waiting = [r for r in every if r.run is None]
        chosen = picked[0] if picked else ordered[0] if ordered else (waiting[0] if waiting else None)
        self.current_run = chosen.key if chosen else None
        return chosen

    def _note_decode(self, event: ev.LinesParsed) -> None:
        """The newest decode line's values, before the next analysis has them: only for a run that is
        its source's current one (an ended run has no new lines)."""
        shown = self.acceptance.run
        if shown is None or shown.ended or event.source != shown.source:
            return
        if event.newest_decode is not None:
            self.acceptance.note_decode(*event.newest_decode)

    def _show_analysis(self, event: ev.AnalysisUpdated) -> None:
        self.header.show(event.snapshot)
        run = self._current_run()
        self.acceptance.latest_accept_len = None
        self.acceptance.latest_gen_throughput = None
        self._show_run(run)
        self.findings.show(self.session.findings)
        # The verdict strip and the findings list say what is wrong: no toast for what a log held when
        # it was opened, and at most one (not one per error) for errors that come later.
        errors = [f for f in event.new_findings if f.severity == Severity.ERROR]
        if errors and self.toasted_errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            self.notify(f"{errors[0].label}: {errors[0].code}{more}", severity="error", timeout=6)
        self.toasted_errors = True

    def _show_run(self, run: RunStatus | None) -> None:
        self.verdicts.show(self.session.snapshot.every_run, self.current_run)
        self.fix_line.show(run)
        self.acceptance.show(run, self.session.snapshot.every_run)
        self.capture.show(run, self.session.findings)

    def _pick(self, run: RunStatus | None) -> None:
        if run is None or run.key == self.current_run:
            return
        self.chosen_run = run.key
        self.acceptance.latest_accept_len = None
        self.acceptance.latest_gen_throughput = None
        self._show_run(self._current_run())

    def action_switch_run(self) -> None:
        """Show the next run of the strip (every run of every source, worst first) in the panels."""
        if len(strip_order(self.session.snapshot.every_run)) < 2:
            self.notify("only one run in view")
            return
        self._pick(self.verdicts.pick(1))

    def on_verdict_strip_run_picked(self, message: VerdictStrip.RunPicked) -> None:
        self._pick(message.run)

    def action_verdict(self) -> None:
        """The verdict of the run the panels show, whole: status, headline and fix."""
        run = self._current_run()
        if run is None or run.run is None:
            self.notify("no run in view yet")
            return
        self.push_screen(VerdictScreen(run))

    # ----- keys -----

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pause(self) -> None:
        view = self.log_view
        if view.frozen:
            view.action_end()
        else:
            view.frozen = True
            view.follow = False
        self.header.paused = view.frozen
        self.header.show()

    def action_next_fault(self) -> None:
        if not self.log_view.next_fault():
            self.notify("no fault lines in the log view")

    def action_filter(self) -> None:
        def done(result) -> None:
            if result is not None:
                self.log_view.set_filter(result)

        self.push_screen(FilterScreen(self.log_view.line_filter), done)

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.add_class("visible")
        box.value = self.log_view.search or ""
        box.focus()

    def action_search_next(self, forward: bool) -> None:
        if self.log_view.search:
            self.log_view.search_again(forward)
        else:
            self.action_search()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "search":
            return
        pattern = event.value
        event.input.remove_class("visible")
        self.log_view.focus()
        if not pattern:
            return
        try:
            self.log_view.start_search(pattern)
        except InputError as exc:
            self.notify(str(exc), severity="error")

    def on_key(self, event) -> None:
        box = self.query_one("#search", Input)
        if event.key == "escape" and box.has_class("visible"):
            box.remove_class("visible")
            self.log_view.focus()
            event.stop()

    def on_log_view_search_finished(self, message: LogView.SearchFinished) -> None:
        if not message.found:
            self.notify(f"no line matches /{message.pattern}/", severity="warning")

    def on_findings_list_evidence_wanted(self, message: FindingsList.EvidenceWanted) -> None:
        for evidence in message.finding.evidence:
            key = self.session.index.key_of(evidence.source, evidence.line_no)
            if key is not None and self.log_view.jump_to_key(key):
                self.log_view.focus()
                return
        dropped = [e for e in message.finding.evidence if self.session.index.is_dropped(e.source, e.line_no)]
        if dropped:
            self.notify(
                f"line {dropped[0].line_no:,} no longer held: the log view keeps each source's newest "
                f"{self.session.index.limit:,} lines (--scrollback)"
            )
            return
        self.notify("its evidence line is not in the log view")

    def action_report(self) -> None:
        if not self.session.analyses:
            self.notify("nothing analysed yet", severity="warning")
            return
        self._write_report(self.report_path)

    @work(thread=True, exclusive=True, group="report")
    def _write_report(self, path: Path) -> None:
        try:
            from tracelens.report import write_report
        except ImportError:
            self.call_from_thread(
                self.notify, "the HTML report writer (tracelens.report) is not installed", severity="error"
            )
            return
        analysis = self.session.analysis  # fetched from the session's worker: off the screen's thread
        if analysis is None:
            self.call_from_thread(self.notify, "the analysis is not available", severity="error")
            return
        try:
            write_report(analysis, path, "tracelens live: " + ", ".join(self.session.index.labels))
        except Exception as exc:  # a report must never take the screen down
            self.call_from_thread(self.notify, f"report failed: {exc}", severity="error")
            return
        self.last_report = path
        self.call_from_thread(self.notify, f"report written to {path.resolve()}")
