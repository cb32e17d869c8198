"""Snapshot of the scrollback view at 160x48: a pane's history read from tmux, searched, the
current match and the others highlighted, the match count in the border. One still pane on a
private tmux server prints a fixed log (colours included) and sleeps; clocks are frozen."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from tests.app.helpers import wait_for, widget_text
from tests.app.snapfleet import StableFleet

SIZE = (160, 48)
LOG = (
    "for i in $(seq 1 120); do "
    "if [ $((i % 25)) -eq 0 ]; then printf '\\033[1;31mERROR\\033[0m step %03d: \\033[33mretrying fetch\\033[0m\\n' $i; "
    "else printf '\\033[2m12:%02d\\033[0m step %03d: \\033[32mok\\033[0m fetched page %d\\n' $((i % 60)) $i $i; fi; "
    "done; exec sleep 100000"
)


def start_log_fleet(server: libtmux.Server) -> str:
    session = server.new_session(session_name="logs", window_name="fetch", window_command=f"sh -c {shlex.quote(LOG)}", x=72, y=30)
    pane = session.active_pane
    assert pane is not None and pane.pane_id is not None
    server.cmd("select-pane", "-t", pane.pane_id, "-T", "fetch log")
    return str(pane.pane_id)


@pytest.fixture
def log_app(server: libtmux.Server) -> Iterator[NbsApp]:
    start_log_fleet(server)
    address = ServerAddress(socket_name=server.socket_name)
    settings = Settings(server=address, poll_disabled=True, plan_policy="off", bell=False)
    app = create_app(
        settings, lambda listener: StableFleet(address, listener),
        control_plane=False, claude=False, sidecar=False, clock=lambda: 1000.0, wall=lambda: 1_764_000_000.0,
    )  # fmt: skip
    app.notify = lambda *args, **kwargs: None  # type: ignore[method-assign]
    yield app


async def _searched(pilot: Pilot[object]) -> None:
    app = pilot.app
    assert isinstance(app, NbsApp)
    await wait_for(pilot, lambda: "step 120" in widget_text(app.dashboard.mirror.rows), timeout=20, what="the log mirrored")
    app.dashboard.status_bar.set_server("tmux server -L nbs-snapshot")
    await pilot.press("pageup")
    await wait_for(pilot, lambda: app.dashboard.scrollback.display and app.dashboard.scrollback.lines.texts, what="the history")
    await pilot.press("slash", *"error", "enter", "N")
    await wait_for(pilot, lambda: len(app.dashboard.scrollback.lines.matches) == 4, what="the matches")
    await pilot.pause(0.3)


def test_scrollback_search(log_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(log_app, terminal_size=SIZE, run_before=_searched)
