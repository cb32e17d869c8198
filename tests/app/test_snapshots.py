"""Snapshot tests of the main views at 160x48 on a deterministic real-tmux fleet.

Clocks are frozen (every duration reads 0s or the full poll interval), the sidecar runs but
never acts (polls and plan answers are off), Claude Code signals and the control plane are off.
Update the snapshots with ``pytest tests/app/test_snapshots.py --snapshot-update`` and look at
``snapshot_report.html`` when one fails.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.dashboard.messages import ConnectionChanged
from nbs_tui.widgets.grid import Thumbnail
from tests.app.helpers import wait_for, widget_text
from tests.app.snapfleet import LAYOUT, StableFleet, start_snapshot_fleet

SIZE = (160, 48)
FROZEN_WALL = 1_764_000_000.0


@pytest.fixture
def snapshot_app(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[NbsApp]:
    yield from frozen_app(server, monkeypatch, FROZEN_WALL)


def frozen_app(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch, wall: float) -> Iterator[NbsApp]:
    """The app on the snapshot fleet, its clocks frozen (the wall clock at ``wall``)."""
    monkeypatch.setenv("TZ", "UTC")  # history times are shown in local time
    time.tzset()
    start_snapshot_fleet(server)
    address = ServerAddress(socket_name=server.socket_name)
    settings = Settings(server=address, poll_disabled=True, plan_policy="off", bell=False)
    app = create_app(
        settings,
        lambda listener: StableFleet(address, listener),
        control_plane=False,
        claude=False,
        clock=lambda: 1000.0,
        wall=lambda: wall,
    )
    app.notify = lambda *args, **kwargs: None  # type: ignore[method-assign]  # toasts come and go on their own clock
    yield app
    monkeypatch.undo()
    time.tzset()


async def _settled(pilot: Pilot[object], timeout: float = 20.0, extra_agents: int = 0, mirror: bool = True) -> None:
    """Wait until every pane is listed and drawn and every agent has its state (``extra_agents``:
    agents added to `LAYOUT` by a variant, none of them waiting on a person; ``mirror``: the
    layout shows the mirror, a phone's does not)."""
    app = pilot.app
    assert isinstance(app, NbsApp)
    deadline = time.monotonic() + timeout
    agents = sum(1 for entry in LAYOUT if entry[2] is not None) + extra_agents
    waiting = sum(1 for entry in LAYOUT if entry[2] in ("permission", "question", "plan"))
    while time.monotonic() < deadline:
        ready = (
            len(app.state.panes) == len(LAYOUT) + extra_agents
            and len(app.state.statuses) == agents
            and all(s.state is not None for s in app.state.statuses.values())
            and app.fleet is not None
            and all(app.fleet.screen(p.pane_id) is not None for p in app.state.panes)
            and (not mirror or "Brewing" in widget_text(app.dashboard.mirror.rows))
            # every pane's quiet clock has started (a shell pane's from its first screen news)
            # and the list shows it (the Quiet cells are written by the 1 Hz clock)
            and all(p.pane_id in app.state.last_change for p in app.state.panes)
            # the needs-you panel lists every agent waiting on a person
            and len(app.dashboard.needs_panel.entries) == waiting
            and all(
                str(app.dashboard.fleet_list.get_cell(p.pane_id, "idle")).strip() not in ("", "—")
                for p in app.state.panes
            )
        )
        if ready:
            break
        await pilot.pause(0.1)
    else:
        raise AssertionError(
            f"the snapshot fleet did not settle: {len(app.state.panes)} panes, statuses "
            f"{ {k: (v.state, v.reason) for k, v in app.state.statuses.items()} }, "
            f"agents {[p.is_agent for p in app.state.panes]}, mirror {widget_text(app.dashboard.mirror.rows)[:300]!r}"
        )
    app.dashboard.status_bar.set_server("tmux server -L nbs-snapshot")
    await wait_for(pilot, lambda: "nbs-snapshot" in str(app.dashboard.status_bar.render()), what="the server named")


def _then(*keys: str) -> Callable[[Pilot[object]], Awaitable[None]]:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot)
        for key in keys:
            await pilot.press(key)
        await pilot.pause(0.3)
        if "2" in keys:
            app = pilot.app
            thumbs = list(app.query(Thumbnail))
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not all(widget_text(t).strip() for t in thumbs):
                await pilot.pause(0.1)
        await pilot.pause(0.2)

    return run_before


def test_dashboard(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=_then())


def test_dashboard_permission_pane_selected(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=_then("j"))


def test_grid(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=_then("2"))


def test_zoomed_mirror(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=_then("j", "z"))


def test_help(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=_then("question_mark"))


def test_server_gone_banner(
    server: libtmux.Server, snapshot_app: NbsApp, snap_compare: Callable[..., bool]
) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot)
        # Really lose the server (a fake message alone races the live fleet's own news), then
        # pin the banner's wording: the real one names this test's random socket.
        server.kill()
        deadline = time.monotonic() + 15
        while snapshot_app.dashboard.news.connected is not False and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert snapshot_app.dashboard.news.connected is False, "the app never noticed the server was gone"
        snapshot_app.post_message(ConnectionChanged(False, "server exited"))
        await pilot.pause(0.3)

    assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)


def test_no_server_empty_state(server: libtmux.Server, snap_compare: Callable[..., bool]) -> None:
    app = create_app(
        Settings(server=ServerAddress(socket_name=server.socket_name)),
        control_plane=False, claude=False, clock=lambda: 1000.0, wall=lambda: FROZEN_WALL,
    )

    async def run_before(pilot: Pilot[object]) -> None:
        app.dashboard.status_bar.set_server("tmux server -L nbs-snapshot")
        deadline = time.monotonic() + 15
        while app.dashboard.news.connected is not False and time.monotonic() < deadline:
            await pilot.pause(0.1)
        app.dashboard.news.connection_message = ""
        app.dashboard.news.update_empty_state()
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
