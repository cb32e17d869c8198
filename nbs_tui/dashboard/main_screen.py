"""The dashboard screen: the widgets laid out, the keys bound, and each message handed to its part.

`DashboardScreen` is the app's default screen (Posting's ``MainScreen`` is the model): it owns
the widgets (`nbs_tui.widgets`) and the parts that do the work (this package), and binds the
key table (`nbs_tui.dashboard.key_table.COMMANDS`, but for the app's own ``app.*`` keys) to them. The
widgets' messages bubble up to it and are routed with ``@on``, one line each, to the part whose
concern it is; the backends' news (`nbs_tui.dashboard.messages.BackendNews`, posted by the bridge) meets
in `news_arrived`. The app (`nbs_tui.app.NbsApp`) keeps the runtime side: the backends'
start and stop, the clocks' timers, the theme, the screens pushed over this one.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Container, Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, Static, TextArea

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.pane_state import PaneState
from nbs_tui.core.fleet.problems import Problems
from nbs_tui.dashboard.answering import AnswerFlow, CardOnlyFlow
from nbs_tui.dashboard.frames import FrameScheduler
from nbs_tui.dashboard.history import ScrollbackReader
from nbs_tui.dashboard.key_table import bindings
from nbs_tui.dashboard.keys import open_help
from nbs_tui.dashboard.lifecycle import LifecycleActions
from nbs_tui.dashboard.messages import AgentNews, BackendNews, BackendProblem, FleetChanged
from nbs_tui.dashboard.news import FleetNews
from nbs_tui.dashboard.notifications import OperatorNotifications
from nbs_tui.dashboard.operator_actions import OperatorActions
from nbs_tui.dashboard.problems_shown import ProblemsShown
from nbs_tui.dashboard.queue_shown import QueueRead, QueueShown
from nbs_tui.dashboard.review import ReviewFlow
from nbs_tui.dashboard.usage_shown import UsageShown
from nbs_tui.dashboard.views import Views
from nbs_tui.operator.action_log import ActionRecord
from nbs_tui.operator.operator_controller import OperatorController
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.widgets.control_view import ControlView
from nbs_tui.widgets.detail_panel import DetailPanel
from nbs_tui.widgets.filter_bar import FilterBar, OperatorFleetList
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.footer import Footer
from nbs_tui.widgets.grid import PaneGrid
from nbs_tui.widgets.needs_you_panel import NeedsYouPanel
from nbs_tui.widgets.pane_view import PaneView
from nbs_tui.widgets.queue_strip import QueueStrip
from nbs_tui.widgets.queue_view import QueueView
from nbs_tui.widgets.scrollback import Scrollback
from nbs_tui.widgets.send_bar import PassThrough, SendBar
from nbs_tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:  # opened on demand: not imported for the first frame
    from nbs_tui.widgets.action_log_view import ActionLogScreen


class ActionRecorded(Message):
    """A record was appended to the action log (posted from whichever thread wrote it)."""

    def __init__(self, record: ActionRecord) -> None:
        super().__init__()
        self.record = record


class DashboardScreen(Screen[None]):
    """The fleet, its mirror, and the operator's keys on it (see the module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = list(bindings())
    AUTO_FOCUS = "#fleet"
    """The list has the keys first (Textual's default would focus the needs-you panel, first in the layout)."""

    def __init__(
        self, app: App[Any], settings: Settings, state: PaneState, frames: FrameScheduler, runtime: Runtime,
        operator: OperatorController, problems: Problems, *, clock: Callable[[], float], wall: Callable[[], float],
        mounted: Callable[[], None],
    ) -> None:  # fmt: skip
        super().__init__(id="dashboard-screen")
        self.state = state
        self.operator = operator
        self._settings = settings
        self._runtime = runtime
        self._frames = frames
        self._clock = clock
        self._mounted = mounted
        """Called once this screen and its widgets are mounted: the app starts the backends."""
        self._log_screen: ActionLogScreen | None = None
        self._unsubscribe_log: Callable[[], None] = lambda: None

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
        self.fleet_list.marked = operator.marked
        self.fleet_list.poll_off = operator.poll_off
        self.fleet_list.plan_manual = operator.plan_manual
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
        self.queue_view = QueueView(id="queue-view", wall=wall)
        """The work queue's tasks (the fourth view)."""
        self.queue_strip = QueueStrip(id="queue-strip")
        """The queue in one line over the list while it has work (a tap opens the view)."""
        self.input_bar = Container(id="input-bar")
        """Docked above the footer, hidden until the send bar or pass-through opens."""
        self.send_bar = SendBar(id="send-bar")
        self.pass_through = PassThrough(id="pass-through")
        self.send_bar.display = False
        self.pass_through.display = False

        # the parts this screen hands work to
        self.usage_shown = UsageShown(app, settings, self.status_bar, wall=wall)
        """The usage meter in the status bar and the usage view (``U``)."""
        self.problems_shown = ProblemsShown(
            app, problems, self.status_bar, connected=lambda: self.news.connected, clock=clock, wall=wall
        )
        """Each problem notified, counted in the status bar, listed on the ``E`` screen."""
        flow = CardOnlyFlow if settings.card_only and not settings.open_review else AnswerFlow
        self.answering = flow(app, operator, lambda: self.selected_id, self.select_pane)
        """The answer card (``A``) and the choices made on it (``--card-only``: that one card alone)."""
        self.answering.open_at_start(settings.open_card)
        self.review = ReviewFlow(app, operator, self.selected_pane, card_only=settings.card_only and bool(settings.open_review))
        """The review screen (``v``; ``--open-review``: one agent's at start)."""
        self.review.open_at_start(settings.open_review)
        self.history_reader = ScrollbackReader(app, self.scrollback, self.mirror, lambda: self.selected_id, lambda: runtime.fleet)
        """The selected pane's scrollback, read and followed."""
        self.views = Views(
            app, state, frames, fleet=lambda: runtime.fleet, switcher=self.switcher, status_bar=self.status_bar,
            fleet_list=self.fleet_list, grid=self.grid, mirror=self.mirror, scrollback=self.scrollback,
            detail=self.detail, control_view=self.control_view, queue_view=self.queue_view, history=self.history_reader,
            host_state=lambda name: self.news.hosts.get(name), clock=clock,
        )  # fmt: skip
        """Which view is up, which pane is selected, and the frame that repaints them."""
        self.news: FleetNews = FleetNews(
            app, self.views, state, runtime, settings, fleet_list=self.fleet_list, grid=self.grid,
            status_bar=self.status_bar, banner=self.banner, empty=self.empty, switcher=self.switcher, clock=clock,
            wall=wall, mark_stale=frames.request, statuses_shown=self.answering.when_read,
            connection_shown=self.problems_shown.changed,
        )  # fmt: skip
        """The backends' news applied to the pane state and shown."""
        self.actions = OperatorActions(
            app, operator, runtime, input_bar=self.input_bar, send_bar=self.send_bar,
            pass_through=self.pass_through, mirror=self.mirror, fleet_list=self.fleet_list, status_bar=self.status_bar,
            selected=self.selected_pane,
        )  # fmt: skip
        """The operator's actions on panes: what to ask first, what to show after."""
        self.lifecycle = LifecycleActions(
            app, operator, settings, panes=lambda: state.panes, selected=self.selected_pane,
            opened=self.news.background_opened,
        )
        """Start, stop, restart and restore agents (``c``, ``X``, ``S``, ``Ctrl+O``), open background sessions (``o``)."""
        self.notifications = OperatorNotifications(
            app, settings, operator, problem=runtime.problem, panes=lambda: state.pane_by_id, leases=runtime.leases,
        )
        """Notifications to the operator's own terminal (through ssh and tmux) and ``notify_command``."""
        self.queue = QueueShown(
            app, settings, self.queue_view, self.queue_strip, post=self.post_message, panes=lambda: state.panes, problem=runtime.problem,
            wall=wall,
        )
        """The work queue shown from its file, and the operator's edits appended to it."""

    def compose(self) -> ComposeResult:
        yield self.status_bar
        yield self.banner
        yield self.empty
        with self.switcher:
            with Horizontal(id="dashboard"):
                with Vertical(id="side"):
                    yield self.needs_panel
                    yield self.queue_strip
                    yield self.filter_bar
                    yield self.fleet_list
                    yield self.detail
                yield self.mirror
                yield self.scrollback
            yield self.grid
            with Vertical(id="control"):
                yield self.control_view
            with Vertical(id="queue"):
                yield self.queue_view
        with self.input_bar:
            yield self.send_bar
            yield self.pass_through
        yield Footer()

    def on_mount(self) -> None:
        self._unsubscribe_log = self.operator.subscribe_log(self._recorded)
        self.review.mounted()
        self._mounted()
        self.queue.start()

    def _recorded(self, record: ActionRecord) -> None:
        """Any thread: a record was written."""
        self.post_message(ActionRecorded(record))

    def on_unmount(self) -> None:
        self._unsubscribe_log()
        self.queue.stop()

    # -- what the app and the parts read -------------------------------------------------------

    @property
    def view(self) -> str:
        """The view shown: "dashboard", "grid", "control" or "queue"."""
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

    def looking_at(self) -> PaneId | None:
        """The pane the operator sees now (none while the terminal has lost focus, when it says)."""
        return self.selected_id if self.view in ("dashboard", "grid") and self.app.app_focus else None

    # -- the backends' news (posted to the app by the bridge) ---------------------------------

    def news_arrived(self, message: BackendNews) -> None:
        if isinstance(message, BackendProblem):
            self.problems_shown.reported(message)
            return
        if isinstance(message, AgentNews):  # an agent ended, or another process stopped one: a toast
            self.notifications.toast(message.event)
            return
        self.news.apply(message)
        if isinstance(message, FleetChanged):
            self.answering.fleet_seen(self._settings.watched_hosts(), self.state.pane_by_id, self._runtime.problem)
            self.review.fleet_seen(self._settings.watched_hosts(), self.state.panes, self._runtime.problem)
            self.queue.fleet_changed()

    def draw(self, dirty: Set[PaneId], whole: bool) -> None:
        """The frame: `nbs_tui.dashboard.frames.FrameScheduler` runs it."""
        self.views.draw(dirty, whole)

    def clock_tick(self) -> None:
        """Once a second: the quiet times and countdowns move."""
        # The app's timers tick on while Textual prunes its widgets at exit (a pruned widget has
        # no component styles left: the fleet list's paint raised KeyError on a quit in a test).
        if self.app.is_running and self.news.tick():
            self.views.tick()
        if self.app.is_running:
            self.usage_shown.tick()

    def needs_you_tick(self) -> None:
        """Twice a second: the needs-you queue, the answer card's reading, the notifications."""
        if not self.app.is_running:  # shutting down: see `clock_tick`
            return
        entries = self.operator.needs_you_tick()
        self.needs_panel.show_entries(entries, self._clock(), self.operator.label)
        self.answering.when_read()
        self.notifications.tick(self.looking_at())

    # -- the widgets' messages --------------------------------------------------------------

    @on(FleetList.PaneHighlighted)
    def _list_highlighted(self, message: FleetList.PaneHighlighted) -> None:
        if message.pane_id == self.fleet_list.selected_pane_id:  # else stale: the operator moved on
            self.views.select(message.pane_id)

    @on(FleetList.PaneChosen)
    def _list_chosen(self, message: FleetList.PaneChosen) -> None:
        self.views.select(message.pane_id)
        self.views.toggle_zoom()

    @on(FleetList.BackgroundChosen)
    def _background_chosen(self, message: FleetList.BackgroundChosen) -> None:
        self.lifecycle.open_background(message.session)

    @on(PaneGrid.PaneHighlighted)
    def _grid_highlighted(self, message: PaneGrid.PaneHighlighted) -> None:
        self.views.select(message.pane_id, from_grid=True)

    @on(PaneGrid.PaneChosen)
    def _grid_chosen(self, message: PaneGrid.PaneChosen) -> None:
        self.views.select(message.pane_id)
        self.views.show("dashboard")

    @on(PaneView.HistoryWanted)
    def _history_wanted(self) -> None:
        self.action_scrollback(page_up=False)

    @on(Scrollback.Closed)
    def _scrollback_closed(self) -> None:
        self.history_reader.closed()
        self._frames.request()
        self.set_focus(self.mirror if self.has_class("zoomed") else self.fleet_list)

    @on(SendBar.Submitted)
    def _send_submitted(self, message: SendBar.Submitted) -> None:
        self.actions.submitted(message)

    @on(SendBar.Closed)
    def _send_closed(self) -> None:
        self.actions.send_bar_closed()

    @on(PassThrough.Keys)
    def _pass_keys(self, message: PassThrough.Keys) -> None:
        self.actions.keys(message)

    @on(PassThrough.Pasted)
    def _pass_pasted(self, message: PassThrough.Pasted) -> None:
        self.actions.pasted(message)

    @on(PassThrough.Leave)
    def _pass_leave(self) -> None:
        self.actions.leave_pass_through()

    @on(NeedsYouPanel.PaneChosen)
    def _needs_chosen(self, message: NeedsYouPanel.PaneChosen) -> None:
        self.operator.needs_chosen(message.pane_id)
        self.select_pane(message.pane_id)
        self.set_focus(self.fleet_list)  # at once: the next key is the list's

    @on(FilterBar.FilterChanged)
    def _filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self.fleet_list.set_filter(message.filter)
        if self.fleet_list.selected_pane_id is not None:
            self.views.select(self.fleet_list.selected_pane_id)

    @on(FilterBar.FilterDone)
    def _filter_done(self) -> None:
        self.set_focus(self.fleet_list)  # at once: the next key is the list's

    @on(QueueRead)
    def _queue_read(self, message: QueueRead) -> None:
        self.queue.read(message)
        self.views.show_details()  # the selected agent's task may have changed

    @on(QueueStrip.Opened)
    def _queue_opened(self) -> None:
        self.views.show("queue")

    @on(QueueView.AddWanted)
    def _queue_add(self) -> None:
        self.queue.add()

    @on(QueueView.CancelWanted)
    def _queue_cancel(self, message: QueueView.CancelWanted) -> None:
        self.queue.cancel(message.task)

    @on(QueueView.AgentWanted)
    def _queue_agent(self, message: QueueView.AgentWanted) -> None:
        if message.pane_id not in self.state.pane_by_id:
            self.app.notify(f"Its agent ({message.pane_id}) is gone.", timeout=4)
            return
        self.views.show("dashboard")
        self.select_pane(message.pane_id)

    @on(QueueView.PauseWanted)
    def _queue_pause(self) -> None:
        self.queue.pause()

    @on(QueueView.MoveWanted)
    def _queue_move(self, message: QueueView.MoveWanted) -> None:
        self.queue.move(message.task, message.steps)

    @on(ActionRecorded)
    def _action_recorded(self, message: ActionRecorded) -> None:
        if self._log_screen is not None and self._log_screen.is_attached:
            self._log_screen.add(message.record)

    # -- the keys (the key table's actions) ------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Hide the pane keys where they do nothing (the Control view has its own lists)."""
        if action == "scrollback":  # a priority key: only over the list, grid and mirror
            typing = isinstance(self.focused, Input | TextArea) or self.pass_through.has_focus
            return not (typing or self.scrollback.display or len(self.app.screen_stack) > 1)
        return not (action == "move" and self.view == "control")  # the queue view's cursor moves with j/k

    def action_move(self, delta: int) -> None:
        self.views.move(delta)

    def action_toggle_zoom(self) -> None:
        self.views.toggle_zoom()

    def action_unzoom(self) -> None:
        if self.has_class("zoomed"):
            self.views.toggle_zoom()

    def action_show_view(self, name: str) -> None:
        self.views.show(name)

    def action_toggle_details(self) -> None:
        self.detail.display = not self.detail.display

    def action_help(self) -> None:
        open_help(self.app, self.control_view, self.status_bar.server)

    def action_problems(self) -> None:
        self.problems_shown.open()

    def action_usage(self) -> None:
        self.usage_shown.open()

    def action_scrollback(self, page_up: bool = True) -> None:
        """Read the selected pane's history from tmux (a worker thread) and show it."""
        pane = self.selected_pane()
        fleet = self._runtime.fleet
        if pane is None or fleet is None:
            self.operator.ready(pane)  # says why nothing happens
            return
        if self.view != "dashboard":
            self.views.show("dashboard")
        self.history_reader.open(pane, fleet, page_up)

    def action_next_needs_you(self) -> None:
        entry = self.operator.next_needs_you(self.selected_id)
        if entry is None:
            return
        self.select_pane(entry.pane_id)
        if self.selected_id != entry.pane_id:  # filtered out of the list: select it anyway
            self.views.select(entry.pane_id)

    def action_answer(self) -> None:
        self.answering.answer()

    def action_review(self) -> None:
        self.review.open()

    def action_filter(self) -> None:
        self.filter_bar.open()

    def action_action_log(self) -> None:
        from nbs_tui.widgets.action_log_view import ActionLogScreen

        log = self.operator.action_log
        screen = ActionLogScreen(str(log.path), log.tail(500))
        self._log_screen = screen

        def closed(_result: None) -> None:
            self._log_screen = None

        self.app.push_screen(screen, closed)

    def action_operator(self, name: str) -> None:
        """The operator's actions on panes (`nbs_tui.dashboard.operator_actions.OperatorActions`):
        the key table names the method (``operator('send_text')``; a unit test checks each)."""
        getattr(self.actions, name)()

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
