"""The operator's notifications outside the dashboard: its own terminal and ``notify_command``.

The controller decides what is worth a notification (`OperatorController.notify_tick`: an agent
that started waiting on the operator, one that finished, ...); `nbs_tui.notify.terminal_notifier.TerminalNotifier`
turns each into OSC sequences written into the dashboard's own output stream, in order with its
frames (so they travel through ssh and tmux as the frames do), and runs ``notify_command``.
Inside tmux the sequences need tmux's ``allow-passthrough``: at start, once, a thread picks the
protocols by the terminal tmux's client runs in (``notify_osc = "auto"``), then, if OSC
sequences are among them, checks it and says how to allow it when it is off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from textual.app import App

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.notifications.notify_rules import KIND_LABELS, Notification, NotifyKind, coalesce
from nbs_tui.core.notifications.notify_settings import OSC_PROTOCOLS, Subject, parse_protocols
from nbs_tui.notify.mute import Mute
from nbs_tui.notify.terminal_notifier import TerminalNotifier, passthrough_problem
from nbs_tui.notify.toasts import toast_for
from nbs_tui.operator.operator_controller import OperatorController
from nbs_tui.sidecar.events import SidecarEvent
from nbs_tui.sidecar.sidecar_lease import SidecarLease
from nbs_tui.tmux.own import client_terminal, passthrough_state
from nbs_tui.widgets.pane_text import project_name
from nbs_tui.widgets.textual_internals import terminal_driver


class OperatorNotifications:
    """Sends the controller's notifications to the operator's terminal (UI thread)."""

    def __init__(
        self, app: App[Any], settings: Settings, operator: OperatorController, *,
        problem: Callable[[str, str], None], panes: Callable[[], Mapping[PaneId, PaneInfo]],
        leases: Callable[[], Sequence[SidecarLease]] = list,
    ) -> None:  # fmt: skip
        self._app = app
        self._settings = settings
        self._operator = operator
        self._problem = problem
        self._panes = panes
        self.mute = Mute(operator.notifications, leases)
        """This dashboard's mute and every watched server's, through its lease: the palette's
        mute is theirs (``@nbs_mute``), so that the process sending pushes (the lease holder,
        often the service) honours it too."""
        self.notifier = TerminalNotifier(
            self._write, parse_protocols(settings.notify_osc, os.environ),
            in_tmux=bool(os.environ.get("TMUX")), command=settings.notify_command,
            problem=problem, subject=self._subject,
        )  # fmt: skip
        """Writes the sequences and runs ``notify_command``."""

    def start(self) -> None:
        """Inside tmux, check once (a thread) that the sequences can get out."""
        if self.notifier.in_tmux and self.notifier.protocols:
            self._app.run_worker(self._check_passthrough, name="allow-passthrough", thread=True)

    def tick(self, looking_at: PaneId | None) -> None:
        """Send what the controller says is due (twice a second, with the needs-you queue);
        nothing about the pane the operator is ``looking_at``."""
        self.mute.follow_servers()
        notes = coalesce(self._operator.notify_tick(looking_at))
        self.notifier.notify_all(notes, bell_rang=self._operator.rang_bell)  # one bell per tick

    def toast(self, event: SidecarEvent) -> None:
        """The toast a sidecar event makes, if any (`nbs_tui.notify.toasts`)."""
        toast = toast_for(event)
        if toast is not None:
            self._app.notify(toast.text, title=toast.title, severity=toast.severity, timeout=toast.timeout)

    def muted(self) -> frozenset[NotifyKind]:
        """The kinds muted here: this dashboard's own (``notify_mute``) and the server's."""
        return self.mute.muted()

    def toggle_mute(self, kind: NotifyKind) -> None:
        """Mute ``kind`` for this dashboard and for every watched server (its other dashboards
        and its pushes), or, if it is muted here or there, unmute it everywhere."""
        muted = self.mute.toggle(kind)
        where = ", server-wide (pushes too)" if self.mute.reaches_servers() else ""
        said = ("muted" if muted else "on") + where
        self._app.notify(f"{KIND_LABELS[kind]} notifications {said}", title="Notifications", timeout=3)

    def _check_passthrough(self) -> None:
        """Thread: with ``notify_osc = "auto"``, choose the protocols by the terminal tmux's
        client runs in; then, once, say how to let OSC notifications out of tmux when they
        cannot (a bell needs no passthrough)."""
        protocols = self.notifier.protocols
        if self._settings.notify_osc.strip().lower() == "auto" and (term := client_terminal(os.environ)):
            protocols = parse_protocols("auto", {"TERM": term})
            self._app.call_from_thread(setattr, self.notifier, "protocols", protocols)
        if any(p in OSC_PROTOCOLS for p in protocols):
            problem = passthrough_problem(passthrough_state(os.environ))
            if problem is not None:
                self._problem("notify", problem)

    def _write(self, data: str) -> None:
        """Into the dashboard's own output stream, in order with its frames."""
        driver = terminal_driver(self._app)
        if not self._app.is_headless and driver is not None:
            driver.write(data)

    def _subject(self, note: Notification) -> Subject:
        pane = self._panes().get(note.pane_id)
        hosts = self._settings.watched_hosts()
        host = (pane.host if pane is not None else "") or hosts[0].name
        project = project_name(pane) if pane is not None else ""  # printable: it goes into OSC sequences
        return Subject(pane.target if pane is not None else note.pane_id, host, project)
