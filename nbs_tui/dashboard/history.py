"""The selected pane's scrollback: read from tmux when opened, followed while it is open.

The scrollback view (`nbs_tui.widgets.scrollback.Scrollback`) takes the mirror's place. Its
rows are read on a worker thread (10,000 rows of history cost tmux ~80 ms and their parsing
half a second), and while it is open every change of its pane reads the tail again, at most
every `FOLLOW_SECONDS` and one read at a time: the read is lined up with the rows on show
(`nbs_tui.core.screen.scrollback_search`) so only the new rows are parsed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Set
from typing import Any

from rich.text import Text
from textual.app import App
from textual.timer import Timer

from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.screen.scrollback_search import Grown, align, splice_tail
from nbs_tui.tmux.port import FleetPort, PaneGone, PaneHistory
from nbs_tui.widgets.pane_view import PaneView
from nbs_tui.widgets.scrollback import Scrollback, ansi_text

log = logging.getLogger(__name__)

SCROLLBACK_LINES = 10_000
"""How far back the scrollback view reads (tmux's own ``history-limit`` is 2000 by default)."""
FOLLOW_SECONDS = 0.3
"""The shortest gap between two re-reads of the open scrollback's pane."""
TAIL_ROWS = 200
"""A re-read asks tmux for this many history rows and the screen, not all of them (10,000 rows
cost tmux ~80 ms and the app more); only when they do not continue the rows on show (more
scrolled, or tmux dropped or cleared some) does it read the whole history again."""


class ScrollbackReader:
    """Opens the scrollback view on a pane and keeps it following the pane (UI thread)."""

    def __init__(
        self, app: App[Any], view: Scrollback, mirror: PaneView,
        selected: Callable[[], PaneId | None], fleet: Callable[[], FleetPort | None],
    ) -> None:  # fmt: skip
        self._app = app
        self._view = view
        self._mirror = mirror
        self._selected = selected
        self._fleet = fleet
        self.pane: PaneInfo | None = None
        """The pane the scrollback shows, while it is open."""
        self._follow_due = False
        self._follow_busy = False
        self._follow_at = 0.0
        self._follow_timer: Timer | None = None

    def open(self, pane: PaneInfo, fleet: FleetPort, page_up: bool) -> None:
        """Read the pane's history (a worker thread) and show it in place of the mirror."""
        app = self._app

        def read() -> None:
            try:
                history = fleet.capture_history(pane.pane_id, SCROLLBACK_LINES)
            except PaneGone as error:
                app.call_from_thread(app.notify, f"no history: {error}", title="Scrollback", severity="warning")
                return
            texts = [ansi_text(line) for line in history.lines]  # here: half a second for 10,000 lines
            app.call_from_thread(self._show, pane, history, texts, page_up)

        app.run_worker(read, name="scrollback", thread=True, exclusive=True, group="scrollback")

    def _show(self, pane: PaneInfo, history: PaneHistory, texts: list[Text], page_up: bool) -> None:
        if pane.pane_id != self._selected():
            return  # the operator moved on while it was read
        self._mirror.display = False
        self.pane, self._follow_due = pane, False
        self._view.show(
            pane.target, texts, alternate=history.alternate, history_size=history.history_size, page_up=page_up,
            raw=history.lines, fixed=_history_rows(history),
        )  # fmt: skip

    def closed(self) -> None:
        """The view was closed: the mirror is back."""
        self.pane, self._follow_due = None, False
        self._mirror.display = True

    def panes_changed(self, pane_ids: Set[PaneId]) -> None:
        """These panes' screens changed (the frame says, while the dashboard view is up)."""
        if self.pane is not None and self.pane.pane_id in pane_ids:
            self._follow_due = True
            self._follow()

    def _follow(self) -> None:
        """Re-read the open scrollback's pane (it changed) on a worker thread, at most every
        `FOLLOW_SECONDS` (wall time: the app's clock may be frozen), one read at a time; the
        worker lines the read up with the rows on show and parses only the new ones."""
        pane, fleet, view = self.pane, self._fleet(), self._view
        now = time.monotonic()
        if pane is None or fleet is None or not view.display:
            self._follow_due = False
            return
        if self._follow_busy:
            return  # the flag stays up: the read under way ends by reading again
        if now - self._follow_at < FOLLOW_SECONDS:
            if self._follow_timer is None:  # the flag stays up: read when the gap is over
                self._follow_timer = self._app.set_timer(self._follow_at + FOLLOW_SECONDS - now, self._follow_later)
            return
        self._follow_due, self._follow_busy, self._follow_at = False, True, now
        generation, raw, fixed, size = view.generation, view.raw, view.fixed, view.history_size
        app = self._app

        def read() -> None:
            history: PaneHistory | None = None
            grown: Grown | None = None
            texts: list[Text] = []
            try:
                history = _read_on(fleet, pane.pane_id, raw, fixed, size)
                grown = align(raw, fixed, history.lines)
                texts = [ansi_text(line) for line in grown.fresh]
            except PaneGone as error:
                log.info("scrollback not followed: %s", error)  # the pane's end shows in the list
            finally:  # always: the next read waits for this one
                app.call_from_thread(self._grown, generation, history, grown, texts)

        app.run_worker(read, name="scrollback-follow", thread=True, group="scrollback-follow")

    def _follow_later(self) -> None:
        self._follow_timer = None
        if self._follow_due:
            self._follow()

    def _grown(self, generation: int, history: PaneHistory | None, grown: Grown | None, texts: list[Text]) -> None:
        self._follow_busy = False
        view = self._view
        if history is not None and grown is not None and generation == view.generation and view.display:
            view.grow(
                grown, texts, history.lines, _history_rows(history),
                alternate=history.alternate, history_size=history.history_size,
            )  # fmt: skip
        # else the pane went, or the view was closed or reopened while it was read
        if self._follow_due:  # it changed again while this was read
            self._follow()


def _history_rows(history: PaneHistory, asked: int = SCROLLBACK_LINES) -> int:
    """How many of a read's rows are history (tmux changes them no more), the screen below them."""
    return 0 if history.alternate else min(history.history_size, asked, len(history.lines))


def _read_on(fleet: FleetPort, pane_id: PaneId, raw: tuple[str, ...], fixed: int, size: int) -> PaneHistory:
    """The pane's history as a whole read would give it, read (blocking) from its last
    `TAIL_ROWS` rows when they continue ``raw`` (``fixed`` rows of history, of ``size`` held)."""
    tail = fleet.capture_history(pane_id, TAIL_ROWS)
    if tail.alternate or tail.history_size <= TAIL_ROWS:
        return tail  # all of it
    rows = _history_rows(tail, TAIL_ROWS)
    whole = splice_tail(raw, fixed, size, tail.lines, rows, tail.history_size, SCROLLBACK_LINES)
    if whole is None:
        return fleet.capture_history(pane_id, SCROLLBACK_LINES)
    return PaneHistory(tuple(whole), False, tail.history_size)
