"""The dashboard on real tmux: each test gets a private server from libtmux's pytest plugin."""

from __future__ import annotations

import libtmux
import pytest
from textual.widgets import Static

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.grid import PaneGrid, Thumbnail
from nbs_tui.widgets.help_screen import HelpScreen
from nbs_tui.widgets.pane_view import PaneView
from tests.app.helpers import static_text, wait_for, widget_text

SIZE = (160, 48)


def _app(server: libtmux.Server) -> NbsApp:
    return create_app(Settings(server=ServerAddress(socket_name=server.socket_name)))


def _window(session: libtmux.Session, name: str, text: str) -> str:
    window = session.new_window(window_name=name, window_shell=f"printf '{text}\\n'; sleep 600", attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    return pane.pane_id


async def _select(app: NbsApp, pilot: object, pane_id: str) -> None:
    table = app.query_one(FleetList)
    order = table.row_keys
    steps = order.index(pane_id) - table.cursor_row
    for _ in range(abs(steps)):
        await pilot.press("j" if steps > 0 else "k")  # type: ignore[attr-defined]


async def test_select_a_pane_and_see_its_text_in_the_mirror(session: libtmux.Session) -> None:
    first = _window(session, "alpha", "MARKER-ALPHA")
    second = _window(session, "beta", "MARKER-BETA")
    app = _app(session.server)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(FleetList)
        await wait_for(pilot, lambda: {first, second} <= set(table.row_keys), what="panes listed")
        mirror = app.query_one(PaneView)
        await _select(app, pilot, second)
        assert app.dashboard.selected_id == second
        await wait_for(pilot, lambda: "MARKER-BETA" in widget_text(mirror.rows), what="beta in the mirror")
        await _select(app, pilot, first)
        await wait_for(pilot, lambda: "MARKER-ALPHA" in widget_text(mirror.rows), what="alpha in the mirror")


async def test_a_killed_pane_leaves_the_list(session: libtmux.Session) -> None:
    doomed = _window(session, "doomed", "GOODBYE")
    app = _app(session.server)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(FleetList)
        await wait_for(pilot, lambda: doomed in set(table.row_keys), what="pane listed")
        session.server.cmd("kill-pane", "-t", doomed)
        await wait_for(pilot, lambda: doomed not in set(table.row_keys), what="pane gone")
        assert app.dashboard.selected_id != doomed


async def test_server_gone_then_back(server: libtmux.Server) -> None:
    server.new_session(session_name="first", window_command="printf 'BEFORE\\n'; sleep 600")
    app = _app(server)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(FleetList)
        mirror = app.query_one(PaneView)
        await wait_for(pilot, lambda: table.row_count == 1, what="the first fleet")
        await wait_for(pilot, lambda: "BEFORE" in widget_text(mirror.rows), what="the first screen")
        server.kill()
        banner = app.query_one("#banner", Static)
        await wait_for(pilot, lambda: banner.display, what="the server-gone banner")
        text = static_text(banner)
        assert "is gone" in text and "reconnecting" in text
        assert table.row_count == 1 and "BEFORE" in widget_text(mirror.rows), "the last view is kept"
        server.new_session(session_name="second", window_command="printf 'AFTER\\n'; sleep 600")
        await wait_for(pilot, lambda: not banner.display, what="the banner to clear")
        await wait_for(
            pilot, lambda: any("second" in str(table.get_row_at(i)[0]) for i in range(table.row_count)),
            what="the new fleet",
        )
        await wait_for(pilot, lambda: "AFTER" in widget_text(mirror.rows), what="the new screen")


async def test_no_server_at_start_says_what_to_do(server: libtmux.Server) -> None:
    app = _app(server)  # the fixture's server has no session yet, so no server runs
    async with app.run_test(size=SIZE) as pilot:
        empty = app.query_one("#empty", Static)
        await wait_for(pilot, lambda: "No tmux server" in static_text(empty), what="the empty state")
        assert "nbs-tui demo" in static_text(empty)
        server.new_session(session_name="late", window_command="printf 'LATE\\n'; sleep 600")
        await wait_for(pilot, lambda: not empty.display, what="the fleet to appear")


async def test_grid_shows_live_thumbnails(session: libtmux.Session) -> None:
    panes = [_window(session, f"g{i}", f"THUMB-{i}") for i in range(3)]
    app = _app(session.server)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.query_one(FleetList).row_count >= 4, what="panes listed")
        await pilot.press("2")
        grid = app.query_one(PaneGrid)
        await wait_for(pilot, lambda: len(grid.query(Thumbnail)) >= 4, what="thumbnails")
        for i, pane_id in enumerate(panes):
            thumb = grid.thumbnail(pane_id)
            assert thumb is not None

            def shows(t: Thumbnail = thumb, i: int = i) -> bool:
                return f"THUMB-{i}" in widget_text(t)

            await wait_for(pilot, shows, what=f"thumbnail {i}")
        session.server.cmd("send-keys", "-t", session.windows[0].panes[0].pane_id or "", "echo LIVE-UPDATE", "Enter")
        first = grid.thumbnail(session.windows[0].panes[0].pane_id or "")
        assert first is not None
        await wait_for(pilot, lambda: "LIVE-UPDATE" in widget_text(first), what="a live thumbnail")


async def test_help_screen_opens(session: libtmux.Session) -> None:
    app = _app(session.server)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


@pytest.fixture(autouse=True)
def _quiet_shell(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PS1", "$ ")


async def test_sessions_filter_with_no_match_says_so(session: libtmux.Session) -> None:
    settings = Settings(server=ServerAddress(socket_name=session.server.socket_name), sessions=("nowhere",))
    app = create_app(settings, control_plane=False, claude=False)
    async with app.run_test(size=SIZE) as pilot:
        empty = app.query_one("#empty", Static)
        await wait_for(pilot, lambda: "has no panes to watch in sessions nowhere" in static_text(empty), what="empty")
