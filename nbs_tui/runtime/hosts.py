"""Several hosts in one dashboard: a `Runtime` per host behind one fleet, one sidecar view, one listener.

Each watched host gets its own `Runtime` (its fleet, its sidecar lease in its own tmux server,
its sidecar), built from the same settings narrowed to that host, so a host acts only under its
own lease and a slow or dead host touches nothing of the others: every host has its own threads,
and the UI reads screens that are simply not updated. What the app and ``--headless`` see is
one fleet of qualified pane ids (``hosta:%3``; the local host keeps ``%3``:
`nbs_tui.core.fleet.host_spec.qualify_pane_id`):

* `HostsHub` takes each host's news on that host's threads, qualifies pane ids, keeps each
  host's last pane list (an offline host keeps its last view) and hands the runtime's listener
  the whole fleet in host order, the connection as a whole (connected while any host is) and,
  to the listener's ``hosts_changed``, every host's connection and lease (`HostState`);
  each host's problems go, named by host, to the dashboard runtime's problem sink (which logs
  them and tells the listener: `nbs_tui.core.fleet.problems`);
* `HostsFleet` is the `FleetPort` over the hosts' fleets: it routes a qualified id to its host;
* `HostsSidecar` is what the app and the operator ask of the sidecars, routed the same way;
* `HostsTmux` routes the operator's own tmux commands (pane checks, pastes) to the pane's host.

Claude Code's signals read this machine's files, so they run in the local host's runtime only.
So does the control plane of this machine's projects; another host's projects are read there by
its own nbs-tui over ssh (`nbs_tui.runtime.remote_plane`), and `HostsControl` shows them all as one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec, HostState, qualify_pane_id, split_pane_id
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.problems import ProblemSink
from nbs_tui.core.sidecar.delivery_rules import Delivery
from nbs_tui.core.sidecar.lease_rules import LeaseValue, describe_holder
from nbs_tui.runtime.contract import RuntimeListener, RuntimeOptions, SidecarRole
from nbs_tui.sidecar.events import EMPTY_SNAPSHOT, SidecarEvent, SidecarSnapshot, StatusChange
from nbs_tui.sidecar.sidecar_lease import SidecarLease
from nbs_tui.sidecar.sidecar_runner import SidecarRunner
from nbs_tui.tmux.commands import Guard, PaneIdentity, TmuxServerCommands
from nbs_tui.tmux.port import FleetPort, PaneGone, PaneHistory

if TYPE_CHECKING:
    from nbs_tui.claude.watcher import ClaudeFacts, ClaudeSignals
    from nbs_tui.core.screen.pane_screen import PaneScreen
    from nbs_tui.core.screen.screen_rows import CapturedScreen
    from nbs_tui.core.sidecar.pane_sidecar import SidecarStatus
    from nbs_tui.files.control_plane import ControlEvent, ControlPlanePort
    from nbs_tui.runtime.remote_plane import HostsControl

log = logging.getLogger(__name__)


class HostRuntime(Protocol):
    """What `HostsRuntime` needs of one host's runtime (an `nbs_tui.runtime.runtime.Runtime`)."""

    fleet: FleetPort | None
    control_plane: ControlPlanePort | None
    claude: ClaudeSignals | None
    sidecar: SidecarRunner | None
    lease: SidecarLease | None
    role: SidecarRole

    def build(self) -> None: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def wait_started(self, timeout: float) -> bool: ...

    def problem(self, source: str, message: str) -> None: ...


MakeRuntime = Callable[[Settings, RuntimeListener, RuntimeOptions], HostRuntime]
"""Builds one host's runtime: the `Runtime` class itself (given, not imported: no cycle)."""


