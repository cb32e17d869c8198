"""The operator's side of the fleet's lifecycle, without Textual: start an agent (the "new agent"
form), stop or restart one, open one of Claude Code's background sessions in tmux, and check and
restore this server's remembered fleet (docs/lifecycle.md).

Owns: `LifecycleController`, reached as the operator controller's ``lifecycle``
(`nbs_tui.operator.operator_controller.OperatorController` builds it and shares with it the action log, the
problem sink and the view). The dashboard's side, the form and the confirmations on the UI
thread, is `nbs_tui.dashboard.lifecycle`; ``nbs-tui new / restore / stop / restart`` reach the
same runtime parts from the command line (`nbs_tui.lifecycle_cli`).

May import: the pure core, config, the action log, the ports (`nbs_tui.tmux`, `nbs_tui.files`)
and the runtime room's lifecycle parts (`agent_start`, `agent_stop`, `restore_run`,
`remote_agent`, `host_agent`), those only inside the actions, when first used (they are off the
first frame's path). Never the UI (Textual, widgets, the dashboard, the app: import-linter
contract in pyproject.toml), nor the controller that builds it (tests/unit/test_import_graph.py).

Threads: each action runs on its own named thread (``nbs-new-agent``, ``nbs-open-background``,
``nbs-stop-agent``, ``nbs-remembered``, ``nbs-restore``), not on the controller's ``nbs-operator``
thread: a start or a restore can take a minute and must not hold up sends, keys and polls.
Failures are said as the controller says them: what the operator asked for and could not be done
is a notification and a failed line in the action log; a backend's failure goes to the runtime's
problem sink (`nbs_tui.core.fleet.problems`: the log, the problems screen, ``--headless``'s ``error``
lines) as ``new agent``, ``background sessions``, ``operator action``, ``fleet memory`` or
``restore``; so does anything an action did not expect (`_on_thread`), instead of ending its
thread unsaid.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import NewAgent
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import split_pane_id
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.runtime.runtime import Runtime

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the lifecycle's modules are imported when first used
    from nbs_tui.core.fleet.restore import RestorePlan
    from nbs_tui.files.fleet_store import FleetStore
    from nbs_tui.runtime.host_agent import AgentHost
    from nbs_tui.runtime.restore_run import Gathered
    from nbs_tui.sidecar.lease import SidecarLease
    from nbs_tui.tmux.commands import TmuxServerCommands


class LifecycleView(Protocol):
    """What the lifecycle needs from the screen (the controller's `OperatorView` has it)."""

    def notify_operator(self, text: str, title: str, severity: str, timeout: float) -> None:
        """Show a notification (any thread)."""

    def on_ui(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the UI thread (called from an action's thread; a gone UI drops it)."""


class LifecycleController:
    """Start, stop, restart, open and restore, each off the UI thread (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        runtime: Runtime,
        view: LifecycleView,
        action_log: ActionLog,
        *,
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.runtime = runtime
        self.view = view
        self.action_log = action_log
        self.clock = clock

    def _on_thread(self, name: str, kind: str, action: Callable[..., None], *args: object) -> None:
        """Run ``action(*args)`` on a thread of its own named ``name``; an exception it did not
        expect is a problem of ``kind``, as the controller's action thread reports one."""

        def run() -> None:
            try:
                action(*args)
            except Exception as error:
                log.exception("%s failed", name)
                self.runtime.problem(kind, f"{type(error).__name__}: {error}")

        threading.Thread(target=run, name=name, daemon=True).start()

    # -- a new agent (the form) ------------------------------------------------------------

    def start_agent(self, spec: NewAgent) -> None:
        """Start ``spec`` as ``nbs-tui new`` does, on its own thread (``nbs-new-agent``: a start
        takes up to a minute and must not hold up the other actions); say how it went."""
        self._on_thread("nbs-new-agent", "new agent", self._start_agent, spec)

    def start_place(self) -> str:
        """Where the form starts an agent, for its title (`_start_commands`; never blocks)."""
        from nbs_tui.core.fleet.agent_spec import SpecError

        try:
            return self._start_commands(None).describe()
        except SpecError:
            return self.settings.server.describe()

    def start_hosts(self) -> tuple[list[str], str | None]:
        """The hosts the form may start on (the dashboard's watched hosts) and the one it picks
        when none is named (`_start_commands`); no hosts for a dashboard of one server."""
        from nbs_tui.core.fleet.host_spec import LOCAL

        hosts = self.runtime.hosts
        if hosts is None:
            return [], None
        names = list(hosts.tmux.by_host)
        return names, (LOCAL if LOCAL in names else next(iter(names), None))

    def _start_commands(self, host: str | None) -> TmuxServerCommands:
        """Where the form starts an agent: the host it names, else the dashboard's one host (this
        machine or another, through its fleet's command path), else this machine when watched,
        else the first watched host."""
        from nbs_tui.core.fleet.agent_spec import SpecError
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
        from nbs_tui.core.fleet.agent_spec import SpecError
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

    # -- Claude Code's background sessions ------------------------------------------------

    def open_background(self, session: BackgroundSession, opened: Callable[[str, PaneId], None]) -> None:
        """Open one of Claude Code's background sessions in a new tmux window (``claude attach
        ID``) on its own thread (``nbs-open-background``); say how it went, log it, and tell
        ``opened(id, pane id)`` on the UI thread. Its pane is then watched as any other."""
        self._on_thread("nbs-open-background", "background sessions", self._open_background, session, opened)

    def _open_background(self, session: BackgroundSession, opened: Callable[[str, PaneId], None]) -> None:
        from nbs_tui.core.fleet.agent_spec import SpecError
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

    # -- stop and restart ------------------------------------------------------------------

    def stop_agent(self, pane: PaneInfo, *, restart: bool) -> None:
        """Stop (or restart in place) the agent in ``pane`` on its own thread (``nbs-stop-agent``:
        it may wait seconds for each step); say how it went and log it."""
        self._on_thread("nbs-stop-agent", "operator action", self._stop_agent, pane, restart)

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
        self._on_thread("nbs-remembered", "fleet memory", self._check_remembered, offer, nothing)

    def _restore_parts(self) -> tuple[FleetStore, Gathered, RestorePlan] | None:
        """This server's fleet memory, what a restore needs, and its plan; None: nothing remembered
        (or not one local server)."""
        from nbs_tui.core.fleet.host_spec import LOCAL
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
        from nbs_tui.core.fleet.restore import plan_lines

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
        self._on_thread("nbs-restore", "restore", self._restore_remembered)

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

