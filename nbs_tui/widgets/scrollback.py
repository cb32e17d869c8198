"""The selected pane's scrollback, read from tmux on demand, with search.

The app reads the history (`nbs_tui.tmux.port.FleetPort.capture_history`, on a worker thread:
the widgets never talk to tmux) and hands the lines here; nothing is kept once the view closes,
so no pane's history lives in memory. `HistoryLines` draws them with the line API (a Strip per
row, cached, built only for rows on screen); the search bar finds matches with
`nbs_tui.core.screen.scrollback_search` and the rows with a match are redrawn with highlights.

Keys (from `nbs_tui.dashboard.key_table`, scope ``scrollback``): PgUp/PgDn, arrows, Home/End and the
wheel scroll; ``/`` searches, ``n``/``N`` go to the next/previous match, Esc goes back to the
live mirror. While the view has focus these keys win over the app's (``/`` filters the list and
``n`` selects the next waiting agent elsewhere).

It follows the pane, as tmux's copy mode or ``less +F`` do: the app re-reads the history when
the pane changes and hands over only what `nbs_tui.core.screen.scrollback_search.align` found new (`grow`).
At the bottom the view stays at the bottom; scrolled up, the rows on show stay put and the border
counts the new lines until End (or scrolling down to the bottom) follows again.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar

from rich.cells import cell_len
from rich.style import Style
from rich.text import Span, Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Input

from nbs_tui.core.screen.scrollback_search import (
    Grown,
    Match,
    carry_match,
    find_matches,
    nearest_above,
    step,
)
from nbs_tui.dashboard.key_table import scope_bindings

MATCH_STYLE = Style(bgcolor="yellow", color="black")
CURRENT_STYLE = Style(bgcolor="bright_magenta", color="black", bold=True)


@lru_cache(maxsize=1024)
def _no_default(style: Style) -> Style:
    """SGR 39/49 (tmux writes them after every reset) as no colour, not the terminal's "default"
    colour (Textual would paint that as an explicit black): the widget's colours show through,
    as in the mirror."""
    fg, bg = style.color, style.bgcolor
    if not (fg is not None and fg.is_default) and not (bg is not None and bg.is_default):
        return style
    return style.without_color + Style.from_color(
        None if fg is None or fg.is_default else fg, None if bg is None or bg.is_default else bg
    )


def ansi_text(line: str) -> Text:
    """One captured line (SGR escapes) as Rich Text."""
    text = Text.from_ansi(line, end="")
    text.spans = [Span(span.start, span.end, _no_default(span.style)) for span in text.spans if isinstance(span.style, Style)]
    return text


class HistoryLines(ScrollView, can_focus=True):
    """Lines of ANSI text, scrolled, with search matches highlighted."""

    DEFAULT_CSS = """
    HistoryLines { height: 1fr; }
    """

    class ReachedBottom(Message):
        """Scrolled to the last row: the view follows new output again."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.texts: list[Text] = []
        self._width = 0
        self.plain: list[str] = []
        self.matches: list[Match] = []
        self.current: int | None = None
        self._by_row: dict[int, list[int]] = {}
        self._strips: LRUCache[tuple[int, int | None], Strip] = LRUCache(1024)

    def set_lines(self, texts: Sequence[Text]) -> None:
        """Lines parsed by `ansi_text` (off the UI thread: 10,000 lines take about half a second)."""
        self.texts = list(texts)
        self.plain = [text.plain for text in self.texts]
        self._width = max((cell_len(line) for line in self.plain), default=0)
        self.virtual_size = Size(self._width, len(self.texts))
        self.set_matches([], None)

    def grow(self, dropped: int, kept: int, texts: Sequence[Text]) -> None:
        """Drop ``dropped`` rows from the top, keep the next ``kept``, put ``texts`` after them
        (a `Grown` from `nbs_tui.core.screen.scrollback_search.align`). The scroll offset is the caller's."""
        del self.texts[:dropped], self.plain[:dropped]
        del self.texts[kept:], self.plain[kept:]
        self.texts.extend(texts)
        fresh = [text.plain for text in texts]
        self.plain.extend(fresh)
        # the widest row so far: rows dropped from the top may leave it a little wide, never short
        self._width = max(self._width, max((cell_len(line) for line in fresh), default=0))
        self.virtual_size = Size(self._width, len(self.texts))
        self._strips.clear()
        self.refresh()

    @property
    def at_bottom(self) -> bool:
        return self.scroll_offset.y >= self.max_scroll_y

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(new_value) >= self.max_scroll_y and round(old_value) < self.max_scroll_y:
            self.post_message(self.ReachedBottom())

    def set_matches(self, matches: list[Match], current: int | None) -> None:
        self.matches = matches
        self.current = current
        self._by_row = {}
        for index, match in enumerate(matches):
            self._by_row.setdefault(match.row, []).append(index)
        self._strips.clear()
        self.refresh()

    def show_match(self, index: int | None) -> None:
        """Make ``index`` the current match and scroll it into the middle of the view."""
        self.current = index
        self._strips.clear()
        if index is not None:
            row = self.matches[index].row
            self.scroll_to(y=max(0, row - self.size.height // 2), animate=False)
        self.refresh()

    @property
    def bottom_row(self) -> int:
        return int(self.scroll_offset.y) + max(0, self.size.height - 1)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = int(scroll_y) + y
        width = self.size.width
        if row >= len(self.texts):
            return Strip.blank(width)
        here = self._by_row.get(row)
        key = (row, self.current if here and self.current in here else -1 if here else None)
        strip = self._strips.get(key)
        if strip is None:
            text = self.texts[row]
            if here:
                text = text.copy()
                for index in here:
                    match = self.matches[index]
                    text.stylize(CURRENT_STYLE if index == self.current else MATCH_STYLE, match.start, match.end)
            strip = Strip(list(text.render(self.app.console)))
            self._strips[key] = strip
        return strip.crop_extend(int(scroll_x), int(scroll_x) + width, None)


class SearchInput(Input):
    """The scrollback's search bar: Enter keeps the matches, Esc drops the query."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel search", show=False)]

    class Cancelled(Message):
        """The operator left the search bar with Esc."""

    def action_cancel(self) -> None:
        self.post_message(self.Cancelled())


class Scrollback(Vertical, can_focus=False):
    """The history of one pane with a search bar; posts `Closed` on Esc."""

    BINDINGS: ClassVar[list[BindingType]] = list(scope_bindings("scrollback"))
    DEFAULT_CSS = """
    Scrollback { width: 3fr; border: round $accent; display: none; }
    Scrollback SearchInput { dock: bottom; display: none; border: none; height: 1; padding: 0 1; }
    Scrollback SearchInput.open { display: block; }
    """

    class Closed(Message):
        """Back to the live mirror."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lines = HistoryLines(id="history-lines")
        self.search_bar = SearchInput(placeholder="search the history (smart case); Enter: keep, Esc: cancel", id="history-search")
        self.what = ""
        self.query_text = ""
        self.note = ""
        self.raw: tuple[str, ...] = ()
        """The rows on show as tmux wrote them (escapes and all): the next read is lined up with them."""
        self.fixed = 0
        """How many of `raw` were history (tmux no longer changes them), the rest its screen."""
        self.history_size = 0
        """How many history rows tmux held at that read (it may hold more than were read)."""
        self.unseen = 0
        """New lines below the view since the operator scrolled up from the bottom."""
        self.generation = 0
        """Counts shows and closes: a read started before one of them is stale."""

    def compose(self) -> ComposeResult:
        yield self.lines
        yield self.search_bar

    def show(
        self, what: str, lines: Sequence[Text], *, alternate: bool, history_size: int, page_up: bool,
        raw: Sequence[str] = (), fixed: int = 0,
    ) -> None:  # fmt: skip
        """Show ``lines`` (oldest first, from `ansi_text`) of the pane named ``what``, at the
        bottom, or one page up from it (``page_up``: PgUp opened it). ``raw`` are the same rows
        as read, the first ``fixed`` of them history: what the next read is lined up with."""
        self.what = what
        self.query_text = ""
        self.search_bar.value = ""
        self.search_bar.remove_class("open")
        self.note = _note(alternate, history_size)
        self.raw, self.fixed, self.history_size, self.unseen = tuple(raw), fixed, history_size, 0
        self.generation += 1
        self.lines.set_lines(lines)
        self.display = True
        self._titles()

        def place() -> None:
            end = max(0, len(lines) - self.lines.size.height)
            self.lines.scroll_to(y=max(0, end - self.lines.size.height) if page_up else end, animate=False)

        self.call_after_refresh(place)
        self.lines.focus()

    def grow(
        self, grown: Grown, texts: Sequence[Text], raw: Sequence[str], fixed: int, *, alternate: bool, history_size: int
    ) -> None:
        """A new read of the pane: ``grown`` lines it up with the rows on show, ``texts`` are
        its `Grown.fresh` rows parsed, ``raw``/``fixed`` the whole read (as in `show`). At the
        bottom the view follows; scrolled up, the rows on show stay where they are (unless the
        history was cleared or reflowed: then it shows the bottom, as when it was opened)."""
        self.raw, self.fixed, self.history_size = tuple(raw), fixed, history_size
        self.note = _note(alternate, history_size)
        lines = self.lines
        if not grown.unchanged:
            following = lines.at_bottom or grown.reset  # the rows read are gone: start afresh
            top = int(lines.scroll_offset.y)
            current = lines.matches[lines.current] if lines.current is not None else None
            before = len(lines.texts) - grown.dropped
            lines.grow(grown.dropped, grown.kept, texts)
            if self.query_text:  # the highlights over the grown text, the current match kept
                matches = find_matches(lines.plain, self.query_text)
                lines.set_matches(matches, carry_match(current, grown.dropped, matches))
            if following:
                self.unseen = 0
                lines.scroll_to(y=lines.max_scroll_y, animate=False)
            else:
                self.unseen += max(0, len(lines.texts) - before)
                lines.scroll_to(y=max(0, top - grown.dropped), animate=False)
        self._titles()

    def on_history_lines_reached_bottom(self, event: HistoryLines.ReachedBottom) -> None:
        event.stop()
        if self.unseen:
            self.unseen = 0
            self._titles()

    def _titles(self) -> None:
        self.border_title = f"history of {self.what} · {self.note}"
        lines = self.lines
        unseen = f"+{self.unseen} new line{'s' if self.unseen != 1 else ''} — End to follow · " if self.unseen else ""
        if self.query_text:
            where = f"{lines.current + 1}/{len(lines.matches)}" if lines.current is not None else "no match"
            found = f"“{self.query_text}”: {where}" if lines.matches else f"“{self.query_text}”: no match"
            self.border_subtitle = f"{unseen}{found} · n/N next/previous · Esc live view"
        else:
            self.border_subtitle = f"{unseen}PgUp/PgDn · / search · Esc live view"

    def search(self, query: str) -> None:
        """Find ``query`` and go to the match nearest above the bottom of the view."""
        self.query_text = query
        lines = self.lines
        matches = find_matches(lines.plain, query)
        lines.set_matches(matches, None)
        lines.show_match(nearest_above(matches, lines.bottom_row))
        self._titles()

    def action_search(self) -> None:
        self.search_bar.add_class("open")
        self.search_bar.focus()

    def action_next_match(self) -> None:
        self._step(forward=True)

    def action_previous_match(self) -> None:
        self._step(forward=False)

    def _step(self, *, forward: bool) -> None:
        lines = self.lines
        if not lines.matches:
            self.app.bell()
            return
        lines.show_match(step(lines.matches, lines.current, forward))
        self._titles()

    def action_close(self) -> None:
        self.lines.set_lines([])  # the history is not kept
        self.raw, self.fixed, self.unseen = (), 0, 0
        self.generation += 1
        self.display = False
        self.post_message(self.Closed())

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.search(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.search_bar.remove_class("open")
        self.lines.focus()

    def on_search_input_cancelled(self, event: SearchInput.Cancelled) -> None:
        event.stop()
        self.search_bar.value = ""
        self.search_bar.remove_class("open")
        self.search("")
        self.lines.focus()


def _note(alternate: bool, history_size: int) -> str:
    if alternate:
        return "alternate screen: a full-screen program keeps no scrollback; this is its screen"
    return f"{history_size} lines of history"
