"""The app's frame timer sleeps while no pane changes, and the first change wakes it.

An idle fleet then costs the dashboard no 30 Hz tick; what the tick draws (here the grid's
thumbnails, which only the frame repaints) must still follow the very next change.
"""

from __future__ import annotations

import libtmux

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.model import ServerAddress
from nbs_tui.widgets.grid import PaneGrid, Thumbnail
from tests.app.helpers import only_a_quiet_pane, wait_for, widget_text

SIZE = (160, 48)


async def test_an_idle_fleet_stops_the_frame_timer_and_a_change_restarts_it(session: libtmux.Session) -> None:
    # The fleet must really be idle: a shell's prompt printed late woke the timer (a real
    # change) and failed the check below (seen in CI: 9 frames against 7).
    pane, pane_id = only_a_quiet_pane(session)
    app = create_app(Settings(server=ServerAddress(socket_name=session.server.socket_name)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        grid = app.query_one(PaneGrid)
        await wait_for(pilot, lambda: grid.thumbnail(pane_id) is not None, what="the thumbnail")
        thumb = grid.thumbnail(pane_id)
        assert isinstance(thumb, Thumbnail)
        await wait_for(pilot, lambda: "QUIET-PANE" in widget_text(thumb), what="the pane's first text")
        await wait_for(pilot, lambda: app.bridge.frames_asleep, timeout=20, what="the frame timer asleep")
        ticks = app.frames_run
        await pilot.pause(0.5)
        assert app.frames_run == ticks, "frames ran while nothing changed"

        pane.send_keys("WOKEN-BY-THIS", enter=True)
        await wait_for(pilot, lambda: app.frames_run > ticks, what="a frame run for the change")
        await wait_for(pilot, lambda: "WOKEN-BY-THIS" in widget_text(thumb), what="the change drawn")
