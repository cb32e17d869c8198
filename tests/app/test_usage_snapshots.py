"""The usage view and the status bar's usage meter as snapshots (issue 37 item 3): two accounts,
one at its 5-hour cap, the agents' cost and burn share; at 120x32 and on a phone (50x30)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App, ComposeResult
from textual.pilot import Pilot

from nbs_tui.core.fleet.accounts import Account, Budget
from nbs_tui.core.fleet.usage import (
    AccountUsage,
    StatusSample,
    UsageBook,
    Window,
    meter_short,
    meter_text,
)
from nbs_tui.widgets.breakpoints import HORIZONTAL_BREAKPOINTS
from nbs_tui.widgets.status_bar import StatusBar
from nbs_tui.widgets.usage_screen import UsageScreen

NOW = 1_800_000_000.0
BUDGET = Budget(max_five_hour_percent=90, agent_max_cost_usd_per_day=4.0)


def accounts() -> list[AccountUsage]:
    book = UsageBook([Account("work", "/home/ops/.claude-work", max_five_hour_percent=80), Account("home", "/home/ops/.claude")])
    five_reset, week_reset = NOW + 2 * 3600 + 13 * 60, NOW + 3 * 86400 + 4 * 3600
    for minutes, pct, costs in ((40, 61.0, (1.10, 0.40, 0.05)), (20, 72.0, (2.60, 0.90, 0.10)), (0, 84.0, (4.20, 1.35, 0.20))):
        at = NOW - minutes * 60
        for pane, cost in zip(("%3", "%5", "%8"), costs, strict=True):
            book.add(StatusSample(at, "/home/ops/.claude-work", pane, f"s{pane}", Window(pct, five_reset), Window(pct / 3, week_reset), cost, int(cost * 90_000)))
    for minutes, pct, cost in ((30, 12.0, 0.30), (0, 18.0, 0.55)):
        at = NOW - minutes * 60
        book.add(StatusSample(at, "/home/ops/.claude", "%11", "s11", Window(pct, NOW + 4 * 3600), Window(9.0, week_reset), cost, int(cost * 90_000)))
    return book.all_accounts(NOW)


class MeterBar(App[None]):
    def compose(self) -> ComposeResult:
        yield StatusBar("tmux server -L work", id="status")

    def on_mount(self) -> None:
        bar = self.query_one(StatusBar)
        bar.set_connection(True)
        found = accounts()
        bar.set_usage(meter_text(found), meter_short(found))


class UsageApp(MeterBar):
    """The status bar with its meter, and the usage view over it."""

    HORIZONTAL_BREAKPOINTS = HORIZONTAL_BREAKPOINTS

    def on_mount(self) -> None:  # after MeterBar's own (Textual calls each class's handler)
        self.push_screen(UsageScreen(accounts, lambda: NOW, BUDGET))


async def settle(pilot: Pilot[object]) -> None:
    await pilot.pause(0.2)
    screen = pilot.app.screen
    assert isinstance(screen, UsageScreen)
    assert "work: 5-hour 84.0 % resets in 2h13m" in screen.text()


def test_usage_view(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(UsageApp(), terminal_size=(120, 32), run_before=settle)


def test_usage_view_on_a_phone(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(UsageApp(), terminal_size=(50, 30), run_before=settle)




def test_status_bar_usage_meter(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(MeterBar(), terminal_size=(150, 2))
