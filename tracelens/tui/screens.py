"""Modal screens: help (every key), a run's whole verdict and the log filter (kinds, rank, regex)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, SelectionList, Static

from tracelens.analysis import Status
from tracelens.errors import InputError
from tracelens.formatting import STATUS_BADGE_STYLE
from tracelens.live.index import LineFilter, check_pattern, parse_rank
from tracelens.live.status import RunStatus
from tracelens.tables.schema import KINDS

KEYS: tuple[tuple[str, str], ...] = (
    ("/", "search the log (regex); n next match, N previous"),
    ("f", "filter the log by kind, rank (TPn, DPn), regex"),
    ("p", "pause / resume the log (the session reads on)"),
    ("e", "next fault line in the log"),
    ("s", "the next run in the panels (the strip's order)"),
    ("v", "the shown run's verdict and fix, whole"),
    ("r", "write the HTML report of what has been seen"),
    ("tab", "move between the strip, the findings, the log"),
    ("enter", "on a finding: jump to its evidence line"),
    ("end", "last line, follow again"),
    ("up/down", "move in the log (moving up pauses following)"),
    ("pgup/pgdn/home", "a page up or down, the first line"),
    ("?", "this help"),
    ("q", "quit"),
)
KEY_WIDTH = max(len(key) for key, _ in KEYS)
ABOUT = (
    "The header shows each source's connection and how old its newest line is, its current run, the "
    "server's phase and the speculative config. The strip below it lists every run, earlier ones and "
    "other sources' included, worst first: ▶ marks the run the panels show (enter or a click on a line "
    "shows that one), and that run's fix follows. Findings: errors first."
)


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $primary; background: $panel; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        text = Text()
        text.append("tracelens tui: keys\n\n", style="bold")
        for key, what in KEYS:
            text.append(f"{key:>{KEY_WIDTH}}  ", style="bold cyan")
            text.append(what + "\n")
        text.append("\n" + ABOUT)
        box = VerticalScroll()  # at 80x24 the keys and the words below them take more rows
        box.border_subtitle = "escape closes"
        with box:
            yield Static(text)


class VerdictScreen(ModalScreen[None]):
    """One run's verdict in full sentences: the strip and the fix line cut them to the width."""

    DEFAULT_CSS = """
    VerdictScreen { align: center middle; }
    VerdictScreen > Vertical { width: 90%; max-width: 100; height: auto; max-height: 90%;
                               border: round $primary; background: $panel; padding: 0 1; }
    VerdictScreen VerticalScroll { height: auto; max-height: 100%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,v", "dismiss", "close")]

    def __init__(self, run: RunStatus) -> None:
        super().__init__()
        self.run = run

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll():
                yield Static(self.render_text(), id="verdict")
            yield Button("Close", id="close")

    def render_text(self) -> Text:
        run = self.run
        text = Text()
        text.append(f"{run.label}", style="bold")
        text.append(f"  {run.phase_words}", style="dim")
        text.append("\n\n")
        status = run.status or ""
        text.append(f" {status.upper() or 'NOT JUDGED YET'} ", style=STATUS_BADGE_STYLE.get(status, "dim"))
        text.append(f" {run.headline or ''}\n\n")
        text.append("fix: ", style="bold green")
        healthy = run.status == Status.HEALTHY
        text.append(
            run.fix or ("nothing to fix" if healthy else "none derived: the findings list says what was seen")
        )
        if run.findings:
            text.append(f"\n\n{run.findings} finding(s), {run.errors} error(s)", style="dim")
        return text

    def on_button_pressed(self) -> None:
        self.dismiss()


class FilterScreen(ModalScreen[LineFilter | None]):
    """Returns the new filter, or None when cancelled."""

    DEFAULT_CSS = """
    FilterScreen { align: center middle; }
    FilterScreen > Vertical { width: 64; height: auto; border: round $primary; background: $panel; padding: 1 2; }
    FilterScreen SelectionList { height: 12; }
    FilterScreen #error { color: $error; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, current: LineFilter) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        kinds = self.current.kinds
        with Vertical():
            yield Label("Show lines of kinds")
            yield SelectionList[str](*((k, k, kinds is None or k in kinds) for k in KINDS), id="kinds")
            yield Label("Rank (TPn, DPn; empty: all)")
            yield Input(self.current.rank or "", placeholder="TP0", id="rank")
            yield Label("Regex (empty: all)")
            yield Input(self.current.pattern or "", placeholder="accept len: 1\\.", id="pattern")
            yield Label("", id="error")
            with Horizontal():
                yield Button("Apply", variant="primary", id="apply")
                yield Button("Clear", id="clear")
                yield Button("Cancel", id="cancel")

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self) -> None:
        self._apply()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self._apply()
        elif event.button.id == "clear":
            self.dismiss(LineFilter())
        else:
            self.dismiss(None)

    def _apply(self) -> None:
        chosen = frozenset(self.query_one("#kinds", SelectionList).selected)
        rank = self.query_one("#rank", Input).value.strip() or None
        pattern = self.query_one("#pattern", Input).value or None
        try:
            if rank:
                parse_rank(rank)
            if pattern:
                check_pattern(pattern)
        except InputError as exc:
            self.query_one("#error", Label).update(str(exc))
            return
        kinds = None if chosen == frozenset(KINDS) else chosen
        self.dismiss(LineFilter(kinds=kinds, rank=rank, pattern=pattern))
