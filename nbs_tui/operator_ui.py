"""The operator's layer over the dashboard: jump, send, broadcast, poll, needs-you, filter, log.

`OperatorApp` extends `nbs_tui.app.NbsApp` with the operator's keys (bindings with ids, shown in
the footer, the command palette and the help screen) and widgets, and talks to tmux only
through `nbs_tui.actions.Operator` and `nbs_tui.tmux.jump.Jumper`.

Threads: every operator action blocks on tmux, so actions run in order on one named thread
(``nbs-operator``); results come back with ``call_from_thread``, and every failure meets in
`OperatorApp._operator_failed`. A pane is chosen (a `PaneInfo` snapshot) on the UI thread
when the operator acts; the action thread checks it is still that pane before sending.
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, ClassVar

from textual.app import SuspendNotSupported, SystemCommand
from textual.binding import BindingType
from textual.message import Message
from textual.screen import Screen

from nbs_tui.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.actions import ActionResult, Operator, summarize
from nbs_tui.app import Command, NbsApp
from nbs_tui.config import Settings
from nbs_tui.core.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.needs_you import NeedsYouQueue
from nbs_tui.tmux.jump import Jumper
from nbs_tui.widgets.action_log_view import ActionLogScreen
from nbs_tui.widgets.confirm_screen import ConfirmScreen
from nbs_tui.widgets.filter_bar import FilterBar, OperatorFleetList
from nbs_tui.widgets.needs_you import NeedsYouPanel
from nbs_tui.widgets.send_bar import KeyPicker, PassThrough, SendBar

NEEDS_YOU_SECONDS = 0.5


OPERATOR_COMMANDS: tuple[Command, ...] = (
    Command(
        "pane.jump", "g", "jump", "Jump",
        "Go into the selected pane in tmux: inside tmux your client switches (prefix B comes back); "
        "outside, the dashboard suspends and attaches until you detach (prefix d)",
        palette="Jump into the pane",
    ),
    Command(
        "send.text", "i", "send_text", "Send",
        "Type text for the selected pane: Enter sends it exactly, Ctrl+T also presses Enter, Ctrl+J new line",
        palette="Send text to the pane",
    ),
    Command(
        "send.key", "K", "send_key", "Key",
        "Press a named key in the selected pane: Enter, Esc, Ctrl-C, arrows, Tab, Shift-Tab, a menu digit",
        palette="Press a key in the pane",
    ),
    Command(
        "send.passthrough", "p", "pass_through", "Pass",
        "Type straight into the selected pane, every key as if there; Ctrl+] leaves",
        palette="Pass-through: type into the pane",
    ),
    Command(
        "pane.mark", "m,space", "toggle_mark", "Mark",
        "Mark or unmark the selected pane for broadcast (● on its row)", show=False, key_display="m",
        palette="Mark pane for broadcast",
    ),
    Command("pane.unmark", "M", "clear_marks", "Unmark all", "Clear every broadcast mark", show=False, palette="Unmark all panes"),
    Command(
        "send.broadcast", "b", "broadcast_text", "Bcast",
        "Send the same text to every marked pane (names them and asks first)",
        palette="Broadcast text to marked panes",
    ),
    Command(
        "send.broadcast_key", "B", "broadcast_key", "Broadcast key",
        "Press the same named key in every marked pane (names them and asks first)", show=False,
        palette="Broadcast a key to marked panes",
    ),
    Command(
        "poll.now", "r", "force_poll", "Poll",
        "Inject /nbs-poll into the selected agent now, if typing there is safe (says why not)",
        palette="Force a poll in the pane",
    ),
    Command(
        "poll.idle", "R", "force_poll_all", "Poll idle",
        "Inject /nbs-poll into every idle agent now; reports each one skipped and why", show=False,
        palette="Force a poll in every idle agent",
    ),
    Command(
        "needs.next", "n", "next_needs_you", "Waiting",
        "Select the next agent waiting on you (oldest first); then g jumps into it",
        palette="Next agent waiting on you",
    ),
    Command(
        "fleet.filter", "slash", "filter", "Filter",
        "Filter the list: words, session:NAME project:DIR name:TEXT state:idle|needs", key_display="/",
        palette="Filter the fleet list",
    ),
    Command(
        "pane.toggle_poll", "t", "toggle_poll", "Poll on/off",
        "Turn poll injection on or off for the selected pane (⊘p on its row when off)", show=False,
        palette="Toggle poll injection for the pane",
    ),
    Command(
        "pane.toggle_plan", "a", "toggle_plan", "Plan auto",
        "Turn plan-menu auto-select on or off for the selected pane (⊘a on its row when off)", show=False,
        palette="Toggle plan auto-select for the pane",
    ),
    Command("app.action_log", "L", "action_log", "Log", "Show the action log: every action, sent or skipped", palette="Show the action log"),
)


class ActionRecorded(Message):
    """A record was appended to the action log (posted from whichever thread wrote it)."""

    def __init__(self, record: ActionRecord) -> None:
        super().__init__()
        self.record = record


class _SidecarProxy:
    """Reaches the app's sidecar runner at call time (it starts after the app mounts)."""

    def __init__(self, app: NbsApp) -> None:
        self._app = app

    def _runner(self) -> Any:
        runner = getattr(self._app, "sidecar", None)
        if runner is None:
            raise KeyError("no sidecar is running")
        return runner

    def force_poll(self, pane_id: PaneId) -> tuple[bool, str]:
        try:
            runner = self._runner()
        except KeyError:
            return False, "no sidecar is running to inject polls"
        injected, reason = runner.force_poll(pane_id)
        return bool(injected), str(reason)

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool) -> None:
        self._runner().set_poll_enabled(pane_id, enabled)

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None:
        self._runner().set_plan_auto(pane_id, enabled)

    def note_operator_input(self, pane_id: PaneId) -> None:
        runner = getattr(self._app, "sidecar", None)
        if runner is not None:
            runner.note_operator_input(pane_id)


