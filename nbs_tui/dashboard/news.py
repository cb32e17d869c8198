"""The backends' news, shown: what the fleet, tmux, the sidecar and Claude Code report becomes
the pane state (`nbs_tui.core.fleet.pane_state.PaneState`) and the widgets that show it.

The bridge turns each report into a message (`nbs_tui.dashboard.messages`); the app hands each to
`FleetNews`, which updates the state and repaints only what shows it: the fleet list's rows,
the grid's borders, the status bar (connection, counts, meters, lease, hosts), the banner
while tmux is away, and the message shown in place of the views while there is no pane.
Bursts are drawn once: the sidecar's first tick posts one status per pane, and the status bar
and the list are redrawn after the messages already queued, not for each (`show_changed`,
`update_counts`). Claude Code's background sessions (``claude --bg``) are listed after the panes,
except one opened in a pane that is still there. What follows for the selected pane (its details, the mirror) and for the
views is `nbs_tui.dashboard.views`'s: `NewsView` is what this asks of it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from textual.app import App
from textual.widgets import ContentSwitcher, Static

from nbs_tui.config import Settings
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.fleet.pane_state import PaneState, PaneStatus
from nbs_tui.core.sidecar.meters import describe_total, format_cost
from nbs_tui.dashboard.messages import (
    BackendNews,
    BackgroundSessionsChanged,
    ChangesCounted,
    ClaudeSignalsChanged,
    ConnectionChanged,
    FleetChanged,
    HostsChanged,
    LeaseChanged,
    PaneStatusChanged,
    RelayedMeters,
)
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.sidecar_runner import SidecarSnapshot
from nbs_tui.widgets.filter_bar import OperatorFleetList
from nbs_tui.widgets.grid import PaneGrid
from nbs_tui.widgets.status_bar import StatusBar


class NewsView(Protocol):
    """What the news asks of what is shown (`nbs_tui.dashboard.views.Views`), on the UI thread."""

    @property
    def selected_id(self) -> PaneId | None: ...

    def fleet_listed(self) -> None:
        """The fleet was listed again: the selection and the views follow."""

    def show_details(self) -> None:
        """Show the selected pane's details again (its state, meters or host changed)."""


