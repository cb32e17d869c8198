"""What keeps the dashboard's UI thread short: the details drawn from one render, and the heap
made while starting left out of the garbage collector's walks (issue 13; the numbers are in
bench/results/2026-11-26-ui-thread-pauses.md, measured by bench/bench_app.py, never timed here)."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator

import pytest
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.text import Text
from textual.app import App, ComposeResult
from textual.dom import DOMNode
from textual.geometry import Region

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, PaneInfo
from nbs_tui.core.fleet.needs_you import NeedsYouEntry
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, Meters, Tokens, describe_total
from nbs_tui.dashboard.messages import RelayedMeters
from nbs_tui.housekeeping import heap
from nbs_tui.tmux.port import FleetListener
from nbs_tui.widgets.detail_panel import DetailPanel, DetailRow
from nbs_tui.widgets.needs_you_panel import NeedsYouPanel
from tests.app.fakes import FakeFleet, pane_info
from tests.app.helpers import wait_for, widget_text
from tests.app.textual_probes import regions_to_repaint


def app_on_a_fake_fleet(*panes: PaneInfo) -> tuple[NbsApp, list[FakeFleet]]:
    """The dashboard on a `FakeFleet` of these panes (no control plane, sidecar or Claude
    signals), and a list that holds the fleet once the app has made it."""
    made: list[FakeFleet] = []

    def factory(listener: FleetListener) -> FakeFleet:
        made.append(FakeFleet(listener, list(panes)))
        return made[-1]

    return create_app(Settings(), factory, control_plane=False, sidecar=False, claude=False), made


class CountedLines:
    """Lines of text that count how often they are rendered."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.renders = 0

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        self.renders += 1
        yield Text("\n".join(self.lines))


class OnePanel(App[None]):
    def compose(self) -> ComposeResult:
        yield DetailPanel(id="detail")


def _drawn(panel: DetailPanel) -> list[str]:
    """The panel's rows as the screen has them (border and padding included)."""
    return ["".join(segment.text for segment in strip).strip(" │╭╮╰╯─") for strip in panel.render_lines(Region(0, 0, *panel.outer_size))]


async def test_the_details_are_rendered_once_for_both_their_height_and_their_paint() -> None:
    app = OnePanel()
    async with app.run_test(size=(60, 30)) as pilot:
        panel = app.query_one(DetailPanel)
        await pilot.pause()
        short = CountedLines(["alpha", "beta"])
        panel._update_in_place([short])
        await wait_for(pilot, lambda: "beta" in _drawn(panel), what="the two lines drawn")
        assert short.renders == 1, f"rendered {short.renders} times for one change"
        assert panel.size.height == 2

        taller = CountedLines(["one", "two", "three", "four", "five"])
        panel._update_in_place([taller])
        # a change of height lays the screen out again: the panel grows to fit
        await wait_for(pilot, lambda: panel.size.height == 5, what="the panel grown to five lines")
        await wait_for(pilot, lambda: "five" in _drawn(panel), what="the five lines drawn")
        assert taller.renders == 1, f"rendered {taller.renders} times for one change"


class CountedText(Text):
    """A value that counts how often it is rendered."""

    renders = 0

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterable[Segment]:
        CountedText.renders += 1
        yield from super().__rich_console__(console, options)


async def test_a_clock_tick_renders_only_the_rows_that_changed() -> None:
    app = OnePanel()
    async with app.run_test(size=(60, 30)) as pilot:
        panel = app.query_one(DetailPanel)
        await pilot.pause()
        CountedText.renders = 0
        steady = [DetailRow(Text("folder"), CountedText("/srv/project")), DetailRow(Text("model"), CountedText("opus"))]
        panel._update_in_place([*steady, DetailRow(Text("quiet"), Text("4s"))])
        await wait_for(pilot, lambda: any("4s" in row for row in _drawn(panel)), what="the first tick drawn")
        first = CountedText.renders
        assert first >= 2
        for seconds in range(5, 9):
            panel._update_in_place([*steady, DetailRow(Text("quiet"), Text(f"{seconds}s"))])
            # and only that row is repainted: not the whole panel through the compositor
            (dirty,) = regions_to_repaint(panel)
            assert (dirty.y, dirty.height) == (panel.content_offset.y + 2, 1), dirty
            await wait_for(pilot, lambda: any(f"quiet  {seconds}s" in row for row in _drawn(panel)), what=f"{seconds}s drawn")  # noqa: B023
        assert CountedText.renders == first, "rows that did not change were rendered again"
        assert _drawn(panel)[1:4] == ["folder /srv/project", "model  opus", "quiet  8s"]


