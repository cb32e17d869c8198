"""The operator's layer, without Textual: send, broadcast, poll, marks, switches, needs-you, jump.

`OperatorController` decides and does; the app asks for text, keys and confirmations and hands
the answers here. It talks to tmux only through `nbs_tui.actions.Operator` and
`nbs_tui.tmux.jump.Jumper`, and to the screen only through an `OperatorView`.

Threads: every action blocks on tmux, so actions run in order on one named thread
(``nbs-operator``, started by `start`, ended by `stop`); every failure there meets in one place
and is reported as a problem (``operator action``: the runtime's sink, `nbs_tui.core.problems`:
the log, the problems screen, a notification). A pane is chosen (a `PaneInfo` snapshot) on the UI thread when the operator acts;
the action thread checks it is still that pane before sending. The marks, per-pane switches and
needs-you queue are touched on the UI thread only.
"""

from __future__ import annotations

import logging
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from nbs_tui.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.actions import ActionResult, Operator, summarize
from nbs_tui.config import Settings
from nbs_tui.core.agent_spec import NewAgent
from nbs_tui.core.answer import AnswerCard, card_for
from nbs_tui.core.background import BackgroundSession
from nbs_tui.core.hosts import split_pane_id
from nbs_tui.core.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.needs_you import NeedsYouEntry, NeedsYouQueue
from nbs_tui.core.notify import Notification, NotifyDecider, parse_kinds
from nbs_tui.core.pane_state import PaneState
from nbs_tui.core.problems import ProblemSink
from nbs_tui.core.sidecar import SidecarStatus
from nbs_tui.runtime.contract import SidecarView
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.tmux.jump import Jumper, JumpResult

if TYPE_CHECKING:  # the lifecycle's modules are imported when first used
    from nbs_tui.core.restore import RestorePlan
    from nbs_tui.files.fleet_store import FleetStore
    from nbs_tui.runtime.host_agent import AgentHost
    from nbs_tui.runtime.restore_run import Gathered
    from nbs_tui.sidecar.lease import SidecarLease
    from nbs_tui.tmux.commands import TmuxServerCommands

log = logging.getLogger(__name__)


