"""The fleet list: one row per pane, agents bright, other panes dimmed.

Rows are keyed by pane id and updated cell by cell, so a state change or a ticking idle time
repaints one row, not the table: `DataTable.update_cell` would bump the table's update count
(part of every render cache key) and re-render every visible cell, so the list writes the cell
itself, drops only that cell's and row's cached renders and refreshes that row's region. A
column is re-measured (and the screen laid out again) only when its width really changes.

With panes of several hosts the rows are grouped under one header row per host (its name,
connected or offline, who acts as its sidecar, its pane count); the cursor never rests on a
header (it steps over it in the direction it moved).

The list owns `FleetList.PaneHighlighted` (the cursor moved to a pane) and
`FleetList.PaneChosen` (Enter on a pane).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Region
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowDoesNotExist, RowKey

from nbs_tui.core.hosts import HostState
from nbs_tui.core.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.text import printable
from nbs_tui.messages import PaneStatus

STATE_STYLES: Mapping[AgentState, str] = {
    AgentState.WORKING: "bold green",
    AgentState.IDLE: "cyan",
    AgentState.PERMISSION: "bold black on yellow",
    AgentState.PLAN: "bold magenta",
    AgentState.QUESTION: "bold black on yellow",
    AgentState.DIALOG: "bold black on yellow",
    AgentState.ERROR: "bold white on red",
    AgentState.LIMITED: "bold black on dark_orange",
    AgentState.UNKNOWN: "dim",
}


def state_text(state: AgentState | None, is_agent: bool = True) -> Text:
    """A pane's state as a short coloured badge."""
    if not is_agent:
        return Text("—", style="dim")
    if state is None:
        return Text("…", style="dim")
    return Text(f" {state.value} ", style=STATE_STYLES.get(state, ""))


def format_duration(seconds: float | None) -> str:
    """``42s``, ``3m05s``, ``2h10m``: short enough for a column."""
    if seconds is None:
        return "—"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def quiet_start(status: PaneStatus | None, changed_at: float | None) -> float | None:
    """When the pane's screen last changed: the later of what the sidecar and the mirror saw."""
    times = [t for t in (status.idle_since if status else None, changed_at) if t is not None]
    return max(times) if times else None


def project_name(pane: PaneInfo) -> str:
    """The folder's last part, printable (a folder's name may hold control characters)."""
    return printable(os.path.basename(pane.current_path.rstrip("/")) or pane.current_path)


COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("target", "Pane", None),
    ("state", "State", 12),
    ("idle", "Quiet", 6),
    ("poll", "Poll in", 7),
    ("project", "Project", None),
    ("title", "Title", None),
    ("agent", "Agent", None),
)
"""Column keys and labels, the state and clocks first: a narrow list still shows them."""

AUTO_WIDTH = frozenset(key for key, _, width in COLUMNS if width is None)
"""Columns as wide as their widest cell."""

HEADER = "# host "
"""Row key prefix of a host's header row (a pane id never holds a space)."""


def header_cells(name: str, state: HostState | None, panes: int) -> dict[str, Text]:
    """A host's header row: name, connection, pane count and who acts as its sidecar."""
    if state is None or state.connected is None:
        link = Text("… connecting", style="dim")
    elif state.connected:
        link = Text("● online", style="bold green")
    else:
        link = Text("✖ offline", style="bold red")
    lease = state.lease.replace("sidecar: ", "sidecar ").split(" since ")[0] if state is not None else ""
    if state is not None and state.acting:
        lease = "⚑ sidecar here"
    elif state is not None and state.connected is False:
        lease = "last view kept"
    return {
        "target": Text(f"▾ {name}", style="bold reverse", no_wrap=True, overflow="ellipsis"),
        "state": link,
        "project": Text(f"{panes} pane{'' if panes == 1 else 's'}", style="dim", no_wrap=True),
        "title": Text(lease[:28], style="dim", no_wrap=True, overflow="ellipsis"),
    }


