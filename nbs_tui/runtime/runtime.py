"""The backends behind the dashboard and ``--headless``, built, started and stopped in one place.

`Runtime` owns four backends, each optional but the fleet:

* the fleet (`FleetPort`, by default `TmuxFleet`): the live mirror of every pane;
* the control plane (`ControlPlane`): ``.nbs/`` registries, inboxes and chats of every project;
* Claude Code's own signals (`ClaudeSignals`): hooks, status files, transcripts;
* the sidecar (`SidecarRunner`): detection, ``/nbs-poll``, plan menus, stuck agents.

While this process acts for a server of this machine, `keeper` (`FleetKeeper`) also keeps the
server's fleet memory for ``nbs-tui restore``, told by the fleet's fanout, by Claude signals
(`_FactsTap`) and on acquiring the lease (docs/lifecycle.md). For a listener that
`shows_background_sessions` (the dashboard), `background` (`BackgroundPoller`) lists Claude
Code's own background sessions of this machine now and then, where the installed version has them.

Everything they report goes to one `RuntimeListener`, on the backend's own thread; a listener
must not block (the app posts Textual messages, headless prints a JSON line).

Order. `start` starts the control plane, Claude signals and the fleet (each returns at once),
then a thread, ``nbs-runtime-start``, waits (bounded) for the fleet's first seed and only then
starts the lease and the sidecar, so no pane is read "unknown" from a not-yet-seeded blank
screen, and the lease's first commands do not compete with the first frame. `stop`
stops them in the reverse order, once; it may be called while that thread still waits, and the
sidecar is then never started. The fleet's news is fanned out here, not by each entry point:
Claude signals get every pane, the control plane the working directories of the live panes
(only when they changed).

Problems. Every backend reports its failures through one sink, `Runtime.problem` (the one route:
`nbs_tui.core.fleet.problems`): the control plane (a remote one too), Claude signals, the fleet, the
lease and the operator's controller call it directly, the sidecar's ``error`` events and a lost
tmux server are turned into it here. It writes one line to the log file and tells the listener
(the app lists and counts them and notifies; headless prints an ``error`` line with the source).
A host's runtime, with several hosts, hands its problems to the dashboard's runtime instead
(`RuntimeOptions.problems`), named by host, so the log and the listener get the same words.

Whether this process *acts* on the panes (types polls, answers plan menus) is decided in one
place, `Runtime.decide_role`; the other backends run either way. With a real tmux fleet the
sidecar also takes part in the server's lease (docs/lease.md, `RuntimeOptions.lease`): it
always detects, and acts only while this process holds the lease; every other process watching
the same server is a viewer. The lease starts before the sidecar and is released after it.

Several hosts (``--host`` twice, or a ``[[hosts]]`` table of more than one): a `Runtime` per host,
each with its own fleet, lease and sidecar, behind one fleet and one sidecar view of qualified
pane ids (`nbs_tui.runtime.hosts`); `fleet` is then that composite, `sidecar` None (use
`sidecar_view`), `hosts` the per-host runtimes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from nbs_tui.claude.spool import HookEvent
from nbs_tui.claude.watcher import ClaudeFacts, ClaudeSignals
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.review.agent_base import BASE_OPTION, parse_base
from nbs_tui.core.sidecar.lease_rules import Lease, LeaseValue
from nbs_tui.files.control_plane import ControlPlane, ControlPlanePort
from nbs_tui.files.fleet_store import FleetStore
from nbs_tui.files.git_changes import GitError, read_agent_changes
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.housekeeping.logs import log_problem, report_failures, state_dir
from nbs_tui.housekeeping.memory import MemoryTrimmer
from nbs_tui.lifecycle.background_poll import BackgroundPoller
from nbs_tui.lifecycle.fleet_keeper import PROBLEM_SOURCE, FleetKeeper
from nbs_tui.notify.event_notices import EventNotices
from nbs_tui.notify.push import PushSender
from nbs_tui.runtime.change_counter import ChangeCounter
from nbs_tui.runtime.contract import (
    LeaseMode,
    RuntimeListener,
    RuntimeOptions,
    SidecarRole,
    SidecarView,
)
from nbs_tui.runtime.hosts import HostsRuntime
from nbs_tui.runtime.service_starter import ServiceStarter, sidecar_flags
from nbs_tui.sidecar.events import SidecarError, SidecarEvent
from nbs_tui.sidecar.queue_feeder import QueueFeeder, StartedAgent, StartRequest, queue_delivery
from nbs_tui.sidecar.sidecar_lease import SidecarLease
from nbs_tui.sidecar.sidecar_runner import SidecarRunner
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.port import FleetListener, FleetPort, PaneGone, TmuxCommandError, TmuxUnavailable
from nbs_tui.tmux.ssh import runner_for
from nbs_tui.tmux.tmux_runner import TmuxRunner

if TYPE_CHECKING:
    from nbs_tui.lifecycle.host import Host

log = logging.getLogger(__name__)

AUTO_SERVICE = True
"""Whether ``service = "auto"`` may start a detached service; the test suite turns it off so that
no test leaves a background process behind (tests of the service opt back in)."""


SERVICE_DELAY = 1.0
"""Seconds after the fleet's first seed before ``service = "auto"`` may start the service: the
dashboard draws its first frame in that time, unhindered (docs/lease.md)."""

def not_installed(host: str) -> str:
    """The one line a dashboard shows when it acts for a host that cannot run the service."""
    return (
        f"nbs-tui is not installed on {host}: this dashboard acts as its sidecar while it runs; "
        f"install with pipx install nbs-tui there and set nbs_tui for the host"
    )


def worktree_has_changes(pane: PaneInfo, commands: TmuxServerCommands) -> bool:
    """Whether the agent's folder (on this machine) has changes against the base ``nbs-tui new``
    left on its pane (``@nbs_base``; else git's fallback): a finished turn's push then links to
    its review. Blocks on tmux and git (the push worker's thread); any failure is "no"."""
    try:
        base = parse_base(commands.display(pane.pane_id, f"#{{{BASE_OPTION}}}"))
        changes = read_agent_changes(pane.target, pane.current_path, base.commit if base else None)
    except (GitError, TmuxCommandError, TmuxUnavailable, PaneGone):
        return False
    return bool(changes.files)


_T = TypeVar("_T")


def _runner(settings: Settings) -> TmuxRunner | None:
    """tmux through ssh when the one watched host is another machine (docs/remote.md)."""
    hosts = settings.watched_hosts()
    if len(hosts) != 1 or hosts[0].is_local:
        return None
    return runner_for(hosts[0])  # connecting already, when the CLI asked early (`preconnect`)


class _Fanout(FleetListener):
    """The fleet's listener: feeds the other backends, then tells the runtime's listener."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime
        self._dirs: dict[PaneId, str] | None = None

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        runtime = self._runtime
        if runtime.claude is not None:
            runtime.claude.set_panes(panes)
        if runtime.control_plane is not None:
            dirs = {p.pane_id: p.current_path for p in panes if p.current_path and not p.dead}
            if dirs != self._dirs:  # the supervisor thread is the only caller: no lock
                self._dirs = dirs
                runtime.control_plane.set_pane_dirs(dirs)
        runtime.listener.fleet_changed(panes)
        if runtime.keeper is not None:
            runtime.keeper.changed()
        if runtime.changes is not None:
            runtime.changes.set_panes(panes)

    def layout_changed(self) -> None:
        """A layout-only change (a pane resized, windows rearranged): the keeper remembers it
        now, not at the next pane change (`nbs_tui.tmux.port.FleetListener.layout_changed`)."""
        if self._runtime.keeper is not None:
            self._runtime.keeper.changed()

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        self._runtime.listener.screens_changed(pane_ids)

    def connection_changed(self, connected: bool, message: str) -> None:
        self._runtime.listener.connection_changed(connected, message)
        if not connected:
            self._runtime.problem("tmux", message)

    def problem(self, source: str, message: str) -> None:
        """The fleet's own trouble (a control client that died), from its threads."""
        self._runtime.problem(source, message)


class _FactsTap:
    """Claude signals' listener: the runtime's listener, and the fleet keeper for session ids."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        self._runtime.listener.claude_facts_changed(facts)
        keeper = self._runtime.keeper
        if keeper is not None:
            keeper.facts_changed(facts)


class Runtime:
    """The fleet, control plane, Claude signals and sidecar of one process (module docstring)."""

    def __init__(self, settings: Settings, listener: RuntimeListener, options: RuntimeOptions | None = None) -> None:
        self.settings = settings
        self.listener = listener
        self.options = options or RuntimeOptions()
        self.fleet: FleetPort | None = None
        self.control_plane: ControlPlanePort | None = None
        self.claude: ClaudeSignals | None = None
        self.sidecar: SidecarRunner | None = None
        self.lease: SidecarLease | None = None
        self.hosts: HostsRuntime | None = None
        """The per-host runtimes when several hosts are watched (module docstring)."""
        self.keeper: FleetKeeper | None = None
        """Keeps this server's fleet memory while this process acts (`nbs_tui.lifecycle.fleet_keeper`)."""
        self.push: PushSender | None = None
        """Sends push notifications (``notify_urls``) while this process holds the lease (`nbs_tui.notify.push`)."""
        self.changes: ChangeCounter | None = None
        """Keeps each agent's change count for a listener that `shows_changes` (`nbs_tui.runtime.change_counter`)."""
        self.background: BackgroundPoller | None = None
        """Lists Claude Code's background sessions for a listener that shows them (module docstring)."""
        self._host: Host | None = None
        """The watched host, decided once from the fleet's command path (`_there`)."""
        self.role = SidecarRole.OFF
        self.trimmer = MemoryTrimmer()
        self._built = False
        self._started: list[tuple[str, Callable[[], None]]] = []
        """(name, stop) of every backend started, in start order; stopped in reverse."""
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._starter: threading.Thread | None = None
        self._seeded_at: float | None = None
        """When (monotonic) the starter thread saw the fleet's first seed (or gave up waiting)."""

    # -- build -----------------------------------------------------------------------------

    def build(self) -> None:
        """Construct every wanted backend (nothing runs yet); `start` calls it if needed.

        The fleet is built even when tmux is away (it reconnects on its own); a backend that
        cannot be built is reported as a problem and left out, the others still run.
        """
        if self._built:
            return
        self._built = True
        options = self.options
        hosts = self.settings.watched_hosts() if options.fleet_factory is None else ()
        if len(hosts) > 1:
            self._build_hosts(hosts)
            return
        # One other host: its projects' files and Claude Code's own files are there, not here
        # (its control plane is read over ssh below; Claude's signals are the screen alone).
        elsewhere = len(hosts) == 1 and not hosts[0].is_local
        if options.control_plane and not elsewhere:
            self.control_plane = self._try(
                "control plane", lambda: ControlPlane(self.settings, self.listener.control_event, problem=self.problem)
            )
        if options.claude and not elsewhere:
            self.claude = self._try(
                "Claude Code signals",
                lambda: ClaudeSignals(
                    self.settings, _FactsTap(self), clock=options.wall, problems=self.problem, hook_tap=self._hook_event
                ),
            )
        shows_background = self.listener.shows_background_sessions
        if options.claude and not elsewhere and self.settings.background_sessions and shows_background:
            self.background = self._try(
                "background sessions",
                lambda: BackgroundPoller(self.settings.claude_command, self.listener.background_sessions_changed, self.problem),
            )
        if self.claude is not None and self.listener.shows_changes:
            claude = self.claude
            self.changes = self._try(
                "change column",
                lambda: ChangeCounter(
                    self.settings, self._commands, claude.tmux_socket, self.listener.changes_counted, self.problem
                ),
            )
        fanout = _Fanout(self)
        if options.fleet_factory is not None:
            self.fleet = options.fleet_factory(fanout)
        else:
            from nbs_tui.tmux.fleet import TmuxFleet  # imported late: tests inject their own fleet

            # Live models only for what is on screen (the app's mirror and visible thumbnails
            # call set_watched); the sidecar reads every other pane with in-band captures.
            self.fleet = TmuxFleet(
                self.settings.server,
                sessions=self.settings.sessions,
                listener=fanout,
                watch_all=False,
                stream_output=options.mirror,
                runner=_runner(self.settings),
            )
        self.role = self.decide_role()
        if self.role is SidecarRole.ACT:
            fleet = self.fleet
            self.lease = self._try("sidecar lease", self._build_lease)
            self.sidecar = self._try(
                "sidecar",
                lambda: SidecarRunner(
                    fleet, self.settings, self._sidecar_event, control=self.control_plane,
                    clock=options.clock, wall=options.wall, signals=self.claude, lease=self.lease,
                ),
            )
            if self.claude is not None and options.fleet_factory is None and self.fleet.commands is not None:
                self.keeper = self._try("fleet memory", self._build_keeper)
                self._try("work queue", self._build_queue)
            if self.settings.notify_urls and self.sidecar is not None:
                self.push = self._try("push notifications", self._build_push)
        if options.control_plane and elsewhere:  # after the sidecar: the host's service applies it
            self.control_plane = self._try("control plane", lambda: self._remote_plane(hosts[0]))

    def _hook_event(self, event: HookEvent) -> None:
        """Claude signals read a hook event (its thread): the change column hears of writes."""
        if self.changes is not None:
            self.changes.hook_event(event)

    def _build_keeper(self) -> FleetKeeper | None:
        """The fleet memory of this machine's server, kept while this process acts."""
        commands, claude = self._commands(), self.claude
        if commands is None or claude is None or self._there_remote() or not self.settings.remember_fleet:
            return None
        store = FleetStore.for_server(LOCAL, self.settings.server, report=lambda m: self.problem(PROBLEM_SOURCE, m))
        lease = self.lease
        return FleetKeeper(
            commands, store, LOCAL, self.settings.server,
            acting=(lambda: lease.acting()) if lease is not None else (lambda: True),
            facts=claude.all_facts, problem=self.problem,
        )  # fmt: skip

    def _build_queue(self) -> QueueFeeder | None:
        """The work queue of this machine's server, fed by the sidecar while this process holds
        the lease (docs/queue.md): tasks typed through the sidecar's delivery entry, agents
        started through the lifecycle."""
        sidecar = self.sidecar
        if sidecar is None or self._there_remote():
            return None
        store = QueueStore.for_server(LOCAL, self.settings.server, report=lambda m: self.problem("work queue", m))
        return sidecar.feed_queue(
            store, deliver=queue_delivery(sidecar.deliver_text), start_agent=self._start_for_queue, limits=self.settings.max_concurrent
        )

    def _start_for_queue(self, request: StartRequest) -> StartedAgent:
        """A new agent for a queue task, as ``nbs-tui new DIR --name NAME --prompt TEXT`` (or
        ``--worker NAME``) starts one; with accounts in the config, under the one with the most
        headroom (``--account auto``); raises as `Lifecycle.start` does (a start on an account
        at its cap is refused, and the task waits)."""
        from nbs_tui.core.fleet.accounts import AUTO
        from nbs_tui.core.fleet.agent_spec import NewAgent
        from nbs_tui.lifecycle.operations import Lifecycle

        lifecycle = Lifecycle.here(self.settings)
        try:
            spec = NewAgent(
                directory=request.folder, name=request.name, prompt=request.prompt or None,
                worker=request.worker or None, server=self.settings.server,
                account=AUTO if self.settings.accounts else None,
            )  # fmt: skip
            started = lifecycle.start(lifecycle.prepare(spec), lambda said: self.problem("work queue", said))
        finally:
            lifecycle.close()
        return StartedAgent(started.pane_id, started.session_id or "", started.prompt_submitted)

    def _build_push(self) -> PushSender:
        """The pushes of this server, sent only while this process holds its lease (one sender
        per server however many dashboards watch it; docs/notifications.md)."""
        lease, fleet = self.lease, self.fleet

        def name(pane_id: PaneId) -> str:
            panes = fleet.panes() if fleet is not None else []
            return next((p.target for p in panes if p.pane_id == pane_id), pane_id)

        def changed(pane_id: PaneId) -> bool:
            pane = next((p for p in (fleet.panes() if fleet is not None else []) if p.pane_id == pane_id), None)
            commands = fleet.commands if fleet is not None else None
            if pane is None or commands is None or self._there_remote():
                return False
            return worktree_has_changes(pane, commands)

        return PushSender(
            self.settings.notify_urls, EventNotices(self.settings, (lambda: [lease]) if lease is not None else tuple),
            host=self.settings.watched_hosts()[0], names=name,
            acting=(lambda: lease.acting()) if lease is not None else (lambda: True),
            problem=self.problem, link_ttl=self.settings.web_link_ttl * 60, state_dir=state_dir(), changed=changed,
            queue_store=self._queue_store(),
        )  # fmt: skip

    def _queue_store(self) -> QueueStore | None:
        """This server's work queue, read for the pushes of its tasks' outcomes; None for another
        host's server (its queue is kept there, and pushed by its own service). Bad lines are
        reported by the feeder's store; here they are only logged."""
        host = self.settings.watched_hosts()[0]
        return QueueStore.for_server(LOCAL, self.settings.server, report=log.warning) if host.is_local else None

    def _remote_plane(self, host: HostSpec) -> ControlPlanePort:
        """The one watched host's projects, read by its own nbs-tui over ssh (docs/remote.md)."""
        from nbs_tui.runtime.remote_plane import RemoteControlPlane

        return RemoteControlPlane(host, self._there(), self.listener.control_event, self.problem)

    def _build_hosts(self, hosts: Sequence[HostSpec]) -> None:
        self.hosts = HostsRuntime(hosts, self.listener, self.settings, self.options, make_runtime=Runtime, problem=self.problem)
        local = self.hosts.local
        if local is not None:  # this machine's files are read by the local host's runtime
            self.control_plane, self.claude = local.control_plane, local.claude
        if self.hosts.hub.control is not None:  # other hosts' projects too
            self.control_plane = self.hosts.hub.control
        self.fleet = self.hosts.fleet
        acting = any(rt.role is SidecarRole.ACT for _h, rt in self.hosts.runtimes.values())
        self.role = SidecarRole.ACT if acting else SidecarRole.OFF

    @property
    def sidecar_view(self) -> SidecarView | None:
        """The sidecar as the app and the operator ask it (every host's, with several)."""
        return self.hosts.sidecar if self.hosts is not None else self.sidecar

    def problem(self, source: str, message: str) -> None:
        """The one problem sink (module docstring); any thread, never raises."""
        forward = self.options.problems
        if forward is not None:  # a host's runtime: the dashboard's runtime logs and tells
            try:
                forward(source, message)
            except Exception:
                log.exception("the problem sink failed on: %s: %s", source, message)
            return
        log_problem(source, message)
        try:
            self.listener.problem(source, message)
        except Exception:  # the log above has the problem itself
            log.exception("the problem listener failed")

    def _sidecar_event(self, event: SidecarEvent) -> None:
        """The sidecar's events go to the listener as they are; its errors are problems too."""
        if isinstance(event, SidecarError):
            self.problem("sidecar", f"{event.pane_id} {event.message}".strip())
        if self.push is not None:
            self.push.observe(event)
        self.listener.sidecar_event(event)

    def leases(self) -> list[SidecarLease]:
        """The sidecar lease of every tmux server watched (one per host with several hosts)."""
        if self.hosts is not None:
            return [rt.lease for _host, rt in self.hosts.runtimes.values() if rt.lease is not None]
        return [self.lease] if self.lease is not None else []

    def lease_of(self, host: str) -> SidecarLease | None:
        """The sidecar lease of the server a pane of ``host`` is on (`Pane.host`: empty when one
        host is watched)."""
        if self.hosts is not None:
            found = self.hosts.runtimes.get(host)
            return found[1].lease if found is not None else None
        return self.lease

    def lease_mode(self) -> LeaseMode:
        mode = self.options.lease
        if mode is None:
            if self.options.fleet_factory is not None:
                mode = LeaseMode.OFF
            else:
                # Another host's service is started there, over ssh, with the host's own
                # nbs-tui; a host without one gets this process as its sidecar while it runs.
                host = self._remote_host()
                installed = host is None or bool(host.nbs_tui)
                auto = self.settings.service == "auto" and AUTO_SERVICE and installed
                mode = LeaseMode.SERVICE if auto else LeaseMode.CONTEND
        return mode

    def _commands(self) -> TmuxServerCommands | None:
        """The watched server's tmux commands (the fleet's: in-band when it is connected)."""
        return self.fleet.commands if self.fleet is not None else None

    # -- what the lifecycle acts through (`nbs_tui.lifecycle.threaded.WatchedServers`) ---------

    def command_paths(self) -> dict[str, tuple[TmuxServerCommands, SidecarLease | None]] | None:
        """With several hosts: each host's fleet command path and its server's lease, by host
        name; None: one server (`command_path`)."""
        hosts = self.hosts
        if hosts is None:
            return None
        paths: dict[str, tuple[TmuxServerCommands, SidecarLease | None]] = {}
        for name, commands in hosts.tmux.by_host.items():
            entry = hosts.runtimes.get(name)
            paths[name] = (commands, entry[1].lease if entry is not None else None)
        return paths

    def command_path(self) -> tuple[TmuxServerCommands, SidecarLease | None] | None:
        """The one watched server's fleet command path and lease; None: not connected."""
        commands = self._commands()
        return (commands, self.lease) if commands is not None else None

    def poll_background(self) -> None:
        if self.background is not None:
            self.background.poll_now()

    def _there(self) -> Host | None:
        """The host whose tmux server this runtime watches, through the fleet's command path
        (`nbs_tui.lifecycle.host`: this machine or another, decided there); None: no fleet."""
        commands = self._commands()
        if commands is None:
            return None
        there = self._host
        if there is None or there.commands is not commands:
            from nbs_tui.lifecycle.host import host_of

            there = self._host = host_of(commands)
        return there

    def _there_remote(self) -> bool:
        there = self._there()
        return there is not None and there.remote

    def _remote_host(self) -> HostSpec | None:
        """The other host whose tmux server this runtime watches (None: this machine's)."""
        there = self._there()
        return there.spec if there is not None else None

    def _service_argv(self) -> list[str] | None:
        """``nbs-tui service start`` for the watched server: here, or on its host through the
        fleet's ssh (its ControlMaster); None when that host has no nbs-tui. Paths (the config
        file, projects) are this machine's: only a service here gets them."""
        from nbs_tui.lifecycle.host import local_nbs_tui_argv

        there = self._there()
        remote = there is not None and there.remote
        words = [*self.settings.server.tmux_args(), *sidecar_flags(self.settings, local=not remote), "service", "start"]
        return there.nbs_tui_argv(words) if there is not None and remote else local_nbs_tui_argv(words)

    def _build_lease(self) -> SidecarLease | None:
        from nbs_tui.sidecar.heartbeat import LeaseHeartbeat

        mode = self.lease_mode()
        commands = self._commands()
        if mode is LeaseMode.OFF or commands is None:
            return None
        # the fleet's commands: the lease lives in the same tmux server, wherever that runs,
        # and goes in-band on its control connections when ready (no process a command, ~5 ms)

        def problem(message: str) -> None:
            self.problem("sidecar lease", message)

        heartbeat = LeaseHeartbeat(
            commands,
            contend=mode is LeaseMode.CONTEND,
            ttl=self.settings.lease_ttl,
            on_problem=problem,
            on_holder_changed=self._holder_changed,
            on_acquired=lambda _lease: self._holding_changed(True),
            on_lost=lambda _why: self._holding_changed(False),
        )
        if mode is LeaseMode.SERVICE:
            far = self._remote_host()

            def contend_after_all(why: str) -> None:
                if far is not None and ("not found" in why or "No such file" in why):
                    problem(f"{not_installed(far.name)} ({why})")
                else:
                    problem(f"{why}: this dashboard acts itself while it runs")
                heartbeat.contend = True

            heartbeat.on_vacant = ServiceStarter(
                self.settings.server, self.settings.lease_ttl, problem, contend_after_all,
                ready=self._first_frame_done, argv=self._service_argv(),
            ).vacant
        host = self._remote_host()
        wanted = self.options.lease is None and self.settings.service == "auto" and AUTO_SERVICE
        if mode is LeaseMode.CONTEND and host is not None and wanted:
            said = threading.Event()

            def acquired(_lease: object) -> None:  # a dashboard (auto) on a host without nbs-tui
                self._holding_changed(True)
                if not said.is_set():
                    said.set()
                    problem(not_installed(host.name))

            heartbeat.on_acquired = acquired
        return SidecarLease(commands, heartbeat, on_problem=problem)

    def _first_frame_done(self) -> bool:
        """The fleet was seeded `SERVICE_DELAY` ago: the dashboard has drawn it by now."""
        seeded = self._seeded_at
        return seeded is not None and time.monotonic() - seeded >= SERVICE_DELAY

    def _holding_changed(self, holding: bool) -> None:
        if self.control_plane is not None:
            self.control_plane.set_acting(holding)
        if holding and self.keeper is not None:
            self.keeper.changed()

    def _holder_changed(self, holder: LeaseValue) -> None:
        if self.lease is not None:
            mine = isinstance(holder, Lease) and holder.token == self.lease.token
            self.listener.lease_changed(holder, mine)

    def decide_role(self) -> SidecarRole:
        """Does this process act on the panes? The one place that decides it.

        Today it acts whenever a sidecar is wanted. A process that must only watch (another one
        already acts for this tmux server) is decided here, before the sidecar is built.
        """
        return SidecarRole.ACT if self.options.sidecar and self.fleet is not None else SidecarRole.OFF

    def _try(self, name: str, build: Callable[[], _T]) -> _T | None:
        try:
            return build()
        except Exception as error:  # one backend failing must not take the others down
            log.exception("%s could not be built", name)
            self.problem(name, f"{name} did not start: {error}")
            return None

    # -- start and stop ----------------------------------------------------------------------

    def start(self) -> None:
        """Start every backend in order; returns at once (the sidecar follows the first seed).

        Raises `TmuxUnavailable` (or whatever the fleet raises) when the fleet cannot start:
        the other backends it started are stopped again by `stop`, which the caller still calls.
        """
        self.build()
        with self._lock:
            if self._stopping.is_set():
                return
            if self.options.problems is None:  # the runtime that writes the log hears of its failure
                self._started.append(("log file", report_failures(self.problem)))  # a full disk, say
            self._start("memory trim", self.trimmer.start, self.trimmer.stop)  # freed pages go back
            if self.hosts is not None:  # each host starts (and fails) on its own
                self.hosts.start()
                self._started.append(("hosts", self.hosts.stop))
                return
            if self.control_plane is not None:
                if self.lease is not None:  # inboxes are applied by the lease holder only
                    self.control_plane.set_acting(False)
                self._start("control plane", self.control_plane.start, self.control_plane.stop)
            if self.claude is not None:
                self._start("Claude Code signals", self.claude.start, self.claude.stop)
            if self.changes is not None:
                self._start("change column", self.changes.start, self.changes.stop)
            if self.background is not None:  # its first look waits a little: the first frame first
                self._start("background sessions", self.background.start, self.background.stop)
            fleet = self.fleet
            if fleet is None:
                return
            fleet.start()  # its failure is the caller's to show: nothing works without it
            self._started.append(("fleet", fleet.stop))
            if self.lease is not None and self.sidecar is None:
                self._start("sidecar lease", self.lease.start, self.lease.stop)
            if self.push is not None:  # sends only while this process holds the lease
                self._start("push notifications", self.push.start, self.push.stop)
            if self.keeper is not None:  # writes only once this process holds the lease
                self._start("fleet memory", self.keeper.start, self.keeper.stop)
                self.keeper.changed()  # what runs now, once this process acts
            if self.sidecar is not None:  # with the lease, once the first frame's seeds are in
                self._starter = threading.Thread(target=self._start_sidecar, name="nbs-runtime-start", daemon=True)
                self._starter.start()

    def _start(self, name: str, start: Callable[[], None], stop: Callable[[], None]) -> None:
        try:
            start()
        except Exception as error:
            log.exception("%s did not start", name)
            self.problem(name, f"{name} did not start: {error}")
            return
        self._started.append((name, stop))

    def _start_sidecar(self) -> None:
        """The starter thread: wait for the first seed (or `stop`), then start the lease and the
        sidecar. The lease waits too: its first commands then run on the fleet's control
        connections, not as ``tmux`` (or, for another host, ssh) processes competing with the
        first frame (three per host over ssh: ~0.08 s of 0.9 at 5 hosts, bench_remote.py)."""
        fleet, sidecar = self.fleet, self.sidecar
        if fleet is None or sidecar is None:
            return
        deadline = time.monotonic() + self.options.seed_timeout
        while not self._stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or fleet.wait_seeded(min(left, 0.1)):
                break
        after = self.options.sidecar_after
        while after is not None and not self._stopping.is_set() and not after.wait(0.1):
            pass  # an early runtime: its app has not mounted yet
        self._seeded_at = time.monotonic()
        with self._lock:  # `stop` holds it while it decides what runs: never start after that
            if self._stopping.is_set():
                return
            if self.lease is not None:  # stopped after the sidecar: it stops acting, then releases
                self._start("sidecar lease", self.lease.start, self.lease.stop)
            self._start("sidecar", sidecar.start, sidecar.stop)

    def wait_started(self, timeout: float) -> bool:
        """Block until the sidecar was started (or will never be); for tests and benchmarks."""
        if self.hosts is not None:
            return self.hosts.wait_started(timeout)
        starter = self._starter
        if starter is not None:
            starter.join(timeout)
            return not starter.is_alive()
        return True

    def stop(self) -> None:
        """Stop what was started, in reverse order; idempotent, and safe while `start` is still
        waiting for the first seed (the sidecar is then never started)."""
        with self._lock:
            self._stopping.set()
            started, self._started = self._started, []
        starter = self._starter
        if starter is not None and starter is not threading.current_thread():
            starter.join()
        for name, stop in reversed(started):
            try:
                stop()
            except Exception as error:  # shutting down: say it, keep stopping the rest
                log.exception("stopping the %s failed", name)
                self.problem(name, f"stopping the {name} failed: {error}")
