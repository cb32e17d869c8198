"""The status bar of a viewer, as a snapshot: another process holds the sidecar lease (named with
its host, pid and since), and the server-wide pause is on; the fleet's meters in the bar and one
agent's in the details panel."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App, ComposeResult

from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.fleet.pane_state import ClaudeFacts, PaneStatus
from nbs_tui.core.sidecar.meters import (
    DEFAULT_PRICES,
    MeterAccount,
    Tokens,
    UsageRecord,
    describe_total,
)
from nbs_tui.widgets.detail_panel import DetailPanel
from nbs_tui.widgets.status_bar import StatusBar


class ViewerBar(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusBar("tmux server -L work", id="status")

    def on_mount(self) -> None:
        bar = self.query_one(StatusBar)
        bar.set_connection(True)
        bar.set_lease("sidecar: box pid 4242 since 05:25", False)
        bar.set_paused(True)
        bar.set_counts(7, 6, [AgentState.IDLE, AgentState.IDLE, AgentState.WORKING, AgentState.PLAN])


def test_viewer_status_bar_names_the_holder_and_the_pause(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(ViewerBar(), terminal_size=(150, 2))


class MetersBar(App[None]):
    """The fleet's token and cost totals at the end of the bar (Σ)."""

    def compose(self) -> ComposeResult:
        yield StatusBar("tmux server -L work", id="status")

    def on_mount(self) -> None:
        bar = self.query_one(StatusBar)
        bar.set_connection(True)
        bar.set_counts(3, 2, [AgentState.IDLE, AgentState.WORKING])
        account = MeterAccount()
        account.add(UsageRecord("msg_1", "claude-opus-5-5", Tokens(12_400, 3_100, 45_000, 1_200_000), False))
        bar.set_meters(describe_total(account.meters, DEFAULT_PRICES))


def test_status_bar_shows_the_fleet_meters(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(MetersBar(), terminal_size=(150, 2))


class MetersDetails(App[None]):
    """The details panel of an agent whose transcript has been read: its meters row."""

    def compose(self) -> ComposeResult:
        yield DetailPanel(id="detail")

    def on_mount(self) -> None:
        account = MeterAccount()
        account.add(UsageRecord("msg_1", "claude-opus-5-5", Tokens(12_400, 3_100, 45_000, 1_200_000), False))
        account.add(UsageRecord("msg_2", "claude-opus-5-5", Tokens(3, 412, 2_000, 180_000), False))
        pane = PaneInfo(
            pane_id=PaneId("%3"), session_name="agents", window_index=0, window_name="w", pane_index=1,
            width=120, height=40, pid=4242, current_command="claude", current_path="/home/me/project", title="✳ Claude Code", is_agent=True,
        )
        facts = ClaudeFacts(session_id="e2aea7bf-67d2", model="claude-opus-5-5", source="hook", meters=account.meters)
        self.query_one(DetailPanel).show(pane, PaneStatus(PaneId("%3"), AgentState.IDLE), facts, [], None, 0.0)


def test_details_show_the_agents_meters(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(MetersDetails(), terminal_size=(120, 40))


async def test_a_narrow_bar_drops_the_view_name_then_the_tokens_but_keeps_the_cost() -> None:
    app = MetersBar()
    async with app.run_test(size=(150, 2)) as pilot:
        bar = app.query_one(StatusBar)
        bar.set_meters("$0.58 1.3M tok", "$0.58")
        await pilot.pause()
        assert "Σ $0.58 1.3M tok   [dashboard]" in str(bar.render())
        await pilot.resize_terminal(110, 2)
        await pilot.pause()
        assert "Σ $0.58 1.3M tok" in str(bar.render()) and "[dashboard]" not in str(bar.render())
        await pilot.resize_terminal(95, 2)
        await pilot.pause()
        shown = str(bar.render())
        assert shown.endswith("Σ $0.58") and "tok" not in shown
