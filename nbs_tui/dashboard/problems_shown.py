"""Where the operator sees the backends' problems: a notification, the status bar's count, the
problems screen (``E``).

Every backend problem reaches the app as a `nbs_tui.dashboard.messages.BackendProblem` (through
`Runtime.problem`, which also writes it to the log file). It is kept in a `Problems` record and
notified, unless tmux is away (the banner says so: the count waits for tmux to be back, the
screen lists everything) or it repeats within `PROBLEM_REPEAT_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.app import App

from nbs_tui.core.fleet.problems import Problems
from nbs_tui.core.screen.text import printable
from nbs_tui.dashboard.messages import BackendProblem
from nbs_tui.housekeeping import logs
from nbs_tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:  # opened on demand: not imported for the first frame
    from nbs_tui.widgets.problems_screen import ProblemsScreen

PROBLEM_REPEAT_SECONDS = 30.0


class ProblemsShown:
    """Records each problem and shows it where the operator looks (UI thread)."""

    def __init__(
        self, app: App[Any], problems: Problems, status_bar: StatusBar, *,
        connected: Callable[[], bool | None], clock: Callable[[], float], wall: Callable[[], float],
    ) -> None:  # fmt: skip
        self._app = app
        self._problems = problems
        self._status_bar = status_bar
        self._connected = connected
        self._clock = clock
        self._wall = wall
        self._shown: dict[tuple[str, str], float] = {}
        self._screen: ProblemsScreen | None = None

    def reported(self, message: BackendProblem) -> None:
        """Keep a backend's problem (problems screen, status-bar count) and show it; while tmux
        is away the banner says it all, and one repeated within `PROBLEM_REPEAT_SECONDS` is
        notified once."""
        self._problems.record(message.source, message.message, self._wall())
        self.changed()
        if self._connected() is False:
            self._app.log.warning(f"{message.source}: {message.message}")
            return
        now = self._clock()
        key = (message.source, message.message)
        if now - self._shown.get(key, float("-inf")) < PROBLEM_REPEAT_SECONDS:
            return
        self._shown[key] = now
        # a message may quote a folder or a line from a pane: shown printable, never as markup
        self._app.notify(
            printable(message.message, multiline=True), title=printable(message.source), severity="error",
            timeout=8, markup=False,
        )  # fmt: skip

    def changed(self) -> None:
        """The record or the connection changed: the count and the open screen follow."""
        # while tmux is away the banner speaks for it (what fails meanwhile follows from it);
        # the count, with whatever piled up, is back as soon as tmux is
        self._status_bar.set_problems(0 if self._connected() is False else len(self._problems))
        if self._screen is not None:
            self._screen.show(self._problems.entries())

    def open(self) -> None:
        """List every problem seen (``c`` on the screen clears the record)."""
        if self._screen is not None:
            return
        from nbs_tui.widgets.problems_screen import ProblemsScreen

        log_path = logs.installed_path()
        screen = ProblemsScreen(self._problems.entries(), str(log_path) if log_path else None)
        self._screen = screen

        def closed(clear: bool | None) -> None:
            self._screen = None
            if clear:
                self._problems.clear()
                self.changed()

        self._app.push_screen(screen, closed)