class HostsHub:
    """Every host's news, qualified and merged, for the runtime's one listener (module docstring)."""

    def __init__(self, hosts: Sequence[HostSpec], listener: RuntimeListener, problem: ProblemSink) -> None:
        self.hosts = tuple(hosts)
        self.listener = listener
        self.problem = problem
        """The dashboard runtime's problem sink: every host's problems, named, go there."""
        self._lock = threading.Lock()
        self._panes: dict[str, tuple[PaneInfo, ...]] = {h.name: () for h in hosts}
        self._states: dict[str, HostState] = {h.name: HostState(h.name) for h in hosts}
        self._connected: bool | None = None
        self.control: HostsControl | None = None
        """Every host's control plane as one, when another host's is shown (its snapshots merged)."""

    def for_host(self, host: HostSpec) -> HostListener:
        return HostListener(self, host)

    def states(self) -> tuple[HostState, ...]:
        with self._lock:
            return tuple(self._states[h.name] for h in self.hosts)

    def fleet_changed(self, host: str, panes: tuple[PaneInfo, ...]) -> None:
        with self._lock:  # held while telling: two hosts' lists never arrive out of order
            self._panes[host] = panes
            every = [p for h in self.hosts for p in self._panes[h.name]]
            self.listener.fleet_changed(every)

    def state_changed(self, host: str, **changes: Any) -> None:
        with self._lock:
            state = replace(self._states[host], **changes)
            if state == self._states[host]:
                return
            self._states[host] = state
            states = tuple(self._states[h.name] for h in self.hosts)
            answered = [s.connected for s in states if s.connected is not None]
            overall = any(answered) if answered else None
            if "connected" in changes and overall is not None and overall != self._connected:
                self._connected = overall
                why = "" if overall else "; ".join(s.message for s in states if s.message)
                self.listener.connection_changed(overall, state.message if overall else why)
            self.listener.hosts_changed(states)


class HostListener(RuntimeListener):
    """One host's `RuntimeListener`: qualifies its pane ids and reports to the hub."""

    def __init__(self, hub: HostsHub, host: HostSpec) -> None:
        self.hub = hub
        self.host = host
        self.name = host.name

    def _id(self, pane_id: PaneId) -> PaneId:
        return qualify_pane_id(self.host, pane_id) if pane_id else pane_id

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self.hub.fleet_changed(self.name, tuple(replace(p, pane_id=self._id(p.pane_id), host=self.name) for p in panes))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        self.hub.listener.screens_changed(pane_ids if self.host.is_local else frozenset(map(self._id, pane_ids)))

    def connection_changed(self, connected: bool, message: str) -> None:
        self.hub.state_changed(self.name, connected=connected, message=message)

    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        self.hub.listener.claude_facts_changed(facts)  # local files, local ids

    def sidecar_event(self, event: SidecarEvent) -> None:
        event = replace(event, pane_id=self._id(event.pane_id))
        if isinstance(event, StatusChange):
            event = replace(event, status=replace(event.status, pane_id=self._id(event.status.pane_id)))
        self.hub.listener.sidecar_event(event)

    def control_event(self, event: ControlEvent) -> None:
        control = self.hub.control
        self.hub.listener.control_event(control.merge(event) if control is not None else event)

    def problem(self, source: str, message: str) -> None:
        """This host's runtime's problem sink (`RuntimeOptions.problems`): named, then on."""
        named = message if message.startswith(f"{self.name}:") else f"{self.name}: {message}"
        self.hub.problem(source, named)

    def lease_changed(self, holder: LeaseValue, acting: bool) -> None:
        self.hub.state_changed(self.name, lease=describe_holder(holder, acting), acting=acting)


class HostsFleet(FleetPort):
    """The hosts' fleets as one, by qualified pane id; each host's runtime starts and stops its own."""

    def __init__(self, fleets: Mapping[str, tuple[HostSpec, FleetPort]]) -> None:
        self.fleets = dict(fleets)

    def start(self) -> None:
        """Nothing: each host's runtime started its fleet."""

    def stop(self) -> None:
        """Nothing: each host's runtime stops its fleet."""

    def _route(self, pane_id: PaneId) -> tuple[FleetPort, PaneId]:
        name, raw = split_pane_id(pane_id)
        found = self.fleets.get(name)
        if found is None:
            raise PaneGone(f"pane {pane_id}: no watched host {name!r}")
        return found[1], raw

    def panes(self) -> list[PaneInfo]:
        return [
            replace(p, pane_id=qualify_pane_id(host, p.pane_id), host=host.name)
            for host, fleet in self.fleets.values()
            for p in fleet.panes()
        ]

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        try:
            fleet, raw = self._route(pane_id)
        except PaneGone:
            return None
        return fleet.screen(raw)

    def set_watched(self, consumer: str, pane_ids: Iterable[PaneId]) -> None:
        wanted: dict[str, list[PaneId]] = {name: [] for name in self.fleets}
        for pane_id in pane_ids:
            name, raw = split_pane_id(pane_id)
            if name in wanted:
                wanted[name].append(raw)
        for name, (_host, fleet) in self.fleets.items():
            fleet.set_watched(consumer, wanted[name])

    def first_seeded(self, pane_id: PaneId) -> bool:
        try:
            fleet, raw = self._route(pane_id)
        except PaneGone:
            return False
        return fleet.first_seeded(raw)

    def captured(self, pane_id: PaneId) -> CapturedScreen | None:
        try:
            fleet, raw = self._route(pane_id)
        except PaneGone:
            return None
        return fleet.captured(raw)

    def capture_text(self, pane_id: PaneId) -> str:
        fleet, raw = self._route(pane_id)
        return fleet.capture_text(raw)

    def capture_history(self, pane_id: PaneId, lines: int) -> PaneHistory:
        fleet, raw = self._route(pane_id)
        return fleet.capture_history(raw, lines)

    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        fleet, raw = self._route(pane_id)
        return fleet.send_text(raw, text, guard=guard)

    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        fleet, raw = self._route(pane_id)
        return fleet.send_keys(raw, *keys, guard=guard)


