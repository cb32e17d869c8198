"""The fleet filter: an input whose query (see `nbs_tui.core.fleet.fleet_filter`) narrows the list.

Typing filters as you go (`FilterBar.FilterChanged`); Enter keeps the filter, folds the bar away
(the list's title shows the filter in force) and returns to the list; Escape clears it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input

from nbs_tui.core.fleet.fleet_filter import FleetFilter
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.dashboard.messages import PaneStatus
from nbs_tui.widgets.fleet_list import FleetList


class FilterBar(Input):
    DEFAULT_CSS = """
    FilterBar {
        height: 3;
        border: round $accent;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "clear_filter", "Clear filter", id="filter.clear"),
    ]

    @dataclass
    class FilterChanged(Message):
        """The query changed (named so as not to hide `Input.Changed`)."""

        filter: FleetFilter

    @dataclass
    class FilterDone(Message):
        """Enter or Escape: focus can go back to the list."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            placeholder="filter: words, session:NAME project:DIR name:TEXT state:idle|needs …",
            id=id,
        )
        self.border_title = "Filter (Enter keeps, Esc clears)"
        self.display = False

    def open(self) -> None:
        self.add_class("active")
        self.display = True
        self.screen.set_focus(self)  # at once, so keys typed right after "/" land here

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.FilterChanged(FleetFilter.parse(event.value)))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        # The bar folds away; the list's title shows the filter in force and "/" edits it again.
        self.remove_class("active")
        self.display = False
        self.post_message(self.FilterDone())

    def action_clear_filter(self) -> None:
        self.value = ""
        self.remove_class("active")
        self.display = False
        self.post_message(self.FilterChanged(FleetFilter()))
        self.post_message(self.FilterDone())


class OperatorFleetList(FleetList):
    """The fleet list with the operator's layer: a filter, broadcast marks and per-pane switches.

    The row's Pane cell carries ``●`` when the pane is marked for broadcast, ``⊘p`` when poll
    injection is off for it (while it is on for the fleet) and ``⊘a`` when plan menus wait for a
    person instead of being auto-selected (while the fleet auto-selects). Narrow, non-emoji
    glyphs, so the column stays aligned in every terminal.
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.filter = FleetFilter()
        self.marked: set[PaneId] = set()
        self.poll_off: set[PaneId] = set()
        self.plan_manual: set[PaneId] = set()
        self.fleet_poll_off = False
        """Polls are off for the whole fleet: then a pane's own "off" is not news."""
        self.fleet_plan_off = False
        self._all: list[PaneInfo] = []
        self._statuses: Mapping[PaneId, PaneStatus] = {}
        self._last: tuple[Mapping[PaneId, float], float] | None = None

    def _state(self, pane_id: PaneId) -> AgentState | None:
        status = self._statuses.get(pane_id)
        return status.state if status is not None else None

    def shown_panes(self, panes: Sequence[PaneInfo]) -> list[PaneInfo]:
        if not self.filter:
            return list(panes)
        return [p for p in panes if self.filter.matches(p, self._state(p.pane_id))]

    def update_fleet(
        self,
        panes: Sequence[PaneInfo],
        statuses: Mapping[PaneId, PaneStatus],
        last_change: Mapping[PaneId, float],
        now: float,
    ) -> None:
        self._all = list(panes)
        self._statuses = statuses
        self._last = (last_change, now)
        super().update_fleet(self.shown_panes(panes), statuses, last_change, now)

    def refresh_cells(
        self,
        statuses: Mapping[PaneId, PaneStatus],
        last_change: Mapping[PaneId, float],
        now: float,
        pane_ids: Iterable[PaneId] | None = None,
    ) -> None:
        self._statuses = statuses
        self._last = (last_change, now)
        if self.filter and [p.pane_id for p in self.shown_panes(self._all)] != self._order:
            super().update_fleet(self.shown_panes(self._all), statuses, last_change, now)  # states moved
            return
        super().refresh_cells(statuses, last_change, now, pane_ids)

    def set_filter(self, fleet_filter: FleetFilter) -> None:
        self.filter = fleet_filter
        self.show_empty_hosts = not fleet_filter  # filtered: only hosts with a pane shown
        self.border_title = f"filter: {fleet_filter.describe()}" if fleet_filter else ""
        self.redraw()

    def redraw(self) -> None:
        """Re-apply the filter and decorations now (marks or switches changed)."""
        if self._last is None:
            return
        last_change, now = self._last
        super().update_fleet(self.shown_panes(self._all), self._statuses, last_change, now)
        super().refresh_cells(self._statuses, last_change, now)

    def _layout(self, panes: Sequence[PaneInfo]) -> tuple[list[str], dict[str, dict[str, Text]]]:
        """Background sessions are no panes: a filter in force (it reads panes) leaves them out."""
        return self._pane_layout(panes) if self.filter else super()._layout(panes)

    def _row_values(
        self, pane: PaneInfo, status: PaneStatus | None, changed_at: float | None, now: float
    ) -> dict[str, str]:
        values = super()._row_values(pane, status, changed_at, now)
        poll_off = pane.pane_id in self.poll_off or bool(status and "poll-off" in status.flags)
        marks = " ".join(
            sign
            for sign, on in (
                ("●", pane.pane_id in self.marked),
                ("⊘p", poll_off and not self.fleet_poll_off),
                ("⊘a", pane.pane_id in self.plan_manual and not self.fleet_plan_off),
            )
            if on
        )
        values["target"] = f"{values['target']} {marks}" if marks else values["target"]
        return values
