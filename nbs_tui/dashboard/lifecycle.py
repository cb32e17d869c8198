"""The dashboard's side of the fleet's lifecycle (docs/lifecycle.md): the "new agent" form (``c``),
stop (``X``) and restart (``S``) after a confirmation, the remembered fleet: offered once
when its agents are gone, restored after a look at the plan (``Ctrl+O``), and Claude Code's own
background sessions opened in a tmux window (``o``, or Enter on a ``◇`` row).

The controller's lifecycle (`nbs_tui.lifecycle.threaded.LifecycleController`, the operator
controller's ``lifecycle``, no Textual) starts, stops and restores off the UI thread and says how
it went; this part opens the form and the confirmations (UI thread).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from textual.app import App

from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import NewAgent
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.operator.operator_controller import OperatorController

REMEMBERED_CHECK_SECONDS = 3.0
"""After the start, when this server's remembered fleet is checked for agents that are gone (off
the first frame's path: the check may run ``claude --help``)."""


class LifecycleActions:
    """Start, stop, restart and restore from the dashboard (module docstring)."""

    def __init__(
        self, app: App[Any], operator: OperatorController, settings: Settings, *,
        panes: Callable[[], Sequence[PaneInfo]], selected: Callable[[], PaneInfo | None],
        opened: Callable[[str, PaneId], None],
    ) -> None:  # fmt: skip
        self._app = app
        self._operator = operator
        self._lifecycle = operator.lifecycle
        self._settings = settings
        self._panes = panes
        self._selected = selected
        self._opened = opened
        """A background session was opened in a pane (UI thread): the list drops its row."""

    def start(self) -> None:
        """Once the dashboard runs: look at the remembered fleet a little later."""
        self._app.set_timer(
            REMEMBERED_CHECK_SECONDS, lambda: self._lifecycle.check_remembered(self.offer_restore), name="remembered"
        )

    def new_agent(self) -> None:
        from nbs_tui.widgets.new_agent_form import NewAgentScreen

        folders = [p.current_path for p in self._panes() if p.current_path]
        folders += [str(project) for project in self._settings.projects]

        def chosen(spec: NewAgent | None) -> None:
            if spec is not None:
                self._lifecycle.start_agent(spec)

        hosts, first = self._lifecycle.start_hosts()
        accounts = [account.name for account in self._settings.accounts]
        self._app.push_screen(NewAgentScreen(folders, self._lifecycle.start_place(), hosts, first, accounts), chosen)

    def open_background(self, session: BackgroundSession | None) -> None:
        """``claude attach ID`` in a new tmux window for the selected background session."""
        if session is None:
            self._app.notify("Select a background session (◇ in the list) first.", timeout=4)
            return
        self._lifecycle.open_background(session, self._opened)

    def offer_restore(self, lines: list[str]) -> None:
        """The remembered fleet has agents that are gone: say so once, and how to bring them back."""
        self._app.notify(
            f"{lines[0]}\nCtrl+O (palette: Restore the remembered fleet) shows the plan and asks first.",
            title="Remembered agents are gone", timeout=20,
        )

    def restore_fleet(self) -> None:
        from nbs_tui.widgets.confirm_screen import ConfirmScreen

        def offer(lines: list[str]) -> None:
            def answered(yes: bool | None) -> None:
                if yes:
                    self._lifecycle.restore_remembered()

            self._app.push_screen(ConfirmScreen("Restore the remembered fleet", lines[1:], lines[0]), answered)

        def nothing() -> None:
            self._app.notify("No remembered agents of this server are gone.", timeout=4)

        self._lifecycle.check_remembered(offer, nothing)

    def stop_or_restart(self, *, restart: bool) -> None:
        pane = self._selected()
        if self._operator.ready(pane) is None or pane is None:
            return
        from nbs_tui.widgets.confirm_screen import ConfirmScreen

        what = (
            "Stop it and resume its conversation in the same pane (claude --resume)?"
            if restart
            else "Stop it: /exit when its box is idle and empty, else Ctrl-C, else kill its pane?"
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._lifecycle.stop_agent(pane, restart=restart)

        title = "Restart the agent" if restart else "Stop the agent"
        self._app.push_screen(ConfirmScreen(title, [f"{pane.target}  {pane.title}".rstrip()], what), answered)
