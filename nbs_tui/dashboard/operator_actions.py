"""The dashboard's side of the operator's actions on panes: which pane, what to ask, what to show.

The controller (`nbs_tui.operator.operator_controller.OperatorController`, no Textual) carries every action
out, off the UI thread, and says whether a pane is ready for it; this module picks the pane
(the selected one, or the marked ones), asks what is needed first, and shows the outcome:
- text, a key, pass-through: the send bar and pass-through (`nbs_tui.widgets.send_bar`) live
  in the ``#input-bar`` container docked above the footer, hidden until one of them opens;
- broadcasts go to the panes marked with ``m`` and are always confirmed first (`ConfirmScreen`);
- the sidecar's switches: a poll now, polls or plan auto-answers off for a pane, the
  server-wide pause;
- jump: the dashboard suspends while the operator works in the pane itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.app import App, SuspendNotSupported
from textual.containers import Container

from nbs_tui.core.fleet.model import PaneInfo
from nbs_tui.operator.operator_controller import OperatorController
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.widgets.filter_bar import OperatorFleetList
from nbs_tui.widgets.pane_view import PaneView
from nbs_tui.widgets.send_bar import KeyPicker, PassThrough, SendBar
from nbs_tui.widgets.status_bar import StatusBar


class OperatorActions:
    """The operator's actions on panes, from the dashboard's keys (UI thread)."""

    def __init__(
        self, app: App[Any], operator: OperatorController, runtime: Runtime, *, input_bar: Container,
        send_bar: SendBar, pass_through: PassThrough, mirror: PaneView, fleet_list: OperatorFleetList,
        status_bar: StatusBar, selected: Callable[[], PaneInfo | None],
    ) -> None:  # fmt: skip
        self._app = app
        self._operator = operator
        self._runtime = runtime
        self._status_bar = status_bar
        self._input_bar = input_bar
        self._send_bar = send_bar
        self._pass_through = pass_through
        self._mirror = mirror
        self._fleet_list = fleet_list
        self._selected = selected
        self._send_targets: list[PaneInfo] = []
        self._pass_pane: PaneInfo | None = None

    # -- the send bar --------------------------------------------------------------------------

    def send_text(self) -> None:
        """Open the send bar for the selected pane."""
        pane = self._selected()
        if self._operator.ready(pane) is not None and pane is not None:
            self._open_send_bar([pane], broadcast=False)

    def submitted(self, message: SendBar.Submitted) -> None:
        targets = list(self._send_targets)
        if not targets:
            return
        if self._operator.operator is None:
            self._app.notify("Not connected to tmux.", severity="warning")
            return
        if message.broadcast:
            self._confirm_broadcast(targets, text=message.text, enter=message.enter)
            return
        self._operator.send_text(targets[0], message.text, enter=message.enter)

    def send_bar_closed(self) -> None:
        self._send_bar.display = False
        self._hide_input_bar()
        self._send_targets = []
        self._app.screen.set_focus(self._fleet_list)  # at once: the next key is the list's

    def send_key(self) -> None:
        """Pick a key and press it in the selected pane."""
        pane = self._selected()
        if self._operator.ready(pane) is None or pane is None:
            return

        def picked(key: str | None) -> None:
            if key:
                self._operator.send_key(pane, key)

        self._app.push_screen(KeyPicker(pane.target), picked)

    # -- marks and broadcasts --------------------------------------------------------------------

    def toggle_mark(self) -> None:
        pane = self._selected()
        if pane is None:
            return
        count = self._operator.toggle_mark(pane)
        self._fleet_list.redraw()
        self._app.notify(f"{count} pane(s) marked for broadcast", timeout=2)

    def clear_marks(self) -> None:
        self._operator.clear_marks()
        self._fleet_list.redraw()

    def broadcast_text(self) -> None:
        targets = self._operator.marked_panes()
        if not targets:
            self._app.notify("Mark panes first (m), then broadcast (b).", severity="warning")
            return
        self._open_send_bar(targets, broadcast=True)

    def broadcast_key(self) -> None:
        targets = self._operator.marked_panes()
        if not targets:
            self._app.notify("Mark panes first (m), then broadcast a key (B).", severity="warning")
            return

        def picked(key: str | None) -> None:
            if key:
                self._confirm_broadcast(targets, key=key)

        self._app.push_screen(KeyPicker(f"{len(targets)} marked panes"), picked)

    def _confirm_broadcast(
        self, targets: list[PaneInfo], *, text: str | None = None, key: str | None = None, enter: bool = False
    ) -> None:
        if self._operator.operator is None:
            return
        if key is not None:
            what = f"Press {key} in {len(targets)} panes?"
        else:
            shown = (text or "").replace("\n", "⏎\n    ")
            what = f"Send this text{' and press Enter' if enter else ''} to {len(targets)} panes?\n    {shown}"
        items = [f"{p.target}  {p.title}".rstrip() for p in targets]
        from nbs_tui.widgets.confirm_screen import ConfirmScreen

        send_bar = self._send_bar

        def answered(yes: bool | None) -> None:
            if yes:
                self._operator.broadcast(targets, text=text, key=key, enter=enter)
            else:
                if text is not None and send_bar.display and not send_bar.text.text:
                    send_bar.text.load_text(text)  # give the words back for another try
                self._app.notify("Broadcast cancelled: nothing sent.", timeout=3)

        self._app.push_screen(ConfirmScreen("Broadcast", items, what), answered)

    # -- pass-through ------------------------------------------------------------------------------

    def pass_through(self) -> None:
        """Every key goes to the selected pane until the operator leaves."""
        pane = self._selected()
        if self._operator.ready(pane) is None or pane is None:
            return
        self._pass_pane = pane
        self._pass_through.target = pane.target
        self._send_bar.display = False
        self._show_input_bar()
        self._pass_through.display = True
        self._mirror.add_class("passthrough")
        self._pass_through.refresh()
        self._app.screen.set_focus(self._pass_through)  # at once: the very next key is the pane's

    def keys(self, message: PassThrough.Keys) -> None:
        if self._pass_pane is not None:
            self._operator.type_keys(self._pass_pane, list(message.keys), self.leave_pass_through)

    def pasted(self, message: PassThrough.Pasted) -> None:
        if self._pass_pane is not None:
            self._operator.paste(self._pass_pane, message.text, self.leave_pass_through)

    def leave_pass_through(self) -> None:
        if not self._pass_through.display:
            return
        self._pass_pane = None
        self._pass_through.display = False
        self._hide_input_bar()
        self._mirror.remove_class("passthrough")
        self._app.screen.set_focus(self._fleet_list)  # at once: the next key is the list's

    # -- the sidecar's switches --------------------------------------------------------------------

    def force_poll(self) -> None:
        pane = self._selected()
        if pane is None:
            self._operator.ready(None)
        else:
            self._operator.force_poll(pane)

    def force_poll_all(self) -> None:
        self._operator.force_poll_idle()

    def toggle_poll(self) -> None:
        pane = self._selected()
        if pane is None:
            self._operator.ready(None)
        else:
            self._operator.toggle_poll(pane, self._fleet_list.redraw)

    def toggle_plan(self) -> None:
        pane = self._selected()
        if pane is None:
            self._operator.ready(None)
        else:
            self._operator.toggle_plan(pane, self._fleet_list.redraw)

    def lift_budget(self) -> None:
        """Lift the per-agent daily cost cap for the selected agent (issue 37): a pane option the
        lease holder reads (`nbs_tui.sidecar.budget_watch.LIFT_OPTION`), logged here."""
        from nbs_tui.operator.action_log import ActionRecord, Outcome
        from nbs_tui.sidecar.budget_watch import LIFT_OPTION

        pane = self._selected()
        if pane is None or not pane.is_agent:
            self._app.notify("select an agent to lift its budget cap for", severity="warning")
            return
        lease = self._runtime.lease_of(pane.host)  # the holder of the pane's own server reads it
        runner = self._runtime.sidecar
        try:
            if lease is not None:
                lease.commands.run("set-option", "-p", "-t", pane.pane_id, LIFT_OPTION, "dashboard")
            elif runner is not None:
                runner.budget.lift(pane.pane_id)
            else:
                self._app.notify("no sidecar runs for this agent: no cap to lift", severity="warning")
                return
            self._operator.action_log.append(
                ActionRecord(time.time(), "budget lift", pane.pane_id, pane.target, "", "operator", Outcome.SENT,
                             "per-agent daily cost cap lifted for this agent")
            )  # fmt: skip
        except Exception as error:  # said, never raised into the UI
            self._app.notify(f"{pane.target}: budget cap not lifted: {error}", severity="error")
            return
        self._app.notify(f"{pane.target}: per-agent budget cap lifted (logged)")

    def toggle_sidecar_pause(self) -> None:
        """The server-wide pause, through tmux (``@nbs_pause``): it holds for every view and for
        whichever process holds the lease, on any host."""
        leases = self._runtime.leases()  # several hosts: each one's server
        if not leases:
            self._app.notify("no sidecar lease in use here: nothing to pause server-wide", severity="warning")
            return
        paused = not any(lease.paused for lease in leases)
        for lease in leases:
            lease.set_paused(paused)
        self._status_bar.set_paused(paused)
        said = "paused: no polls or plan answers anywhere on this server" if paused else "resumed"
        self._app.notify(f"sidecar {said}", title="Sidecar")

    # -- jump --------------------------------------------------------------------------------------

    def jump(self) -> None:
        """Work in the selected pane itself: the dashboard suspends until the operator detaches."""
        pane = self._selected()
        if pane is None:
            self._operator.ready(None)  # says why nothing happens
        else:
            self._operator.jump(pane, self._attach_to_pane)

    def _attach_to_pane(self, pane: PaneInfo) -> None:
        """Suspend the dashboard, attach to the pane until the operator detaches, resume."""
        app, operator = self._app, self._operator
        try:
            with app.suspend():
                result = operator.attach(pane)
        except SuspendNotSupported:
            message = f"cannot suspend here; attach yourself with: {' '.join(operator.attach_argv(pane))}"
            operator.attached(pane, None, message)
            app.notify(message, title="Jump", severity="warning", timeout=10)
            return
        operator.attached(pane, result)
        app.refresh(layout=True)
        app.notify(result.message, title="Back from the pane", severity="information" if result.ok else "error")

    # -- the bar they share ------------------------------------------------------------------------

    def _open_send_bar(self, targets: list[PaneInfo], broadcast: bool) -> None:
        self._send_targets = targets
        label = targets[0].target if not broadcast else f"{len(targets)} marked pane{'s' if len(targets) != 1 else ''}"
        self._show_input_bar()
        self._pass_through.display = False
        self._send_bar.open(label, broadcast=broadcast)

    def _show_input_bar(self) -> None:
        self._input_bar.add_class("open")
        self._input_bar.display = True  # now, not at the next style update, so focus can move in

    def _hide_input_bar(self) -> None:
        self._input_bar.remove_class("open")
        self._input_bar.display = False
