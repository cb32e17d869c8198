"""The fleet list's cost on the UI thread, against a stock DataTable fed the same changes.

    .venv/bin/python bench/bench_fleet_list.py                 # 50 and 200 panes
    .venv/bin/python bench/bench_fleet_list.py --sizes 50 --rounds 40

For each size, in one headless app of 160x48 (the list fills it), both lists get:
- **fill:** the fleet's first `update_fleet` (or `add_row` per pane) and the paint of every
  visible line;
- **clock tick:** every pane's quiet time moves by a second (what the dashboard's 1 s clock does)
  and the lines the widget marks as changed are painted again;
- **one state:** one pane's state changes and is painted.

Times are medians of ``--rounds`` rounds, in ms, with the ratio ours/DataTable from the same run
(this machine is shared: compare ratios, not the absolute times of two runs). The stock table
measures its rows when idle, after the timed paint, so its "fill" paints less than ours: read
that row against the previous fleet list instead (run this file with ``PYTHONPATH`` set to a
checkout of it; numbers in bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import DataTable

from nbs_tui.core.fleet.model import AgentState, PaneInfo
from nbs_tui.dashboard.messages import PaneStatus
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.fleet_rows import COLUMNS
from nbs_tui.widgets.pane_text import format_duration, state_text


def fleet(n: int) -> list[PaneInfo]:
    return [
        PaneInfo(
            pane_id=f"%{i}", session_name=f"s{i // 8}", window_index=i % 8, window_name="w", pane_index=0,
            title=f"✳ agent {i} works on something", current_command="claude", current_path=f"/work/proj{i % 7}",
            pid=1000 + i, width=80, height=24, is_agent=True,
        )
        for i in range(n)
    ]


def statuses(panes: list[PaneInfo], working: str | None = None) -> dict[str, PaneStatus]:
    return {
        p.pane_id: PaneStatus(p.pane_id, AgentState.WORKING if p.pane_id == working else AgentState.IDLE, idle_since=0.0)
        for p in panes
    }


class Stock(DataTable[Text]):
    """The baseline: a DataTable with the same columns, changed with `update_cell`."""

    def fill(self, panes: list[PaneInfo], now: float) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)
        for pane in panes:
            self.add_row(*(self.cell(pane, key, now, AgentState.IDLE) for key, _, _ in COLUMNS), key=pane.pane_id)

    @staticmethod
    def cell(pane: PaneInfo, key: str, now: float, state: AgentState) -> Text:
        if key == "state":
            return state_text(state)
        value = {
            "target": pane.target, "idle": format_duration(now), "poll": "—", "project": pane.current_path[-5:],
            "title": pane.title, "agent": "claude",
        }[key]
        return Text(value, no_wrap=True, overflow="ellipsis")


class Bench(App[None]):
    def __init__(self, table: Widget) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


def paint(widget: Widget) -> None:
    """What the compositor asks of the widget after a refresh: its changed lines."""
    widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))


def timed(action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def fleet_list_steps(fl: FleetList, panes: list[PaneInfo]) -> dict[str, Callable[[], None]]:
    def fill() -> None:
        fl.update_fleet(panes, statuses(panes), {}, 5.0)
        paint(fl)

    def tick() -> None:
        fl.refresh_cells(statuses(panes), {}, 6.0)
        paint(fl)

    def state() -> None:
        fl.refresh_cells(statuses(panes, working="%3"), {}, 6.0, pane_ids=["%3"])
        paint(fl)

    return {"fill": fill, "tick": tick, "state": state}


def stock_steps(widget: Widget, panes: list[PaneInfo]) -> dict[str, Callable[[], None]]:
    assert isinstance(widget, Stock)
    table = widget

    def fill() -> None:
        table.fill(panes, 5.0)
        paint(table)

    def tick() -> None:
        for pane in panes:
            table.update_cell(pane.pane_id, "idle", Stock.cell(pane, "idle", 6.0, AgentState.IDLE))
        paint(table)

    def state() -> None:
        table.update_cell("%3", "state", state_text(AgentState.WORKING))
        paint(table)

    return {"fill": fill, "tick": tick, "state": state}


async def measure(make: Callable[[], Widget], n: int, rounds: int) -> dict[str, float]:
    panes = fleet(n)
    results: dict[str, list[float]] = {"fill": [], "tick": [], "state": []}
    for _ in range(rounds):
        widget = make()
        app = Bench(widget)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            steps = fleet_list_steps(widget, panes) if isinstance(widget, FleetList) else stock_steps(widget, panes)
            for name, step in steps.items():
                results[name].append(timed(step))
                await pilot.pause()
    return {key: statistics.median(values) for key, values in results.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    print("| panes | step | FleetList ms | DataTable ms | ratio |")
    print("|---|---|---|---|---|")
    for n in args.sizes:
        ours = await measure(FleetList, n, args.rounds)
        stock = await measure(lambda: Stock(cursor_type="row"), n, args.rounds)
        for step in ("fill", "tick", "state"):
            print(f"| {n} | {step} | {ours[step]:.2f} | {stock[step]:.2f} | {ours[step] / stock[step]:.2f}x |")


if __name__ == "__main__":
    asyncio.run(main())
