"""The app's frames stop while no pane changes, and the first change starts one.

An idle fleet then costs the dashboard no 30 Hz tick; what the frame draws (here the grid's
thumbnails, which only the frame repaints) must still follow the very next change.
"""

from __future__ import annotations

import libtmux

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.widgets.grid import PaneGrid, Thumbnail
from tests.app.helpers import FrameLog, wait_for, widget_text

SIZE = (160, 48)


async def test_an_idle_fleet_stops_the_frames_and_a_change_starts_one(session: libtmux.Session) -> None:
    """While asleep nothing is scheduled, and a frame runs only for a change: the fleet may
    still settle after the first sleep (the shell's prompt, a thumbnail's first read, a pane's
    command re-listed: seen in CI on a loaded machine), and each such change may run one frame,
    never more (the old timer ran one more that found nothing, for every wake)."""
    window = session.new_window(window_name="quiet", window_shell="printf 'QUIET-PANE\\n'; exec cat", attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    app = create_app(Settings(server=ServerAddress(socket_name=session.server.socket_name)))
    async with app.run_test(size=SIZE) as pilot:
        frames = FrameLog(app.frames)
        await pilot.press("2")
        grid = app.query_one(PaneGrid)
        await wait_for(pilot, lambda: grid.thumbnail(pane.pane_id or "") is not None, what="the thumbnail")
        thumb = grid.thumbnail(pane.pane_id)
        assert isinstance(thumb, Thumbnail)
        await wait_for(pilot, lambda: "QUIET-PANE" in widget_text(thumb), what="the pane's first text")
        await wait_for(pilot, lambda: app.frames.asleep, timeout=20, what="the frames asleep")
        quiet = frames.mark()
        ticks = app.frames.frames_run
        await pilot.pause(0.5)
        causes, ran = frames.since(quiet)
        assert app.frames.frames_run - ticks == len(ran)
        assert len(ran) <= causes, f"frames ran while nothing changed: {len(ran)} frames for {causes} changes"
        assert all(panes or whole for panes, whole in ran), "a frame ran with nothing to draw"

        pane.send_keys("WOKEN-BY-THIS", enter=True)
        await wait_for(pilot, lambda: app.frames.frames_run > ticks + len(ran), what="a frame run for the change")
        await wait_for(pilot, lambda: "WOKEN-BY-THIS" in widget_text(thumb), what="the change drawn")
        await wait_for(pilot, lambda: app.frames.asleep, timeout=20, what="the frames asleep again")
