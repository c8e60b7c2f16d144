"""The log view: virtual scrolling over every line seen (only the visible lines' text is read back
from the session's store), filters by kind, rank and regex, search, and follow mode that pauses when
the user scrolls up. The matching itself happens in `tracelens.live.index` (headless)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tracelens.errors import InputError
from tracelens.live.index import KIND_CODES, LineFilter, LogIndex
from tracelens.sources.naming import short_names
from tracelens.tables.schema import Kind

KIND_STYLE: dict[int, Style] = {
    KIND_CODES[Kind.FAULT]: Style(color="red", bold=True),
    KIND_CODES[Kind.DEBUG]: Style(color="magenta"),
    KIND_CODES[Kind.LIFECYCLE]: Style(color="green"),
    KIND_CODES[Kind.BATCH]: Style(color="bright_white"),
    KIND_CODES[Kind.HTTP]: Style(dim=True),
    KIND_CODES[Kind.UNPARSED]: Style(color="yellow", dim=True),
    KIND_CODES[Kind.FOREIGN]: Style(color="blue"),
}
GUTTER = Style(dim=True)
CURSOR = Style(bgcolor="grey23")
_NAME_WIDTH = 20  # at most this much of a source's short name in front of each line
_CONTROL = str.maketrans({chr(c): "�" for c in range(32) if c != 9} | {"\t": "    "})


class LogView(ScrollView, can_focus=True):
    DEFAULT_CSS = "LogView { background: $surface; border: round $primary; overflow-x: hidden; }"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor(-1)", "up", show=False),
        Binding("down", "cursor(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "home", "first line", show=False),
        Binding("end", "end", "last line (follow)", show=False),
    ]

    follow: reactive[bool] = reactive(True)

    class Moved(Message):
        """The cursor moved or the view changed (for the status line)."""

    class SearchFinished(Message):
        def __init__(self, pattern: str, found: bool) -> None:
            super().__init__()
            self.pattern = pattern
            self.found = found

    def __init__(self, index: LogIndex, **kwargs) -> None:
        super().__init__(**kwargs)
        self.index = index
        self.view = np.zeros(0, dtype=np.int64)
        self.line_filter = LineFilter()
        self.cursor = 0
        self.frozen = False  # `p`: the view keeps its lines; new ones are counted, not shown
        self.search: str | None = None
        self.filtering = False
        self._index_version = -1
        self._cache: LRUCache[int, str] = LRUCache(4096)
        # line numbers and kinds of the rows being drawn, read in one call per frame (`render_lines`)
        self._frame: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._names: dict[str, str] = {}
        self.border_title = "log"

    # ----- data -----

    def refresh_index(self, force: bool = False) -> None:
        """Take in new lines (called when the session indexed or parsed some)."""
        if self.frozen and not force:
            self._update_title()
            return
        if self.line_filter.pattern:
            self._filter_in_thread(self.line_filter)
            return
        self._set_view(self.index.select(self.line_filter))

    @work(thread=True, exclusive=True, group="filter")
    def _filter_in_thread(self, line_filter: LineFilter) -> None:
        self.filtering = True
        try:
            view = self.index.select(line_filter)
        finally:
            self.filtering = False
        self.app.call_from_thread(self._set_view, view)

    def _set_view(self, view: np.ndarray) -> None:
        if self._index_version != self.index.version:
            self._cache.clear()  # a preview replaced by the whole file: same keys, other lines
            self._index_version = self.index.version
        self.view = view
        width = max(self.size.width, 1)
        self.virtual_size = Size(width, len(view))
        if self.follow and len(view):
            self.cursor = len(view) - 1
            # now, so that the next frame draws the new lines (the maximum scroll follows the virtual
            # size just set), and again after that frame, should the layout have changed meanwhile
            self.scroll_end(animate=False, immediate=True, x_axis=False)
            self.scroll_end(animate=False, immediate=False, x_axis=False)
        self.cursor = min(self.cursor, max(len(view) - 1, 0))
        self._update_title()
        self.refresh()
        self.post_message(self.Moved())

    def on_resize(self) -> None:
        """The panels above grew or shrank: stay on the last line when following."""
        if self.follow:
            self.scroll_end(animate=False, immediate=False, x_axis=False)

    def _update_title(self) -> None:
        shown = f"{len(self.view):,} lines"
        if self.line_filter.active:
            shown += f" · filter {self.line_filter.describe()}"
        if self.search:
            shown += f" · search /{self.search}/"
        mode = "following" if self.follow and not self.frozen else "paused"
        if self.index.limit is not None and self.index.dropped():
            shown += f" · scroll-back: newest {self.index.limit:,} lines"
        self.border_title = f"log · {shown} · {mode}"

    def set_filter(self, line_filter: LineFilter) -> None:
        self.line_filter = line_filter
        self.refresh_index(force=True)

    # ----- rendering -----

    def _text(self, key: int) -> str:
        text = self._cache.get(key)
        if text is None:
            text = self.index.text(key).translate(_CONTROL)
            self._cache[key] = text
        return text

    def render_lines(self, crop: Region) -> list[Strip]:
        """Read the visible rows' line numbers and kinds at once: one short hold of the index's lock
        per frame, not one per row (the session's threads append under the same lock)."""
        top = self.scroll_offset.y
        keys = self.view[top : top + self.size.height]
        self._frame = (top, keys, self.index.line_numbers(keys), self.index.kinds(keys))
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def _row(self, row: int) -> tuple[int, int, int]:
        """(key, line number, kind) of a row of the view."""
        frame = self._frame
        if frame is not None and 0 <= row - frame[0] < len(frame[1]):
            i = row - frame[0]
            return int(frame[1][i]), int(frame[2][i]), int(frame[3][i])
        key = np.array([self.view[row]])
        return int(key[0]), int(self.index.line_numbers(key)[0]), int(self.index.kinds(key)[0])

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        if row >= len(self.view):
            return Strip.blank(width)
        key, number, kind = self._row(row)
        gutter = f"{number:>8} " if number else f"{'…':>8} "
        segments = [Segment(gutter, GUTTER)]
        if len(self.index.labels) > 1:
            names = self._source_names()
            column = min(max(len(n) for n in names.values()), _NAME_WIDTH)
            label = names[self.index.label(key)][:column]
            segments.append(Segment(f"{label:<{column}} ", Style(color="cyan", dim=True)))
        style = KIND_STYLE.get(kind, Style())
        if row == self.cursor:
            style = style + CURSOR
        segments.append(Segment(self._text(key)[scroll_x:], style))
        strip = Strip(segments).crop_extend(0, width, CURSOR if row == self.cursor else None)
        return strip

    def _source_names(self) -> dict[str, str]:
        """Each source's short name (`sources.naming`), the one its runs' labels start with."""
        if len(self._names) != len(self.index.labels):
            self._names = short_names(self.index.labels)
        return self._names

    # ----- movement -----

    def move_to(self, row: int, pause: bool = True) -> None:
        if not len(self.view):
            return
        self.cursor = max(0, min(row, len(self.view) - 1))
        if pause and self.cursor < len(self.view) - 1:
            self.follow = False
        top = self.scroll_offset.y
        height = self.scrollable_content_region.height
        if not top <= self.cursor < top + height:
            self.scroll_to(y=max(self.cursor - height // 2, 0), animate=False, immediate=True)
        self._update_title()
        self.refresh()
        self.post_message(self.Moved())

    def action_cursor(self, step: int) -> None:
        self.move_to(self.cursor + step, pause=step < 0 or self.cursor + step < len(self.view) - 1)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(self.scrollable_content_region.height - 1, 1))

    def action_home(self) -> None:
        self.move_to(0)

    def action_end(self) -> None:
        self.frozen = False
        self.follow = True
        self.refresh_index(force=True)

    def _on_mouse_scroll_up(self, event) -> None:
        self.follow = False
        self._update_title()
        super()._on_mouse_scroll_up(event)

    def watch_follow(self, follow: bool) -> None:
        self._update_title()

    def jump_to_key(self, key: int) -> bool:
        """Put the cursor on a line (clearing the filter when it hides the line)."""
        hits = np.flatnonzero(self.view == key)
        if not len(hits) and self.line_filter.active:
            self.line_filter = LineFilter()
            self._set_view(self.index.select(self.line_filter))
            hits = np.flatnonzero(self.view == key)
        if not len(hits):
            return False
        self.move_to(int(hits[0]))
        return True

    def next_fault(self) -> bool:
        row = self.index.next_kind(self.view, self.cursor)
        if row is None:
            return False
        self.move_to(row)
        return True

    # ----- search -----

    def start_search(self, pattern: str, forward: bool = True) -> None:
        from tracelens.live.index import check_pattern

        check_pattern(pattern)  # raises InputError for the caller to show
        self.search = pattern
        self._search_in_thread(pattern, self.view, self.cursor, forward)

    @work(thread=True, exclusive=True, group="search")
    def _search_in_thread(self, pattern: str, view: np.ndarray, start: int, forward: bool) -> None:
        try:
            row = self.index.find(pattern, view, start, forward)
        except InputError:
            row = None
        self.app.call_from_thread(self._search_done, pattern, view, row)

    def _search_done(self, pattern: str, view: np.ndarray, row: int | None) -> None:
        if row is not None and view is self.view:
            self.move_to(row)
        elif row is not None:  # the view grew meanwhile: same key, maybe another row
            self.jump_to_key(int(view[row]))
        self._update_title()
        self.post_message(self.SearchFinished(pattern, row is not None))

    def search_again(self, forward: bool) -> None:
        if self.search:
            self.start_search(self.search, forward)
