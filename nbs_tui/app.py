"""The Textual app: it builds the dashboard and routes Textual's messages and keys; nothing more.

One app, built by `create_app` for the CLI, the tests, the screenshots and the benchmarks.
`NbsApp` owns the widgets (`nbs_tui.widgets`, laid out in `compose`) and the parts it hands
each message and key to, one concern each (`nbs_tui.dashboard`):
- `nbs_tui.runtime.runtime.Runtime` runs the backends (fleet, control plane, Claude signals,
  sidecar); its listener, `nbs_tui.bridge.FleetBridge`, turns their news into messages
  (`nbs_tui.dashboard.messages`), and their screen changes into work for the frame scheduler;
- `dashboard.news.FleetNews` applies that news to `nbs_tui.core.fleet.pane_state.PaneState` (pure)
  and to the widgets that show it; `dashboard.problems.ProblemsShown` shows the problems;
- `dashboard.views.Views`: the view up, the selected pane, and the frame that repaints them,
  run by `dashboard.frames.FrameScheduler` (the mirrored pane's change at once, others at
  most 30 times a second, nothing while nothing changes);
- `nbs_tui.operator.operator_controller.OperatorController` carries out the operator's actions (no Textual; the
  fleet's lifecycle in its `lifecycle`); `dashboard.operator_actions`, `answering`, `history` and
  `lifecycle` are the dashboard's side of them (which pane, what to ask, what to show);
- `nbs_tui.dashboard.key_table.COMMANDS` is every key: bindings, footer, palette and help
  (`dashboard.keys`) come from it; `dashboard.notifications` writes to the operator's terminal.

Timers: a 1 Hz clock moves the quiet times and countdowns; a 2 Hz tick updates the needs-you
queue. Neither paints a widget once the app is shutting down (Textual prunes them first).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Set
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, Static, TextArea
from textual.worker import Worker, WorkerState

from nbs_tui.bridge import FleetBridge
from nbs_tui.claude.watcher import ClaudeSignals
from nbs_tui.config import ConfigError, Settings
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.pane_state import HISTORY_LENGTH, HistoryEntry, PaneState, PaneStatus
from nbs_tui.core.fleet.problems import Problems
from nbs_tui.dashboard.answering import AnswerFlow
from nbs_tui.dashboard.frames import FrameScheduler
from nbs_tui.dashboard.history import ScrollbackReader
from nbs_tui.dashboard.key_table import bindings
from nbs_tui.dashboard.keys import open_help, palette_commands
from nbs_tui.dashboard.lifecycle import LifecycleActions
from nbs_tui.dashboard.messages import (
    BackendProblem,
    BackgroundSessionsChanged,
    ClaudeSignalsChanged,
    ConnectionChanged,
    FleetChanged,
    HostsChanged,
    LeaseChanged,
    PaneStatusChanged,
    RelayedMeters,
)
from nbs_tui.dashboard.news import FleetNews
from nbs_tui.dashboard.notifications import OperatorNotifications
from nbs_tui.dashboard.operator_actions import OperatorActions
from nbs_tui.dashboard.problems_shown import ProblemsShown
from nbs_tui.dashboard.views import Views
from nbs_tui.files.config_edit import save_setting
from nbs_tui.files.control_plane import ControlPlanePort
from nbs_tui.housekeeping import heap
from nbs_tui.operator.action_log import ActionRecord
from nbs_tui.operator.operator_controller import OperatorController
from nbs_tui.runtime.contract import FleetFactory, RuntimeOptions
from nbs_tui.runtime.early import take_early
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.runner import SidecarRunner
from nbs_tui.tmux.port import FleetPort, TmuxUnavailable
from nbs_tui.widgets.breakpoints import HORIZONTAL_BREAKPOINTS
from nbs_tui.widgets.control_view import ControlView
from nbs_tui.widgets.detail_panel import DetailPanel
from nbs_tui.widgets.filter_bar import FilterBar, OperatorFleetList
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.footer import Footer
from nbs_tui.widgets.grid import PaneGrid
from nbs_tui.widgets.needs_you_panel import NeedsYouPanel
from nbs_tui.widgets.pane_view import PaneView
from nbs_tui.widgets.scrollback import Scrollback
from nbs_tui.widgets.send_bar import PassThrough, SendBar
from nbs_tui.widgets.status_bar import StatusBar
from nbs_tui.widgets.textual_internals import report_exception

if TYPE_CHECKING:  # the screens opened on demand are imported when first opened: not for the first frame
    from nbs_tui.widgets.action_log_view import ActionLogScreen
    from nbs_tui.widgets.answer_card import AnswerScreen

log = logging.getLogger(__name__)

CLOCK_SECONDS = 1.0
NEEDS_YOU_SECONDS = 0.5


def css_path() -> Path:
    """The stylesheet, in an installed wheel (``nbs_tui/styles``) or a checkout (``styles/``)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "styles" / "app.tcss", here.parent / "styles" / "app.tcss"):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"nbs-tui styles not found next to {here}")