class OperatorView(Protocol):
    """What the controller needs from the screen."""

    def notify_operator(self, text: str, title: str, severity: str, timeout: float) -> None:
        """Show a notification (any thread)."""

    def on_ui(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the UI thread (called from the action thread; a gone UI drops it)."""

    def bell(self) -> None:
        """Ring the terminal bell (UI thread)."""


class _SidecarProxy:
    """The runtime's sidecar, reached at call time (it starts after the first seed)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def _runner(self) -> SidecarView:
        runner = self._runtime.sidecar_view
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
        runner = self._runtime.sidecar_view
        if runner is not None:
            runner.note_operator_input(pane_id)


def report_text(results: Sequence[ActionResult]) -> tuple[str, str]:
    """(text, severity) of one notification about what an action did."""
    if not results:
        return "nothing to do", "information"
    if len(results) == 1:
        result = results[0]
        severity = "information" if result.ok else ("warning" if result.outcome is Outcome.SKIPPED else "error")
        return result.describe(), severity
    return summarize(results), "information" if all(r.ok for r in results) else "warning"


class OperatorController:
    """The operator's actions on the panes on show (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        state: PaneState,
        runtime: Runtime,
        view: OperatorView,
        *,
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.state = state
        self.runtime = runtime
        self.view = view
        self.clock = clock
        self.action_log = ActionLog(settings.action_log, problem=runtime.problem)
        hosts = settings.watched_hosts()
        self.jumpers = {h.name: Jumper(h.server if len(hosts) > 1 else settings.server, host=h) for h in hosts}
        """One per watched host: a pane is jumped to on its own host (`jumper_for`)."""
        self.jumper = self.jumpers[hosts[0].name] if len(hosts) == 1 else Jumper(settings.server)
        self.needs_you = NeedsYouQueue(idle_threshold=settings.needs_you_idle, clock=clock)
        self.notifications = NotifyDecider(muted=parse_kinds(settings.notify_mute), repeat=settings.notify_repeat)
        """What becomes a notification to the operator's terminal and ``notify_command``."""
        self.marked: set[PaneId] = set()
        """Panes marked for broadcast."""
        self.poll_off: set[PaneId] = set()
        """Panes whose poll injection the operator turned off."""
        self.plan_manual: set[PaneId] = set()
        """Panes whose plan menus wait for a person."""
        self._operator: Operator | None = None
        self._last_needs: PaneId | None = None
        self.rang_bell = False
        """Whether the last `needs_you_tick` rang the bell (the notifications then ring none)."""
        self._pass_pending: list[tuple[bool, str]] = []
        self._pass_lock = threading.Lock()
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    # -- lifecycle and the action thread -------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run_jobs, name="nbs-operator", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join(timeout)

    def subscribe_log(self, listener: Callable[[ActionRecord], None]) -> Callable[[], None]:
        """Call ``listener`` (on the writing thread) for every record; returns the unsubscriber."""
        return self.action_log.subscribe(listener)

    def _run_jobs(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except Exception as error:  # every failure meets here, and goes the problems' one way
                log.exception("operator action failed")
                self.runtime.problem("operator action", f"{type(error).__name__}: {error}")

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on the action thread, after those already queued."""
        self._jobs.put(job)

    def report(self, results: Sequence[ActionResult], title: str) -> None:
        text, severity = report_text(results)
        self.view.notify_operator(text, title, severity, 6)

    @property
    def operator(self) -> Operator | None:
        """The operator service, once the fleet exists."""
        fleet = self.runtime.fleet
        if self._operator is None and fleet is not None:
            proxy = _SidecarProxy(self.runtime)
            # the fleet's own server commands (here or on its host), or each pane's host's
            tmux = self.runtime.hosts.tmux if self.runtime.hosts is not None else None
            self._operator = Operator(
                fleet, self.action_log, server=self.settings.server, tmux=tmux, poller=proxy, controls=proxy
            )
        return self._operator

    def ready(self, pane: PaneInfo | None) -> Operator | None:
        """The operator service if ``pane`` can be acted on; otherwise says why and returns None."""
        if pane is None:
            self.view.notify_operator("No pane selected.", "", "warning", 5)
            return None
        op = self.operator
        if op is None:
            self.view.notify_operator("Not connected to tmux.", "", "warning", 5)
        return op

    # -- a new agent (the form) ------------------------------------------------------------

    def start_agent(self, spec: NewAgent) -> None:
        """Start ``spec`` as ``nbs-tui new`` does, on its own thread (``nbs-new-agent``: a start
        takes up to a minute and must not hold up the other actions); say how it went."""
        threading.Thread(target=self._start_agent, args=(spec,), name="nbs-new-agent", daemon=True).start()

    def start_place(self) -> str:
        """Where the form starts an agent, for its title (`_start_commands`; never blocks)."""
        from nbs_tui.core.agent_spec import SpecError

        try:
            return self._start_commands(None).describe()
        except SpecError:
            return self.settings.server.describe()

    def start_hosts(self) -> tuple[list[str], str | None]:
        """The hosts the form may start on (the dashboard's watched hosts) and the one it picks
        when none is named (`_start_commands`); no hosts for a dashboard of one server."""
        from nbs_tui.core.hosts import LOCAL

        hosts = self.runtime.hosts
        if hosts is None:
            return [], None
        names = list(hosts.tmux.by_host)
        return names, (LOCAL if LOCAL in names else next(iter(names), None))

    def _start_commands(self, host: str | None) -> TmuxServerCommands:
        """Where the form starts an agent: the host it names, else the dashboard's one host (this
        machine or another, through its fleet's command path), else this machine when watched,
        else the first watched host."""
        from nbs_tui.core.agent_spec import SpecError
        from nbs_tui.tmux.commands import TmuxServerCommands

        hosts = self.runtime.hosts
        if hosts is not None:
            by_host = hosts.tmux.by_host
            name = host or self.start_hosts()[1] or ""
            if name not in by_host:
                raise SpecError([f"--host {name}: not a watched host of this dashboard"])
            return by_host[name]
        fleet = self.runtime.fleet
        if fleet is not None and fleet.commands is not None:
            return fleet.commands
        return TmuxServerCommands.for_server(self.settings.server)

    def _start_agent(self, spec: NewAgent) -> None:
        from nbs_tui.core.agent_spec import SpecError
        from nbs_tui.files.agent_input import prepare_local
        from nbs_tui.runtime.agent_start import AgentStarter, StartStopped
        from nbs_tui.runtime.host_agent import SshAgentHost
        from nbs_tui.runtime.remote_agent import prepare_remote
        from nbs_tui.tmux.errors import TmuxError
        from nbs_tui.tmux.ssh import SshTmuxRunner

        title = f"new agent {spec.name or spec.directory}"
        target, pane_id, ok, reason = "", "", False, ""
        try:
            commands = self._start_commands(spec.host)
            runner = commands.runner
            if isinstance(runner, SshTmuxRunner):  # another host: checked there, over its ssh master
                remote = prepare_remote(spec, runner, self.settings.claude_command)
                prepared = remote.prepared
                starter = AgentStarter(
                    commands, self.settings.claude_command, flags=remote.flags, home=remote.home, host=SshAgentHost(runner)
                )
            else:
                prepared = prepare_local(spec, claude_command=self.settings.claude_command)
                starter = AgentStarter(commands, self.settings.claude_command, claude_home=self.settings.claude_home)
            started = starter.start(prepared)
        except SpecError as error:
            reason = "; ".join(error.problems)
            self.view.notify_operator("\n".join(error.problems), title, "error", 10)
        except StartStopped as stop:
            reason = stop.line
            if stop.started is not None:
                target, pane_id = stop.started.target, stop.started.pane_id
            self.view.notify_operator(f"{target}: {stop.line}", title, "warning", 10)
        except TmuxError as error:
            reason = str(error)
            self.runtime.problem("new agent", f"{title}: {error}")
        else:
            ok, target, pane_id = True, started.target, started.pane_id
            typed = ", prompt submitted" if started.prompt_submitted else ""
            self.view.notify_operator(f"{started.name} started in {target}{typed}", title, "information", 6)
        self.action_log.append(
            ActionRecord(
                self.clock(), "new", pane_id, target, spec.directory, "operator (new agent form)",
                Outcome.SENT if ok else Outcome.FAILED, reason,
            )
        )  # fmt: skip

    def open_background(self, session: BackgroundSession, opened: Callable[[str, PaneId], None]) -> None:
        """Open one of Claude Code's background sessions in a new tmux window (``claude attach
        ID``) on its own thread (``nbs-open-background``); say how it went, log it, and tell
        ``opened(id, pane id)`` on the UI thread. Its pane is then watched as any other."""
        threading.Thread(
            target=self._open_background, args=(session, opened), name="nbs-open-background", daemon=True
        ).start()

    def _open_background(self, session: BackgroundSession, opened: Callable[[str, PaneId], None]) -> None:
        from nbs_tui.core.agent_spec import SpecError
        from nbs_tui.runtime.agent_start import AgentStarter
        from nbs_tui.tmux.commands import TmuxServerCommands
        from nbs_tui.tmux.errors import TmuxError

        fleet = self.runtime.fleet
        commands = fleet.commands if fleet is not None and self.runtime.hosts is None else None
        if commands is None or commands.runner.remote:
            commands = TmuxServerCommands.for_server(self.settings.server)
        title = f"open background session {session.label}"
        target, pane_id, ok, reason = "", "", False, ""
        try:
            started = AgentStarter(commands, self.settings.claude_command).open_background(session)
        except SpecError as error:
            reason = "; ".join(error.problems)
            self.view.notify_operator(reason, title, "error", 10)
        except TmuxError as error:
            reason = str(error)
            self.runtime.problem("background sessions", f"{title}: {error}")
        else:
            ok, target, pane_id = True, started.target, started.pane_id
            self.view.notify_operator(f"{session.label} opened in {target} (claude attach {session.id})", title, "information", 6)
            self.view.on_ui(lambda: opened(session.id, started.pane_id))
        background = self.runtime.background
        if background is not None:
            background.poll_now()
        self.action_log.append(
            ActionRecord(
                self.clock(), "attach", pane_id, target, f"claude attach {session.id}", "operator (background session)",
                Outcome.SENT if ok else Outcome.FAILED, reason,
            )
        )  # fmt: skip

    def stop_agent(self, pane: PaneInfo, *, restart: bool) -> None:
        """Stop (or restart in place) the agent in ``pane`` on its own thread (``nbs-stop-agent``:
        it may wait seconds for each step); say how it went and log it."""
        threading.Thread(
            target=self._stop_agent, args=(pane, restart), name="nbs-stop-agent", daemon=True
        ).start()

    def _host_of(self, pane_id: PaneId) -> tuple[TmuxServerCommands, PaneId, AgentHost, SidecarLease | None] | None:
        """The command path of the pane's tmux server (this machine's, or a host's over its ssh
        master), the pane's id there, where its processes are read, and that server's lease (whose
        ``by`` names this process to the other views); None: not connected."""
        from nbs_tui.runtime.host_agent import LocalAgentHost, SshAgentHost
        from nbs_tui.tmux.ssh import SshTmuxRunner

        host, raw = split_pane_id(pane_id)
        hosts = self.runtime.hosts
        if hosts is not None:
            commands = hosts.tmux.by_host.get(host)
            entry = hosts.runtimes.get(host)
            lease = entry[1].lease if entry is not None else None
        else:
            fleet = self.runtime.fleet
            commands = fleet.commands if fleet is not None else None
            lease = self.runtime.lease
        if commands is None:
            return None
        runner = commands.runner
        agent_host: AgentHost = SshAgentHost(runner) if isinstance(runner, SshTmuxRunner) else LocalAgentHost()
        return commands, raw, agent_host, lease

    def _stop_agent(self, pane: PaneInfo, restart: bool) -> None:
        from nbs_tui.runtime.agent_start import AgentStarter
        from nbs_tui.runtime.agent_stop import AgentControl, StopError, tell_views
        from nbs_tui.tmux.errors import TmuxError

        action = "restart" if restart else "stop"
        title = f"{action} {pane.target}"
        where = self._host_of(pane.pane_id)
        if where is None:
            self.view.notify_operator(f"not connected to the tmux server of {pane.target}", title, "warning", 6)
            return
        commands, pane_id, agent_host, lease = where
        control = AgentControl(commands, AgentStarter(commands, self.settings.claude_command, host=agent_host))
        sent, ok, reason = "", False, ""
        try:
            if restart:
                restarted = control.restart(pane_id)
                sent, ok, reason = f"claude --resume {restarted.session_id}", not restarted.stopped, restarted.stopped
                said = f"restarted in conversation {restarted.session_id}" + (f", but: {restarted.stopped}" if restarted.stopped else "")
            else:
                stopped = control.stop(pane_id)
                sent, ok, said = stopped.how, True, f"stopped with {stopped.how}"
        except (StopError, TmuxError) as error:
            reason = said = str(error)
        self.view.notify_operator(said, title, "information" if ok else "warning", 8)
        self.action_log.append(
            ActionRecord(
                self.clock(), action, pane_id, pane.target, sent, "operator (confirmed)",
                Outcome.SENT if ok else Outcome.FAILED, reason,
            )
        )  # fmt: skip
        why = tell_views(commands, action, pane_id, pane.target, sent, ok, reason, by=lease.by if lease is not None else None)
        if why:
            self.runtime.problem("operator action", f"the other views were not told of this {action}: {why}")

    # -- the remembered fleet (restore) -------------------------------------------------------

    def check_remembered(self, offer: Callable[[list[str]], None], nothing: Callable[[], None] | None = None) -> None:
        """On its own thread: when this server's remembered fleet has agents that are gone (a
        reboot, a lost server), call ``offer`` (on the UI thread) with the restore plan's lines;
        else ``nothing``."""
        threading.Thread(target=self._check_remembered, args=(offer, nothing), name="nbs-remembered", daemon=True).start()

    def _restore_parts(self) -> tuple[FleetStore, Gathered, RestorePlan] | None:
        """This server's fleet memory, what a restore needs, and its plan; None: nothing remembered
        (or not one local server)."""
        from nbs_tui.core.hosts import LOCAL
        from nbs_tui.files.fleet_store import FleetStore
        from nbs_tui.runtime.restore_run import gather, plan_for
        from nbs_tui.tmux.commands import TmuxServerCommands

        hosts = self.settings.watched_hosts()
        if len(hosts) != 1 or not hosts[0].is_local or not self.settings.remember_fleet:
            return None
        store = FleetStore.for_server(LOCAL, self.settings.server, report=lambda m: self.runtime.problem("fleet memory", m))
        if not store.path.exists():
            return None
        commands = TmuxServerCommands.for_server(self.settings.server)
        gathered = gather(commands, store, self.settings.claude_command)
        plan = plan_for(gathered, self.settings.server, self.settings.claude_command, self.settings.restore_stagger, ())
        return store, gathered, plan

    def _check_remembered(self, offer: Callable[[list[str]], None], nothing: Callable[[], None] | None) -> None:
        from nbs_tui.core.restore import plan_lines

        try:
            parts = self._restore_parts()
        except Exception as error:  # a check that could not be made offers nothing; say why
            self.runtime.problem("fleet memory", f"the remembered fleet could not be checked: {error}")
            return
        plan = parts[2] if parts is not None else None
        if plan is not None and plan.agents:
            lines = plan_lines(plan)
            self.view.on_ui(lambda: offer(lines))
        elif nothing is not None:
            self.view.on_ui(nothing)

    def restore_remembered(self) -> None:
        """Restore this server's remembered fleet (the operator confirmed), on its own thread."""
        threading.Thread(target=self._restore_remembered, name="nbs-restore", daemon=True).start()

    def _restore_remembered(self) -> None:
        from nbs_tui.runtime.agent_start import AgentStarter
        from nbs_tui.runtime.restore_run import RestoreRun, after_restore, live_server
        from nbs_tui.tmux.commands import TmuxServerCommands

        title = "restore"
        try:
            parts = self._restore_parts()
            if parts is None:
                self.view.notify_operator("Nothing remembered to restore.", title, "information", 5)
                return
            store, gathered, plan = parts
            commands = TmuxServerCommands.for_server(self.settings.server)
            starter = AgentStarter(commands, self.settings.claude_command, flags=gathered.flags)
            report = RestoreRun(commands, starter).execute(plan)
            instance, _live = live_server(commands)
            after_restore(store, gathered.memory, instance)
        except Exception as error:
            self.runtime.problem("restore", f"the remembered fleet was not restored: {error}")
            return
        ok = not report.not_restored and not any(a.stopped for a in report.restored)
        self.view.notify_operator("\n".join(report.lines()) or "nothing to restore", title, "information" if ok else "warning", 12)
        self.action_log.append(
            ActionRecord(
                self.clock(), "restore", "", self.settings.server.describe(),
                f"{len(report.restored)} agent{'s' if len(report.restored) != 1 else ''}", "operator (confirmed)",
                Outcome.SENT if ok else Outcome.FAILED, "; ".join(f"{n}: {r}" for n, _w, r in report.not_restored),
            )
        )  # fmt: skip

    # -- jump ----------------------------------------------------------------------------------

    def jump(self, pane: PaneInfo, attach: Callable[[PaneInfo], None]) -> None:
        """Switch the operator's tmux client to ``pane``; outside tmux, ``attach`` (UI thread)."""
        op = self.ready(pane)
        if op is None:
            return
        jumper, raw = self.jumper_for(pane.pane_id)
        plan = jumper.plan(raw)

        def job() -> None:
            gone = op.check_pane(pane)
            if gone:
                op.record_jump(pane, plan.mode, Outcome.SKIPPED, gone)
                self.report([ActionResult(pane.pane_id, pane.target, "jump", plan.mode, Outcome.SKIPPED, gone)], "Jump")
                return
            if plan.mode == "switch":
                result = jumper.switch(raw)
                op.record_jump(pane, "switch-client", Outcome.SENT if result.ok else Outcome.FAILED, result.message)
                self.view.notify_operator(result.message, "Jump", "information" if result.ok else "error", 5)
            else:
                self.view.on_ui(lambda: attach(pane))

        self.submit(job)

    def jumper_for(self, pane_id: PaneId) -> tuple[Jumper, PaneId]:
        """The jumper of the pane's host and the pane's id on that host's server."""
        if len(self.jumpers) < 2:
            return self.jumper, pane_id
        host, raw = split_pane_id(pane_id)
        return self.jumpers.get(host, self.jumper), raw

    def attach_argv(self, pane: PaneInfo) -> list[str]:
        jumper, raw = self.jumper_for(pane.pane_id)
        return list(jumper.attach_plan(raw).argv)

    def attach(self, pane: PaneInfo) -> JumpResult:
        """Attach to ``pane`` in this terminal until the operator detaches (the UI is suspended)."""
        jumper, raw = self.jumper_for(pane.pane_id)
        return jumper.attach(raw)

    def attached(self, pane: PaneInfo, result: JumpResult | None, why_not: str = "") -> None:
        """Record an attach: its result, or why it could not happen."""
        op = self.operator
        if op is None:
            return
        if result is None:
            op.record_jump(pane, "attach", Outcome.SKIPPED, why_not)
        else:
            op.record_jump(pane, "attach", Outcome.SENT if result.ok else Outcome.FAILED, result.message)

    # -- send text and keys ----------------------------------------------------------------------

    def send_text(self, pane: PaneInfo, text: str, *, enter: bool) -> None:
        op = self.ready(pane)
        if op is not None:
            self.submit(lambda: self.report([op.send_text(pane, text, enter=enter)], "Send"))

    def send_key(self, pane: PaneInfo, key: str) -> None:
        op = self.ready(pane)
        if op is not None:
            self.submit(lambda: self.report([op.send_key(pane, key)], "Key"))

    # -- broadcast -----------------------------------------------------------------------------

    def toggle_mark(self, pane: PaneInfo) -> int:
        """Mark or unmark ``pane``; returns how many are marked now."""
        if pane.pane_id in self.marked:
            self.marked.discard(pane.pane_id)
        else:
            self.marked.add(pane.pane_id)
        return len(self.marked)

    def clear_marks(self) -> None:
        self.marked.clear()

    def marked_panes(self) -> list[PaneInfo]:
        return [p for p in self.state.panes if p.pane_id in self.marked]

    def broadcast(self, targets: Sequence[PaneInfo], *, text: str | None = None, key: str | None = None, enter: bool = False) -> None:
        op = self.operator
        if op is not None:
            chosen = list(targets)
            self.submit(lambda: self.report(op.broadcast(chosen, text=text, key=key, enter=enter), "Broadcast"))

    # -- pass-through ------------------------------------------------------------------------------

    def type_keys(self, pane: PaneInfo, keys: Sequence[tuple[bool, str]], failed: Callable[[], None]) -> None:
        """Type ``keys`` into ``pane``, batched: keys that come while a batch is queued join it.
        ``failed`` runs on the UI thread when a key did not arrive."""
        op = self.operator
        if op is None:
            return
        with self._pass_lock:
            first = not self._pass_pending
            self._pass_pending.extend(keys)
        if not first:
            return  # a flush is already queued; it will take these too

        def flush() -> None:
            with self._pass_lock:
                batch, self._pass_pending = self._pass_pending, []
            self._quiet_report(op.type_keys(pane, batch), failed)

        self.submit(flush)

    def paste(self, pane: PaneInfo, text: str, failed: Callable[[], None]) -> None:
        op = self.operator
        if op is not None:
            self.submit(lambda: self._quiet_report(op.send_text(pane, text, why="pass-through paste"), failed))

    def _quiet_report(self, result: ActionResult, failed: Callable[[], None]) -> None:
        """Pass-through speaks up only when a key did not arrive."""
        if not result.ok:
            self.report([result], "Pass-through")
            self.view.on_ui(failed)

    # -- polls and per-pane switches ---------------------------------------------------------------

    def force_poll(self, pane: PaneInfo) -> None:
        op = self.ready(pane)
        if op is not None:
            self.submit(lambda: self.report([op.force_poll(pane)], "Force poll"))

    def force_poll_idle(self) -> None:
        op = self.operator
        if op is None:
            self.view.notify_operator("Not connected to tmux.", "", "warning", 5)
            return
        panes = list(self.state.panes)
        idle = {p for p, s in self.state.statuses.items() if s.state is AgentState.IDLE}
        self.submit(lambda: self.report(op.force_poll_all(panes, lambda p: p.pane_id in idle), "Poll idle agents"))

    def toggle_poll(self, pane: PaneInfo, switched: Callable[[], None]) -> None:
        """Turn poll injection the other way for ``pane``; ``switched`` runs on the UI thread after."""
        op = self.ready(pane)
        if op is None:
            return
        status = self._sidecar_status(pane.pane_id)
        enabled = bool(status.poll_enabled) if status is not None else pane.pane_id not in self.poll_off

        def job() -> None:
            result = op.set_poll_enabled(pane, not enabled)
            if result.ok:
                self.view.on_ui(lambda: self._switched(self.poll_off, pane.pane_id, enabled, switched))
            self.report([result], "Poll injection")

        self.submit(job)

    def toggle_plan(self, pane: PaneInfo, switched: Callable[[], None]) -> None:
        """Turn plan auto-select the other way for ``pane``; ``switched`` runs on the UI thread after."""
        op = self.ready(pane)
        if op is None:
            return
        status = self._sidecar_status(pane.pane_id)
        auto = status.plan_policy != "off" if status is not None else pane.pane_id not in self.plan_manual

        def job() -> None:
            result = op.set_plan_auto(pane, not auto)
            if result.ok:
                self.view.on_ui(lambda: self._switched(self.plan_manual, pane.pane_id, auto, switched))
            self.report([result], "Plan auto-select")

        self.submit(job)

    @staticmethod
    def _switched(off: set[PaneId], pane_id: PaneId, now_off: bool, switched: Callable[[], None]) -> None:
        if now_off:
            off.add(pane_id)
        else:
            off.discard(pane_id)
        switched()

    def _sidecar_status(self, pane_id: PaneId) -> SidecarStatus | None:
        runner = self.runtime.sidecar_view
        return runner.status(pane_id) if runner is not None else None

    # -- needs you -------------------------------------------------------------------------------

    def needs_you_tick(self) -> list[NeedsYouEntry]:
        """Bring the needs-you queue up to date (UI thread); announce newcomers; return the queue."""
        self.rang_bell = False
        state = self.state
        states = state.agent_states()
        manual = set(self.plan_manual)
        if self.settings.plan_policy == "off":
            manual |= set(states)
        change = self.needs_you.sync(
            states,
            labels={p: state.pane_by_id[p].target for p in states},
            plan_waits=frozenset(manual),
            stuck={**self._limit_menus(states), **self._escalated()},
            since={
                pane_id: status.idle_since
                for pane_id, status in state.statuses.items()
                if pane_id in states and status.idle_since is not None
            },
        )
        if change.joined:
            self._announce([entry.label or entry.pane_id for entry in change.joined], change.joined[0].reason)
        return list(self.needs_you.entries())

    def notify_tick(self, looking_at: PaneId | None) -> list[Notification]:
        """The notifications due now (UI thread), none for ``looking_at``, the pane on show."""
        state = self.state
        states = state.agent_states()
        manual = set(self.plan_manual) | (set(states) if self.settings.plan_policy == "off" else set())
        return self.notifications.sync(
            {pane_id: str(agent_state.value) for pane_id, agent_state in states.items()},
            self.clock(),
            reasons={pane_id: status.reason for pane_id, status in state.statuses.items() if pane_id in states},
            plan_waits=frozenset(manual),
            stuck=self._escalated(),
            looking_at=looking_at,
        )

    def _limit_menus(self, states: dict[PaneId, AgentState]) -> dict[PaneId, str]:
        """Limited agents whose usage-limit menu is open (2.1.1xx): they wait for a choice (the
        queue's ``stuck`` reasons carry them in, as they do escalated agents)."""
        menus: dict[PaneId, str] = {}
        for pane_id, agent_state in states.items():
            if agent_state is AgentState.LIMITED:
                status = self._sidecar_status(pane_id)
                if status is not None and status.detection.options:
                    menus[pane_id] = "usage-limit menu"
        return menus

    def _escalated(self) -> dict[PaneId, str]:
        """Agents the sidecar's stuck watch gave up nudging."""
        runner = self.runtime.sidecar_view
        return dict(runner.escalated()) if runner is not None else {}

    def label(self, pane_id: PaneId) -> str:
        pane = self.state.pane_by_id.get(pane_id)
        return pane.target if pane is not None else pane_id

    def _announce(self, names: list[str], reason: str) -> None:
        text = f"{', '.join(names)} needs you ({reason})" if len(names) == 1 else f"{', '.join(names)} need you"
        self.view.notify_operator(text, "Needs you", "warning", 6)
        if self.settings.bell:
            self.view.bell()
            self.rang_bell = True
        if self.settings.desktop_notify and shutil.which("notify-send"):
            self.submit(lambda: _desktop_notify("nbs-tui: needs you", text, self.runtime.problem))

    def next_needs_you(self, selected: PaneId | None) -> NeedsYouEntry | None:
        """The next agent waiting on the operator after the last one shown (None: nobody)."""
        current = self._last_needs if self._last_needs in self.needs_you else selected
        entry = self.needs_you.next_after(current)
        if entry is None:
            self.view.notify_operator("Nobody is waiting on you.", "", "information", 3)
            return None
        self._last_needs = entry.pane_id
        waited = int(entry.waited(self.clock()))
        self.view.notify_operator(f"{self.label(entry.pane_id)}: {entry.reason} (waiting {waited}s) · g jumps in", "", "information", 4)
        return entry

    def needs_chosen(self, pane_id: PaneId) -> None:
        """The operator picked ``pane_id`` in the needs-you panel: `next_needs_you` goes on from it."""
        self._last_needs = pane_id

    # -- answering from the needs-you queue ----------------------------------------------------

    def answer_card(self, pane_id: PaneId) -> AnswerCard | None:
        """The menu the pane waits on, from its last detection (None: no menu to answer)."""
        pane = self.state.pane_by_id.get(pane_id)
        status = self._sidecar_status(pane_id)
        if pane is None or status is None:
            return None
        return card_for(pane_id, pane.pid, status.detection)

    def next_answer_card(self, after: PaneId | None = None, skip: frozenset[PaneId] = frozenset()) -> AnswerCard | None:
        """The first waiting agent with a menu to answer, in the queue's order after ``after``
        (wrapping; ``after`` itself last), leaving out ``skip``."""
        line = [entry.pane_id for entry in self.needs_you.entries()]
        if after in line:
            at = line.index(after)
            line = line[at + 1 :] + line[: at + 1]
        for pane_id in line:
            if pane_id in skip:
                continue
            card = self.answer_card(pane_id)
            if card is not None:
                return card
        return None

    def answer(self, card: AnswerCard, key: str, done: Callable[[ActionResult], None]) -> None:
        """Answer ``card`` with ``key`` on the action thread, after a live re-check of the pane
        (`nbs_tui.actions.Operator.answer`); ``done`` gets the result on the UI thread."""
        pane = self.state.pane_by_id.get(card.pane_id)
        op = self.ready(pane)
        if op is None or pane is None:
            return

        def job() -> None:
            result = op.answer(pane, card, key)
            self.report([result], "Answer")
            self.view.on_ui(lambda: done(result))

        self.submit(job)


def _desktop_notify(title: str, text: str, problem: ProblemSink) -> None:
    """``notify-send``; a failure (no desktop session to send to, say) is a ``notify`` problem."""
    try:
        done = subprocess.run(["notify-send", title, text], check=False, timeout=5, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        problem("notify", "notify-send still running after 5 s; killed")
        return
    except OSError as error:
        problem("notify", f"notify-send: {error.strerror or error}")
        return
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        problem("notify", f"notify-send exited {done.returncode}" + (f": {said[-1]}" if said else ""))