class FleetNews:
    """Applies the backends' news to the pane state and repaints what shows it (UI thread)."""

    def __init__(
        self, app: App[Any], views: NewsView, state: PaneState, runtime: Runtime, settings: Settings, *,
        fleet_list: OperatorFleetList, grid: PaneGrid, status_bar: StatusBar, banner: Static, empty: Static,
        switcher: ContentSwitcher, clock: Callable[[], float], wall: Callable[[], float],
        mark_stale: Callable[[], None], statuses_shown: Callable[[], None], connection_shown: Callable[[], None],
    ) -> None:  # fmt: skip
        self._app = app
        self._views = views
        self._state = state
        self._runtime = runtime
        self._settings = settings
        self._fleet_list = fleet_list
        self._grid = grid
        self._status_bar = status_bar
        self._banner = banner
        self._empty = empty
        self._switcher = switcher
        self._clock = clock
        self._wall = wall
        self._mark_stale = mark_stale
        self._statuses_shown = statuses_shown
        """Called once the changed panes of a burst are drawn (a menu read may open a card)."""
        self._connection_shown = connection_shown
        """Called when the connection changed (the problems' count waits while tmux is away)."""
        self.connected: bool | None = None
        """tmux's server: None until the first word from it."""
        self.connection_message = ""
        """Why tmux is away, as the fleet said it."""
        self.start_error: str | None = None
        """Why the fleet could not start, until it connects."""
        self.hosts: dict[str, HostState] = {}
        """Each watched host's state, when several are (`hosts_changed`)."""
        self._seen_fleet = False
        self._changed: dict[PaneId, None] = {}
        """Panes whose shown state changed, repainted together by `_show_pending` (ordered set)."""
        self._counts_due = False
        """The status bar's counts are to be redrawn (`_redraw_counts`)."""
        self._empty_text: str | None = None
        """What the empty-state message shows ("" while there are panes), to update it only on a change."""
        self.background: tuple[BackgroundSession, ...] = ()
        """Claude Code's background sessions, as last listed (`nbs_tui.lifecycle.background_poll`)."""
        self.opened: dict[str, PaneId] = {}
        """Background session id -> the pane it was opened in (``o``): not listed while that pane is."""
        self._snapshot: SidecarSnapshot | None = None
        """The sidecar snapshot last shown (a new one is published each tick)."""

    def apply(self, message: BackendNews) -> None:
        """One piece of the backends' news, whatever it is (a problem is `ProblemsShown`'s)."""
        match message:
            case FleetChanged():
                self.fleet_changed(message)
            case ConnectionChanged():
                self.connection_changed(message)
            case PaneStatusChanged():
                self.pane_status_changed(message)
            case RelayedMeters():
                self.relayed_meters(message)
            case ClaudeSignalsChanged():
                self.claude_signals_changed(message)
            case LeaseChanged():
                self.lease_changed(message)
            case HostsChanged():
                self.hosts_changed(message)
            case BackgroundSessionsChanged():
                self.background_changed(message)
            case ChangesCounted():
                self.changes_counted(message)

    # -- the fleet and tmux --------------------------------------------------------------------

    def start_failed(self, error: str) -> None:
        """The fleet could not start (tmux unavailable): the empty state says why."""
        self.start_error = error
        self.connected = False

    def fleet_changed(self, message: FleetChanged) -> None:
        self._seen_fleet = True
        if self.connected is None:
            self.connected = True
            self._status_bar.set_connection(True)
        state = self._state
        state.set_fleet(message.panes)
        self._fleet_list.background = self._background_shown()
        self._fleet_list.update_fleet(state.panes, state.statuses, state.last_change, self._clock())
        self._views.fleet_listed()
        self.update_counts()
        self.update_empty_state()
        self._mark_stale()

    def background_changed(self, message: BackgroundSessionsChanged) -> None:
        self.background = message.sessions
        self._show_background()

    def background_opened(self, session_id: str, pane_id: PaneId) -> None:
        """A background session was opened in ``pane_id``: its pane stands for it now."""
        self.opened[session_id] = pane_id
        self._show_background()

    def _background_shown(self) -> tuple[BackgroundSession, ...]:
        panes = self._state.pane_by_id
        return tuple(s for s in self.background if self.opened.get(s.id) not in panes)

    def _show_background(self) -> None:
        shown = self._background_shown()
        if shown != self._fleet_list.background:
            self._fleet_list.background = shown
            state = self._state
            self._fleet_list.update_fleet(state.panes, state.statuses, state.last_change, self._clock())

    def connection_changed(self, message: ConnectionChanged) -> None:
        state = self._state
        if message.connected and self.connected is False:
            # a server that went away took its panes with it; pane ids restart on the new one
            state.forget_states()
            self._fleet_list.refresh_cells(state.statuses, state.last_change, self._clock())
            for pane in state.panes:
                self._grid.set_status(pane, None)
            self.update_counts()
            self._views.show_details()
        self.connected = message.connected
        self.connection_message = message.message
        self._status_bar.set_connection(message.connected)
        self._connection_shown()
        banner = self._banner
        if message.connected:
            self.start_error = None
            banner.display = False
            self._mark_stale()
        elif self._seen_fleet and state.panes:
            why = f" ({message.message})" if message.message else ""
            banner.update(
                f"⚠ {self._status_bar.server} is gone{why} — keeping the last view, reconnecting…"
            )
            banner.display = True
        self.update_empty_state()

    def hosts_changed(self, message: HostsChanged) -> None:
        """Several hosts: the bar names each one's state; a host away keeps its panes listed."""
        self.hosts = {state.name: state for state in message.states}
        self._status_bar.set_hosts(message.states)
        if self._fleet_list.set_hosts(message.states):  # offline marks and the host headers
            self._fleet_list.redraw()
        self._views.show_details()

    def lease_changed(self, message: LeaseChanged) -> None:
        self._status_bar.set_lease(message.text, message.acting)

    # -- the panes' states -----------------------------------------------------------------------

    def changes_counted(self, message: ChangesCounted) -> None:
        """The change column's counts for these agents (`nbs_tui.runtime.change_counter`)."""
        counts = dict(message.counts)
        self._fleet_list.set_changes(counts)
        state = self._state
        self._fleet_list.refresh_cells(state.statuses, state.last_change, self._clock(), list(counts))

    def pane_status_changed(self, message: PaneStatusChanged) -> None:
        state = self._state
        pane = state.pane_by_id.get(message.pane_id)
        if pane is None:
            return
        if message.history is not None:
            state.add_history(pane.pane_id, message.history)
        if message.status is not None:
            self.show_changed(state.set_sidecar_statuses([message.status], self._clock(), self._wall()))
        elif pane.pane_id == self._views.selected_id:
            self._views.show_details()

    def relayed_meters(self, message: RelayedMeters) -> None:
        if self._state.set_relayed_meters(message.pane_id, message.meters):
            self.update_counts()
            if message.pane_id == self._views.selected_id:
                self._views.show_details()

    def claude_signals_changed(self, message: ClaudeSignalsChanged) -> None:
        shown = self._state.set_claude(message.facts, self._clock(), self._wall())
        self.show_changed(shown)
        if not shown:  # the meters may move while the state stays
            self.update_counts()
            if any(pane_id == self._views.selected_id for pane_id, _raw in message.facts):
                self._views.show_details()

    def tick(self) -> bool:
        """Once a second: the lease's pause, the sidecar's latest statuses, Claude Code's signals
        that went stale, the quiet times. False while there are no panes."""
        self._status_bar.set_paused(any(lease.paused for lease in self._runtime.leases()))
        state = self._state
        if not state.panes:
            return False
        self._refresh_statuses()
        if state.raw_claude:
            # Only a pane with a reading (Claude Code's or the screen's) can go stale as time
            # passes; the others change only with news, which refuses them then. At 1,000 idle
            # shells, fusing every pane each second was a third of the UI thread (issue 35).
            timed = [
                pane_id for pane_id, raw in state.raw_claude.items()
                if raw.readings
                or ((status := state.sidecar_statuses.get(pane_id)) is not None and status.state is not None)
            ]  # fmt: skip
            self.show_changed(state.refuse(timed, self._clock(), self._wall()))
        self._fleet_list.refresh_cells(state.statuses, state.last_change, self._clock())
        return True

    def _refresh_statuses(self) -> None:
        """Every pane's sidecar status from the runner's latest snapshot: one attribute read,
        no lock, so the UI thread reads it itself (a tick busy in tmux never holds it up)."""
        runner = self._runtime.sidecar_view
        if runner is None or runner.snapshot is self._snapshot:
            return
        self._snapshot = snapshot = runner.snapshot
        statuses = tuple(PaneStatus.from_sidecar(s) for s in snapshot.statuses.values())
        self.show_changed(self._state.set_sidecar_statuses(statuses, self._clock(), self._wall()))

    def show_changed(self, pane_ids: list[PaneId]) -> None:
        """Repaint what shows these panes' state, once for a whole batch of news: the sidecar's
        first tick posts one `PaneStatusChanged` per pane, and redrawing the status bar and the
        list's rows for each of them cost 0.1-0.17 s of the first frame at 50 agents (py-spy)."""
        if not pane_ids:
            return
        if not self._changed:  # runs after the messages already queued: the rest of the batch
            self._app.call_later(self._show_pending)
        self._changed.update(dict.fromkeys(pane_ids))

    def _show_pending(self) -> None:
        """Repaint the panes changed since the last call: only their rows; the details if selected."""
        state = self._state
        by_id, statuses = state.pane_by_id, state.statuses
        pane_ids = [pane_id for pane_id in self._changed if pane_id in by_id]  # one may have gone
        self._changed.clear()
        if not pane_ids:
            return
        self._statuses_shown()
        for pane_id in pane_ids:
            self._grid.set_status(by_id[pane_id], statuses.get(pane_id))
        self._fleet_list.refresh_cells(statuses, state.last_change, self._clock(), pane_ids)
        self.update_counts()
        if self._views.selected_id in pane_ids:
            self._views.show_details()

    # -- the status bar's counts and the empty state ---------------------------------------------

    def update_counts(self) -> None:
        """Redraw the status bar's counts and meters once, after the messages already queued:
        summing every pane's meters for each pane's news was O(panes²) a tick (0.8 % of a core
        at 200 agents, py-spy), since the holder relays each agent's meters as their own event."""
        if not self._counts_due:
            self._counts_due = True
            self._app.call_later(self._redraw_counts)

    def _redraw_counts(self) -> None:
        self._counts_due = False
        self._status_bar.set_counts(*self._state.counts())
        meters = self._state.fleet_meters()
        if meters is None or not meters.responses:  # no usage read yet: nothing to sum
            self._status_bar.set_meters("")
        else:
            prices = self._settings.prices
            self._status_bar.set_meters(describe_total(meters, prices), format_cost(meters.cost(prices)))

    def update_empty_state(self) -> None:
        """Say why there is nothing to show, in place of the views, while there are no panes."""
        server = self._status_bar.server
        demo = "Run 'nbs-tui demo' to try nbs-tui on a demo fleet of imitation agents."
        text = ""
        if self._state.panes:
            text = ""
        elif self.start_error:
            text = f"Cannot watch {server}: {self.start_error}\n\n{demo}"
        elif self.connected is False:
            why = f"\n({self.connection_message})" if self.connection_message else ""
            text = (
                f"No tmux server is running at {server}.{why}\n\n"
                "Start your agents in tmux (e.g. 'tmux new -s agents claude'), and nbs-tui will find "
                f"them as soon as the server is up; or quit with q.\n\n{demo}"
            )
        elif self.connected is None or not self._seen_fleet:
            text = f"Connecting to {server}…"
        else:
            sessions = self._settings.sessions
            only = f" in sessions {', '.join(sessions)}" if sessions else ""
            text = (
                f"{server} has no panes to watch{only}.\n\n"
                "Start Claude Code in a tmux pane and it appears here.\n\n" + demo
            )
        if text == self._empty_text:
            return  # the fleet is re-listed every time a title changes: no layout for nothing
        self._empty_text = text
        self._empty.update(text)
        self._empty.display = bool(text)
        self._switcher.display = not text
