"""The dashboard parses only what it shows: the fleet keeps a live model of the mirrored pane
and of the thumbnails on screen, and of nothing else (real tmux, the app's own TmuxFleet)."""

from __future__ import annotations

import libtmux

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.fleet import TmuxFleet
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.grid import PaneGrid
from nbs_tui.widgets.pane_view import PaneView
from tests.app.helpers import wait_for, widget_text

SIZE = (160, 48)


def _app(server: libtmux.Server) -> NbsApp:
    return create_app(Settings(server=ServerAddress(socket_name=server.socket_name)), sidecar=False)


def _window(session: libtmux.Session, name: str, text: str) -> str:
    window = session.new_window(window_name=name, window_shell=f"printf '{text}\\n'; sleep 600", attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    return pane.pane_id


async def test_only_the_mirrored_pane_and_visible_thumbnails_are_parsed(session: libtmux.Session) -> None:
    panes = [_window(session, f"w{i}", f"WATCHED-{i}") for i in range(30)]
    app = _app(session.server)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(FleetList)
        await wait_for(pilot, lambda: table.row_count >= 31, what="panes listed")
        fleet = app.fleet
        assert isinstance(fleet, TmuxFleet)
        mirror = app.query_one(PaneView)
        await wait_for(pilot, lambda: app.dashboard.selected_id is not None, what="a selection")
        assert fleet.watched() == {app.dashboard.selected_id}

        await pilot.press("j")
        selected = app.dashboard.selected_id
        assert selected is not None and fleet.watched() == {selected}
        text = f"WATCHED-{panes.index(selected)}" if selected in panes else ""
        if text:
            await wait_for(pilot, lambda: text in widget_text(mirror.rows), what="the newly selected pane mirrored")

        await pilot.press("2")  # the grid: the thumbnails on screen join the selected pane
        grid = app.query_one(PaneGrid)
        await wait_for(pilot, lambda: len(grid.visible_panes()) > 1, what="thumbnails laid out")
        await wait_for(pilot, lambda: fleet.watched() == grid.visible_panes() | {selected}, what="visible ones watched")
        visible = grid.visible_panes()
        assert len(visible) < 31, "a 160x48 grid does not show 31 thumbnails"
        shown = [p for p in panes if p in visible]
        assert shown
        thumb = grid.thumbnail(shown[-1])
        assert thumb is not None
        want = f"WATCHED-{panes.index(shown[-1])}"
        await wait_for(pilot, lambda: want in widget_text(thumb), what="a visible thumbnail drawn")
        assert all(fleet.screen(p) is None for p in panes if p not in visible and p != selected)

        await pilot.press("1")  # back to the dashboard: the grid lets go within a second
        await wait_for(pilot, lambda: fleet.watched() == {selected}, what="thumbnails unwatched")
        await wait_for(pilot, lambda: text in widget_text(mirror.rows) if text else True, what="the mirror again")
