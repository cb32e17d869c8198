"""Snapshot of the dashboard with several hosts: every pane named with its host, the status bar
naming each host's state (one offline, its panes kept), and the details of an offline host's pane.

The snapshot fleet's two sessions stand for two hosts (``alpha`` on hosta, ``beta`` on hostb): the
panes carry the host and qualified ids exactly as `nbs_tui.runtime.hosts` hands them to the app, so
this pins the look; tests/remote/test_ssh_hosts.py runs the real thing over ssh.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostState, split_pane_id
from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.dashboard.messages import HostsChanged
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.port import FleetListener, FleetPort
from tests.app.snapfleet import StableFleet, start_snapshot_fleet
from tests.app.test_snapshots import FROZEN_WALL, SIZE, _settled

HOST_OF_SESSION = {"alpha": "hosta", "beta": "hostb"}


def _on_host(pane: PaneInfo) -> PaneInfo:
    host = HOST_OF_SESSION[pane.session_name]
    return replace(pane, pane_id=f"{host}:{pane.pane_id}", host=host)


class _HostsListener(FleetListener):
    def __init__(self, listener: FleetListener, fleet: _TwoHosts) -> None:
        self.listener = listener
        self.fleet = fleet

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        shown = [_on_host(p) for p in panes]
        self.fleet.raw = {p.pane_id: p.pane_id.partition(":")[2] for p in shown}
        self.listener.fleet_changed(shown)

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        by_raw = {raw: q for q, raw in self.fleet.raw.items()}
        self.listener.screens_changed(frozenset(by_raw[p] for p in pane_ids if p in by_raw))

    def connection_changed(self, connected: bool, message: str) -> None:
        self.listener.connection_changed(connected, message)


class _TwoHosts(FleetPort):
    """The snapshot fleet, its sessions shown as two hosts' panes (ids ``hosta:%N``)."""

    def __init__(self, server: ServerAddress, listener: FleetListener) -> None:
        self.raw: dict[PaneId, PaneId] = {}
        self.inner = StableFleet(server, _HostsListener(listener, self))

    def start(self) -> None:
        self.inner.start()

    def wait_seeded(self, timeout: float) -> bool:
        return self.inner.wait_seeded(timeout)

    def stop(self) -> None:
        self.inner.stop()

    def panes(self) -> list[PaneInfo]:
        return [_on_host(p) for p in self.inner.panes()]

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        return self.inner.screen(split_pane_id(pane_id)[1])

    def set_watched(self, consumer: str, pane_ids: Iterable[PaneId]) -> None:
        self.inner.set_watched(consumer, [split_pane_id(p)[1] for p in pane_ids])

    def capture_text(self, pane_id: PaneId) -> str:
        return self.inner.capture_text(split_pane_id(pane_id)[1])

    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        return self.inner.send_text(split_pane_id(pane_id)[1], text, guard=guard)

    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        return self.inner.send_keys(split_pane_id(pane_id)[1], *keys, guard=guard)


@pytest.fixture
def hosts_app(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[NbsApp]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    start_snapshot_fleet(server)
    address = ServerAddress(socket_name=server.socket_name)
    settings = Settings(server=address, poll_disabled=True, plan_policy="off", bell=False)
    app = create_app(
        settings,
        lambda listener: _TwoHosts(address, listener),
        control_plane=False,
        claude=False,
        clock=lambda: 1000.0,
        wall=lambda: FROZEN_WALL,
    )
    app.notify = lambda *args, **kwargs: None  # type: ignore[method-assign]
    yield app
    monkeypatch.undo()
    time.tzset()


def test_two_hosts_one_offline(hosts_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot)
        app = hosts_app
        app.post_message(
            HostsChanged(
                (
                    HostState("hosta", True, "connected to hosta", "sidecar: here", True),
                    HostState("hostb", False, "hostb: connection to hostb lost"),
                )
            )
        )
        app.dashboard.status_bar.set_server("2 hosts")
        beta = next(p.pane_id for p in app.state.panes if p.host == "hostb")
        app.dashboard.select_pane(beta)
        await pilot.pause(0.5)

    assert snap_compare(hosts_app, terminal_size=SIZE, run_before=run_before)


async def test_the_list_groups_panes_under_a_header_per_host_and_the_cursor_steps_over_them(
    hosts_app: NbsApp,
) -> None:
    from nbs_tui.core.fleet.fleet_filter import FleetFilter
    from nbs_tui.widgets.fleet_rows import HEADER

    app = hosts_app
    async with app.run_test(size=SIZE) as pilot:
        await _settled(pilot)  # type: ignore[arg-type]
        app.post_message(
            HostsChanged(
                (
                    HostState("hosta", True, "", "sidecar: hosta pid 7 since 10:00", False),
                    HostState("hostb", False, "lost"),
                    HostState("hostc", None, ""),
                )
            )
        )
        await pilot.pause(0.2)
        table = app.dashboard.fleet_list
        keys = table.row_keys
        assert keys[0] == HEADER + "hosta" and HEADER + "hostb" in keys and keys[-1] == HEADER + "hostc"
        a = [p.pane_id for p in app.state.panes if p.host == "hosta"]
        b = [p.pane_id for p in app.state.panes if p.host == "hostb"]
        assert keys == [HEADER + "hosta", *a, HEADER + "hostb", *b, HEADER + "hostc"]  # hostc: no panes yet
        header = [str(cell) for cell in table.get_row(HEADER + "hosta")]
        assert header[0] == "▾ hosta" and "online" in header[1] and "3 panes" in header and "sidecar hosta pid 7" in header
        assert "offline" in str(table.get_row(HEADER + "hostb")[1])
        assert "connecting" in str(table.get_row(HEADER + "hostc")[1])
        table.focus()
        app.dashboard.select_pane(a[-1])
        await pilot.pause(0.1)
        await pilot.press("down")  # over hostb's header, onto its first pane
        await pilot.pause(0.1)
        assert table.selected_pane_id == b[0] and app.dashboard.selected_id == b[0]
        await pilot.press("up")  # and back over it
        await pilot.pause(0.1)
        assert table.selected_pane_id == a[-1]
        app.dashboard.select_pane(a[0])
        await pilot.pause(0.1)
        await pilot.press("up")  # the first header: nowhere to go but stay on a pane
        await pilot.pause(0.1)
        assert table.selected_pane_id == a[0]
        table.set_filter(FleetFilter.parse("host:hostb"))
        await pilot.pause(0.1)
        assert table.row_keys == [HEADER + "hostb", *b]
        assert table.selected_pane_id in b
