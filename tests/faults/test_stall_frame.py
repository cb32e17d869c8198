"""A dashboard whose UI thread spends seconds in one frame blocks no agent: the control-mode
readers are threads of their own that only append to bounded buffers, so they keep draining
tmux while the event loop is stuck (the GIL is handed over every few ms)."""

from __future__ import annotations

import time
from pathlib import Path

import libtmux

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.widgets.pane_view import PaneView
from tests.app.helpers import wait_for, widget_text
from tests.faults.helpers import MAX_PAUSE, Writers

FRAME = 4.0
"""Seconds the UI thread spends in one callback, holding the GIL whenever it can."""


async def test_a_frame_that_takes_seconds_blocks_no_pane(server: libtmux.Server, tmp_path: Path) -> None:
    writers = Writers.start(server, tmp_path)
    app = create_app(Settings(server=ServerAddress(socket_name=server.socket_name), poll_disabled=True))
    spent: list[float] = []

    def heavy_frame() -> None:
        began = time.monotonic()
        while time.monotonic() - began < FRAME:
            sum(range(1000))  # Python work: the GIL is only given up at the switch interval
        spent.append(time.monotonic() - began)

    async with app.run_test(size=(160, 48)) as pilot:
        mirror = app.query_one(PaneView)
        await wait_for(pilot, lambda: "x" * 50 in widget_text(mirror.rows), what="a writer in the mirror")
        writers.reset()
        app.call_later(heavy_frame)
        await wait_for(pilot, lambda: bool(spent), what="the heavy frame")
        worst = writers.settle()
        assert "x" * 50 in widget_text(mirror.rows)
    print(f"one frame of {spent[0]:.1f}s: longest blocked write {worst[0]:.3f}s, longest gap {worst[1]:.3f}s")
    assert worst[0] < MAX_PAUSE, worst