class HostsSidecar:
    """The hosts' sidecars as the app and the operator ask them, by qualified pane id."""

    def __init__(self, runtimes: Mapping[str, tuple[HostSpec, HostRuntime]]) -> None:
        self.runtimes = dict(runtimes)
        self._parts: tuple[SidecarSnapshot, ...] = ()
        self._snapshot = EMPTY_SNAPSHOT

    def _runner(self, pane_id: PaneId) -> tuple[SidecarRunner, PaneId]:
        name, raw = split_pane_id(pane_id)
        found = self.runtimes.get(name)
        runner = found[1].sidecar if found is not None else None
        if runner is None:
            raise KeyError(f"no sidecar is running for host {name!r}")
        return runner, raw

    @property
    def snapshot(self) -> SidecarSnapshot:
        """Every host's latest snapshot, qualified; the same object while none changed."""
        hosts = [(host, rt.sidecar) for host, rt in self.runtimes.values()]
        parts = tuple(runner.snapshot if runner is not None else EMPTY_SNAPSHOT for _host, runner in hosts)
        if len(parts) != len(self._parts) or any(a is not b for a, b in zip(parts, self._parts, strict=True)):
            statuses: dict[PaneId, SidecarStatus] = {}
            stuck: dict[PaneId, Any] = {}
            escalated: dict[PaneId, str] = {}
            for (host, _runner), part in zip(hosts, parts, strict=True):
                for pane_id, status in part.statuses.items():
                    q = qualify_pane_id(host, pane_id)
                    statuses[q] = status if q == pane_id else replace(status, pane_id=q)
                stuck.update((qualify_pane_id(host, p), s) for p, s in part.stuck.items())
                escalated.update((qualify_pane_id(host, p), why) for p, why in part.escalated.items())
            self._parts = parts
            self._snapshot = SidecarSnapshot(
                MappingProxyType(statuses), MappingProxyType(stuck), MappingProxyType(escalated),
                sum(p.ticks for p in parts),
            )  # fmt: skip
        return self._snapshot

    def force_poll(self, pane_id: PaneId) -> tuple[bool, str]:
        try:
            runner, raw = self._runner(pane_id)
        except KeyError as error:
            return False, str(error.args[0])
        return runner.force_poll(raw)

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool | None) -> None:
        runner, raw = self._runner(pane_id)
        runner.set_poll_enabled(raw, enabled)

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None:
        runner, raw = self._runner(pane_id)
        runner.set_plan_auto(raw, enabled)

    def note_operator_input(self, pane_id: PaneId) -> None:
        try:
            runner, raw = self._runner(pane_id)
        except KeyError:
            return
        runner.note_operator_input(raw)

    def status(self, pane_id: PaneId) -> SidecarStatus | None:
        return self.snapshot.statuses.get(pane_id)

    def escalated(self) -> dict[PaneId, str]:
        return dict(self.snapshot.escalated)

    def deliver_text(self, pane_id: PaneId, text: str, origin: str = "") -> Future[Delivery]:
        """Delivered by the pane's host's sidecar (KeyError: no sidecar acts for that host)."""
        runner, raw = self._runner(pane_id)
        return runner.deliver_text(raw, text, origin)