class ActionRecorded(Message):
    """A record was appended to the action log (posted from whichever thread wrote it)."""

    def __init__(self, record: ActionRecord) -> None:
        super().__init__()
        self.record = record


class NbsApp(App[int]):
    """The nbs-tui dashboard: the fleet, its mirror, and the operator's actions on it."""

    CSS_PATH = css_path()
    TITLE = "nbs-tui"
    HORIZONTAL_BREAKPOINTS = HORIZONTAL_BREAKPOINTS
    """A phone (the browser view, 40-60 columns) gets the narrow layout: needs-you first, the
    list under it, no mirror beside it (styles/app.tcss), the answer card's choices as buttons."""
    BINDINGS: ClassVar[list[BindingType]] = list(bindings())

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
        self.settings = settings
        self.clock = clock
        """The clock of every duration shown (quiet time, countdowns); the sidecar shares it."""
        self.wall = wall
        self.state = PaneState(HISTORY_LENGTH)
        """Every pane's shown state, history and quiet time (pure; fed from messages)."""
        self.frames = FrameScheduler(self._frame)
        """When the frame runs: fed by the bridge, started at mount."""
        self.bridge = FleetBridge(self, self.frames)
        options = RuntimeOptions(
            control_plane=control_plane, claude=claude, sidecar=sidecar, clock=clock, wall=wall,
            fleet_factory=fleet_factory,
        )
        self._early = take_early(settings, options)
        """The runtime the CLI started before importing the app (another host watched), if any."""
        self.runtime = self._early.runtime if self._early is not None else Runtime(settings, self.bridge, options)
        """Fleet, control plane, Claude signals and sidecar: built at mount (or already running,
        `nbs_tui.runtime.early`), stopped at unmount."""
        self.operator = OperatorController(settings, self.state, self.runtime, self, clock=clock)
        """The operator's actions (send, broadcast, poll, marks, needs-you, jump): no Textual."""
        self.problems = Problems()
        """Every backend problem of this session (the ``E`` screen, the status bar's count)."""
        self._log_screen: ActionLogScreen | None = None
        self._unsubscribe_log: Callable[[], None] = self.operator.subscribe_log(self._recorded)

        # the widgets
        hosts = settings.watched_hosts()
        where = settings.server.describe() if len(hosts) == 1 else f"{len(hosts)} hosts"
        if len(hosts) == 1 and not hosts[0].is_local:
            where += f" on {hosts[0].name}"
        self.status_bar = StatusBar(where, id="status")
        self.banner = Static("", id="banner")
        self.empty = Static("", id="empty")
        self.switcher = ContentSwitcher(initial="dashboard", id="views")
        self.fleet_list = OperatorFleetList(id="fleet")
        self.fleet_list.marked = self.operator.marked
        self.fleet_list.poll_off = self.operator.poll_off
        self.fleet_list.plan_manual = self.operator.plan_manual
        self.fleet_list.fleet_poll_off = settings.poll_disabled
        self.fleet_list.fleet_plan_off = settings.plan_policy == "off"
        self.needs_panel = NeedsYouPanel(id="needs-you")
        self.filter_bar = FilterBar(id="filter")
        self.detail = DetailPanel(id="detail", prices=settings.prices)
        self.mirror = PaneView(id="mirror")
        self.scrollback = Scrollback(id="scrollback")
        """The selected pane's history in place of the mirror, read from tmux when opened."""
        self.grid = PaneGrid(id="grid")
        self.control_view = ControlView(id="control-view")
        """Registry, chat and inbox of the control plane (the third view)."""
        self.input_bar = Container(id="input-bar")
        """Docked above the footer, hidden until the send bar or pass-through opens."""
        self.send_bar = SendBar(id="send-bar")
        self.pass_through = PassThrough(id="pass-through")
        self.send_bar.display = False
        self.pass_through.display = False

        # the parts the app hands work to (nbs_tui/dashboard/)
        self.problems_shown = ProblemsShown(
            self, self.problems, self.status_bar, connected=lambda: self.connected, clock=clock, wall=wall
        )
        """Each problem notified, counted in the status bar, listed on the ``E`` screen."""
        self.answering = AnswerFlow(self, self.operator, lambda: self.selected_id, self.select_pane)
        """The answer card (``A``) and the choices made on it."""
        self.answering.open_at_start(settings.open_card)
        self.history_reader = ScrollbackReader(self, self.scrollback, self.mirror, lambda: self.selected_id, lambda: self.fleet)
        """The selected pane's scrollback, read and followed."""
        self.views = Views(
            self, self.state, self.frames, fleet=lambda: self.fleet, switcher=self.switcher, status_bar=self.status_bar,
            fleet_list=self.fleet_list, grid=self.grid, mirror=self.mirror, scrollback=self.scrollback,
            detail=self.detail, control_view=self.control_view, history=self.history_reader,
            host_state=lambda name: self.news.hosts.get(name), clock=clock,
        )  # fmt: skip
        """Which view is up, which pane is selected, and the frame that repaints them."""
        self.news: FleetNews = FleetNews(
            self, self.views, self.state, self.runtime, settings, fleet_list=self.fleet_list, grid=self.grid,
            status_bar=self.status_bar, banner=self.banner, empty=self.empty, switcher=self.switcher, clock=clock,
            wall=wall, mark_stale=self._mark_stale, statuses_shown=self.answering.when_read,
            connection_shown=self.problems_shown.changed,
        )  # fmt: skip
        """The backends' news applied to the pane state and shown."""
        self.actions = OperatorActions(
            self, self.operator, self.runtime, input_bar=self.input_bar, send_bar=self.send_bar,
            pass_through=self.pass_through, mirror=self.mirror, fleet_list=self.fleet_list, status_bar=self.status_bar,
            selected=self.selected_pane,
        )  # fmt: skip
        """The operator's actions on panes: what to ask first, what to show after."""
        self.lifecycle = LifecycleActions(
            self, self.operator, settings, panes=lambda: self.state.panes, selected=self.selected_pane,
            opened=self.news.background_opened,
        )
        """Start, stop, restart and restore agents (``c``, ``X``, ``S``, ``Ctrl+O``), open background sessions (``o``)."""
        self.notifications = OperatorNotifications(
            self, settings, self.operator, problem=self.runtime.problem, panes=lambda: self.pane_by_id,
            leases=self.runtime.leases,
        )
        """Notifications to the operator's own terminal (through ssh and tmux) and ``notify_command``."""
        self.notifier = self.notifications.notifier
        if settings.keymap:
            self.set_keymap(dict(settings.keymap))
        self._apply_theme()

    # -- layout ----------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield self.status_bar
        yield self.banner
        yield self.empty
        with self.switcher:
            with Horizontal(id="dashboard"):
                with Vertical(id="side"):
                    yield self.needs_panel
                    yield self.filter_bar
                    yield self.fleet_list
                    yield self.detail
                yield self.mirror
                yield self.scrollback
            yield self.grid
            with Vertical(id="control"):
                yield self.control_view
        with self.input_bar:
            yield self.send_bar
            yield self.pass_through
        yield Footer()

    # -- theme -----------------------------------------------------------------------------

    def _apply_theme(self) -> None:
        name = self.settings.theme
        if name in self.available_themes:
            self.theme = name
        else:
            self.runtime.problem(
                "settings", f"unknown theme {name!r} in {self.settings.config_file}; using {self.theme}"
            )

    def watch_theme(self, theme: str) -> None:
        """Keep the theme picked in the command palette for the next start: one line of the
        config file changes, the rest of it (comments too) stays as the user wrote it."""
        if theme == self.settings.theme:
            return
        self.settings = replace(self.settings, theme=theme)
        try:
            save_setting(self.settings.config_file, "theme", theme)
        except ConfigError as error:
            self.runtime.problem("settings", str(error))  # logged, listed and notified

    # -- lifecycle -------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.fleet_list.focus()
        self.news.update_empty_state()
        self.frames.start(asyncio.get_running_loop(), contextvars.copy_context(), partial(report_exception, self))
        self.frames.request()  # the first frame draws whatever is shown
        self.set_interval(CLOCK_SECONDS, self._clock, name="clock")
        self.set_interval(NEEDS_YOU_SECONDS, self._needs_you_tick, name="needs-you")
        self.set_timer(heap.SETTLE_SECONDS, heap.freeze_long_lived, name="heap")
        self.operator.start()
        runtime = self.runtime
        runtime.build()
        if self.control_view is not None and runtime.control_plane is not None:
            self.control_view.attach(runtime.control_plane)
        early, self._early = self._early, None
        if early is not None:  # started before the app was imported: its news so far, then live
            early.news.attach(self.bridge)
            if early.failed is not None:
                self.news.start_failed(str(early.failed))
        else:
            try:
                runtime.start()
            except TmuxUnavailable as error:
                self.news.start_failed(str(error))
        self.status_bar.set_connection(self.connected)
        self.news.update_empty_state()
        self.notifications.start()
        self.lifecycle.start()

    def on_unmount(self) -> None:
        self.frames.stop()
        log.info("%d frames", self.frames.frames_run)
        painter = self.mirror.rows.painter
        log.info(
            "mirror: %d frames (%d rows) written straight to the terminal, %d left to Textual",
            painter.frames_painted, painter.rows_painted, painter.frames_declined,
        )
        painter = self.fleet_list.painter
        log.info(
            "fleet list: %d ticks (%d rows) written straight to the terminal, %d left to Textual",
            painter.frames_painted, painter.rows_painted, painter.frames_declined,
        )
        self.operator.stop()
        self._unsubscribe_log()
        self.runtime.stop()

    # -- the backends and the pane state, as the parts and the tests read them --------------------

    @property
    def fleet(self) -> FleetPort | None:
        return self.runtime.fleet

    @property
    def sidecar(self) -> SidecarRunner | None:
        return self.runtime.sidecar

    @property
    def control_plane(self) -> ControlPlanePort | None:
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

    # -- the controller's view (`OperatorView`) ----------------------------------------------------

    def notify_operator(self, text: str, title: str, severity: str, timeout: float) -> None:
        """Any thread: ``notify`` only posts a message."""
        self.notify(text, title=title, severity=severity, timeout=timeout)  # type: ignore[arg-type]

    def on_ui(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the app is gone: nothing left to update
            self.call_from_thread(callback)

    def _recorded(self, record: ActionRecord) -> None:
        """Any thread: a record was written."""
        self.post_message(ActionRecorded(record))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure meets here and is a problem, never swallowed (the one route:
        the runtime's sink logs it and posts it back as a `BackendProblem`)."""
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            log.error("worker %s failed", event.worker.name, exc_info=error)
            self.runtime.problem("nbs-tui", f"{event.worker.name}: {error}")

    # -- the backends' news (nbs_tui/dashboard/news.py) -------------------------------------------

    def on_fleet_changed(self, message: FleetChanged) -> None:
        self.news.fleet_changed(message)
        self.answering.fleet_seen(self.settings.watched_hosts(), self.pane_by_id, self.runtime.problem)

    def on_connection_changed(self, message: ConnectionChanged) -> None:
        self.news.connection_changed(message)

    def on_pane_status_changed(self, message: PaneStatusChanged) -> None:
        self.news.pane_status_changed(message)

    def on_relayed_meters(self, message: RelayedMeters) -> None:
        self.news.relayed_meters(message)

    def on_claude_signals_changed(self, message: ClaudeSignalsChanged) -> None:
        self.news.claude_signals_changed(message)

    def on_lease_changed(self, message: LeaseChanged) -> None:
        self.news.lease_changed(message)

    def on_hosts_changed(self, message: HostsChanged) -> None:
        self.news.hosts_changed(message)

    def on_background_sessions_changed(self, message: BackgroundSessionsChanged) -> None:
        self.news.background_changed(message)

    def on_fleet_list_background_chosen(self, message: FleetList.BackgroundChosen) -> None:
        self.lifecycle.open_background(message.session)

    @property
    def connected(self) -> bool | None:
        """tmux's server: None until the first word from it."""
        return self.news.connected

    @property
    def hosts(self) -> dict[str, HostState]:
        """Each watched host's state, when several are."""
        return self.news.hosts

    # -- problems (nbs_tui/dashboard/problems_shown.py) -------------------------------------------------

    def on_backend_problem(self, message: BackendProblem) -> None:
        self.problems_shown.reported(message)

    def action_problems(self) -> None:
        self.problems_shown.open()

    # -- what is shown (nbs_tui/dashboard/views.py) ---------------------------------------------

    @property
    def view(self) -> str:
        """The view shown: "dashboard", "grid" or "control"."""
        return self.views.current

    @property
    def selected_id(self) -> PaneId | None:
        """The pane the operator selected (list cursor, grid focus)."""
        return self.views.selected_id

    def selected_pane(self) -> PaneInfo | None:
        """The pane the operator has selected, if it still exists."""
        return self.views.selected_pane()

    def select_pane(self, pane_id: PaneId) -> None:
        """Select a pane by id wherever the operator is (list, grid, palette)."""
        self.views.select_pane(pane_id)

    def on_fleet_list_pane_highlighted(self, message: FleetList.PaneHighlighted) -> None:
        if message.pane_id != self.fleet_list.selected_pane_id:
            return  # stale: the operator (or a select) moved on before it arrived
        self.views.select(message.pane_id)

    def on_fleet_list_pane_chosen(self, message: FleetList.PaneChosen) -> None:
        self.views.select(message.pane_id)
        self.views.toggle_zoom()

    def on_pane_grid_pane_highlighted(self, message: PaneGrid.PaneHighlighted) -> None:
        self.views.select(message.pane_id, from_grid=True)

    def on_pane_grid_pane_chosen(self, message: PaneGrid.PaneChosen) -> None:
        self.views.select(message.pane_id)
        self.views.show("dashboard")

    @property
    def frames_run(self) -> int:
        """How many frames ran (the tests read it)."""
        return self.frames.frames_run

    def _mark_stale(self) -> None:
        """Every visible pane's rows are to be drawn again by the next frame."""
        self.frames.request()

    def _frame(self, dirty: Set[PaneId], whole: bool) -> None:
        self.views.draw(dirty, whole)

    def _clock(self) -> None:
        # The app's timers tick on while Textual prunes its widgets at exit (a pruned widget has
        # no component styles left: the fleet list's paint raised KeyError on a quit in a test).
        if not self.is_running:
            return
        if self.news.tick():
            self.views.tick()

    # -- actions ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the pane keys where they do nothing (the Control view has its own lists); in
        pass-through, Ctrl+P belongs to the pane, not to the command palette (Ctrl+Q still quits)."""
        if action == "command_palette" and self.pass_through.has_focus:
            return False
        if action == "scrollback":  # a priority key: only over the list, grid and mirror
            typing = isinstance(self.focused, Input | TextArea) or self.pass_through.has_focus
            return not (typing or self.scrollback.display or len(self.screen_stack) > 1)
        return not (action == "move" and self.view == "control")

    def action_move(self, delta: int) -> None:
        self.views.move(delta)

    def action_toggle_zoom(self) -> None:
        self.views.toggle_zoom()

    def action_unzoom(self) -> None:
        if self.screen.has_class("zoomed"):
            self.views.toggle_zoom()

    def action_show_view(self, name: str) -> None:
        self.views.show(name)

    # -- scrollback (nbs_tui/dashboard/history.py) ---------------------------------------------

    def action_scrollback(self, page_up: bool = True) -> None:
        """Read the selected pane's history from tmux (a worker thread) and show it."""
        pane = self.selected_pane()
        fleet = self.fleet
        if pane is None or fleet is None:
            self.operator.ready(pane)  # says why nothing happens
            return
        if self.view != "dashboard":
            self.views.show("dashboard")
        self.history_reader.open(pane, fleet, page_up)

    def on_pane_view_history_wanted(self, _message: PaneView.HistoryWanted) -> None:
        self.action_scrollback(page_up=False)

    def on_scrollback_closed(self, _message: Scrollback.Closed) -> None:
        self.history_reader.closed()
        self._mark_stale()
        self.screen.set_focus(self.mirror if self.screen.has_class("zoomed") else self.fleet_list)

    def action_toggle_details(self) -> None:
        detail = self.detail
        detail.display = not detail.display

    def action_help(self) -> None:
        open_help(self, self.control_view, self.status_bar.server)

    # -- the operator's actions on panes (nbs_tui/dashboard/operator_actions.py) -----------------

    def action_send_text(self) -> None:
        self.actions.send_text()

    def on_send_bar_submitted(self, message: SendBar.Submitted) -> None:
        self.actions.submitted(message)

    def on_send_bar_closed(self, _message: SendBar.Closed) -> None:
        self.actions.send_bar_closed()

    def action_send_key(self) -> None:
        self.actions.send_key()

    def action_toggle_mark(self) -> None:
        self.actions.toggle_mark()

    def action_clear_marks(self) -> None:
        self.actions.clear_marks()

    def action_broadcast_text(self) -> None:
        self.actions.broadcast_text()

    def action_broadcast_key(self) -> None:
        self.actions.broadcast_key()

    def action_pass_through(self) -> None:
        self.actions.pass_through()

    def on_pass_through_keys(self, message: PassThrough.Keys) -> None:
        self.actions.keys(message)

    def on_pass_through_pasted(self, message: PassThrough.Pasted) -> None:
        self.actions.pasted(message)

    def on_pass_through_leave(self, _message: PassThrough.Leave) -> None:
        self.actions.leave_pass_through()

    def action_force_poll(self) -> None:
        self.actions.force_poll()

    def action_force_poll_all(self) -> None:
        self.actions.force_poll_all()

    def action_toggle_poll(self) -> None:
        self.actions.toggle_poll()

    def action_toggle_plan(self) -> None:
        self.actions.toggle_plan()

    def action_toggle_sidecar_pause(self) -> None:
        self.actions.toggle_sidecar_pause()

    def action_jump(self) -> None:
        self.actions.jump()

    # -- the needs-you queue ------------------------------------------------------------------------

    def _needs_you_tick(self) -> None:
        if not self.is_running:  # shutting down: see `_clock`
            return
        entries = self.operator.needs_you_tick()
        self.needs_panel.show_entries(entries, self.clock(), self.operator.label)
        self.answering.when_read()
        self.notifications.tick(self._looking_at())

    def _looking_at(self) -> PaneId | None:
        """The pane the operator sees now (none while the terminal has lost focus, when it says)."""
        return self.selected_id if self.view != "control" and self.app_focus else None

    def action_next_needs_you(self) -> None:
        entry = self.operator.next_needs_you(self.selected_id)
        if entry is None:
            return
        self.select_pane(entry.pane_id)
        if self.selected_id != entry.pane_id:  # filtered out of the list: select it anyway
            self.views.select(entry.pane_id)

    def on_needs_you_panel_pane_chosen(self, message: NeedsYouPanel.PaneChosen) -> None:
        self.operator.needs_chosen(message.pane_id)
        self.select_pane(message.pane_id)
        self.screen.set_focus(self.fleet_list)  # at once: the next key is the list's

    # -- answering from the needs-you queue (nbs_tui/dashboard/answering.py) ---------------------

    def action_answer(self) -> None:
        self.answering.answer()

    def on_answer_screen_chosen(self, message: AnswerScreen.Chosen) -> None:
        self.answering.chosen(message)

    def on_answer_screen_skipped(self, message: AnswerScreen.Skipped) -> None:
        self.answering.skipped(message)

    # -- the list's filter and the action log ------------------------------------------------------

    def action_filter(self) -> None:
        self.filter_bar.open()

    def on_filter_bar_filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self.fleet_list.set_filter(message.filter)
        if self.fleet_list.selected_pane_id is not None:
            self.views.select(self.fleet_list.selected_pane_id)

    def on_filter_bar_filter_done(self, _message: FilterBar.FilterDone) -> None:
        self.screen.set_focus(self.fleet_list)  # at once: the next key is the list's

    # -- the fleet's lifecycle (nbs_tui/dashboard/lifecycle.py) ------------------------------------

    def action_new_agent(self) -> None:
        self.lifecycle.new_agent()

    def action_open_background(self) -> None:
        self.lifecycle.open_background(self.fleet_list.selected_background)

    def action_restore_fleet(self) -> None:
        self.lifecycle.restore_fleet()

    def action_stop_agent(self) -> None:
        self.lifecycle.stop_or_restart(restart=False)

    def action_restart_agent(self) -> None:
        self.lifecycle.stop_or_restart(restart=True)

    def action_action_log(self) -> None:
        from nbs_tui.widgets.action_log_view import ActionLogScreen

        log = self.operator.action_log
        screen = ActionLogScreen(str(log.path), log.tail(500))
        self._log_screen = screen

        def closed(_result: None) -> None:
            self._log_screen = None

        self.push_screen(screen, closed)

    def on_action_recorded(self, message: ActionRecorded) -> None:
        if self._log_screen is not None and self._log_screen.is_attached:
            self._log_screen.add(message.record)

    # -- command palette ------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from palette_commands(
            self, self.notifications.muted(), self.notifications.toggle_mute, self.panes, self.select_pane,
            self.fleet_list.background, self.lifecycle.open_background,
        )


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
