"""The Textual app: the runtime's life, the clocks and the theme; the dashboard is its screen's.

`create_app` builds it for the CLI, the tests, the screenshots and the benchmarks: the pure pane
state (`nbs_tui.core.fleet.pane_state.PaneState`), the frame scheduler (`dashboard.frames`), the
bridge (`nbs_tui.bridge.FleetBridge`, the runtime's listener: backend news become messages,
screen changes become work for the frames), the runtime (`nbs_tui.runtime.runtime.Runtime`, or
the one the CLI started before importing Textual, `nbs_tui.runtime.early`), the operator's
controller (`nbs_tui.operator.operator_controller`, no Textual), and the default screen,
`nbs_tui.dashboard.main_screen.DashboardScreen`, which owns the widgets, the keys and the
parts they are handed to (`nbs_tui.dashboard`).

What reaches the app itself: the backends' news (one handler, to the screen), the answer card's
choices (a modal screen's messages bubble to the app), worker failures, the command palette.
Timers: a 1 Hz clock moves the quiet times and countdowns; a 2 Hz tick updates the needs-you
queue. Neither paints a widget once the app is shutting down (Textual prunes them first).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from nbs_tui.bridge import FleetBridge
from nbs_tui.config import ConfigError, Settings
from nbs_tui.core.fleet.pane_state import HISTORY_LENGTH, PaneState
from nbs_tui.core.fleet.problems import Problems
from nbs_tui.dashboard.frames import FrameScheduler
from nbs_tui.dashboard.keys import palette_commands
from nbs_tui.dashboard.main_screen import DashboardScreen
from nbs_tui.dashboard.messages import BackendNews
from nbs_tui.files.config_edit import save_setting
from nbs_tui.housekeeping import heap
from nbs_tui.operator.operator_controller import OperatorController
from nbs_tui.runtime.contract import FleetFactory, RuntimeOptions
from nbs_tui.runtime.early import EarlyRuntime
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.tmux.port import FleetPort, TmuxUnavailable
from nbs_tui.widgets.breakpoints import HORIZONTAL_BREAKPOINTS
from nbs_tui.widgets.control_view import ControlView
from nbs_tui.widgets.textual_internals import report_exception

if TYPE_CHECKING:  # opened on demand, imported when first opened: not for the first frame
    from textual.notifications import SeverityLevel

    from nbs_tui.widgets.answer_card import AnswerScreen
    from nbs_tui.widgets.review_screen import ReviewScreen

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


class NbsApp(App[int]):
    """The nbs-tui dashboard: the runtime's life, the clocks, the theme; the rest is its screen's."""

    CSS_PATH = css_path()
    TITLE = "nbs-tui"
    HORIZONTAL_BREAKPOINTS = HORIZONTAL_BREAKPOINTS
    """A phone (the browser view, 40-60 columns) gets the narrow layout: needs-you first, the
    list under it, no mirror beside it (styles/app.tcss), the answer card's choices as buttons."""

    def __init__(
        self, settings: Settings, state: PaneState, frames: FrameScheduler, *,
        clock: Callable[[], float], wall: Callable[[], float],
    ) -> None:  # fmt: skip
        """Built by `create_app`, which then hands it its runtime and screen (`attach`)."""
        super().__init__()
        self.settings = settings
        self.clock = clock
        """The clock of every duration shown (quiet time, countdowns); the sidecar shares it."""
        self.wall = wall
        self.state = state
        """Every pane's shown state, history and quiet time (pure; fed from messages)."""
        self.frames = frames
        """When the frame runs: fed by the bridge, started at mount."""
        self.bridge = FleetBridge(self, frames)
        """The runtime's listener: news become messages posted here, screen changes the frames' work."""
        self.problems = Problems()
        """Every backend problem of this session (the ``E`` screen, the status bar's count)."""
        self.runtime: Runtime
        """Fleet, control plane, Claude signals and sidecar: built at mount (or already running,
        `nbs_tui.runtime.early`), stopped at unmount."""
        self.operator: OperatorController
        """The operator's actions (send, broadcast, poll, marks, needs-you, jump): no Textual."""
        self.dashboard: DashboardScreen
        """The default screen: the widgets, the keys and the parts that do the work."""
        self._early: EarlyRuntime | None = None

    def attach(self, runtime: Runtime, operator: OperatorController, dashboard: DashboardScreen, early: EarlyRuntime | None) -> None:
        self.runtime, self.operator, self.dashboard, self._early = runtime, operator, dashboard, early
        if self.settings.keymap:
            self.set_keymap(dict(self.settings.keymap))
        self._apply_theme()

    def get_default_screen(self) -> Screen[Any]:
        return self.dashboard

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

    # -- the runtime's life ------------------------------------------------------------------

    def dashboard_mounted(self) -> None:
        """The dashboard screen and its widgets are mounted (after the app's own mount: the
        default screen composes in its own task): the frames, the clocks and the backends start."""
        dashboard = self.dashboard
        dashboard.news.update_empty_state()
        self.frames.start(asyncio.get_running_loop(), contextvars.copy_context(), partial(report_exception, self))
        self.frames.request()  # the first frame draws whatever is shown
        self.set_interval(CLOCK_SECONDS, dashboard.clock_tick, name="clock")
        self.set_interval(NEEDS_YOU_SECONDS, dashboard.needs_you_tick, name="needs-you")
        self.set_timer(heap.SETTLE_SECONDS, heap.freeze_long_lived, name="heap")
        self.operator.start()
        runtime = self.runtime
        runtime.build()
        if runtime.control_plane is not None:
            dashboard.control_view.attach(runtime.control_plane)
        early, self._early = self._early, None
        if early is not None:  # started before the app was imported: its news so far, then live
            early.news.attach(self.bridge)
            if early.failed is not None:
                dashboard.news.start_failed(str(early.failed))
        else:
            try:
                runtime.start()
            except TmuxUnavailable as error:
                dashboard.news.start_failed(str(error))
        dashboard.status_bar.set_connection(dashboard.news.connected)
        dashboard.news.update_empty_state()
        dashboard.notifications.start()
        dashboard.lifecycle.start()
        dashboard.answering.mounted()

    def on_unmount(self) -> None:
        self.frames.stop()
        log.info("%d frames", self.frames.frames_run)
        painter = self.dashboard.mirror.rows.painter
        log.info(
            "mirror: %d frames (%d rows) written straight to the terminal, %d left to Textual",
            painter.frames_painted, painter.rows_painted, painter.frames_declined,
        )
        painter = self.dashboard.fleet_list.painter
        log.info(
            "fleet list: %d ticks (%d rows) written straight to the terminal, %d left to Textual",
            painter.frames_painted, painter.rows_painted, painter.frames_declined,
        )
        self.operator.stop()
        self.runtime.stop()

    # -- what reaches the app -------------------------------------------------------------------

    @on(BackendNews)
    def _news(self, message: BackendNews) -> None:
        """The bridge posts the backends' news here (the app's queue keeps their order)."""
        self.dashboard.news_arrived(message)

    def on_answer_screen_chosen(self, message: AnswerScreen.Chosen) -> None:
        self.dashboard.answering.chosen(message)  # a modal screen's messages reach the app, not the dashboard

    def on_answer_screen_skipped(self, message: AnswerScreen.Skipped) -> None:
        self.dashboard.answering.skipped(message)

    def on_review_screen_file_wanted(self, message: ReviewScreen.FileWanted) -> None:
        self.dashboard.review.file_wanted(message)  # the review screen's wishes, as the card's

    def on_review_screen_send_wanted(self, message: ReviewScreen.SendWanted) -> None:
        self.dashboard.review.send_wanted(message)

    def on_review_screen_reload_wanted(self, message: ReviewScreen.ReloadWanted) -> None:
        self.dashboard.review.reload_wanted(message)

    def on_review_screen_merge_wanted(self, message: ReviewScreen.MergeWanted) -> None:
        self.dashboard.review.merge_wanted(message)

    def on_review_screen_discard_wanted(self, message: ReviewScreen.DiscardWanted) -> None:
        self.dashboard.review.discard_wanted(message)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure meets here and is a problem, never swallowed (the one route:
        the runtime's sink logs it and posts it back as a `BackendProblem`)."""
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            log.error("worker %s failed", event.worker.name, exc_info=error)
            self.runtime.problem("nbs-tui", f"{event.worker.name}: {error}")

    # -- the controller's view (`OperatorView`) ----------------------------------------------------

    def notify_operator(self, text: str, title: str, severity: str, timeout: float) -> None:
        """Any thread: ``notify`` only posts a message."""
        self.notify(text, title=title, severity=severity, timeout=timeout)  # type: ignore[arg-type]

    def notify(
        self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None,
        markup: bool = True,
    ) -> None:  # fmt: skip
        """``--card-only``: no toasts (they would tell of other agents); the card and its cover
        say what this link's holder may know."""
        if self.settings.card_only:
            log.info("card-only: not shown: %s", message)
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def on_ui(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the app is gone: nothing left to update
            self.call_from_thread(callback)

    @property
    def fleet(self) -> FleetPort | None:
        """The runtime's fleet (None before mount or without tmux)."""
        return self.runtime.fleet

    @property
    def control_view(self) -> ControlView:
        """The Control view, whose listener the bridge calls on the control plane's thread."""
        return self.dashboard.control_view

    # -- command palette ------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In pass-through, Ctrl+P belongs to the pane, not to the command palette (Ctrl+Q still quits).
        ``--card-only`` (a browser view's one-time link): no palette, no key of the app's but
        quit (the card's own keys are its screen's; the dashboard's screen is covered)."""
        if self.settings.card_only:
            return action == "quit"
        return not (action == "command_palette" and self.dashboard.pass_through.has_focus)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        dashboard = self.dashboard
        yield from palette_commands(
            self, dashboard, dashboard.notifications.muted(), dashboard.notifications.toggle_mute, self.state.panes,
            dashboard.select_pane, dashboard.fleet_list.background, dashboard.lifecycle.open_background,
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
    early: EarlyRuntime | None = None,
) -> NbsApp:
    """The one way to build the app, for the CLI and the tests alike: the state, the frame
    scheduler and the bridge, the runtime (or ``early``'s, started before the app was imported,
    when it is the one this would build), the controller, and the dashboard screen with its parts.

    ``fleet_factory`` builds the fleet given the app's listener; by default a `TmuxFleet` on
    ``settings.server``. ``sidecar``/``control_plane``/``claude`` switch backends off (tests);
    ``clock``/``wall`` replace the clocks (snapshot tests freeze them).
    """
    state = PaneState(HISTORY_LENGTH)
    frames = FrameScheduler(lambda dirty, whole: app.dashboard.draw(dirty, whole))
    app = NbsApp(settings, state, frames, clock=clock, wall=wall)
    options = RuntimeOptions(
        control_plane=control_plane, claude=claude, sidecar=sidecar, clock=clock, wall=wall, fleet_factory=fleet_factory,
    )
    early = early if early is not None and early.serves(settings, options) else None
    runtime = early.runtime if early is not None else Runtime(settings, app.bridge, options)
    operator = OperatorController(settings, state, runtime, app, clock=clock)
    dashboard = DashboardScreen(
        app, settings, state, frames, runtime, operator, app.problems, clock=clock, wall=wall, mounted=app.dashboard_mounted,
    )
    app.attach(runtime, operator, dashboard, early)
    return app


def run_app(settings: Settings, early: EarlyRuntime | None = None) -> int:
    app = create_app(settings, early=early)
    result = app.run()
    return int(result or 0) if app.return_code is None else app.return_code
