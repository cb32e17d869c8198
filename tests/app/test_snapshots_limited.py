"""Snapshot of a usage-limited agent on the snapshot fleet (tests/app/test_snapshots.py) plus one
session replaying a limit screen recorded from Claude Code 2.1.332: the list counts down to the
reset (``⏳``), the details say which limit, when it resets and the planned resume. The frozen wall
clock (07:20 UTC) makes the countdown to the 9:25am reset a fixed 2h05m."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp
from nbs_tui.core.fleet.model import AgentState
from tests.app.helpers import wait_for, widget_text
from tests.app.snapfleet import LIMITED, start_limited_session
from tests.app.test_snapshots import FROZEN_WALL, SIZE, _settled, frozen_app

# 07:20 UTC on the snapshot fleet's day: the nearest 9:25am is ahead (a session limit resets
# within hours; read at 16:00 it would have passed)
LIMITED_WALL = FROZEN_WALL - (16 * 60 - 7 * 60 - 20) * 60


@pytest.fixture
def limited_app(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[NbsApp]:
    apps = frozen_app(server, monkeypatch, LIMITED_WALL)
    app = next(apps)
    start_limited_session(server, tmp_path)
    yield app
    next(apps, None)  # the frozen clock's teardown


def test_limited_agent_selected(limited_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    app = limited_app

    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot, extra_agents=1)
        pane_id = next(p.pane_id for p in app.state.panes if p.session_name == LIMITED[0])
        status = app.state.statuses[pane_id]
        assert status.state is AgentState.LIMITED, (status.state, status.reason)
        await wait_for(
            pilot,
            lambda: str(app.dashboard.fleet_list.get_cell(pane_id, "poll")).startswith("⏳"),
            what="the countdown to the reset in the list",
        )
        assert str(app.dashboard.fleet_list.get_cell(pane_id, "poll")) == "⏳2h05m", app.dashboard.fleet_list.get_cell(pane_id, "poll")
        app.dashboard.select_pane(pane_id)
        await wait_for(pilot, lambda: "resets 9:25am" in widget_text(app.dashboard.detail), what="the limit in the details")
        await wait_for(pilot, lambda: "Usage limit reached" in widget_text(app.dashboard.mirror.rows), what="the limit in the mirror")
        await pilot.pause(0.3)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
