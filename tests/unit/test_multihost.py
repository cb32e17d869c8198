"""`nbs_tui.runtime.hosts.HostsHub`: each host's news qualified and merged for the one listener."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nbs_tui.core.fleet.host_spec import LOCAL, HostSpec, HostState
from nbs_tui.core.fleet.model import AgentState, Detection, PaneId, PaneInfo
from nbs_tui.core.sidecar.lease_rules import Lease
from nbs_tui.core.sidecar.pane_sidecar import SidecarStatus
from nbs_tui.runtime.contract import RuntimeListener
from nbs_tui.runtime.hosts import HostsHub
from nbs_tui.sidecar.events import SidecarEvent, StatusChange


class _Listener(RuntimeListener):
    def __init__(self) -> None:
        self.fleets: list[list[PaneInfo]] = []
        self.connections: list[tuple[bool, str]] = []
        self.states: list[tuple[HostState, ...]] = []
        self.events: list[SidecarEvent] = []
        self.problems: list[tuple[str, str]] = []
        self.screens: list[frozenset[PaneId]] = []

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self.fleets.append(list(panes))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        self.screens.append(pane_ids)

    def connection_changed(self, connected: bool, message: str) -> None:
        self.connections.append((connected, message))

    def claude_facts_changed(self, facts: Mapping[PaneId, Any]) -> None:
        pass

    def sidecar_event(self, event: SidecarEvent) -> None:
        self.events.append(event)

    def control_event(self, event: Any) -> None:
        pass

    def problem(self, source: str, message: str) -> None:
        self.problems.append((source, message))

    def hosts_changed(self, states: tuple[HostState, ...]) -> None:
        self.states.append(states)


def _pane(pane_id: str, session: str = "work") -> PaneInfo:
    return PaneInfo(pane_id, session, 0, "w", 0, "t", "claude", "/w", 1, 80, 24, is_agent=True)


HOSTS = (HostSpec(LOCAL), HostSpec("hosta", "hosta"))


def test_fleets_are_qualified_merged_in_host_order_and_an_offline_host_keeps_its_panes() -> None:
    listener = _Listener()
    hub = HostsHub(HOSTS, listener, listener.problem)
    local, far = hub.for_host(HOSTS[0]), hub.for_host(HOSTS[1])
    far.fleet_changed([_pane("%0")])
    local.fleet_changed([_pane("%0"), _pane("%1")])
    assert [(p.pane_id, p.host, p.target) for p in listener.fleets[-1]] == [
        ("%0", "local", "local:work:0.0"), ("%1", "local", "local:work:0.0"), ("hosta:%0", "hosta", "hosta:work:0.0"),
    ]  # fmt: skip
    far.screens_changed(frozenset({"%0"}))
    local.screens_changed(frozenset({"%1"}))
    assert listener.screens == [frozenset({"hosta:%0"}), frozenset({"%1"})]
    # connected as a whole while any host is; every host's state to the listener that wants it
    local.connection_changed(True, "connected here")
    far.connection_changed(True, "connected to hosta")
    far.connection_changed(False, "hosta: connection to hosta lost")
    assert listener.connections == [(True, "connected here")]
    assert listener.states[-1] == (HostState(LOCAL, True, "connected here"), HostState("hosta", False, "hosta: connection to hosta lost"))
    assert [p.pane_id for p in listener.fleets[-1]][-1] == "hosta:%0"  # the last view kept
    local.connection_changed(False, "server exited")
    assert listener.connections[-1] == (False, "server exited; hosta: connection to hosta lost")


def test_sidecar_events_problems_and_leases_name_their_host() -> None:
    listener = _Listener()
    hub = HostsHub(HOSTS, listener, listener.problem)
    far = hub.for_host(HOSTS[1])
    status = SidecarStatus("%3", 1.0, Detection(AgentState.IDLE), None, 0.0, None, True, 300.0, "no-prompts", False, False)
    far.sidecar_event(StatusChange("%3", 1.0, status=status))
    told = listener.events[-1]
    assert isinstance(told, StatusChange) and told.pane_id == "hosta:%3" and told.status.pane_id == "hosta:%3"
    far.problem("sidecar", "%3 poll: failed")
    far.problem("tmux", "hosta: connection refused")
    assert listener.problems == [("sidecar", "hosta: %3 poll: failed"), ("tmux", "hosta: connection refused")]
    far.lease_changed(Lease(host="me", pid=1, token="t", seq=1, ttl=8.0, since=0), True)
    assert listener.states[-1][1].acting is True and listener.states[-1][1].lease
