"""`Lifecycle`: start, stop, restart, open and restore agents on one host's tmux server.

One `Lifecycle` per host (`nbs_tui.lifecycle.host.Host`: this machine or another over ssh, decided
there, once), built from the settings: ``nbs-tui new/stop/restart/restore`` build one for the host
they name (`for_command`), the dashboard one per watched host (`nbs_tui.lifecycle.threaded`). It
is the one place an `AgentStarter` is built (`starter`: the settings' Claude Code command and
config folder, the host's flags and HOME when its checks read them), a spec is checked
(`prepare`, on the host), a start is assembled (`start`: the window, the prompt, the worker's
``worker-spawned``), and a restore gathers and carries out its plan (`restore_plan`, `restore`).
Everything blocks: call from a worker thread or a command.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from nbs_tui.claude.usage_spool import resolve_account
from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import ClaudeFlags, NewAgent, SpecError
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import LOCAL
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.fleet.restore import RestorePlan
from nbs_tui.core.sidecar.lease_rules import Vacancy
from nbs_tui.files.agent_input import PreparedAgent
from nbs_tui.files.fleet_store import FleetStore
from nbs_tui.lifecycle.agent_start import AgentStarter, Started
from nbs_tui.lifecycle.agent_stop import AgentControl, Restarted, Stopped, tell_views
from nbs_tui.lifecycle.arguments import RestoreRequest
from nbs_tui.lifecycle.host import Host, LocalHost, NbsTuiRun, PreparedStart, host_for
from nbs_tui.lifecycle.restore_run import (
    Gathered,
    RestoreReport,
    RestoreRun,
    after_restore,
    gather,
    live_server,
    plan_for,
)
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.sidecar.lease_check import look_at_lease
from nbs_tui.tmux.commands import TmuxServerCommands

RESTORE_THERE_TIMEOUT = 600.0
"""Seconds another host's own ``nbs-tui restore`` may take (it starts its agents one by one)."""
SERVICE_START_TIMEOUT = 60.0
"""Seconds ``nbs-tui service start`` may take on the host (it waits up to 5 s for the lease)."""


@dataclass(frozen=True, slots=True)
class RestoreParts:
    """What a restore of this machine's server needs: its memory, what was gathered, the plan."""

    store: FleetStore
    gathered: Gathered
    plan: RestorePlan


