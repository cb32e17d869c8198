"""The Textual app: wiring only. Widgets live in `nbs_tui.widgets`, messages in `nbs_tui.messages`.

How data flows:
- the fleet (`FleetPort`) calls `FleetBridge` on its own threads; pane-set and connection news
  become messages (``post_message`` is thread-safe), while screen changes, which can come at
  ~60 Hz, only add pane ids to a set;
- a ~30 Hz timer on the UI thread drains that set and asks the visible widgets showing those
  panes to repaint their changed rows: at most one repaint per frame, none for hidden views;
- a change of the pane the mirror shows does not wait for that timer: the bridge posts one
  `MirrorDue` (at most ~60 a second, never two queued) and the app runs the frame at once;
- a 1 Hz timer updates the clocks (quiet time, next-poll countdown) cell by cell.

Extension points for operator actions: `NbsApp.selected_pane()`, the `COMMANDS` table (each entry
is a binding with an id, a footer label and a command-palette entry), and the ``#input-bar``
container docked above the footer, empty and hidden until something is mounted in it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static
from textual.worker import Worker, WorkerState

from nbs_tui.claude.watcher import ClaudeFacts as RawClaudeFacts
from nbs_tui.claude.watcher import ClaudeSignals
from nbs_tui.config import Settings
from nbs_tui.core.model import PaneId, PaneInfo
from nbs_tui.core.pane_state import HISTORY_LENGTH, HistoryEntry, PaneState, PaneStatus
from nbs_tui.files.control_plane import ControlEvent, ControlPlane
from nbs_tui.messages import (
    BackendProblem,
    ClaudeSignalsChanged,
    ConnectionChanged,
    FleetChanged,
    PaneStatusChanged,
    PaneStatusesRefreshed,
)
from nbs_tui.runtime import FleetFactory, Runtime, RuntimeOptions
from nbs_tui.sidecar_runner import SidecarEvent, SidecarRunner
from nbs_tui.tmux.port import FleetPort, TmuxUnavailable
from nbs_tui.widgets.control_view import ControlView
from nbs_tui.widgets.detail_panel import DetailPanel
from nbs_tui.widgets.fleet_list import FleetList, format_duration, quiet_start
from nbs_tui.widgets.grid import PaneGrid
from nbs_tui.widgets.help_screen import HelpScreen
from nbs_tui.widgets.pane_view import PaneView, ScreenSource
from nbs_tui.widgets.status_bar import StatusBar

FRAME_SECONDS = 1 / 30
MIRROR_SECONDS = 1 / 60
"""The shortest gap between two frames run early for the mirrored pane."""
CLOCK_SECONDS = 1.0
PROBLEM_REPEAT_SECONDS = 30.0
VIEWS = ("dashboard", "grid", "control")


def css_path() -> Path:
    """The stylesheet, in an installed wheel (``nbs_tui/styles``) or a checkout (``styles/``)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "styles" / "app.tcss", here.parent / "styles" / "app.tcss"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"nbs-tui styles not found next to {here}")


@dataclass(frozen=True, slots=True)
class Command:
    """One operator command: a key binding with an id, a footer label and a palette entry."""

    id: str
    keys: str
    action: str
    label: str
    help: str
    show: bool = True
    key_display: str | None = None
    priority: bool = False
    palette: str = ""
    """The command palette's name for it, when the short footer label would not do."""

    def binding(self) -> Binding:
        return Binding(
            self.keys, self.action, self.label, show=self.show, key_display=self.key_display,
            id=self.id, priority=self.priority,
        )


COMMANDS: tuple[Command, ...] = (
    Command("pane.next", "j,down", "move(1)", "Next", "Select the next pane", key_display="j/↓"),
    Command("pane.previous", "k,up", "move(-1)", "Previous", "Select the previous pane", key_display="k/↑"),
    Command("view.zoom", "z", "toggle_zoom", "Zoom", "Show the selected pane full-screen (again to go back)"),
    Command("view.unzoom", "escape", "unzoom", "Back", "Leave the full-screen mirror", show=False),
    Command("view.dashboard", "1", "show_view('dashboard')", "List", "Fleet list with the live mirror"),
    Command("view.grid", "2", "show_view('grid')", "Grid", "Live thumbnails of every pane"),
    Command("view.control", "3", "show_view('control')", "Control", "Control plane: registry, inbox, chat"),
    Command("view.details", "d", "toggle_details", "Details", "Show or hide the selected pane's details"),
    Command("app.help", "question_mark,f1", "help", "Help", "List every key", key_display="?"),
    Command("app.quit", "q", "quit", "Quit", "Leave nbs-tui (the agents keep running)", palette="Quit nbs-tui"),
)