class HostsTmux:
    """The operator's own tmux commands (pane checks, pastes), each run on the pane's host
    (`nbs_tui.operator.pane_actions.PaneCommands`)."""

    def __init__(self, by_host: Mapping[str, TmuxServerCommands]) -> None:
        self.by_host = dict(by_host)

    def _route(self, pane_id: PaneId) -> tuple[TmuxServerCommands, PaneId]:
        name, raw = split_pane_id(pane_id)
        commands = self.by_host.get(name)
        if commands is None:
            raise PaneGone(f"pane {pane_id}: no watched host {name!r}")
        return commands, raw

    def pane_identity(self, pane_id: PaneId) -> PaneIdentity | None:
        commands, raw = self._route(pane_id)
        return commands.pane_identity(raw)

    def paste(self, pane_id: PaneId, text: str, *, bracketed: bool = True) -> bool:
        commands, raw = self._route(pane_id)
        return commands.paste(raw, text, bracketed=bracketed)


class HostsRuntime:
    """The runtimes of every watched host, and the one fleet, sidecar view and tmux over them."""

    def __init__(
        self,
        hosts: Sequence[HostSpec],
        listener: RuntimeListener,
        settings: Settings,
        options: RuntimeOptions,
        make_runtime: MakeRuntime,
        problem: ProblemSink,
    ) -> None:
        self.hub = HostsHub(hosts, listener, problem)
        self.runtimes: dict[str, tuple[HostSpec, HostRuntime]] = {}
        for host in hosts:
            narrowed_settings = replace(settings, hosts=(host,), host_choice=(host.name,), server=host.server)
            local = host.is_local  # this machine's files: only its runtime reads them
            listens = self.hub.for_host(host)
            narrowed = replace(
                options, control_plane=options.control_plane and local, claude=options.claude and local,
                problems=listens.problem,
            )  # fmt: skip
            self.runtimes[host.name] = (host, make_runtime(narrowed_settings, listens, narrowed))
        for _host, runtime in self.runtimes.values():
            runtime.build()
        self._remote_planes(options.control_plane)
        self.fleet = HostsFleet({name: (h, rt.fleet) for name, (h, rt) in self.runtimes.items() if rt.fleet is not None})
        self.sidecar = HostsSidecar(self.runtimes)
        self.tmux = HostsTmux(
            {
                name: rt.fleet.commands
                for name, (_h, rt) in self.runtimes.items()
                if rt.fleet is not None and rt.fleet.commands is not None
            }
        )

    def _remote_planes(self, wanted: bool) -> None:
        """Another host's projects: its files stay there, read by its own nbs-tui over ssh
        (`nbs_tui.runtime.remote_plane`); set after `build`, so that host's sidecar never gets it."""
        from nbs_tui.lifecycle.host import host_of
        from nbs_tui.runtime.remote_plane import HostsControl, RemoteControlPlane

        remotes = []
        for host, runtime in self.runtimes.values():
            if host.is_local or not wanted:
                continue
            commands = runtime.fleet.commands if runtime.fleet is not None else None
            there = host_of(commands) if commands is not None else None
            remote = RemoteControlPlane(host, there, self.hub.for_host(host).control_event, runtime.problem)
            runtime.control_plane = remote
            remotes.append(remote)
        if remotes:
            local = self.local
            self.hub.control = HostsControl(local.control_plane if local is not None else None, remotes)

    @property
    def local(self) -> HostRuntime | None:
        found = self.runtimes.get(LOCAL)
        return found[1] if found is not None else None

    def states(self) -> tuple[HostState, ...]:
        return self.hub.states()

    def start(self) -> None:
        """Start every host's runtime; one that fails is said for that host, the others run."""
        for name, (_host, runtime) in self.runtimes.items():
            try:
                runtime.start()
            except Exception as error:  # e.g. no tmux here: that host is out, the others go on
                log.exception("host %s did not start", name)
                runtime.problem("tmux", f"did not start: {error}")
                self.hub.state_changed(name, connected=False, message=f"{name}: {error}")

    def wait_started(self, timeout: float) -> bool:
        return all(runtime.wait_started(timeout) for _host, runtime in self.runtimes.values())

    def stop(self) -> None:
        """Stop every host at once: one slow to stop (ssh timing out) holds up no other."""
        threads = [
            threading.Thread(target=runtime.stop, name=f"nbs-host-stop-{name}", daemon=True)
            for name, (_host, runtime) in self.runtimes.items()
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