class OperatorApp(NbsApp):
    """The dashboard with the operator's actions."""

    BINDINGS: ClassVar[list[BindingType]] = [command.binding() for command in OPERATOR_COMMANDS]

    CSS = """
    #mirror.passthrough {
        border: heavy $warning;
        border-title-color: $warning;
    }
    #side NeedsYouPanel {
        margin: 0 0 0 0;
    }
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.operator_list = OperatorFleetList(id="fleet")
        self.fleet_list = self.operator_list  # composed by NbsApp in place of the plain list
        self.send_bar = SendBar(id="send-bar")
        self.pass_through = PassThrough(id="pass-through")
        self.filter_bar = FilterBar(id="filter")
        self.needs_panel = NeedsYouPanel(id="needs-you")
        self.action_log = ActionLog(self.settings.action_log)
        self.jumper = Jumper(self.settings.server)
        self.needs_you = NeedsYouQueue(idle_threshold=self.settings.needs_you_idle, clock=self.clock)
        self.marked: set[PaneId] = self.operator_list.marked
        self.operator_list.fleet_poll_off = self.settings.poll_disabled
        self.operator_list.fleet_plan_off = self.settings.plan_policy == "off"
        self._operator: Operator | None = None
        self._send_targets: list[PaneInfo] = []
        self._pass_pane: PaneInfo | None = None
        self._pass_pending: list[tuple[bool, str]] = []
        self._pass_lock = threading.Lock()
        self._last_needs: PaneId | None = None
        self._log_screen: ActionLogScreen | None = None
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._job_thread: threading.Thread | None = None
        self._unsubscribe_log = self.action_log.subscribe(self._recorded)

    def _recorded(self, record: ActionRecord) -> None:
        """Any thread: a record was written."""
        self.post_message(ActionRecorded(record))

    # -- setup -----------------------------------------------------------------------------------

    def on_mount(self) -> None:
        side = self.query_one("#side")
        side.mount(self.needs_panel, before=self.fleet_list)
        side.mount(self.filter_bar, before=self.fleet_list)
        self.input_bar.mount(self.send_bar)
        self.input_bar.mount(self.pass_through)
        self.send_bar.display = False
        self.pass_through.display = False
        self.set_interval(NEEDS_YOU_SECONDS, self._needs_you_tick, name="needs-you")
        self._job_thread = threading.Thread(target=self._run_jobs, name="nbs-operator", daemon=True)
        self._job_thread.start()

    def on_unmount(self) -> None:
        self._jobs.put(None)
        self._unsubscribe_log()

    @property
    def operator(self) -> Operator | None:
        """The operator service, once the fleet exists."""
        if self._operator is None and self.fleet is not None:
            proxy = _SidecarProxy(self)
            self._operator = Operator(
                self.fleet, self.action_log, server=self.settings.server, poller=proxy, controls=proxy
            )
        return self._operator

    # -- the action thread -----------------------------------------------------------------------

    def _run_jobs(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except Exception as error:  # every failure meets here, and the operator sees it
                with contextlib.suppress(RuntimeError):  # the app is gone
                    self.call_from_thread(self._operator_failed, error)

    def _operator_failed(self, error: Exception) -> None:
        self.notify(f"{type(error).__name__}: {error}", title="Operator action failed", severity="error", timeout=10)

    def _submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def _report(self, results: Sequence[ActionResult], title: str) -> None:
        """From the action thread: tell the operator what happened (UI thread)."""
        if not results:
            text, severity = "nothing to do", "information"
        elif len(results) == 1:
            result = results[0]
            text = result.describe()
            severity = "information" if result.ok else ("warning" if result.outcome is Outcome.SKIPPED else "error")
        else:
            text = summarize(results)
            severity = "information" if all(r.ok for r in results) else "warning"
        with contextlib.suppress(RuntimeError):
            self.call_from_thread(self.notify, text, title=title, severity=severity, timeout=6)

    def _need(self, operator: bool = True) -> tuple[PaneInfo, Operator] | None:
        pane = self.selected_pane()
        if pane is None:
            self.notify("No pane selected.", severity="warning")
            return None
        op = self.operator
        if op is None:
            self.notify("Not connected to tmux.", severity="warning")
            return None
        return pane, op

    # -- jump ------------------------------------------------------------------------------------

    def action_jump(self) -> None:
        need = self._need()
        if need is None:
            return
        pane, op = need
        plan = self.jumper.plan(pane.pane_id)

        def job() -> None:
            gone = op.check_pane(pane)
            if gone:
                op.record_jump(pane, plan.mode, Outcome.SKIPPED, gone)
                self._report([ActionResult(pane.pane_id, pane.target, "jump", plan.mode, Outcome.SKIPPED, gone)], "Jump")
                return
            if plan.mode == "switch":
                result = self.jumper.switch(pane.pane_id)
                outcome = Outcome.SENT if result.ok else Outcome.FAILED
                op.record_jump(pane, "switch-client", outcome, result.message)
                with contextlib.suppress(RuntimeError):
                    self.call_from_thread(
                        self.notify, result.message, title="Jump", severity="information" if result.ok else "error"
                    )
            else:
                with contextlib.suppress(RuntimeError):
                    self.call_from_thread(self._attach_to_pane, pane)

        self._submit(job)

    def _attach_to_pane(self, pane: PaneInfo) -> None:
        """Suspend the dashboard, attach to the pane until the operator detaches, resume."""
        op = self.operator
        plan = self.jumper.attach_plan(pane.pane_id)
        try:
            with self.suspend():
                result = self.jumper.attach(pane.pane_id)
        except SuspendNotSupported:
            message = f"cannot suspend here; attach yourself with: {' '.join(plan.argv)}"
            if op is not None:
                op.record_jump(pane, "attach", Outcome.SKIPPED, message)
            self.notify(message, title="Jump", severity="warning", timeout=10)
            return
        if op is not None:
            op.record_jump(pane, "attach", Outcome.SENT if result.ok else Outcome.FAILED, result.message)
        self.refresh(layout=True)
        self.notify(result.message, title="Back from the pane", severity="information" if result.ok else "error")

    def _show_input_bar(self) -> None:
        self.input_bar.add_class("open")
        self.input_bar.display = True  # now, not at the next style update, so focus can move in

    def _hide_input_bar(self) -> None:
        self.input_bar.remove_class("open")
        self.input_bar.display = False

    # -- send text and keys ----------------------------------------------------------------------

    def _open_send_bar(self, targets: list[PaneInfo], broadcast: bool) -> None:
        self._send_targets = targets
        label = targets[0].target if not broadcast else f"{len(targets)} marked pane{'s' if len(targets) != 1 else ''}"
        self._show_input_bar()
        self.pass_through.display = False
        self.send_bar.open(label, broadcast=broadcast)

    def action_send_text(self) -> None:
        need = self._need()
        if need is not None:
            self._open_send_bar([need[0]], broadcast=False)

    def on_send_bar_submitted(self, message: SendBar.Submitted) -> None:
        targets = list(self._send_targets)
        if not targets:
            return
        op = self.operator
        if op is None:
            self.notify("Not connected to tmux.", severity="warning")
            return
        if message.broadcast:
            self._confirm_broadcast(targets, text=message.text, enter=message.enter)
            return
        pane = targets[0]
        self._submit(lambda: self._report([op.send_text(pane, message.text, enter=message.enter)], "Send"))

    def on_send_bar_closed(self, _message: SendBar.Closed) -> None:
        self.send_bar.display = False
        self._hide_input_bar()
        self._send_targets = []
        self.screen.set_focus(self.fleet_list)  # at once: the next key is the list's

    def action_send_key(self) -> None:
        need = self._need()
        if need is None:
            return
        pane, op = need

        def picked(key: str | None) -> None:
            if key:
                self._submit(lambda: self._report([op.send_key(pane, key)], "Key"))

        self.push_screen(KeyPicker(pane.target), picked)

    # -- broadcast ---------------------------------------------------------------------------------

    def _marked_panes(self) -> list[PaneInfo]:
        return [p for p in self.panes if p.pane_id in self.marked]

    def action_toggle_mark(self) -> None:
        pane = self.selected_pane()
        if pane is None:
            return
        if pane.pane_id in self.marked:
            self.marked.discard(pane.pane_id)
        else:
            self.marked.add(pane.pane_id)
        self.operator_list.redraw()
        self.notify(f"{len(self.marked)} pane(s) marked for broadcast", timeout=2)

    def action_clear_marks(self) -> None:
        self.marked.clear()
        self.operator_list.redraw()

    def action_broadcast_text(self) -> None:
        targets = self._marked_panes()
        if not targets:
            self.notify("Mark panes first (m), then broadcast (b).", severity="warning")
            return
        self._open_send_bar(targets, broadcast=True)

    def action_broadcast_key(self) -> None:
        targets = self._marked_panes()
        if not targets:
            self.notify("Mark panes first (m), then broadcast a key (B).", severity="warning")
            return

        def picked(key: str | None) -> None:
            if key:
                self._confirm_broadcast(targets, key=key)

        self.push_screen(KeyPicker(f"{len(targets)} marked panes"), picked)

    def _confirm_broadcast(
        self, targets: list[PaneInfo], *, text: str | None = None, key: str | None = None, enter: bool = False
    ) -> None:
        op = self.operator
        if op is None:
            return
        if key is not None:
            what = f"Press {key} in {len(targets)} panes?"
        else:
            shown = (text or "").replace("\n", "⏎\n    ")
            what = f"Send this text{' and press Enter' if enter else ''} to {len(targets)} panes?\n    {shown}"
        items = [f"{p.target}  {p.title}".rstrip() for p in targets]

        def answered(yes: bool | None) -> None:
            if yes:
                self._submit(lambda: self._report(op.broadcast(targets, text=text, key=key, enter=enter), "Broadcast"))
            else:
                if text is not None and self.send_bar.display and not self.send_bar.text.text:
                    self.send_bar.text.load_text(text)  # give the words back for another try
                self.notify("Broadcast cancelled: nothing sent.", timeout=3)

        self.push_screen(ConfirmScreen("Broadcast", items, what), answered)

    # -- pass-through ------------------------------------------------------------------------------

    def action_pass_through(self) -> None:
        need = self._need()
        if need is None:
            return
        pane, _op = need
        self._pass_pane = pane
        self.pass_through.target = pane.target
        self.send_bar.display = False
        self._show_input_bar()
        self.pass_through.display = True
        self.mirror.add_class("passthrough")
        self.pass_through.refresh()
        self.screen.set_focus(self.pass_through)  # at once: the very next key is the pane's

    def on_pass_through_keys(self, message: PassThrough.Keys) -> None:
        self._queue_keys(list(message.keys))

    def on_pass_through_pasted(self, message: PassThrough.Pasted) -> None:
        pane, op = self._pass_pane, self.operator
        if pane is not None and op is not None:
            self._submit(lambda: self._quiet_report(op.send_text(pane, message.text, why="pass-through paste")))

    def _queue_keys(self, keys: list[tuple[bool, str]]) -> None:
        pane, op = self._pass_pane, self.operator
        if pane is None or op is None:
            return
        with self._pass_lock:
            first = not self._pass_pending
            self._pass_pending.extend(keys)
        if not first:
            return  # a flush is already queued; it will take these too

        def flush() -> None:
            with self._pass_lock:
                batch, self._pass_pending = self._pass_pending, []
            self._quiet_report(op.type_keys(pane, batch))

        self._submit(flush)

    def _quiet_report(self, result: ActionResult) -> None:
        """Pass-through speaks up only when a key did not arrive."""
        if not result.ok:
            self._report([result], "Pass-through")
            with contextlib.suppress(RuntimeError):
                self.call_from_thread(self._leave_pass_through)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """In pass-through, Ctrl+P belongs to the pane, not to the command palette (Ctrl+Q still quits)."""
        if action == "command_palette" and self.pass_through.has_focus:
            return False
        return super().check_action(action, parameters)

    def on_pass_through_leave(self, _message: PassThrough.Leave) -> None:
        self._leave_pass_through()

    def _leave_pass_through(self) -> None:
        if not self.pass_through.display:
            return
        self._pass_pane = None
        self.pass_through.display = False
        self._hide_input_bar()
        self.mirror.remove_class("passthrough")
        self.screen.set_focus(self.fleet_list)  # at once: the next key is the list's

    # -- polls -------------------------------------------------------------------------------------

    def action_force_poll(self) -> None:
        need = self._need()
        if need is not None:
            pane, op = need
            self._submit(lambda: self._report([op.force_poll(pane)], "Force poll"))

    def action_force_poll_all(self) -> None:
        op = self.operator
        if op is None:
            self.notify("Not connected to tmux.", severity="warning")
            return
        panes = list(self.panes)
        idle = {p for p, s in self.statuses.items() if s.state is AgentState.IDLE}
        self._submit(lambda: self._report(op.force_poll_all(panes, lambda p: p.pane_id in idle), "Poll idle agents"))

    # -- per-pane switches -------------------------------------------------------------------------

    def _sidecar_status(self, pane_id: PaneId) -> Any:
        runner = getattr(self, "sidecar", None)
        return runner.status(pane_id) if runner is not None else None

    def action_toggle_poll(self) -> None:
        need = self._need()
        if need is None:
            return
        pane, op = need
        status = self._sidecar_status(pane.pane_id)
        enabled = bool(status.poll_enabled) if status is not None else pane.pane_id not in self.operator_list.poll_off

        def job() -> None:
            result = op.set_poll_enabled(pane, not enabled)
            if result.ok:
                with contextlib.suppress(RuntimeError):
                    self.call_from_thread(self._switched, self.operator_list.poll_off, pane.pane_id, enabled)
            self._report([result], "Poll injection")

        self._submit(job)

    def action_toggle_plan(self) -> None:
        need = self._need()
        if need is None:
            return
        pane, op = need
        status = self._sidecar_status(pane.pane_id)
        auto = status.plan_policy != "off" if status is not None else pane.pane_id not in self.operator_list.plan_manual

        def job() -> None:
            result = op.set_plan_auto(pane, not auto)
            if result.ok:
                with contextlib.suppress(RuntimeError):
                    self.call_from_thread(self._switched, self.operator_list.plan_manual, pane.pane_id, auto)
            self._report([result], "Plan auto-select")

        self._submit(job)

    def _switched(self, off: set[PaneId], pane_id: PaneId, now_off: bool) -> None:
        if now_off:
            off.add(pane_id)
        else:
            off.discard(pane_id)
        self.operator_list.redraw()

    # -- needs you -----------------------------------------------------------------------------------

    def _needs_you_tick(self) -> None:
        states = {
            pane_id: status.state
            for pane_id, status in self.statuses.items()
            if status.state is not None and (pane := self.pane_by_id.get(pane_id)) is not None and pane.is_agent
        }
        manual = set(self.operator_list.plan_manual)
        if self.settings.plan_policy == "off":
            manual |= set(states)
        change = self.needs_you.sync(
            states,
            labels={p: self.pane_by_id[p].target for p in states},
            plan_waits=frozenset(manual),
            stuck=self._escalated(),
            since={
                pane_id: status.idle_since
                for pane_id, status in self.statuses.items()
                if pane_id in states and status.idle_since is not None
            },
        )
        if change.joined:
            self._announce([entry.label or entry.pane_id for entry in change.joined], change.joined[0].reason)
        self.needs_panel.show_entries(self.needs_you.entries(), self.clock(), self._label)

    def _escalated(self) -> dict[PaneId, str]:
        """Agents the sidecar's stuck watch gave up nudging (it takes the runner's lock briefly)."""
        runner = getattr(self, "sidecar", None)
        escalated = getattr(runner, "escalated", None)
        return dict(escalated()) if escalated is not None else {}

    def _label(self, pane_id: PaneId) -> str:
        pane = self.pane_by_id.get(pane_id)
        return pane.target if pane is not None else pane_id

    def _announce(self, names: list[str], reason: str) -> None:
        text = f"{', '.join(names)} needs you ({reason})" if len(names) == 1 else f"{', '.join(names)} need you"
        self.notify(text, title="Needs you", severity="warning", timeout=6)
        if self.settings.bell:
            self.bell()
        if self.settings.desktop_notify and shutil.which("notify-send"):
            self._submit(lambda: _desktop_notify("nbs-tui: needs you", text))

    def action_next_needs_you(self) -> None:
        current = self._last_needs if self._last_needs in self.needs_you else self.selected_id
        entry = self.needs_you.next_after(current)
        if entry is None:
            self.notify("Nobody is waiting on you.", timeout=3)
            return
        self._last_needs = entry.pane_id
        self.select_pane(entry.pane_id)
        if self.selected_id != entry.pane_id:  # filtered out of the list: select it anyway
            self._select(entry.pane_id)
        waited = int(entry.waited(self.clock()))
        self.notify(f"{self._label(entry.pane_id)}: {entry.reason} (waiting {waited}s) · g jumps in", timeout=4)

    def on_needs_you_panel_pane_chosen(self, message: NeedsYouPanel.PaneChosen) -> None:
        self._last_needs = message.pane_id
        self.select_pane(message.pane_id)
        self.screen.set_focus(self.fleet_list)  # at once: the next key is the list's

    # -- filter ----------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.filter_bar.open()

    def on_filter_bar_filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self.operator_list.set_filter(message.filter)
        if self.fleet_list.selected_pane_id is not None:
            self._select(self.fleet_list.selected_pane_id)

    def on_filter_bar_filter_done(self, _message: FilterBar.FilterDone) -> None:
        self.screen.set_focus(self.fleet_list)  # at once: the next key is the list's

    # -- action log --------------------------------------------------------------------------------

    def action_action_log(self) -> None:
        screen = ActionLogScreen(str(self.action_log.path), self.action_log.tail(500))
        self._log_screen = screen

        def closed(_result: None) -> None:
            self._log_screen = None

        self.push_screen(screen, closed)

    def on_action_recorded(self, message: ActionRecorded) -> None:
        if self._log_screen is not None and self._log_screen.is_attached:
            self._log_screen.add(message.record)

    # -- help and palette ----------------------------------------------------------------------------

    def key_rows(self) -> list[tuple[str, str, str]]:
        helps = {c.id: c.help for c in OPERATOR_COMMANDS}
        rows = [(keys, helps.get(ident, what), ident) for keys, what, ident in super().key_rows()]
        known = {ident for _, _, ident in rows}
        for command in OPERATOR_COMMANDS:  # hidden ones are not "active" in the footer sense
            if command.id not in known:
                rows.append((command.key_display or command.keys.replace(",", " / "), command.help, command.id))
        rows.append(("Ctrl+]", "Pass-through: leave (back to the dashboard's keys)", "passthrough.leave"))
        return rows

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for command in OPERATOR_COMMANDS:
            yield SystemCommand(command.palette or command.label, command.help, partial(self.run_action, command.action))


def _desktop_notify(title: str, text: str) -> None:
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["notify-send", title, text], check=False, timeout=5, capture_output=True)


def create_operator_app(*args: Any, **kwargs: Any) -> OperatorApp:
    """The dashboard with the operator's layer: what `nbs_tui.app.create_app` should return."""
    return OperatorApp(*args, **kwargs)


def run_operator_app(settings: Settings) -> int:
    """`nbs_tui.app.run_app` with the operator's layer (what the CLI runs)."""
    app = OperatorApp(settings)
    result = app.run()
    return int(result or 0) if app.return_code is None else app.return_code
