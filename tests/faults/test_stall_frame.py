"""A dashboard whose UI thread spends seconds in one frame blocks no agent: the control-mode
readers are threads of their own that only append to bounded buffers, so they keep draining
tmux while the event loop is stuck (the GIL is handed over every few ms); and the feeder keeps
reading that output into the panes' screens meanwhile: at the stall's end the mirrored pane's
screen holds a line its writer wrote during the stall, which the mirror draws once it is over."""

from __future__ import annotations

import re
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
STAMP = re.compile(r"^(\d{9,}\.\d{3}) \d+ x")
"""A writer's line starts with the wall-clock time it was written (tests/faults/gapwriter.py)."""


def written_at(rows: list[str]) -> list[float]:
    """When each writer's line on these rows was written."""
    return [float(m.group(1)) for row in rows if (m := STAMP.match(row))]


async def test_a_frame_that_takes_seconds_blocks_no_pane(server: libtmux.Server, tmp_path: Path) -> None:
    writers = Writers.start(server, tmp_path)
    app = create_app(Settings(server=ServerAddress(socket_name=server.socket_name), poll_disabled=True))
    spent: list[float] = []
    stall: list[float] = []
    """The stall's start and end (wall clock: the writers' stamps)."""
    read_in_stall: list[float] = []
    """When the lines on the mirrored pane's screen were written, read at the stall's end."""

    def heavy_frame() -> None:
        began = time.monotonic()
        stall.append(time.time())
        while time.monotonic() - began < FRAME:
            sum(range(1000))  # Python work: the GIL is only given up at the switch interval
        spent.append(time.monotonic() - began)
        # still on the stuck UI thread: only the feeder can have read the output into this screen
        fleet, mirrored = app.fleet, app.dashboard.selected_id
        screen = fleet.screen(mirrored) if fleet is not None and mirrored is not None else None
        read_in_stall.extend(written_at(screen.text_lines() if screen is not None else []))
        stall.append(time.time())

    async with app.run_test(size=(160, 48)) as pilot:
        mirror = app.query_one(PaneView)
        await wait_for(pilot, lambda: "x" * 50 in widget_text(mirror.rows), what="a writer in the mirror")
        writers.reset()
        app.call_later(heavy_frame)
        await wait_for(pilot, lambda: bool(spent), what="the heavy frame")
        worst = writers.settle()
        began, ended = stall
        # read during the stall: a line written in its second half (not only what was there before)
        assert any(began + FRAME / 2 < at < ended for at in read_in_stall), (began, ended, read_in_stall[-3:])
        # and the mirror, drawing again, shows the pane as it is since
        await wait_for(pilot, lambda: max(written_at(widget_text(mirror.rows).splitlines()), default=0.0) > ended,
                       what="the mirror drawing lines written after the stall")  # fmt: skip
    print(f"one frame of {spent[0]:.1f}s: longest blocked write {worst[0]:.3f}s, longest gap {worst[1]:.3f}s")
    assert worst[0] < MAX_PAUSE, worst