class MirrorDue(Message):
    """The mirrored pane's screen changed: run the frame now rather than at the next tick."""

    bubble = False

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, MirrorDue)


class FleetBridge:
    """The app's `RuntimeListener`: called on the backends' threads, touches no widget."""

    def __init__(self, app: NbsApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._dirty: set[PaneId] = set()
        self.watched: PaneId | None = None
        """The pane the mirror shows (set on the UI thread); its changes are posted at once."""
        self._due_pending = False
        self._due_at = 0.0

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self._app.post_message(FleetChanged(tuple(panes)))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        watched = self.watched
        with self._lock:
            self._dirty |= pane_ids
            if watched is None or watched not in pane_ids or self._due_pending:
                return
            now = time.monotonic()
            if now - self._due_at < MIRROR_SECONDS:
                return  # the frame timer takes it
            self._due_pending = True
            self._due_at = now
        self._app.post_message(MirrorDue())

    def due_handled(self) -> None:
        with self._lock:
            self._due_pending = False

    def connection_changed(self, connected: bool, message: str) -> None:
        self._app.post_message(ConnectionChanged(connected, message))

    def claude_facts_changed(self, facts: Mapping[PaneId, RawClaudeFacts]) -> None:
        self._app.post_message(ClaudeSignalsChanged(tuple(facts.items())))

    def sidecar_event(self, event: SidecarEvent) -> None:
        """Turn the event into messages, touch nothing else (``notify`` only posts one)."""
        app = self._app
        if event.kind == "error":
            app.post_message(BackendProblem("sidecar", f"{event.pane_id} {event.message}".strip()))
        elif event.kind == "agent-ended":
            app.notify(f"{event.pane_id}: {event.message}", title="Agent ended", severity="warning", timeout=8)
        status = PaneStatus.from_sidecar(event.status) if event.status is not None else None
        history = HistoryEntry.from_sidecar_event(event)
        if event.pane_id and (status is not None or history is not None):
            app.post_message(PaneStatusChanged(event.pane_id, status, history))

    def control_event(self, event: ControlEvent) -> None:
        """The Control view's listener is thread-safe."""
        control_view = self._app.control_view
        if control_view is not None:
            control_view.plane_listener(event)

    def problem(self, source: str, message: str) -> None:
        self._app.post_message(BackendProblem(source, message))

    def drain(self) -> set[PaneId]:
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        return dirty


class NbsApp(App[int]):
    """The nbs-tui dashboard."""

    CSS_PATH = css_path()
    TITLE = "nbs-tui"
    BINDINGS: ClassVar[list[BindingType]] = [command.binding() for command in COMMANDS]

    def __init__(
        self,
        settings: Settings,
        fleet_factory: FleetFactory | None = None,
        *,
        sidecar: bool = True,
        control_plane: bool = True,
        claude: bool = True,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.state = PaneState(HISTORY_LENGTH)
        """Every pane's shown state, history and quiet time (pure; fed from messages)."""
        self.settings = settings
        self.bridge = FleetBridge(self)
        self.clock = clock
        """The clock of every duration shown (quiet time, countdowns); the sidecar shares it."""
        self.wall = wall
        self.runtime = Runtime(
            settings,
            self.bridge,
            RuntimeOptions(
                control_plane=control_plane, claude=claude, sidecar=sidecar, clock=clock, wall=wall,
                fleet_factory=fleet_factory,
            ),
        )
        """Fleet, control plane, Claude signals and sidecar: built at mount, stopped at unmount."""
        self.selected_id: PaneId | None = None
        self.connected: bool | None = None
        self.connection_message = ""
        self.start_error: str | None = None
        self.view = "dashboard"
        self._seen_fleet = False
        self._stale = True
        self._problems_shown: dict[tuple[str, str], float] = {}
        self._status_worker: Worker[None] | None = None
        self.control_view = ControlView(id="control-view")
        """Registry, chat and inbox of the control plane (the third view)."""
        self.status_bar = StatusBar(settings.server.describe(), id="status")
        self.banner = Static("", id="banner")
        self.empty = Static("", id="empty")
        self.views = ContentSwitcher(initial="dashboard", id="views")
        self.fleet_list = FleetList(id="fleet")
        self.detail = DetailPanel(id="detail")
        self.mirror = PaneView(id="mirror")
        self.grid = PaneGrid(id="grid")
        self.input_bar = Container(id="input-bar")
        """Docked above the footer, hidden; an input bar for operator actions mounts here."""
        if settings.keymap:
            self.set_keymap(dict(settings.keymap))

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield self.status_bar
        yield self.banner
        yield self.empty
        with self.views:
            with Horizontal(id="dashboard"):
                with Vertical(id="side"):
                    yield self.fleet_list
                    yield self.detail
                yield self.mirror
            yield self.grid
            with Vertical(id="control"):
                yield self.control_view
        yield self.input_bar
        yield Footer()

    # -- lifecycle -------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.fleet_list.focus()
        self._update_empty_state()
        self.set_interval(FRAME_SECONDS, self._frame, name="frame")
        self.set_interval(CLOCK_SECONDS, self._clock, name="clock")
        runtime = self.runtime
        runtime.build()
        if self.control_view is not None and runtime.control_plane is not None:
            self.control_view.attach(runtime.control_plane)
        try:
            runtime.start()
        except TmuxUnavailable as error:
            self.start_error = str(error)
            self.connected = False
        self.status_bar.set_connection(self.connected)
        self._update_empty_state()

    @property
    def fleet(self) -> FleetPort | None:
        return self.runtime.fleet

    @property
    def sidecar(self) -> SidecarRunner | None:
        return self.runtime.sidecar

    @property
    def control_plane(self) -> ControlPlane | None:
        return self.runtime.control_plane

    @property
    def claude(self) -> ClaudeSignals | None:
        return self.runtime.claude

    @property
    def panes(self) -> list[PaneInfo]:
        return self.state.panes

    @property
    def pane_by_id(self) -> dict[PaneId, PaneInfo]:
        return self.state.pane_by_id

    @property
    def statuses(self) -> dict[PaneId, PaneStatus]:
        """The state shown for each pane (the sidecar's, fused with Claude Code's signals)."""
        return self.state.statuses

    @property
    def history(self) -> dict[PaneId, deque[HistoryEntry]]:
        return self.state.history

    @property
    def last_change(self) -> dict[PaneId, float]:
        return self.state.last_change

    def _refresh_statuses(self) -> None:
        """Thread worker: read every pane's sidecar status (it takes the runner's lock)."""
        runner = self.sidecar
        if runner is None:
            return
        statuses = tuple(PaneStatus.from_sidecar(s) for s in runner.statuses().values())
        self.post_message(PaneStatusesRefreshed(statuses))

    def on_unmount(self) -> None:
        self.runtime.stop()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure meets here and is shown, never swallowed."""
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            self.notify(f"{event.worker.name}: {error}", title="nbs-tui", severity="error", timeout=10)

    # -- fleet news --------------------------------------------------------------------------

    def on_fleet_changed(self, message: FleetChanged) -> None:
        self._seen_fleet = True
        if self.connected is None:
            self.connected = True
            self.status_bar.set_connection(True)
        self.state.set_fleet(message.panes)
        fleet_list = self.fleet_list
        fleet_list.update_fleet(self.panes, self.statuses, self.last_change, self.clock())
        if self.selected_id not in self.pane_by_id:
            self._select(fleet_list.selected_pane_id)
        else:
            self._show_selected()
        self.grid.update_fleet(self.panes, self.statuses, self._screen_of, self.selected_id)
        self._update_counts()
        self._update_empty_state()
        self._stale = True

    def on_connection_changed(self, message: ConnectionChanged) -> None:
        if message.connected and self.connected is False:
            # a server that went away took its panes with it; pane ids restart on the new one
            self.state.forget_states()
            self.fleet_list.refresh_cells(self.statuses, self.last_change, self.clock())
            for pane in self.panes:
                self.grid.set_status(pane, None)
            self._update_counts()
            self._show_details()
        self.connected = message.connected
        self.connection_message = message.message
        self.status_bar.set_connection(message.connected)
        banner = self.banner
        if message.connected:
            self.start_error = None
            banner.display = False
            self._stale = True
        elif self._seen_fleet and self.panes:
            why = f" ({message.message})" if message.message else ""
            banner.update(
                f"⚠ {self.status_bar.server} is gone{why} — keeping the last view, reconnecting…"
            )
            banner.display = True
        self._update_empty_state()

    def on_pane_status_changed(self, message: PaneStatusChanged) -> None:
        pane = self.pane_by_id.get(message.pane_id)
        if pane is None:
            return
        if message.history is not None:
            self.state.add_history(pane.pane_id, message.history)
        if message.status is not None:
            self._show_changed(self.state.set_sidecar_statuses([message.status], self.clock(), self.wall()))
        elif pane.pane_id == self.selected_id:
            self._show_details()

    def on_pane_statuses_refreshed(self, message: PaneStatusesRefreshed) -> None:
        self._show_changed(self.state.set_sidecar_statuses(message.statuses, self.clock(), self.wall()))

    def on_claude_signals_changed(self, message: ClaudeSignalsChanged) -> None:
        self._show_changed(self.state.set_claude(message.facts, self.clock(), self.wall()))

    def _show_changed(self, pane_ids: list[PaneId]) -> None:
        """Repaint what shows these panes' state (only their rows; the details if selected)."""
        if not pane_ids:
            return
        for pane_id in pane_ids:
            self.grid.set_status(self.pane_by_id[pane_id], self.statuses[pane_id])
        self.fleet_list.refresh_cells(self.statuses, self.last_change, self.clock(), pane_ids)
        self._update_counts()
        if self.selected_id in pane_ids:
            self._show_details()

    def on_backend_problem(self, message: BackendProblem) -> None:
        """Show a backend's problem; while tmux is away the banner says it all, and one
        problem repeated within `PROBLEM_REPEAT_SECONDS` is shown once."""
        if self.connected is False:
            self.log.warning(f"{message.source}: {message.message}")
            return
        now = self.clock()
        key = (message.source, message.message)
        if now - self._problems_shown.get(key, float("-inf")) < PROBLEM_REPEAT_SECONDS:
            return
        self._problems_shown[key] = now
        self.notify(message.message, title=message.source, severity="error", timeout=8)

    # -- selection -----------------------------------------------------------------------------

    def selected_pane(self) -> PaneInfo | None:
        """The pane the operator has selected (list cursor, grid focus), if it still exists."""
        return self.pane_by_id.get(self.selected_id) if self.selected_id else None

    def on_fleet_list_pane_highlighted(self, message: FleetList.PaneHighlighted) -> None:
        self._select(message.pane_id)

    def on_fleet_list_pane_chosen(self, message: FleetList.PaneChosen) -> None:
        self._select(message.pane_id)
        self.action_toggle_zoom()

    def on_pane_grid_pane_highlighted(self, message: PaneGrid.PaneHighlighted) -> None:
        self._select(message.pane_id, from_grid=True)

    def on_pane_grid_pane_chosen(self, message: PaneGrid.PaneChosen) -> None:
        self._select(message.pane_id)
        self.action_show_view("dashboard")

    def select_pane(self, pane_id: PaneId) -> None:
        """Select a pane by id wherever the operator is (list, grid, palette)."""
        if pane_id in self.pane_by_id:
            self.fleet_list.select_pane(pane_id)
            self._select(pane_id)

    def _select(self, pane_id: PaneId | None, from_grid: bool = False) -> None:
        if pane_id is not None and pane_id not in self.pane_by_id:
            pane_id = None
        changed = pane_id != self.selected_id
        self.selected_id = pane_id
        if changed and pane_id is not None:
            fleet_list = self.fleet_list
            if fleet_list.selected_pane_id != pane_id:
                fleet_list.select_pane(pane_id)
            grid = self.grid
            for thumb in grid.thumbnails:
                thumb.set_class(thumb.pane_id == pane_id, "selected")
        self._show_selected()

    def _screen_of(self, pane_id: PaneId) -> ScreenSource | None:
        if self.fleet is None:
            return None
        screen: ScreenSource | None = self.fleet.screen(pane_id)
        return screen

    def _show_selected(self) -> None:
        pane = self.selected_pane()
        mirror = self.mirror
        mirror.show(pane, self._screen_of(pane.pane_id) if pane else None)
        self._watch_mirrored()
        self._show_details()

    def _watch_mirrored(self) -> None:
        pane = self.mirror.pane
        self.bridge.watched = pane.pane_id if pane is not None and self.view == "dashboard" else None

    def _show_details(self) -> None:
        pane = self.selected_pane()
        pane_id = pane.pane_id if pane else ""
        self.detail.show(
            pane,
            self.statuses.get(pane_id),
            self.state.facts.get(pane_id),
            list(self.history.get(pane_id, ())),
            self.last_change.get(pane_id),
            self.clock(),
        )

    # -- the frame and the clock -----------------------------------------------------------------

    def on_mirror_due(self, message: MirrorDue) -> None:
        self.bridge.due_handled()
        self._frame()

    def _frame(self) -> None:
        """Once per frame: repaint changed rows of visible widgets whose panes changed."""
        dirty = self.bridge.drain()
        if dirty:
            self.state.screens_changed(dirty, self.clock())
        stale, self._stale = self._stale, False
        if not dirty and not stale:
            return
        if self.view == "dashboard":
            mirror = self.mirror
            if mirror.pane is not None:
                if mirror.lines.source is None:
                    mirror.show(mirror.pane, self._screen_of(mirror.pane.pane_id))
                if stale or mirror.pane.pane_id in dirty:
                    mirror.screen_changed()
        elif self.view == "grid":
            self.grid.tick(None if stale else dirty, self._screen_of)

    def _clock(self) -> None:
        if not self.panes:
            return
        previous = self._status_worker
        if self.sidecar is not None and (previous is None or previous.is_finished):
            # one read at a time: a runner busy in a slow tmux call must not pile up threads
            self._status_worker = self.run_worker(
                self._refresh_statuses, name="sidecar-statuses", group="sidecar", thread=True,
                exit_on_error=False,
            )
        if self.state.raw_claude:
            self._show_changed(self.state.refuse(list(self.state.raw_claude), self.clock(), self.wall()))
        self.fleet_list.refresh_cells(self.statuses, self.last_change, self.clock())
        self._refresh_grid_clocks()
        self._show_details()

    def _refresh_grid_clocks(self) -> None:
        if self.view != "grid":
            return
        now = self.clock()
        quiet = {}
        for pane in self.panes:
            since = quiet_start(self.statuses.get(pane.pane_id), self.last_change.get(pane.pane_id))
            if since is not None:
                quiet[pane.pane_id] = format_duration(now - since)
        self.grid.refresh_clocks(quiet)

    def _update_counts(self) -> None:
        self.status_bar.set_counts(*self.state.counts())

    def _update_empty_state(self) -> None:
        empty = self.empty
        views = self.views
        server = self.status_bar.server
        demo = "Run 'nbs-tui demo' to try nbs-tui on a demo fleet of imitation agents."
        text = ""
        if self.panes:
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
            only = f" in sessions {', '.join(self.settings.sessions)}" if self.settings.sessions else ""
            text = (
                f"{server} has no panes to watch{only}.\n\n"
                "Start Claude Code in a tmux pane and it appears here.\n\n" + demo
            )
        empty.update(text)
        empty.display = bool(text)
        views.display = not text

    # -- actions ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the pane keys where they do nothing (the Control view has its own lists)."""
        return not (action == "move" and self.view == "control")

    def action_move(self, delta: int) -> None:
        if self.view == "control":
            return
        if self.view == "grid":
            self.grid.action_move(delta, 0)
        else:
            self.fleet_list.move_selection(delta)

    def action_toggle_zoom(self) -> None:
        if self.view != "dashboard":
            self.action_show_view("dashboard")
            self.screen.add_class("zoomed")
        else:
            self.screen.toggle_class("zoomed")
        if self.screen.has_class("zoomed"):
            self.mirror.focus()
        else:
            self.fleet_list.focus()
        self._stale = True

    def action_unzoom(self) -> None:
        if self.screen.has_class("zoomed"):
            self.action_toggle_zoom()

    def action_show_view(self, name: str) -> None:
        if name not in VIEWS:
            return
        self.view = name
        self._watch_mirrored()
        self.views.current = name
        self.status_bar.set_view(name)
        self.refresh_bindings()
        if name != "dashboard":
            self.screen.remove_class("zoomed")
        if name == "grid":
            self.grid.focus_pane(self.selected_id)
            self.call_after_refresh(self._refresh_grid_clocks)  # thumbnails are laid out by then
        elif name == "dashboard":
            self.fleet_list.focus()
        elif name == "control" and self.control_view is not None:
            self.control_view.registry_panel.focus()
        self._stale = True

    def action_toggle_details(self) -> None:
        detail = self.detail
        detail.display = not detail.display

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.key_rows(), intro=f"Watching {self.status_bar.server}."))

    def key_rows(self) -> list[tuple[str, str, str]]:
        """(keys, what, binding id) for the help screen, from the bindings in force now.

        The app's own commands come first (as rebound by a keymap), then the grid's and the
        fleet list's keys, then Textual's (focus, palette, quit).
        """
        rows: dict[str, tuple[str, str, str]] = {}

        def add(binding: Binding, help_text: str = "") -> None:
            ident = binding.id or binding.action
            if binding.key_display:
                displays = [binding.key_display]
            else:
                displays = [
                    self.get_key_display(replace(binding, key=key.strip())) for key in binding.key.split(",")
                ]
            keys, description, _ = rows.get(ident, ("", help_text or binding.description, ident))
            for display in displays:
                if display not in keys.split(" / "):
                    keys = f"{keys} / {display}" if keys else display
            rows[ident] = (keys, description, ident)

        active = [a.binding for a in self.screen.active_bindings.values() if a.node is self]
        by_id = {c.id: c for c in COMMANDS}
        for binding in active:
            if binding.id in by_id:
                add(binding, by_id[binding.id].help)
        for item in PaneGrid.BINDINGS:
            if isinstance(item, Binding):
                add(item, f"Grid: {item.description.lower()}")
        if self.control_view is not None:
            panels = (self.control_view, self.control_view.registry_panel, self.control_view.inbox_panel)
            for panel in panels:
                for item in getattr(panel, "BINDINGS", ()):
                    if isinstance(item, Binding) and item.id:
                        add(item, f"Control: {item.description.lower()}")
        rows["list.move"] = ("↑ / ↓", "List: move the cursor (the mirror follows)", "")
        rows["list.open"] = ("⏎", "List: zoom the pane under the cursor", "")
        for binding in active:
            if binding.id not in by_id and binding.description:
                add(binding)
        return list(rows.values())

    # -- command palette -----------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for command in COMMANDS:
            if command.id in ("pane.next", "pane.previous", "view.unzoom"):
                continue
            yield SystemCommand(command.palette or command.label, command.help, partial(self.run_action, command.action))
        for pane in self.panes:
            label = f"Show pane {pane.target}"
            detail = " · ".join(x for x in (pane.title, pane.current_command) if x)
            yield SystemCommand(label, detail or pane.pane_id, partial(self.select_pane, pane.pane_id), discover=False)


def create_app(
    settings: Settings,
    fleet_factory: FleetFactory | None = None,
    *,
    sidecar: bool = True,
    control_plane: bool = True,
    claude: bool = True,
    clock: Callable[[], float] = time.monotonic,
    wall: Callable[[], float] = time.time,
) -> NbsApp:
    """The one way to build the app, for the CLI and the tests alike.

    ``fleet_factory`` builds the fleet given the app's listener; by default a `TmuxFleet` on
    ``settings.server``. ``sidecar``/``control_plane``/``claude`` switch backends off (tests);
    ``clock``/``wall`` replace the clocks (snapshot tests freeze them).
    """
    return NbsApp(
        settings, fleet_factory, sidecar=sidecar, control_plane=control_plane, claude=claude,
        clock=clock, wall=wall,
    )


def run_app(settings: Settings) -> int:
    app = create_app(settings)
    result = app.run()
    return int(result or 0) if app.return_code is None else app.return_code
