"""A change of the mirrored pane runs a frame at once, however soon after the last one.

The fleet paces its reports (at most ~60 a second); if the app also held back a report that
came within a 60th of a second of the previous one, that change waited for the next tick of the
30 Hz frame timer, which is how markers printed by a busy agent reached the screen 30-45 ms late.
"""

from __future__ import annotations

import asyncio

import libtmux
import pytest

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from tests.app.helpers import FrameLog, wait_for

SIZE = (160, 48)


async def test_back_to_back_changes_of_the_mirrored_pane_each_run_a_frame(session: libtmux.Session) -> None:
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    app = create_app(Settings(server=ServerAddress(socket_name=session.server.socket_name)))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.frames.mirrored == pane.pane_id, what="the pane mirrored")
        await wait_for(pilot, lambda: app.frames.asleep, timeout=20, what="the frames asleep")
        app.frames.gap = 3600.0  # only the mirror's own path may run a frame from here on
        for _ in range(5):
            ran = app.frames.frames_run
            # called on another thread, as the fleet's feeder calls it
            await asyncio.to_thread(app.bridge.screens_changed, frozenset({pane.pane_id}))
            await wait_for(pilot, lambda: app.frames.frames_run > ran, timeout=2, what="a frame for the change")  # noqa: B023


async def test_a_change_of_the_mirrored_pane_runs_one_frame_and_then_nothing(session: libtmux.Session) -> None:
    """Its frame draws it, and nothing else is scheduled after it: the old 30 Hz timer, woken
    as well, ran a second frame that found nothing to do, for every line a busy mirrored agent
    printed. (Another change meanwhile, from the pane's shell, may run its own frame.)"""
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    app = create_app(Settings(server=ServerAddress(socket_name=session.server.socket_name)))
    async with app.run_test(size=SIZE) as pilot:
        frames = FrameLog(app.frames)
        await wait_for(pilot, lambda: app.frames.mirrored == pane.pane_id, what="the pane mirrored")
        await wait_for(pilot, lambda: app.frames.asleep, timeout=20, what="the frames asleep")
        for _ in range(5):
            ran = app.frames.frames_run
            mark = frames.mark()
            await asyncio.to_thread(app.bridge.screens_changed, frozenset({pane.pane_id}))
            await wait_for(pilot, lambda: app.frames.frames_run > ran, timeout=2, what="a frame for the change")  # noqa: B023
            await pilot.pause(0.15)  # several frame periods: a second frame would have run by now
            causes, drawn = frames.since(mark)
            assert any(pane.pane_id in panes for panes, _whole in drawn), "a frame drew the change"
            assert len(drawn) <= causes, f"{len(drawn)} frames for {causes} changes"
            await wait_for(pilot, lambda: app.frames.asleep, timeout=2, what="nothing scheduled after it")


async def test_a_mirror_frame_that_fails_stops_the_app_as_a_failing_handler_does(session: libtmux.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mirror's frame runs as a callback on the UI loop, not as a message: an error in it
    must still end the app with its traceback (as one in a message handler does), never be
    left to asyncio's log while the mirror silently stops."""
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    app = create_app(Settings(server=ServerAddress(socket_name=session.server.socket_name)))

    def broken() -> None:
        raise RuntimeError("the frame broke")

    with pytest.raises(RuntimeError, match="the frame broke"):
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: app.frames.mirrored == pane.pane_id, what="the pane mirrored")
            monkeypatch.setattr(app.dashboard.mirror, "screen_changed", broken)
            await asyncio.to_thread(app.bridge.screens_changed, frozenset({pane.pane_id}))
            await pilot.pause(2)
