"""The fleet list as a widget of its own: what a change redraws, how columns size, and the keys
and clicks that move its cursor (the look is in the snapshot tests)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.strip import Strip

from nbs_tui.core.fleet.model import AgentState
from nbs_tui.dashboard.messages import PaneStatus
from nbs_tui.widgets.fleet_list import FleetList
from tests.app.fakes import pane_info
from tests.app.helpers import wait_for

PANES = [pane_info(f"%{i}", i) for i in range(30)]


class ListApp(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[str | None] = []
        self.chosen: list[str] = []

    def compose(self) -> ComposeResult:
        yield FleetList()

    def on_fleet_list_pane_highlighted(self, message: FleetList.PaneHighlighted) -> None:
        self.highlighted.append(message.pane_id)

    def on_fleet_list_pane_chosen(self, message: FleetList.PaneChosen) -> None:
        self.chosen.append(message.pane_id)


def _lines(fleet: FleetList) -> list[Strip]:
    return [fleet.render_line(y) for y in range(fleet.size.height)]


def _text(strip: Strip) -> str:
    return "".join(segment.text for segment in strip)


async def test_a_change_in_one_row_draws_that_row_again_and_no_other() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 12)) as pilot:
        fleet = app.query_one(FleetList)
        statuses = {p.pane_id: PaneStatus(p.pane_id, AgentState.IDLE, idle_since=0.0) for p in PANES}
        fleet.update_fleet(PANES, statuses, {}, now=5.0)
        await pilot.pause()
        before = _lines(fleet)
        assert "5s" in _text(before[1]) and "5s" in _text(before[2])

        statuses["%1"] = PaneStatus("%1", AgentState.WORKING)
        fleet.refresh_cells(statuses, {}, now=5.0, pane_ids=["%1"])
        after = _lines(fleet)
        assert " working " in _text(after[2])
        redrawn = [y for y, (old, new) in enumerate(zip(before, after, strict=True)) if old is not new]
        assert redrawn == [2], f"lines drawn again: {redrawn}"  # line 0 is the header

        # the clock: every quiet time moves, every visible row is drawn again, once
        fleet.refresh_cells(statuses, {}, now=6.0)
        ticked = _lines(fleet)
        assert "6s" in _text(ticked[1]) and " working " in _text(ticked[2])
        assert ticked[0] is after[0] and all(ticked[y] is not after[y] for y in (1, 3, 4))
        assert ticked[2] is after[2], "the working pane's row did not change"


async def test_a_column_fits_its_widest_cell_both_ways() -> None:
    app = ListApp()
    async with app.run_test(size=(140, 12)) as pilot:
        fleet = app.query_one(FleetList)
        panes = PANES[:3]
        fleet.update_fleet(panes, {}, {}, now=0.0)
        await pilot.pause()
        narrow = _text(fleet.render_line(0))
        longer = pane_info("%1", 1, title="a title longer than others")
        fleet.update_fleet([panes[0], longer, panes[2]], {}, {}, now=0.0)
        await pilot.pause()
        header = _text(fleet.render_line(0))
        assert header.index("Agent") > narrow.index("Agent")
        assert "a title longer than others" in _text(fleet.render_line(2))
        # every row moved its Agent column along, not only the one that changed
        assert all(_text(fleet.render_line(y))[header.index("Agent") :].startswith("claude") for y in (1, 2, 3))
        fleet.update_fleet(panes, {}, {}, now=0.0)
        await pilot.pause()
        assert _text(fleet.render_line(0)) == narrow


async def test_keys_and_clicks_move_the_cursor_and_open_a_pane() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 12)) as pilot:
        fleet = app.query_one(FleetList)
        fleet.update_fleet(PANES, {}, {}, now=0.0)
        fleet.focus()
        await wait_for(pilot, lambda: app.highlighted == ["%0"], what="the first pane highlighted")
        await pilot.press("down", "down")
        assert fleet.selected_pane_id == "%2"
        await pilot.press("end")
        assert fleet.selected_pane_id == "%29"
        # the cursor's row is on screen: the list scrolled to it, the header stayed on top
        assert "fleet:29.0" in _text(fleet.render_line(fleet.size.height - 1))
        assert "Pane" in _text(fleet.render_line(0))
        await pilot.press("home", "pagedown")
        page = fleet.size.height - 1
        assert fleet.selected_pane_id == f"%{page}"
        await pilot.pause()
        assert app.highlighted[-1] == f"%{page}"

        await pilot.press("home")
        await pilot.click(FleetList, offset=(3, 4))  # border-less: line 4 is the 4th pane
        assert fleet.selected_pane_id == "%3" and app.chosen == []
        await pilot.click(FleetList, offset=(3, 4))  # again, on the cursor: open it
        await pilot.press("enter")
        await pilot.pause()
        assert app.chosen == ["%3", "%3"]
        await pilot.click(FleetList, offset=(3, 0))  # the header: nothing
        assert fleet.selected_pane_id == "%3"


async def test_an_emptied_list_has_no_selection_and_says_so() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 12)) as pilot:
        fleet = app.query_one(FleetList)
        fleet.update_fleet(PANES[:2], {}, {}, now=0.0)
        await wait_for(pilot, lambda: app.highlighted[-1:] == ["%0"], what="a pane highlighted")
        fleet.update_fleet([], {}, {}, now=0.0)
        await wait_for(pilot, lambda: app.highlighted[-1:] == [None], what="no pane highlighted")
        assert fleet.selected_pane_id is None and fleet.row_count == 0
        await pilot.press("down", "enter")
        assert app.chosen == []
        assert _text(fleet.render_line(1)).strip() == ""


async def test_a_cursor_moved_while_the_list_is_hidden_is_in_view_once_it_shows() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 12)) as pilot:
        fleet = app.query_one(FleetList)
        fleet.display = False  # as when the mirror is zoomed
        await pilot.pause()
        fleet.update_fleet(PANES, {}, {}, now=0.0)
        fleet.select_pane("%29")
        await pilot.pause()
        fleet.display = True
        await wait_for(pilot, lambda: fleet.size.height > 0, what="the list laid out")
        await pilot.pause()
        assert "fleet:29.0" in _text(fleet.render_line(fleet.size.height - 1))


async def test_a_removed_list_draws_nothing_when_news_still_arrives() -> None:
    """At exit Textual removes the widgets (dropping their component styles) while messages
    already queued, such as a fleet change, are still handled: a list no longer attached must
    not paint (it raised KeyError 'fleet-list--header' in a CI run, ending the app with an error)."""
    app = ListApp()
    async with app.run_test(size=(100, 12)) as pilot:
        fleet = app.query_one(FleetList)
        statuses = {p.pane_id: PaneStatus(p.pane_id, AgentState.IDLE, idle_since=0.0) for p in PANES}
        fleet.update_fleet(PANES, statuses, {}, now=5.0)
        await pilot.pause()
        await fleet.remove()
        assert not fleet.is_attached
        fleet.notify_style_update()  # as a theme or focus change at exit does: the looks are read again
        statuses["%1"] = PaneStatus("%1", AgentState.WORKING)
        fleet.update_fleet(PANES, statuses, {}, now=6.0)
        fleet.refresh_cells(statuses, {}, now=7.0)


class BackgroundListApp(ListApp):
    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def on_fleet_list_background_chosen(self, message: FleetList.BackgroundChosen) -> None:
        self.opened.append(message.session.id)


async def test_background_sessions_follow_the_panes_and_the_cursor_rests_on_them() -> None:
    from nbs_tui.core.fleet.background import BackgroundSession

    app = BackgroundListApp()
    async with app.run_test(size=(120, 12)) as pilot:
        fleet = app.query_one(FleetList)
        panes = PANES[:2]
        fleet.background = (BackgroundSession(id="1163b0f0", name="bgjob", cwd="/src/api", status="busy"),)
        fleet.update_fleet(panes, {}, {}, now=0.0)
        await pilot.pause()
        assert fleet.row_keys == ["%0", "%1", "bg 1163b0f0"]
        assert [c.plain for c in fleet.get_row("bg 1163b0f0")] == ["◇ bg 1163b0f0", "busy", "—", "—", "api", "bgjob", "claude --bg"]
        fleet.focus()
        await pilot.press("down", "down")
        assert fleet.selected_pane_id is None
        assert fleet.selected_background is not None and fleet.selected_background.id == "1163b0f0"
        assert app.highlighted[-1] is None  # no pane highlighted: the mirror shows none
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.opened == ["1163b0f0"], what="BackgroundChosen")
        assert app.chosen == []
        fleet.move_selection(-1)  # j/k move through them too
        assert fleet.selected_pane_id == "%1"
        fleet.move_selection(1)
        assert fleet.selected_background is not None
        # its reported state changes: the row is rewritten, the cursor stays
        fleet.background = (BackgroundSession(id="1163b0f0", name="bgjob", cwd="/src/api", status="idle"),)
        fleet.update_fleet(panes, {}, {}, now=1.0)
        assert fleet.get_cell("bg 1163b0f0", "state").plain == "idle"
        assert fleet.selected_background is not None
        # it goes (opened in a pane, or ended): the cursor falls back onto a pane
        fleet.background = ()
        fleet.update_fleet(panes, {}, {}, now=2.0)
        assert fleet.row_keys == ["%0", "%1"] and fleet.selected_pane_id == "%1"


async def test_the_change_column_shows_counts_and_folds_when_no_agent_changed_anything() -> None:
    """Issue 38: files and +/- per agent; with none anywhere the column takes no room (a fleet
    outside git looks as it did before)."""
    from nbs_tui.core.review.agent_changes import ChangeCount

    app = ListApp()
    async with app.run_test(size=(160, 8)) as pilot:
        fleet = app.query_one(FleetList)
        statuses = {p.pane_id: PaneStatus(p.pane_id, AgentState.IDLE, idle_since=0.0) for p in PANES[:3]}
        fleet.update_fleet(PANES[:3], statuses, {}, now=5.0)
        await pilot.pause()
        folded = _text(fleet.render_line(0))
        assert "Changes" not in folded and len(fleet.get_row("%1")) == 7
        fleet.set_changes({"%1": ChangeCount(3, 12, 4)})
        fleet.refresh_cells(statuses, {}, now=5.0, pane_ids=["%1"])
        await pilot.pause()
        header = _text(fleet.render_line(0))
        assert "Changes" in header
        row = _text(fleet.render_line(2))
        assert row[header.index("Changes") :].startswith("3 +12 -4")
        cell = fleet.get_cell("%1", "changes")
        assert [str(span.style) for span in cell.spans] == ["green", "red"]
        assert _text(fleet.render_line(1))[header.index("Changes") :].strip() == ""  # no count: empty
        fleet.set_changes({"%1": ChangeCount(0, 0, 0)})  # the agent's changes went (merged, discarded)
        fleet.refresh_cells(statuses, {}, now=5.0, pane_ids=["%1"])
        await pilot.pause()
        assert _text(fleet.render_line(0)) == folded
