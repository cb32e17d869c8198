"""What the dashboard shows: which view is up, which pane is selected, and the frame that
repaints what shows the panes.

Four views (`VIEWS`): the dashboard (the fleet list, the selected pane's details and its live
mirror, which may be zoomed to the whole screen), the grid of thumbnails, the Control view
(registry, chat, inbox) and the work queue (`nbs_tui.dashboard.queue_shown`). The selected pane is the list's cursor or the grid's focus; the fleet
keeps a live screen model only of the panes shown (the mirrored one, the thumbnails on screen),
so this tells it which those are (`nbs_tui.tmux.port.FleetPort.set_watched`).

The frame (`Views.draw`) repaints the changed rows of the mirror or of the thumbnails on screen;
`nbs_tui.dashboard.frames.FrameScheduler` decides when it runs, faster for the mirrored pane
(`Views` tells it which that is).
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Any

from textual.app import App
from textual.widgets import ContentSwitcher

from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.pane_state import PaneState
from nbs_tui.dashboard.frames import FrameScheduler
from nbs_tui.dashboard.history import ScrollbackReader
from nbs_tui.tmux.port import FleetPort
from nbs_tui.widgets.control_view import ControlView
from nbs_tui.widgets.detail_panel import DetailPanel
from nbs_tui.widgets.filter_bar import OperatorFleetList
from nbs_tui.widgets.grid import PaneGrid
from nbs_tui.widgets.pane_text import format_duration, quiet_start
from nbs_tui.widgets.pane_view import PaneView, ScreenSource
from nbs_tui.widgets.queue_view import QueueView
from nbs_tui.widgets.scrollback import Scrollback
from nbs_tui.widgets.status_bar import StatusBar

VIEWS = ("dashboard", "grid", "control", "queue")


class Views:
    """The view shown, the selected pane, and the frame (UI thread)."""

    def __init__(
        self, app: App[Any], state: PaneState, frames: FrameScheduler, *, fleet: Callable[[], FleetPort | None],
        switcher: ContentSwitcher, status_bar: StatusBar, fleet_list: OperatorFleetList, grid: PaneGrid,
        mirror: PaneView, scrollback: Scrollback, detail: DetailPanel, control_view: ControlView,
        queue_view: QueueView, history: ScrollbackReader, host_state: Callable[[str], HostState | None], clock: Callable[[], float],
    ) -> None:  # fmt: skip
        self._app = app
        self._state = state
        self._frames = frames
        self._fleet = fleet
        self._switcher = switcher
        self._status_bar = status_bar
        self._fleet_list = fleet_list
        self._grid = grid
        self._mirror = mirror
        self._scrollback = scrollback
        self._detail = detail
        self._control_view = control_view
        self._queue_view = queue_view
        self._history = history
        self._host_state = host_state
        self._clock = clock
        self.current = "dashboard"
        """The view shown: one of `VIEWS`."""
        self.selected_id: PaneId | None = None
        """The pane the operator selected (list cursor, grid focus)."""
        self._grid_behind = False
        """The fleet changed while the grid was hidden: its thumbnails wait until it is shown."""
        self._grid_key: tuple[object, ...] = ()
        self._grid_watched: frozenset[PaneId] = frozenset()

    # -- the selected pane -----------------------------------------------------------------------

    def selected_pane(self) -> PaneInfo | None:
        """The pane the operator has selected, if it still exists."""
        return self._state.pane_by_id.get(self.selected_id) if self.selected_id else None

    def select_pane(self, pane_id: PaneId) -> None:
        """Select a pane by id wherever the operator is (list, grid, palette)."""
        if pane_id in self._state.pane_by_id:
            self._fleet_list.select_pane(pane_id)
            self.select(pane_id)

    def select(self, pane_id: PaneId | None, from_grid: bool = False) -> None:
        """Make ``pane_id`` the selected pane (None if it is gone) and show it."""
        if pane_id is not None and pane_id not in self._state.pane_by_id:
            pane_id = None
        changed = pane_id != self.selected_id
        self.selected_id = pane_id
        if changed and self._scrollback.display:
            self._scrollback.action_close()  # it showed the pane no longer selected
        if changed and pane_id is not None:
            fleet_list = self._fleet_list
            if fleet_list.selected_pane_id != pane_id:
                fleet_list.select_pane(pane_id)
            for thumb in self._grid.thumbnails:
                thumb.set_class(thumb.pane_id == pane_id, "selected")
        self._show_selected()

    def fleet_listed(self) -> None:
        """The fleet was listed again: select the list's pane if the selected one is gone, else
        show the same one again (its title may have changed); the grid catches up when shown."""
        if self.selected_id not in self._state.pane_by_id:
            self.select(self._fleet_list.selected_pane_id)
        else:
            self._show_selected()
        self._grid_behind = True
        if self.current == "grid":
            self.catch_up_grid()

    def show_details(self) -> None:
        """The selected pane's details, as they are now."""
        pane = self.selected_pane()
        pane_id = pane.pane_id if pane else ""
        state = self._state
        self._detail.show(
            pane,
            state.statuses.get(pane_id),
            state.facts_shown(pane_id),
            list(state.history.get(pane_id, ())),
            state.last_change.get(pane_id),
            self._clock(),
            self._host_state(pane.host) if pane is not None and pane.host else None,
            self._queue_view.task_held_by(pane_id) if pane is not None else None,
        )

    def screen_of(self, pane_id: PaneId) -> ScreenSource | None:
        """The fleet's live model of a pane's screen (only of a pane it watches)."""
        fleet = self._fleet()
        if fleet is None:
            return None
        screen: ScreenSource | None = fleet.screen(pane_id)
        return screen

    def _show_selected(self) -> None:
        pane = self.selected_pane()
        fleet = self._fleet()
        if fleet is not None:
            # The fleet keeps a live model of the selected pane only (and of the visible
            # thumbnails): ask for it before reading it.
            fleet.set_watched("mirror", [pane.pane_id] if pane else [])
        self._mirror.show(pane, self.screen_of(pane.pane_id) if pane else None)
        self._watch_mirrored()
        self.show_details()

    def _watch_mirrored(self) -> None:
        pane = self._mirror.pane
        self._frames.mirrored = pane.pane_id if pane is not None and self.current == "dashboard" else None

    # -- the views -------------------------------------------------------------------------------

    def show(self, name: str) -> None:
        """Switch to view ``name`` (one of `VIEWS`)."""
        if name not in VIEWS:
            return
        app = self._app
        self.current = name
        self._watch_mirrored()
        self._switcher.current = name
        self._status_bar.set_view(name)
        app.refresh_bindings()
        if name != "dashboard":
            app.screen.remove_class("zoomed")
        if name == "grid":
            self.catch_up_grid()
            self._grid.focus_pane(self.selected_id)
            app.call_after_refresh(self.refresh_grid_clocks)  # thumbnails are laid out by then
        elif name == "dashboard":
            self._fleet_list.focus()
        elif name == "control":
            self._control_view.registry_panel.focus()
        elif name == "queue":
            self._queue_view.table.focus()
            app.call_after_refresh(self._queue_view.draw_if_shown)  # laid out by then
        self._frames.request()

    def toggle_zoom(self) -> None:
        """The mirror over the whole screen, or back beside the list."""
        screen = self._app.screen
        if self.current != "dashboard":
            self.show("dashboard")
            screen.add_class("zoomed")
        else:
            screen.toggle_class("zoomed")
        if screen.has_class("zoomed"):
            self._mirror.focus()
        else:
            self._fleet_list.focus()
        self._frames.request()

    def move(self, delta: int) -> None:
        """Move the selection (the grid's focus, or the list's cursor)."""
        if self.current == "grid":
            self._grid.action_move(delta, 0)
        elif self.current == "dashboard":
            self._fleet_list.move_selection(delta)
        elif self.current == "queue":
            self._queue_view.move_cursor(delta)

    def catch_up_grid(self) -> None:
        """Give the grid a thumbnail per pane. Only while it is shown: mounting 50 thumbnails
        and styling them took 0.4-0.8 s of the first frame at 50 agents (py-spy of the start),
        for a view the dashboard does not open with."""
        if self._grid_behind:
            self._grid_behind = False
            self._grid.update_fleet(self._state.panes, self._state.statuses, self.screen_of, self.selected_id)

    # -- the frame and the clock -----------------------------------------------------------------

    def draw(self, dirty: Set[PaneId], whole: bool) -> None:
        """Repaint the changed rows of the visible widgets showing ``dirty`` panes (every row
        with ``whole``). Run by `FrameScheduler` only, never for nothing."""
        if not self._app.is_running:  # shutting down: see `tick`
            return
        if dirty:
            self._state.screens_changed(dirty, self._clock())
        if self.current == "dashboard":
            self._history.panes_changed(dirty)
            mirror = self._mirror
            if mirror.pane is not None:
                source = self.screen_of(mirror.pane.pane_id)
                if source is not mirror.lines.source:  # a model made (or dropped) since
                    mirror.show(mirror.pane, source)
                if whole or mirror.pane.pane_id in dirty:
                    mirror.screen_changed()
        elif self.current == "grid":
            self._watch_grid(force=whole)
            self._grid.tick(None if whole else dirty, self.screen_of)

    def tick(self) -> None:
        """Once a second: the grid's quiet times and which thumbnails are on screen, the
        selected pane's details."""
        self.refresh_grid_clocks()
        self.show_details()

    def refresh_grid_clocks(self) -> None:
        self._watch_grid(force=True)
        if self.current != "grid":
            return
        state, now = self._state, self._clock()
        quiet = {}
        for pane in state.panes:
            since = quiet_start(state.statuses.get(pane.pane_id), state.last_change.get(pane.pane_id))
            if since is not None:
                quiet[pane.pane_id] = format_duration(now - since)
        self._grid.refresh_clocks(quiet)

    def _watch_grid(self, force: bool = False) -> None:
        """Tell the fleet which thumbnails are on screen (it parses only those): when the grid
        scrolled, resized or the fleet changed, and once a second (`force`)."""
        grid = self._grid
        key = (self.current, grid.scroll_offset, grid.size, len(self._state.panes))
        if not force and key == self._grid_key:
            return
        self._grid_key = key
        visible = grid.visible_panes() if self.current == "grid" else frozenset()
        fleet = self._fleet()
        if visible != self._grid_watched and fleet is not None:
            self._grid_watched = visible
            fleet.set_watched("grid", visible)