async def test_a_second_of_the_selected_pane_repaints_only_its_quiet_row() -> None:
    """`show` as the clock calls it: the same pane a second later. Its title is set again only
    when it changes (setting a widget's border title repaints the whole widget)."""
    app = OnePanel()
    async with app.run_test(size=(60, 30)) as pilot:
        panel = app.query_one(DetailPanel)
        await pilot.pause()
        pane = pane_info("%1", 0)
        panel.show(pane, None, None, (), 100.0, 104.0)
        await wait_for(pilot, lambda: any("4s" in row for row in _drawn(panel)), what="the first second drawn")
        await pilot.pause()
        panel.show(pane, None, None, (), 100.0, 105.0)
        dirty = regions_to_repaint(panel)
        assert [(r.height, r.width) for r in dirty] == [(1, panel.size.width)], dirty
        await wait_for(pilot, lambda: any("5s" in row for row in _drawn(panel)), what="the next second drawn")


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """Start and end with nothing frozen: the freeze is process-wide."""
    gc.unfreeze()
    yield
    gc.unfreeze()


async def test_the_dashboard_freezes_its_start_up_heap_once_started(unfrozen: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "SETTLE_SECONDS", 0.3)
    monkeypatch.setattr(heap, "_frozen", False)  # an earlier app in this process may have frozen

    def factory(listener: FleetListener) -> FakeFleet:
        return FakeFleet(listener, [pane_info("%1", 0)])

    app = create_app(Settings(), factory, control_plane=False, sidecar=False, claude=False)
    assert gc.get_freeze_count() == 0
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: gc.get_freeze_count() > 0, what="the start-up heap frozen")
        # everything made while starting is exempt: modules, styles and the DOM
        frozen = gc.get_freeze_count()
        assert frozen > 50_000
        # and only once per process: a second app here (tests run many) freezes nothing more
        assert heap.freeze_long_lived() == frozen


async def test_the_mirror_rows_are_drawn_by_a_widget_without_a_border() -> None:
    """Textual makes a bordered line's edge styles anew for every line it paints, and a busy
    selected pane repaints every row many times a second: the border and titles belong to the
    frame (`PaneView`), the rows to a borderless widget inside it (`MirrorRows`)."""

    app, holder = app_on_a_fake_fleet(pane_info("%1", 0, title="the title"))
    async with app.run_test(size=(120, 40)) as pilot:
        holder[0].feed("%1", "hello from the pane")
        await wait_for(pilot, lambda: "hello from the pane" in widget_text(app.dashboard.mirror.rows), what="the row drawn")
        frame, rows = app.dashboard.mirror, app.dashboard.mirror.rows
        assert all(edge for edge, _ in frame.styles.border) and not any(edge for edge, _ in rows.styles.border)
        assert rows.region.width == frame.region.width - 2 and rows.region.height == frame.region.height - 2
        assert "the title" in str(frame.border_title)
        # the rows sit inside the frame's border: what the screen shows there is theirs
        widget, _ = app.screen.get_widget_at(rows.region.x, rows.region.y)
        assert widget is rows


async def test_a_burst_of_relayed_meters_sums_the_fleet_once() -> None:
    """The holder relays each agent's meters as an event of its own, all in one tick: the status
    bar's Σ is summed once for the burst, not once per pane (O(panes²) at 200 agents)."""
    panes = [pane_info(f"%{i}", i) for i in range(40)]

    def factory(listener: FleetListener) -> FakeFleet:
        return FakeFleet(listener, panes)

    app = create_app(Settings(), factory, control_plane=False, sidecar=False, claude=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: len(app.state.panes) == 40, what="the fleet listed")
        await pilot.pause(0.2)
        sums = 0
        fleet_meters = app.state.fleet_meters

        def counted() -> Meters | None:
            nonlocal sums
            sums += 1
            return fleet_meters()

        app.state.fleet_meters = counted  # type: ignore[method-assign]
        for pane in panes:
            app.post_message(RelayedMeters(pane.pane_id, Meters((("claude-opus-4-6", Tokens(output=1000)),), 1)))
        expected = describe_total(Meters((("claude-opus-4-6", Tokens(output=40_000)),), 40), DEFAULT_PRICES)
        await wait_for(pilot, lambda: app.dashboard.status_bar.meters[0] == expected, what=f"Σ {expected}")
        assert sums <= 2, f"the fleet's meters were summed {sums} times for one burst"


class NeedsPanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield NeedsYouPanel(id="needs")


async def test_the_needs_you_queue_is_redrawn_only_when_what_it_shows_moves() -> None:
    """The queue is asked twice a second; a redraw lays the whole screen out again, so an
    unchanged queue (an empty one above all) must leave the panel as it is."""
    app = NeedsPanelApp()
    async with app.run_test(size=(60, 20)) as pilot:
        panel = app.query_one(NeedsYouPanel)
        waiting = [NeedsYouEntry("%1", AgentState.PERMISSION, "permission prompt", since=10.0, joined=10.0, label="w:1")]
        panel.show_entries([], 10.0, lambda pane: "")
        assert not panel.display and panel.option_count == 0
        panel.show_entries(waiting, 12.2, lambda pane: "")
        await pilot.pause()
        assert panel.display and panel.option_count == 1
        first = panel.get_option_at_index(0)
        assert "2s" in str(first.prompt)
        panel.show_entries(list(waiting), 12.9, lambda pane: "")  # the same second: nothing moved
        assert panel.get_option_at_index(0) is first
        panel.show_entries(waiting, 13.1, lambda pane: "")  # a second later: the wait moved on
        assert panel.get_option_at_index(0) is not first and "3s" in str(panel.get_option_at_index(0).prompt)
        panel.show_entries([], 13.5, lambda pane: "")
        await pilot.pause()
        assert not panel.display and panel.option_count == 0


async def test_a_mirror_paint_walks_the_dom_for_its_look_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The widget's style and background colours are each a walk of every ancestor's styles;
    Textual asks for them again for every row it renders. A paint of the mirror's rows reads
    them once (`LookReadOncePerPaint.look_read_once`): three or four walks a frame were a quarter of a
    scrolling mirror's frame."""

    app, holder = app_on_a_fake_fleet(pane_info("%1", 0))
    async with app.run_test(size=(120, 40)) as pilot:
        holder[0].feed("%1", "\r\n".join(f"line {n}" for n in range(30)))
        await wait_for(pilot, lambda: "line 29" in widget_text(app.dashboard.mirror.rows), what="the rows drawn")
        rows = app.dashboard.mirror.rows
        walks = {"rich_style": 0, "background_colors": 0}
        for name in walks:
            walk = getattr(DOMNode, name)

            def counted(node: DOMNode, walk: property = walk, name: str = name) -> object:
                if node is rows:
                    walks[name] += 1
                return walk.fget(node)  # type: ignore[misc]

            monkeypatch.setattr(DOMNode, name, property(counted))
        width, height = rows.size
        assert height > 20
        with rows.look_read_once():  # as `DirectPainter` renders the rows it has not seen: one by one
            strips = [rows.render_lines(Region(0, y, width, 1))[0] for y in range(height)]
        assert "line 29" in "".join(segment.text for strip in strips for segment in strip)
        assert walks == {"rich_style": 1, "background_colors": 1}


async def test_the_app_timers_paint_nothing_once_the_app_is_shutting_down(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual prunes the widgets at exit (a pruned widget has no component styles left) while
    the app's own timers still tick: a clock tick then painted the fleet list and raised
    KeyError ('fleet-list--header') on a quit in CI. Once the app is no longer running, the
    clock, the needs-you tick and the frame touch no widget."""

    app, _fleet = app_on_a_fake_fleet(pane_info("%1", 0))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: bool(app.state.panes), what="the pane listed")
        touched: list[str] = []
        monkeypatch.setattr(app.dashboard.fleet_list, "refresh_cells", lambda *_a, **_k: touched.append("fleet list"))
        monkeypatch.setattr(app.dashboard.needs_panel, "show_entries", lambda *_a, **_k: touched.append("needs you"))

        monkeypatch.setattr(app.dashboard.mirror, "screen_changed", lambda: touched.append("frame"))
        app.dashboard.clock_tick()
        app.dashboard.needs_you_tick()
        app.dashboard.draw({"%1"}, True)
        assert touched == ["fleet list", "needs you", "frame"]  # running: each does its work
        touched.clear()
        monkeypatch.setattr(NbsApp, "is_running", property(lambda _app: False))  # as in Textual's shutdown, before pruning
        app.dashboard.clock_tick()
        app.dashboard.needs_you_tick()
        app.dashboard.draw({"%1"}, True)
        monkeypatch.undo()
        assert touched == []
