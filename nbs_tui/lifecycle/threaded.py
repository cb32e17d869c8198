"""The dashboard's lifecycle, without Textual: start an agent (the "new agent" form), stop or
restart one, open one of Claude Code's background sessions in tmux, and check and restore this
server's remembered fleet (docs/lifecycle.md), each through the `Lifecycle` of the host it acts
on (`nbs_tui.lifecycle.operations`), as ``nbs-tui new / restore / stop / restart`` do.

Owns: `LifecycleController`, reached as the operator controller's ``lifecycle``
(`nbs_tui.operator.operator_controller.OperatorController` builds it and shares with it the action log, the
problem sink and the view). The dashboard's side, the form and the confirmations on the UI
thread, is `nbs_tui.dashboard.lifecycle`. One `Lifecycle` per watched host, built on the host's
fleet command path when first used (`_lifecycle`); a restore and a background session act on
this machine's server of the settings, on a command path of their own (`_here`).

May import: the pure core, config, the action log and the lifecycle room, whose modules are
imported inside the actions, when first used (they are off the first frame's path). The runtime
is reached through `WatchedServers`, which it implements, not imported: the runtime builds the
room's keeper and poller. Never the UI (Textual, widgets, the dashboard, the app: import-linter
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
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import NewAgent
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import split_pane_id
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the lifecycle's modules are imported when first used
    from nbs_tui.lifecycle.operations import Lifecycle, RestoreParts
    from nbs_tui.sidecar.sidecar_lease import SidecarLease
    from nbs_tui.tmux.commands import TmuxServerCommands


class LifecycleView(Protocol):
    """What the lifecycle needs from the screen (the controller's `OperatorView` has it)."""

    def notify_operator(self, text: str, title: str, severity: str, timeout: float) -> None:
        """Show a notification (any thread)."""

    def on_ui(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the UI thread (called from an action's thread; a gone UI drops it)."""


class WatchedServers(Protocol):
    """What the lifecycle needs of the runtime that watches the fleet (`Runtime` has it)."""

    def command_paths(self) -> Mapping[str, tuple[TmuxServerCommands, SidecarLease | None]] | None:
        """With several hosts: each host's fleet command path and its server's lease, by host
        name; None: a dashboard of one server (`command_path`)."""

    def command_path(self) -> tuple[TmuxServerCommands, SidecarLease | None] | None:
        """The one watched server's fleet command path and lease; None: not connected."""

    def poll_background(self) -> None:
        """List Claude Code's background sessions again now (one was opened)."""

    def problem(self, source: str, message: str) -> None:
        """The runtime's one problem sink."""


class LifecycleController:
    """Start, stop, restart, open and restore, each off the UI thread (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        runtime: WatchedServers,
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
        self._lifecycles: dict[int, Lifecycle] = {}
        """The lifecycle of each watching fleet's command path (`_lifecycle`)."""
        self._lock = threading.Lock()

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
        """Where the form starts an agent, for its title (`_start_lifecycle`; never blocks)."""
        from nbs_tui.core.fleet.agent_spec import SpecError

        try:
            return self._start_lifecycle(None).describe()
        except SpecError:
            return self.settings.server.describe()

    def start_hosts(self) -> tuple[list[str], str | None]:
        """The hosts the form may start on (the dashboard's watched hosts) and the one it picks
        when none is named (`_start_lifecycle`); no hosts for a dashboard of one server."""
        from nbs_tui.core.fleet.host_spec import LOCAL

        paths = self.runtime.command_paths()
        if paths is None:
            return [], None
        names = list(paths)
        return names, (LOCAL if LOCAL in names else next(iter(names), None))

    def _lifecycle(self, commands: TmuxServerCommands) -> Lifecycle:
        """The lifecycle of the host of a watching fleet's command path (its connection stays
        the fleet's), built once per command path."""
        from nbs_tui.lifecycle.host import host_of
        from nbs_tui.lifecycle.operations import Lifecycle

        with self._lock:
            found = self._lifecycles.get(id(commands))
            if found is None or found.host.commands is not commands:
                found = self._lifecycles[id(commands)] = Lifecycle(self.settings, host_of(commands))
            return found

    def _here(self) -> Lifecycle:
        """This machine's server of the settings, on a command path of its own (a restore may
        start that server; a background session is this machine's)."""
        from nbs_tui.lifecycle.operations import Lifecycle

        return Lifecycle.here(self.settings)

    def _start_lifecycle(self, host: str | None) -> Lifecycle:
        """Where the form starts an agent: the host it names, else the dashboard's one host (this
        machine or another, through its fleet's command path), else this machine when watched,
        else the first watched host."""
        from nbs_tui.core.fleet.agent_spec import SpecError

        paths = self.runtime.command_paths()
        if paths is not None:
            name = host or self.start_hosts()[1] or ""
            if name not in paths:
                raise SpecError([f"--host {name}: not a watched host of this dashboard"])
            return self._lifecycle(paths[name][0])
        one = self.runtime.command_path()
        return self._lifecycle(one[0]) if one is not None else self._here()

    def _start_agent(self, spec: NewAgent) -> None:
        from nbs_tui.core.fleet.agent_spec import SpecError
        from nbs_tui.lifecycle.agent_start import StartStopped
        from nbs_tui.tmux.errors import TmuxError

        title = f"new agent {spec.name or spec.directory}"
        target, pane_id, ok, reason = "", "", False, ""
        try:
            lifecycle = self._start_lifecycle(spec.host)
            started = lifecycle.start(lifecycle.prepare(spec), warn=lambda m: self.runtime.problem("new agent", m))
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
        from nbs_tui.tmux.errors import TmuxError

        one = self.runtime.command_path() if self.runtime.command_paths() is None else None
        lifecycle = self._lifecycle(one[0]) if one is not None else None
        if lifecycle is None or lifecycle.host.remote:  # Claude Code's background sessions are this machine's
            lifecycle = self._here()
        title = f"open background session {session.label}"
        target, pane_id, ok, reason = "", "", False, ""
        try:
            started = lifecycle.open_background(session)
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
        self.runtime.poll_background()
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

    def _host_of(self, pane_id: PaneId) -> tuple[Lifecycle, PaneId, SidecarLease | None] | None:
        """The lifecycle of the pane's tmux server (this machine's, or a host's over its ssh
        master), the pane's id there, and that server's lease (whose ``by`` names this process to
        the other views); None: not connected."""
        host, raw = split_pane_id(pane_id)
        paths = self.runtime.command_paths()
        found = paths.get(host) if paths is not None else self.runtime.command_path()
        if found is None:
            return None
        commands, lease = found
        return self._lifecycle(commands), raw, lease

    def _stop_agent(self, pane: PaneInfo, restart: bool) -> None:
        from nbs_tui.lifecycle.agent_stop import StopError
        from nbs_tui.tmux.errors import TmuxError

        action = "restart" if restart else "stop"
        title = f"{action} {pane.target}"
        where = self._host_of(pane.pane_id)
        if where is None:
            self.view.notify_operator(f"not connected to the tmux server of {pane.target}", title, "warning", 6)
            return
        lifecycle, pane_id, lease = where
        sent, ok, reason = "", False, ""
        try:
            if restart:
                restarted = lifecycle.restart(pane_id)
                sent, ok, reason = f"claude --resume {restarted.session_id}", not restarted.stopped, restarted.stopped
                said = f"restarted in conversation {restarted.session_id}" + (f", but: {restarted.stopped}" if restarted.stopped else "")
            else:
                stopped = lifecycle.stop(pane_id)
                sent, ok, said = stopped.how, True, f"stopped with {stopped.how}"
        except (StopError, TmuxError) as error:
            reason = said = str(error)
        self.view.notify_operator(said, title, "information" if ok else "warning", 8)
        record = ActionRecord(
            self.clock(), action, pane_id, pane.target, sent, "operator (confirmed)", Outcome.SENT if ok else Outcome.FAILED, reason
        )
        why = lifecycle.record(self.action_log, record, by=lease.by if lease is not None else None)
        if why:
            self.runtime.problem("operator action", f"the other views were not told of this {action}: {why}")

    # -- the remembered fleet (restore) -------------------------------------------------------

    def check_remembered(self, offer: Callable[[list[str]], None], nothing: Callable[[], None] | None = None) -> None:
        """On its own thread: when this server's remembered fleet has agents that are gone (a
        reboot, a lost server), call ``offer`` (on the UI thread) with the restore plan's lines;
        else ``nothing``."""
        self._on_thread("nbs-remembered", "fleet memory", self._check_remembered, offer, nothing)

    def _restore_parts(self) -> tuple[Lifecycle, RestoreParts] | None:
        """This server's lifecycle and what a restore needs, with its plan; None: nothing
        remembered (or not one local server)."""
        hosts = self.settings.watched_hosts()
        if len(hosts) != 1 or not hosts[0].is_local or not self.settings.remember_fleet:
            return None
        lifecycle = self._here()
        store = lifecycle.fleet_store(lambda m: self.runtime.problem("fleet memory", m))
        if not store.path.exists():
            return None
        return lifecycle, lifecycle.restore_plan(store)

    def _check_remembered(self, offer: Callable[[list[str]], None], nothing: Callable[[], None] | None) -> None:
        from nbs_tui.core.fleet.restore import plan_lines

        try:
            parts = self._restore_parts()
        except Exception as error:  # a check that could not be made offers nothing; say why
            self.runtime.problem("fleet memory", f"the remembered fleet could not be checked: {error}")
            return
        plan = parts[1].plan if parts is not None else None
        if plan is not None and plan.agents:
            lines = plan_lines(plan)
            self.view.on_ui(lambda: offer(lines))
        elif nothing is not None:
            self.view.on_ui(nothing)

    def restore_remembered(self) -> None:
        """Restore this server's remembered fleet (the operator confirmed), on its own thread."""
        self._on_thread("nbs-restore", "restore", self._restore_remembered)

    def _restore_remembered(self) -> None:
        title = "restore"
        try:
            parts = self._restore_parts()
            if parts is None:
                self.view.notify_operator("Nothing remembered to restore.", title, "information", 5)
                return
            lifecycle, restore = parts
            report = lifecycle.restore(restore)
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