class Lifecycle:
    """The lifecycle of one host's agents (module docstring)."""

    def __init__(self, settings: Settings, host: Host) -> None:
        self.settings = settings
        self.host = host

    @classmethod
    def for_command(cls, settings: Settings, host_name: str | None, option: str) -> Lifecycle:
        """For a command on the other host it names (``--host``, the one watched host: its own
        ssh connection, closed with `close`), else this machine's server (-L/-S). Raises
        `SpecError` (``option`` names where it was given) when the named host is this machine."""
        if host_name is None:
            return cls.here(settings)
        (spec,) = settings.watched_hosts()
        if spec.is_local:
            raise SpecError([f"{option} {host_name}: not another host"])
        return cls(settings, host_for(spec))

    @classmethod
    def here(cls, settings: Settings) -> Lifecycle:
        """For this machine's server of the settings (-L/-S), on a command path of its own."""
        return cls(settings, LocalHost(TmuxServerCommands.for_server(settings.server)))

    def close(self) -> None:
        self.host.close()

    def describe(self) -> str:
        return self.host.describe()

    # -- the one builder ------------------------------------------------------------------------

    def starter(self, *, flags: ClaudeFlags | None = None, home: str | None = None) -> AgentStarter:
        """The agent starter of this host: the settings' Claude Code command and config folder;
        what was already read of the host (its Claude Code's flags, its HOME) when given."""
        return AgentStarter(
            self.host, self.settings.claude_command, claude_home=self.settings.claude_home, flags=flags, home=home
        )

    # -- a new agent ------------------------------------------------------------------------------

    def prepare(self, spec: NewAgent | PreparedAgent) -> PreparedStart:
        """``spec`` checked once, where the agent will run (`Host.prepare`); an agent already
        checked on this machine is taken as it is. Its account is resolved and held to the caps
        here, for every way of starting one (`resolve_account`). Raises `SpecError` (nothing
        made)."""
        if isinstance(spec, PreparedAgent):
            return PreparedStart(replace(spec, spec=resolve_account(spec.spec, self.settings, here=not self.host.remote)))
        return self.host.prepare(resolve_account(spec, self.settings, here=not self.host.remote), self.settings.claude_command)

    def start(self, prepared: PreparedStart, warn: Callable[[str], None]) -> Started:
        """Start the agent (`AgentStarter.start`: raises `SpecError`, `StartStopped`, `TmuxError`);
        a worker whose prompt went in is announced on its project's NBS bus (``worker-spawned``,
        on the agent's host); a bus that cannot be written is said to ``warn``."""
        from nbs_tui.core.control.nbs_events import worker_spawned

        agent = prepared.agent
        started = self.starter(flags=prepared.flags, home=prepared.home).start(agent)
        worker = agent.spec.worker
        if agent.events is not None and worker and started.prompt_submitted:
            event = worker_spawned(worker, target=started.target, pane_id=started.pane_id, session_id=started.session_id)
            try:
                self.host.publish(str(agent.events), event)
            except (OSError, ValueError) as error:
                warn(f"worker-spawned not published in {agent.events}: {error}")
        return started

    def open_background(self, session: BackgroundSession) -> Started:
        """``claude attach ID`` in a new window (`AgentStarter.open_background`)."""
        return self.starter().open_background(session)

    # -- the service that serves what was started --------------------------------------------

    def serve(self, sidecar_flags: Sequence[str], say: Callable[[str], None]) -> bool:
        """Make sure the server's leased service runs, as a dashboard does: after a start or a
        restore, and before every fleet API command (`nbs_tui.fleet_api.service_up`), so an agent
        started from a script is polled, its plans answered, and it is remembered for ``restore``
        with no dashboard open. Nothing with ``service = "off"``.

        On this machine the lease is looked at first (`look_at_lease`: one tmux round trip, no
        process): a live holder is left alone; a free, dead or expired lease gets
        ``nbs-tui service start``, which takes a lock, starts none when one runs and clears a
        dead value so the new service holds at once. Another host's own ``service start``
        judges its lease there. ``say`` hears a service started, or why none could be (the
        agents then are served only while a dashboard watches the server). True when
        ``service start`` ran and said it started one. Raises `TmuxError` when this machine's
        server does not answer the look (the caller says what that means for it)."""
        if self.settings.service != "auto":
            return False
        here = not self.host.remote
        if here and look_at_lease(self.host.commands, self.settings.server).vacancy is Vacancy.HELD:
            return False
        words = [*self.settings.server.tmux_args(), *sidecar_flags, "service", "start"]
        unserved = "its agents are served only while a dashboard watches it"
        if self.host.nbs_tui_argv(words) is None:
            say(f"no sidecar service on {self.describe()}: no nbs_tui set for it in [[hosts]]; {unserved}")
            return False
        try:
            done = self.host.run_nbs_tui(words, SERVICE_START_TIMEOUT)
        except OSError as error:
            say(f"nbs-tui service did not start on {self.describe()} ({error}); {unserved}")
            return False
        if done.lost is not None or done.returncode != 0:
            why = done.lost or (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
            say(f"nbs-tui service did not start on {self.describe()} ({why}); {unserved}")
            return False
        if done.stdout.startswith("service started"):
            said = done.stdout.splitlines()[0]
            say(f"on {self.host.name}: {said}" if self.host.remote else said)
            return True
        return False

    # -- stop and restart -------------------------------------------------------------------------

    def control(self) -> AgentControl:
        return AgentControl(self.starter())

    def stop(self, pane_id: PaneId) -> Stopped:
        return self.control().stop(pane_id)

    def restart(self, pane_id: PaneId) -> Restarted:
        return self.control().restart(pane_id)

    def record(self, log: ActionLog, record: ActionRecord, *, by: str | None = None) -> str:
        """A stop's or restart's line in the action log (the dashboard's viewer shows it), and every
        view of the server told of it (`agent_stop.tell_views`; ``by``: who did it, as the views
        show it); "" or why the views were not told."""
        log.append(record)
        ok = record.outcome is Outcome.SENT
        return tell_views(
            self.host.commands, record.action, record.pane_id, record.target, record.sent, ok, record.reason, by=by
        )

    # -- the remembered fleet -------------------------------------------------------------------

    def fleet_store(self, report: Callable[[str], None]) -> FleetStore:
        """This machine's memory of the settings' server (a restore is this machine's only)."""
        return FleetStore.for_server(LOCAL, self.settings.server, report=report)

    def restore_plan(self, store: FleetStore, names: Collection[str] = ()) -> RestoreParts:
        """What a restore needs and its plan (raises RuntimeError when nothing is remembered,
        `TmuxError`)."""
        gathered = gather(self.host.commands, store, self.settings.claude_command)
        settings = self.settings
        plan = plan_for(gathered, settings.server, settings.claude_command, settings.restore_stagger, names)
        return RestoreParts(store, gathered, plan)

    def restore(self, parts: RestoreParts) -> RestoreReport:
        """Carry out the plan; the memory then forgets what came back or was reported."""
        starter = self.starter(flags=parts.gathered.flags)
        report = RestoreRun(starter).execute(parts.plan)
        instance, _live = live_server(self.host.commands)
        after_restore(parts.store, parts.gathered.memory, instance)
        return report

    def restore_there(self, request: RestoreRequest) -> NbsTuiRun:
        """``nbs-tui restore`` run by another host's own nbs-tui (its fleet is remembered there,
        by its service; its folders, transcripts and Claude Code are there), over its ssh
        connection. Raises `SpecError` when the host has no nbs-tui set, RuntimeError when it could
        not run; ssh's own failure is the run's ``lost``."""
        name = self.host.name
        flags = [*(["--dry-run"] if request.dry_run else []), *(["--json"] if request.json else [])]
        words = [*self.host.commands.runner.server.tmux_args(), "restore", *flags, *request.names]
        if self.host.nbs_tui_argv(words) is None:
            raise SpecError(
                [f"restore --host {name}: nbs-tui restores on the host itself; set nbs_tui for it in [[hosts]] "
                 "(the command that runs nbs-tui there)"]
            )  # fmt: skip
        try:
            return self.host.run_nbs_tui(words, RESTORE_THERE_TIMEOUT)
        except OSError as error:
            raise RuntimeError(f"restore --host {name}: {error}") from None
