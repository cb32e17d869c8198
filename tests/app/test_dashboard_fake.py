"""The dashboard's wiring on a fake fleet: exact control over what the fleet says and when."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from nbs_tui.app import NbsApp, create_app
from nbs_tui.claude.watcher import ClaudeSignals
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.dashboard.messages import HistoryEntry, PaneStatus, PaneStatusChanged
from nbs_tui.tmux.port import FleetListener
from nbs_tui.widgets.detail_panel import DetailPanel
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.grid import DENSITIES, PaneGrid, Thumbnail
from nbs_tui.widgets.help_screen import HelpScreen
from nbs_tui.widgets.pane_view import PaneView
from tests.app.fakes import FakeFleet, pane_info
from tests.app.helpers import static_text, wait_for, widget_text

PANES = [pane_info("%1", 0), pane_info("%2", 1), pane_info("%3", 2, agent=False)]


def _app(panes: Any = PANES, *, claude: bool = False) -> tuple[NbsApp, dict[str, FakeFleet]]:
    holder: dict[str, FakeFleet] = {}

    def factory(listener: FleetListener) -> FakeFleet:
        holder["fleet"] = FakeFleet(listener, panes)
        return holder["fleet"]

    # the backends that read screens and files run elsewhere; here the test plays them
    return create_app(Settings(), factory, control_plane=False, sidecar=False, claude=claude), holder


async def test_selecting_a_pane_shows_its_screen_in_the_mirror() -> None:
    app, holder = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        fleet = holder["fleet"]
        fleet.feed("%1", "first pane says hello")
        fleet.feed("%2", "second pane says bye")
        mirror = app.query_one(PaneView)
        await wait_for(pilot, lambda: "hello" in widget_text(mirror.rows), what="pane 1 in the mirror")
        await pilot.press("j")
        await wait_for(pilot, lambda: "bye" in widget_text(mirror.rows), what="pane 2 in the mirror")
        assert app.dashboard.selected_pane() == PANES[1]
        fleet.feed("%2", "\r\nmore output")
        await wait_for(pilot, lambda: "more output" in widget_text(mirror.rows), what="live update")


async def test_zoom_and_back() -> None:
    app, _ = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("z")
        assert app.screen.has_class("zoomed")
        assert not app.query_one("#side").display or app.query_one("#side").region.width == 0
        await pilot.press("escape")
        assert not app.screen.has_class("zoomed")


async def test_grid_shows_a_thumbnail_per_pane_and_opens_one() -> None:
    app, holder = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        holder["fleet"].feed("%3", "a shell prompt $")
        await pilot.press("2")
        grid = app.query_one(PaneGrid)
        await wait_for(pilot, lambda: len(grid.query(Thumbnail)) == 3, what="three thumbnails")
        thumb = grid.thumbnail("%3")
        assert thumb is not None and thumb.has_class("non-agent")
        await wait_for(pilot, lambda: "shell prompt" in widget_text(thumb), what="thumbnail text")
        await pilot.press("right", "right")
        assert app.dashboard.selected_id == "%3"
        await pilot.press("enter")
        assert app.dashboard.view == "dashboard" and app.dashboard.selected_id == "%3"


async def test_help_screen_opens_and_closes() -> None:
    app, _ = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        ids = {row[2] for row in app.screen.rows}
        assert {"pane.next", "view.zoom", "view.grid", "app.help"} <= ids
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_palette_has_a_command_for_every_action_and_every_pane() -> None:
    app, _ = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in ("Zoom", "Grid", "List", "Control", "Details", "Help", "Show pane fleet:2.0"):
            assert wanted in titles


async def test_a_pane_that_goes_away_leaves_the_list() -> None:
    app, holder = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(FleetList)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("j")
        holder["fleet"].set_panes([PANES[0], PANES[2]])
        await wait_for(pilot, lambda: table.row_count == 2, what="row removed")
        assert app.dashboard.selected_id in {"%1", "%3"}


async def test_server_gone_banner_keeps_the_view_and_clears_on_reconnect() -> None:
    app, holder = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        holder["fleet"].feed("%1", "still here")
        mirror = app.query_one(PaneView)
        await wait_for(pilot, lambda: "still here" in widget_text(mirror.rows))
        holder["fleet"].listener.connection_changed(False, "server exited")
        banner = app.query_one("#banner", Static)
        await wait_for(pilot, lambda: banner.display, what="banner")
        assert "is gone" in static_text(banner) and "reconnecting" in static_text(banner)
        assert "still here" in widget_text(mirror.rows)
        holder["fleet"].listener.connection_changed(True, "")
        await wait_for(pilot, lambda: not banner.display, what="banner cleared")


async def test_empty_fleet_says_what_to_do() -> None:
    app, _ = _app(panes=[])
    async with app.run_test(size=(160, 48)) as pilot:
        empty = app.query_one("#empty", Static)
        await wait_for(pilot, lambda: "nbs-tui demo" in static_text(empty), what="empty state")
        assert empty.display


async def test_sidecar_news_reaches_list_grid_and_details() -> None:
    app, _ = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.post_message(
            PaneStatusChanged(
                "%1",
                PaneStatus("%1", AgentState.PERMISSION, reason="tool approval menu"),
                HistoryEntry(0.0, "working → permission"),
            )
        )
        detail = app.query_one(DetailPanel)
        await wait_for(pilot, lambda: "working → permission" in static_text(detail), what="history")
        assert "tool approval menu" in static_text(detail)
        assert "permission" in str(app.query_one(FleetList).get_cell("%1", "state"))
        assert "1 permission" in str(app.dashboard.status_bar.render())
        # the hidden grid has no thumbnails yet (they cost the first frame); shown, it has
        # one per pane, with the news that came while it was hidden
        grid = app.query_one(PaneGrid)
        assert grid.thumbnails == []
        app.dashboard.action_show_view("grid")
        await pilot.pause()
        assert [t.pane_id for t in grid.thumbnails] == ["%1", "%2", "%3"]
        thumb = grid.thumbnail("%1")
        assert thumb is not None and "permission" in str(thumb.border_subtitle)


async def test_screen_changes_are_coalesced_per_frame() -> None:
    app, holder = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        mirror = app.query_one(PaneView)
        calls: list[int] = []
        original = mirror.screen_changed

        def counting() -> None:
            calls.append(1)
            original()

        mirror.screen_changed = counting  # type: ignore[method-assign]
        for i in range(100):
            holder["fleet"].feed("%1", f"line {i}\r\n")
        await wait_for(pilot, lambda: calls, what="a frame")
        await pilot.pause(0.3)  # a window for any further repaints (what is asserted is their count)
        assert len(calls) <= 3, "a hundred changes between frames must cost one repaint, not a hundred"
        assert "line 99" in widget_text(mirror.rows)


async def test_claude_signals_are_fused_with_the_screen() -> None:
    from nbs_tui.claude.watcher import ClaudeFacts as RawFacts
    from nbs_tui.core.detection.fusion import Reading, Source
    from nbs_tui.dashboard.messages import ClaudeSignalsChanged

    app, _ = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.post_message(PaneStatusChanged("%1", PaneStatus("%1", AgentState.IDLE, reason="empty prompt")))
        hook = Reading(Source.HOOK, AgentState.WORKING, app.wall() + 5, "UserPromptSubmit")
        raw = RawFacts("%1", session_id="sess-42", model="claude-opus", last_assistant_message="All tests pass.", hook=hook)
        app.post_message(ClaudeSignalsChanged((("%1", raw),)))
        detail = app.query_one(DetailPanel)
        await wait_for(pilot, lambda: "sess-42" in static_text(detail), what="fused facts")
        assert app.state.statuses["%1"].state is AgentState.WORKING
        text = static_text(detail)
        assert "hook" in text and "All tests pass." in text and "claude-opus" in text


async def test_meters_move_in_the_status_bar_and_details_while_the_state_stays() -> None:
    from nbs_tui.claude.watcher import ClaudeFacts as RawFacts
    from nbs_tui.core.sidecar.meters import MeterAccount, Tokens, UsageRecord
    from nbs_tui.dashboard.messages import ClaudeSignalsChanged

    app, _ = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.post_message(PaneStatusChanged("%1", PaneStatus("%1", AgentState.IDLE, reason="empty prompt")))
        account = MeterAccount()
        account.add(UsageRecord("m1", "claude-haiku-4-5", Tokens(input=1_000_000), False))
        app.post_message(ClaudeSignalsChanged((("%1", RawFacts("%1", meters=account.meters)),)))
        detail = app.query_one(DetailPanel)
        await wait_for(pilot, lambda: "Σ $1.00" in str(app.dashboard.status_bar.render()), what="the fleet's cost in the bar")
        await wait_for(pilot, lambda: "in 1.0M" in static_text(detail), what="the agent's meters in the details")
        # more tokens, same state: the bar and the details follow
        account.add(UsageRecord("m2", "claude-haiku-4-5", Tokens(output=1_000_000), False))
        app.post_message(ClaudeSignalsChanged((("%1", RawFacts("%1", meters=account.meters)),)))
        await wait_for(pilot, lambda: "Σ $6.00" in str(app.dashboard.status_bar.render()), what="the new total")
        await wait_for(pilot, lambda: "out 1.0M" in static_text(detail), what="the new details")


async def test_only_visible_thumbnails_repaint() -> None:
    panes = [pane_info(f"%{i}", i) for i in range(12)]
    app, holder = _app(panes)
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.press("2")
        grid = app.query_one(PaneGrid)
        await wait_for(pilot, lambda: len(grid.query(Thumbnail)) == 12, what="twelve thumbnails")
        await pilot.pause(0.3)
        touched: list[str] = []
        for thumb in grid.query(Thumbnail):
            original = thumb.screen_changed

            def spy(thumb: Thumbnail = thumb, original: Any = original) -> None:
                touched.append(thumb.pane_id)
                original()

            thumb.screen_changed = spy  # type: ignore[method-assign]
        for pane in panes:
            holder["fleet"].feed(pane.pane_id, f"output of {pane.pane_id}")
        await wait_for(pilot, lambda: touched, what="a frame")
        await pilot.pause(0.3)
        visible = {t.pane_id for t in grid.query(Thumbnail) if t.region.overlaps(grid.region)}
        assert visible and len(visible) < 12
        assert set(touched) <= visible, "thumbnails scrolled out of view must not repaint"
        grid.scroll_end(animate=False)
        last = grid.thumbnail("%11")
        assert last is not None
        await wait_for(pilot, lambda: "output of %11" in widget_text(last), what="a thumbnail scrolled into view")


async def test_a_backend_that_fails_to_start_is_reported_not_fatal(monkeypatch: Any) -> None:
    def broken(self: ClaudeSignals) -> None:
        raise OSError("spool folder is read-only")

    monkeypatch.setattr(ClaudeSignals, "start", broken)
    app, holder = _app(claude=True)
    notified: list[str] = []
    notify = app.notify

    def noted(message: str, **kwargs: Any) -> None:
        notified.append(message)
        notify(message, **kwargs)

    monkeypatch.setattr(app, "notify", noted)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: notified, what="a notification")
        assert any("read-only" in message for message in notified)
        holder["fleet"].feed("%1", "still mirrored")
        await wait_for(pilot, lambda: "still mirrored" in widget_text(app.dashboard.mirror.rows), what="the mirror")


async def test_list_cells_sit_under_their_columns() -> None:
    app, _ = _app()
    async with app.run_test(size=(200, 48)) as pilot:
        table = app.query_one(FleetList)
        await wait_for(pilot, lambda: table.row_count == 3)
        assert str(table.get_cell("%1", "title")) == "agent 0"
        assert str(table.get_cell("%1", "project")) == "proj0"
        assert str(table.get_cell("%3", "agent")) == "bash"
        # as drawn: each text starts where its column's label does
        header, line = ("".join(s.text for s in table.render_line(y)) for y in (0, 1))
        assert line.index("fleet:0.0") == header.index("Pane")
        assert line.index("agent 0") == header.index("Title")
        assert line.index("claude") == header.index("Agent")


async def test_a_pane_wider_than_the_mirror_is_cropped_with_a_note() -> None:
    app, holder = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        holder["fleet"].feed("%1", "x" * 100)
        await wait_for(pilot, lambda: "cropped" in str(app.dashboard.mirror.border_subtitle), what="the crop note")
        first = widget_text(app.dashboard.mirror.rows).splitlines()[0]
        assert first.endswith("›") and "\n" not in first
        assert "xxxxxxxxxx" not in widget_text(app.dashboard.mirror.rows).splitlines()[1], "never wrapped"


async def test_grid_density_and_double_click() -> None:
    panes = [pane_info(f"%{i}", i) for i in range(12)]
    app, _ = _app(panes)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("2")
        grid = app.query_one(PaneGrid)
        await wait_for(pilot, lambda: len(grid.query(Thumbnail)) == 12)

        def laid_out() -> bool:
            """Columns and thumbnail height as the grid's width and density make them."""
            min_width, rows = DENSITIES[grid.density]
            columns = max(1, (grid.size.width - 2) // min_width)
            return grid.columns == columns and grid.thumbnails[0].outer_size.height == rows

        await wait_for(pilot, laid_out, what="the grid laid out")
        before = grid.columns
        height = grid.thumbnails[0].outer_size.height
        await pilot.press("minus")
        await wait_for(pilot, lambda: laid_out() and grid.thumbnails[0].outer_size.height < height, what="smaller")
        assert grid.columns > before
        await pilot.press("plus", "plus")
        await wait_for(pilot, lambda: laid_out() and grid.thumbnails[0].outer_size.height > height, what="bigger")
        assert grid.columns < before
        target = grid.thumbnail("%1")
        assert target is not None
        await pilot.click(target, times=2)
        await wait_for(pilot, lambda: app.dashboard.view == "dashboard" and app.dashboard.selected_id == "%1", what="opened by double click")


async def test_selection_survives_a_reordered_fleet() -> None:
    app, holder = _app()
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.query_one(FleetList)
        await wait_for(pilot, lambda: table.row_count == 3)
        await pilot.press("j", "j")
        assert app.dashboard.selected_id == "%3"
        newcomer = pane_info("%9", 0, title="new agent")
        holder["fleet"].set_panes([newcomer, *PANES])
        await wait_for(pilot, lambda: table.row_count == 4, what="the new pane")
        await pilot.pause(0.3)
        assert app.dashboard.selected_id == "%3" and table.selected_pane_id == "%3"
        assert app.dashboard.mirror.pane is not None and app.dashboard.mirror.pane.pane_id == "%3"