_FAST_UPDATES = all(
    hasattr(DataTable, name) or name in DataTable.__init__.__code__.co_names
    for name in ("_data", "_cell_render_cache", "_row_render_cache", "_row_renderable_cache", "_line_cache")
)
"""The private render caches the row-wise update relies on exist in this Textual version."""


def _discard(cache: Any, stale: Callable[[Any], bool]) -> None:
    """Drop the entries of a Textual LRUCache whose key ``stale`` picks."""
    for key in [k for k in cache.keys() if stale(k)]:  # noqa: SIM118 (LRUCache has no __iter__)
        cache.discard(key)


class FleetList(DataTable[Text]):
    """The fleet as a table; the highlighted row is the selected pane."""

    DEFAULT_CSS = """
    FleetList {
        height: 1fr;
        overflow-x: hidden;
    }
    """

    @dataclass
    class PaneHighlighted(Message):
        """The cursor moved onto a pane (``None`` when the list emptied)."""

        pane_id: PaneId | None

    @dataclass
    class PaneChosen(Message):
        """Enter was pressed on a pane."""

        pane_id: PaneId

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, cursor_type="row", zebra_stripes=False)
        self._order: list[PaneId] = []
        self._panes: dict[PaneId, PaneInfo] = {}
        self._cells: dict[tuple[PaneId, str], str] = {}
        self._index: dict[PaneId, int] = {}
        self._remeasure: set[tuple[PaneId, str]] = set()
        self.offline_hosts: frozenset[str] = frozenset()
        """Watched hosts that are away: their panes stay listed, marked ✖ and dimmed."""
        self.host_states: dict[str, HostState] = {}
        """Every watched host (several hosts): their header rows, in this order."""
        self.show_empty_hosts = True
        """A host with no pane listed still gets its header (an unreachable host)."""
        self._rows: list[str] = []
        """Row keys in table order: pane ids and `HEADER` rows."""
        self._headers: dict[str, str] = {}
        """Header row key -> the text it shows (to rewrite only a header that changed)."""
        self._last_row = 0

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    @property
    def selected_pane_id(self) -> PaneId | None:
        if not self._rows or self.cursor_row < 0 or self.cursor_row >= len(self._rows):
            return None
        key = self._rows[self.cursor_row]
        return None if key.startswith(HEADER) else key

    def select_pane(self, pane_id: PaneId) -> None:
        if pane_id in self._panes:
            self.move_cursor(row=self._index[pane_id])

    def move_selection(self, delta: int) -> None:
        if not self._order:
            return
        current = self.selected_pane_id
        at = self._order.index(current) if current in self._index else 0
        self.move_cursor(row=self._index[self._order[max(0, min(len(self._order) - 1, at + delta))]])

    def set_hosts(self, states: Sequence[HostState]) -> bool:
        """The watched hosts' states (several hosts); True if the list must be redrawn."""
        new = {state.name: state for state in states}
        offline = frozenset(state.name for state in states if state.connected is False)
        if new == self.host_states and offline == self.offline_hosts:
            return False
        self.host_states, self.offline_hosts = new, offline
        return True

    def _layout(self, panes: Sequence[PaneInfo]) -> tuple[list[str], dict[str, dict[str, Text]]]:
        """Row keys in order, and each header row's cells. Grouped only with several hosts."""
        hosts = list(self.host_states)
        for pane in panes:
            if pane.host not in hosts:
                hosts.append(pane.host)
        if len(hosts) < 2:
            return [p.pane_id for p in panes], {}
        by_host: dict[str, list[PaneId]] = {host: [] for host in hosts}
        for pane in panes:
            by_host[pane.host].append(pane.pane_id)
        rows: list[str] = []
        headers: dict[str, dict[str, Text]] = {}
        for host, pane_ids in by_host.items():
            if not pane_ids and not self.show_empty_hosts:
                continue
            key = HEADER + host
            rows.append(key)
            headers[key] = header_cells(host or "local", self.host_states.get(host), len(pane_ids))
            rows.extend(pane_ids)
        return rows, headers

    def update_fleet(
        self,
        panes: Sequence[PaneInfo],
        statuses: Mapping[PaneId, PaneStatus],
        last_change: Mapping[PaneId, float],
        now: float,
    ) -> None:
        """Show ``panes``; keeps the cursor on the same pane when it survives.

        ``last_change`` and the statuses' times are on the same clock as ``now``.
        """
        selected = self.selected_pane_id
        order = [p.pane_id for p in panes]
        self._panes = {p.pane_id: p for p in panes}
        rows, headers = self._layout(panes)
        if rows != self._rows:
            old_row = self.cursor_row
            self.clear()
            self._cells.clear()
            self._order = order
            self._rows = rows
            self._index = {key: i for i, key in enumerate(rows) if not key.startswith(HEADER)}
            self._headers = {}
            for key in rows:
                if key.startswith(HEADER):
                    cells = headers[key]
                    self.add_row(*(cells.get(column, Text("")) for column, _, _ in COLUMNS), key=key)
                    self._headers[key] = "".join(str(t) for t in cells.values())
                    continue
                pane = self._panes[key]
                values = self._row_values(pane, statuses.get(key), last_change.get(key), now)
                cells_ = (self._styled(pane, column, values[column]) for column, _, _ in COLUMNS)
                self.add_row(*cells_, key=key)
                for column, value in values.items():
                    self._cells[(key, column)] = value
            if selected is not None and selected in self._index:
                self.move_cursor(row=self._index[selected], animate=False)
            elif order:
                self.move_cursor(row=self._pane_row(min(old_row, len(rows) - 1), 1), animate=False)
            self._last_row = self.cursor_row
            self.post_message(self.PaneHighlighted(self.selected_pane_id))
        else:
            self._order = order
            self._write_headers(headers)
            self.refresh_cells(statuses, last_change, now)

    def _write_headers(self, headers: Mapping[str, Mapping[str, Text]]) -> None:
        """Rewrite the header rows whose text changed (a host went offline, its lease moved)."""
        for key, cells in headers.items():
            text = "".join(str(t) for t in cells.values())
            if self._headers.get(key) == text:
                continue
            self._headers[key] = text
            for column, value in cells.items():
                try:
                    self.update_cell(key, column, value, update_width=True)
                except (CellDoesNotExist, RowDoesNotExist):
                    continue

    def _pane_row(self, row: int, step: int) -> int:
        """The nearest pane row from ``row`` going ``step`` (then the other way)."""
        for direction in (step, -step):
            at = row
            while 0 <= at < len(self._rows):
                if not self._rows[at].startswith(HEADER):
                    return at
                at += direction
        return row

    def refresh_cells(
        self,
        statuses: Mapping[PaneId, PaneStatus],
        last_change: Mapping[PaneId, float],
        now: float,
        pane_ids: Iterable[PaneId] | None = None,
    ) -> None:
        """Update the cells whose text changed (states, quiet time, countdown).

        ``pane_ids`` limits the work to those rows (a status event for one pane).
        """
        if pane_ids is None:
            rows: Iterable[PaneId] = self._order
        else:
            rows = [p for p in pane_ids if p in self._index]
        changed: list[tuple[PaneId, str, Text]] = []
        for pane_id in rows:
            pane = self._panes[pane_id]
            values = self._row_values(pane, statuses.get(pane_id), last_change.get(pane_id), now)
            for key, value in values.items():
                if self._cells.get((pane_id, key)) != value:
                    old = self._cells.get((pane_id, key))
                    self._cells[(pane_id, key)] = value
                    changed.append((pane_id, key, self._styled(pane, key, value, statuses.get(pane_id))))
                    if key in AUTO_WIDTH and self._width_changes(key, old, value):
                        self._remeasure.add((pane_id, key))
        if changed:
            self._write_cells(changed)

    def _width_changes(self, key: str, old: str | None, new: str) -> bool:
        """Would the auto-width column ``key`` get wider or narrower for this new cell?"""
        column = self.columns.get(ColumnKey(key))
        if column is None:
            return True
        width = column.content_width
        new_width = cell_len(new)
        if new_width > width:
            return True
        return old is not None and cell_len(old) == width and new_width < width

    def _write_cells(self, changed: list[tuple[PaneId, str, Text]]) -> None:
        remeasure, self._remeasure = self._remeasure, set()
        if remeasure or not _FAST_UPDATES:
            # a column changes width: let the table re-measure and lay out (rare: titles, marks)
            for pane_id, key, text in changed:
                try:
                    self.update_cell(pane_id, key, text, update_width=(pane_id, key) in remeasure)
                except (CellDoesNotExist, RowDoesNotExist):
                    continue
            return
        data = self._data
        cells: set[tuple[RowKey, ColumnKey]] = set()
        rows: dict[RowKey, int] = {}
        for pane_id, key, text in changed:
            row_key, column_key = RowKey(pane_id), ColumnKey(key)
            row = data.get(row_key)
            index = self._index.get(pane_id)
            if row is None or column_key not in row or index is None:
                continue
            row[column_key] = text
            cells.add((row_key, column_key))
            rows[row_key] = index
        if not rows:
            return
        indices = set(rows.values())
        header = self.header_height if self.show_header else 0
        lines = {header + index for index in indices}  # every row is one line high
        _discard(self._cell_render_cache, lambda k: (k[0], k[1]) in cells)
        _discard(self._row_render_cache, lambda k: k[0] in rows)
        _discard(self._row_renderable_cache, lambda k: k[1] in indices)
        _discard(self._line_cache, lambda k: k[0] in lines)
        width = max(self.size.width, self.virtual_size.width)
        for index in sorted(indices):
            self._refresh_region(Region(0, header + index, width, 1))

    def _row_values(
        self, pane: PaneInfo, status: PaneStatus | None, changed_at: float | None, now: float
    ) -> dict[str, str]:
        state = status.state.value if status and status.state else ""
        quiet_since = quiet_start(status, changed_at)
        idle = format_duration(now - quiet_since) if quiet_since is not None else "—"
        poll = format_duration(status.next_poll_at - now) if status and status.next_poll_at is not None else "—"
        if status is not None and status.state is AgentState.LIMITED:  # the reset's countdown
            reset = status.limit_reset_at
            poll = "⏳" + (format_duration(max(0.0, reset - now)) if reset is not None else "?")
        return {
            "target": pane.target + (" ✖" if pane.host and pane.host in self.offline_hosts else ""),
            "state": state,
            "idle": idle,
            "poll": poll,
            "project": project_name(pane)[:20],
            "agent": ("claude" if pane.is_agent else pane.current_command[:12]) + (" (dead)" if pane.dead else ""),
            "title": pane.title[:28],
        }

    def _styled(self, pane: PaneInfo, key: str, value: str, status: PaneStatus | None = None) -> Text:
        if key == "state":
            state = AgentState(value) if value else None
            return state_text(state, pane.is_agent)
        style = "" if pane.is_agent and not pane.dead else "dim"
        if key == "target" and pane.is_agent:
            style = "bold"
        if key == "target" and pane.host and pane.host in self.offline_hosts:
            style = "dim"
        return Text(value, style=style, no_wrap=True, overflow="ellipsis")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = event.row_key.value if event.row_key is not None else None
        if key is not None and key.startswith(HEADER):
            row = self.cursor_row
            if 0 <= row < len(self._rows) and self._rows[row] == key:  # step over the header
                target = self._pane_row(row, 1 if row >= self._last_row else -1)
                if target != row:
                    self.move_cursor(row=target, animate=False)
            return
        self._last_row = self.cursor_row
        if key != self.selected_pane_id:
            return  # stale: the cursor moved on (a rebuild, a select) before this arrived
        self.post_message(self.PaneHighlighted(key))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value if event.row_key is not None else None
        if key is not None and not key.startswith(HEADER):
            self.post_message(self.PaneChosen(key))
