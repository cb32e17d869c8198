"""The fleet list: one row per pane, agents bright, other panes dimmed.

A line-API widget: each row is rendered once into a `Strip` and kept until one of its cells
changes, so a ticking quiet time or a state change repaints one row, and the once-a-second clock
costs the rows whose text moved. A column is measured again (and every row redrawn) only when
its width really changes. The look is a `DataTable`'s with a row cursor: a header line, one cell
of padding either side of each column, the cursor's colours over the cells' own.

With panes of several hosts the rows are grouped under one header row per host (its name,
connected or offline, who acts as its sidecar, its pane count); the cursor never rests on a
header (it steps over it in the direction it moved).

Claude Code's own background sessions (``claude --bg``, `background`) follow the panes, one row
each marked ``◇``: the cursor rests on them (`selected_background`), Enter posts
`FleetList.BackgroundChosen`; they are no panes (`selected_pane_id` is None there).

The list owns `FleetList.PaneHighlighted` (the cursor moved to a pane),
`FleetList.PaneChosen` (Enter on a pane, or a click on the cursor's row) and
`FleetList.BackgroundChosen` (the same on a background session).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.review.agent_changes import ChangeCount
from nbs_tui.dashboard.messages import PaneStatus
from nbs_tui.widgets.direct_paint import DirectPainter
from nbs_tui.widgets.fleet_rows import (
    AUTO_WIDTH,
    BACKGROUND,
    COLUMNS,
    FOLDED,
    HEADER,
    background_cells,
    header_cells,
    row_values,
    styled_cell,
)


def _cell_key(cell: Text | None) -> Hashable:
    """All that decides how a cell's text is drawn (its place and the row's look aside)."""
    if cell is None:
        return None
    return (cell.plain, str(cell.style), tuple(cell.spans), cell.overflow)


CELL_PADDING = 1
"""Blank cells either side of every column's text."""

_COLUMN_META = [Style.from_meta({"column": number}) for number in range(len(COLUMNS))]
_COLUMN_NUMBER = {key: number for number, (key, _, _) in enumerate(COLUMNS)}

_LABELS = ("", False, False)
"""The column labels' line in `FleetList._strips` (no row key is empty)."""


class FleetList(ScrollView, can_focus=True):
    """The fleet as a table; the cursor's row is the selected pane."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "choose", "Open", show=False),
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,ctrl+home", "edge(-1)", "First", show=False),
        Binding("end,ctrl+end", "edge(1)", "Last", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "fleet-list--header",
        "fleet-list--cursor",
        "fleet-list--hover",
    }

    DEFAULT_CSS = """
    FleetList {
        height: 1fr;
        overflow-x: hidden;
        background: $surface;
        color: $foreground;
        &:focus {
            background-tint: $foreground 5%;
            & > .fleet-list--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .fleet-list--header {
                background-tint: $foreground 5%;
            }
        }
        & > .fleet-list--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .fleet-list--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }
        & > .fleet-list--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        & > .fleet-list--hover {
            background: $block-hover-background;
        }
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

    @dataclass
    class BackgroundChosen(Message):
        """Enter was pressed on a Claude Code background session's row."""

        session: BackgroundSession

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._order: list[PaneId] = []
        self._panes: dict[PaneId, PaneInfo] = {}
        self._values: dict[tuple[PaneId, str], str] = {}
        """The text of each pane's cells, to tell which changed."""
        self._index: dict[PaneId, int] = {}
        self.offline_hosts: frozenset[str] = frozenset()
        """Watched hosts that are away: their panes stay listed, marked ✖ and dimmed."""
        self.host_states: dict[str, HostState] = {}
        """Every watched host (several hosts): their header rows, in this order."""
        self.background: tuple[BackgroundSession, ...] = ()
        """Claude Code's background sessions, listed after the panes (set it, then `update_fleet`)."""
        self.show_empty_hosts = True
        """A host with no pane listed still gets its header (an unreachable host)."""
        self._rows: list[str] = []
        """Row keys in table order: pane ids and `HEADER` rows."""
        self._cells: dict[str, dict[str, Text]] = {}
        """Row key -> column -> the styled cell shown."""
        self._headers: dict[str, str] = {}
        """Header row key -> the text it shows (to rewrite only a header that changed)."""
        self._labels = {key: Text(label) for key, label, _ in COLUMNS}
        self._widths: dict[str, int] = {
            key: 0 if key in FOLDED else width or cell_len(label) for key, label, width in COLUMNS
        }
        """Each column's text width (the padding comes on top); 0: a `FOLDED` column takes no room."""
        self.changes: dict[PaneId, ChangeCount] = {}
        """Each agent's change count (the change column); set it with `set_changes`."""
        self._strips: dict[tuple[str, bool, bool], Strip] = {}
        """(row key, under the cursor, under the mouse) -> the row's rendered line."""
        self._pieces: dict[tuple[str, str, bool, bool], list[Segment]] = {}
        """(row key, column, under the cursor, under the mouse) -> the cell's segments."""
        self.painter = DirectPainter(max_rows=256)
        """Writes a tick's changed rows to the terminal itself when nothing covers the list."""
        self._palette: tuple[Style, Style, Style, Style] | tuple[()] = ()
        """The styles `_strips` were rendered with: when they change (focus, theme) all go."""
        self._cursor = 0
        self._hover: int | None = None
        self._scroll_wanted = False
        """The cursor moved before the list was laid out: scroll to it once it is."""

    # -- DataTable-like reading, for callers and tests ------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._rows)

    @property
    def row_keys(self) -> list[str]:
        """Every row's key in order: pane ids, and `HEADER` + host for a host's header."""
        return list(self._rows)

    @property
    def cursor_row(self) -> int:
        """The cursor's row index (a pane's row whenever the list holds a pane)."""
        return self._cursor

    def get_cell(self, row_key: str, column: str) -> Text:
        """The cell shown in ``column`` of row ``row_key`` (KeyError if there is none)."""
        return self._cells[row_key].get(column, Text(""))

    def get_row(self, row_key: str) -> list[Text]:
        """The cells of row ``row_key`` in column order (a folded column's left out: it is not shown)."""
        cells = self._cells[row_key]
        return [cells.get(key, Text("")) for key, _, _ in COLUMNS if self._room(key)]

    def get_row_at(self, index: int) -> list[Text]:
        return self.get_row(self._rows[index])

    @property
    def selected_pane_id(self) -> PaneId | None:
        if not self._rows or not 0 <= self._cursor < len(self._rows):
            return None
        key = self._rows[self._cursor]
        return None if key.startswith((HEADER, BACKGROUND)) else key

    @property
    def selected_background(self) -> BackgroundSession | None:
        """The background session under the cursor, if the cursor is on one."""
        if not self._rows or not 0 <= self._cursor < len(self._rows) or not self._rows[self._cursor].startswith(BACKGROUND):
            return None
        short = self._rows[self._cursor][len(BACKGROUND) :]
        return next((s for s in self.background if s.id == short), None)

    # -- moving the cursor ---------------------------------------------------------------------

    def select_pane(self, pane_id: PaneId) -> None:
        if pane_id in self._index:
            self.move_cursor(self._index[pane_id])

    def move_selection(self, delta: int) -> None:
        order = self._order + [key for key in self._rows if key.startswith(BACKGROUND)]
        if not order:
            return
        current = self._rows[self._cursor] if 0 <= self._cursor < len(self._rows) else None
        at = order.index(current) if current in order else 0
        self.move_cursor(self._index[order[max(0, min(len(order) - 1, at + delta))]])

    def move_cursor(self, row: int, *, step: int = 1) -> None:
        """Put the cursor on ``row`` (the nearest pane row going ``step`` if it is a header),
        scroll it into view, and say so with `PaneHighlighted` if it moved to another pane."""
        if not self._rows:
            self._cursor = 0
            return
        row = self._pane_row(max(0, min(len(self._rows) - 1, row)), step)
        before = self.selected_pane_id
        if row != self._cursor:
            self._refresh_row(self._cursor)
            self._cursor = row
            self._refresh_row(row)
        self._scroll_to_cursor()
        if self.selected_pane_id != before:
            self.post_message(self.PaneHighlighted(self.selected_pane_id))

    def _scroll_to_cursor(self) -> None:
        if not self.size.height:  # not laid out yet (or hidden): when it is (`on_resize`)
            self._scroll_wanted = True
            return
        self._scroll_wanted = False
        top = int(self.scroll_y)
        visible = max(1, self.scrollable_content_region.height - self._header_height)
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, force=True)
        elif self._cursor >= top + visible:
            self.scroll_to(y=self._cursor - visible + 1, animate=False, force=True)

    def _pane_row(self, row: int, step: int) -> int:
        """The nearest pane row from ``row`` going ``step`` (then the other way)."""
        for direction in (step, -step):
            at = row
            while 0 <= at < len(self._rows):
                if not self._rows[at].startswith(HEADER):
                    return at
                at += direction
        return row

    def on_resize(self) -> None:
        if self._scroll_wanted:
            self._scroll_to_cursor()

    def action_cursor(self, delta: int) -> None:
        self._set_hover(None)  # the keyboard took over from the mouse
        self.move_cursor(self._cursor + delta, step=1 if delta > 0 else -1)

    def action_page(self, direction: int) -> None:
        page = max(1, self.scrollable_content_region.height - self._header_height)
        self.move_cursor(self._cursor + direction * page, step=direction)

    def action_edge(self, direction: int) -> None:
        self.move_cursor(0 if direction < 0 else len(self._rows) - 1, step=-direction)

    def action_choose(self) -> None:
        pane_id = self.selected_pane_id
        if pane_id is not None:
            self.post_message(self.PaneChosen(pane_id))
        session = self.selected_background
        if session is not None:
            self.post_message(self.BackgroundChosen(session))

    def _row_at(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None or offset.y < self._header_height:
            return None
        row = offset.y - self._header_height + int(self.scroll_y)
        return row if 0 <= row < len(self._rows) else None

    def on_click(self, event: events.Click) -> None:
        row = self._row_at(event)
        if row is None or self._rows[row].startswith(HEADER):
            return
        event.stop()
        if row == self._cursor:
            self.action_choose()  # a click on the cursor's row opens it, as Enter does
        else:
            self.move_cursor(row)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self._row_at(event))

    def on_leave(self, event: events.Leave) -> None:
        self._set_hover(None)

    def _set_hover(self, row: int | None) -> None:
        if row != self._hover:
            for old in (self._hover, row):
                if old is not None:
                    self._refresh_row(old)
            self._hover = row

    # -- hosts and rows -------------------------------------------------------------------------

    def set_hosts(self, states: Sequence[HostState]) -> bool:
        """The watched hosts' states (several hosts); True if the list must be redrawn."""
        new = {state.name: state for state in states}
        offline = frozenset(state.name for state in states if state.connected is False)
        if new == self.host_states and offline == self.offline_hosts:
            return False
        self.host_states, self.offline_hosts = new, offline
        return True

    def _layout(self, panes: Sequence[PaneInfo]) -> tuple[list[str], dict[str, dict[str, Text]]]:
        """Row keys in order, and the cells of each row that is no pane (host headers, background
        sessions). Grouped by host only with several hosts; background sessions come last."""
        rows, fixed = self._pane_layout(panes)
        for session in self.background:
            rows.append(BACKGROUND + session.id)
            fixed[BACKGROUND + session.id] = background_cells(session)
        return rows, fixed

    def _pane_layout(self, panes: Sequence[PaneInfo]) -> tuple[list[str], dict[str, dict[str, Text]]]:
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
        self._order = [p.pane_id for p in panes]
        self._panes = {p.pane_id: p for p in panes}
        rows, headers = self._layout(panes)
        if rows == self._rows:
            self._write_headers(headers)
            self.refresh_cells(statuses, last_change, now)
            return
        old_row = self._cursor
        self._rows = rows
        self._index = {key: i for i, key in enumerate(rows) if not key.startswith(HEADER)}
        self._cells = {}
        self._values = {}
        self._headers = {}
        self._forget_drawing()
        for key in rows:
            if key in headers:
                self._cells[key] = dict(headers[key])
                self._headers[key] = "".join(str(t) for t in headers[key].values())
                continue
            pane = self._panes[key]
            status = statuses.get(key)
            values = self._row_values(pane, status, last_change.get(key), now)
            self._cells[key] = {column: self._styled(pane, column, value, status) for column, value in values.items()}
            for column, value in values.items():
                self._values[(key, column)] = value
        self._measure(AUTO_WIDTH)
        self._hover = None
        if selected is not None and selected in self._index:
            self._cursor = self._index[selected]
        elif rows:
            self._cursor = self._pane_row(min(old_row, len(rows) - 1), 1)
        else:
            self._cursor = 0
        self._resize_virtual()
        self.refresh()
        self._scroll_to_cursor()
        self.post_message(self.PaneHighlighted(self.selected_pane_id))

    def _write_headers(self, headers: Mapping[str, Mapping[str, Text]]) -> None:
        """Rewrite the header rows whose text changed (a host went offline, its lease moved)."""
        for key, cells in headers.items():
            text = "".join(str(t) for t in cells.values())
            if self._headers.get(key) == text or key not in self._cells:
                continue
            self._headers[key] = text
            self._cells[key] = dict(cells)
            for column, _, _ in COLUMNS:
                self._forget_cell(key, column)
            if not self._measure(AUTO_WIDTH & cells.keys()):
                self._refresh_row(self._rows.index(key))

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
        rows: Iterable[PaneId] = self._order if pane_ids is None else [p for p in pane_ids if p in self._index]
        changed_rows: dict[int, list[str]] = {}
        widen: set[str] = set()
        for pane_id in rows:
            pane = self._panes[pane_id]
            status = statuses.get(pane_id)
            values = self._row_values(pane, status, last_change.get(pane_id), now)
            cells = self._cells[pane_id]
            moved: list[str] = []
            for column, value in values.items():
                old = self._values.get((pane_id, column))
                if old == value:
                    continue
                self._values[(pane_id, column)] = value
                cells[column] = self._styled(pane, column, value, status)
                self._forget_cell(pane_id, column)
                moved.append(column)
                if column in AUTO_WIDTH and self._width_changes(column, old, value):
                    widen.add(column)
            if moved:
                changed_rows[self._index[pane_id]] = moved
        if widen and self._measure(widen):
            return  # every row was redrawn
        if changed_rows and self.is_attached:  # removed at exit: its looks are gone, news may still come
            self._paint_cells(changed_rows)

    def _paint_cells(self, changed: Mapping[int, Sequence[str]]) -> None:
        """Write the cells that moved to the terminal ourselves: the clock moves the Quiet and
        Poll-in cells of every row each second, and through Textual that was a compositor pass
        over the whole left column (with nothing else changing, the dashboard's largest cost).
        The same cells look the same in any row, so a tick draws each distinct one once. When
        the painter says no, the rows go to Textual."""
        palette = self._check_palette()  # the cursor's look moves with focus: part of each key
        top, height = int(self.scroll_y), self.scrollable_content_region.height
        starts, x = {}, 0
        for column, _, _ in COLUMNS:
            starts[column] = x
            x += self._room(column)
        spans: list[tuple[int, int, int, Hashable]] = []
        for index, columns in sorted(changed.items()):
            row = self._rows[index]
            self._forget_row(row)
            line = self._header_height + index - top
            if not self._header_height <= line < height:
                continue  # off screen: drawn from its new cells when scrolled to
            first = min(_COLUMN_NUMBER[column] for column in columns)
            last = max(_COLUMN_NUMBER[column] for column in columns)
            shown = [COLUMNS[number][0] for number in range(first, last + 1)]
            x1 = starts[shown[0]]
            x2 = starts[shown[-1]] + self._widths[shown[-1]] + 2 * CELL_PADDING
            cells = self._cells[row]
            look = tuple(_cell_key(cells.get(column)) for column in shown)
            spans.append((line, x1, x2, (look, self._under(index), palette)))
        if not spans or (int(self.scroll_x) == 0 and self.painter.paint_spans(self, spans)):
            return
        for line, _, _, _ in spans:
            self.refresh(Region(0, line, self.size.width, 1))

    def _width_changes(self, column: str, old: str | None, new: str) -> bool:
        """Would the auto-width ``column`` get wider or narrower for this new cell?"""
        width = self._widths[column]
        new_width = cell_len(new)
        if column in FOLDED and not new and old:
            return True  # perhaps the last cell with text: the column may fold
        return new_width > width or (old is not None and cell_len(old) == width and new_width < width)

    def _measure(self, columns: Iterable[str]) -> bool:
        """Size the auto-width ``columns`` to their widest cell; True if any width changed
        (then every row is drawn again)."""
        moved = False
        for column in columns:
            cells_width = max([cell_len(cells[column].plain) for cells in self._cells.values() if column in cells] or [0])
            width = max(cell_len(self._labels[column].plain), cells_width)
            if column in FOLDED and cells_width == 0:
                width = 0
            if width != self._widths[column]:
                self._widths[column] = width
                moved = True
        if moved:
            self._forget_drawing()
            self._resize_virtual()
            self.refresh()
        return moved

    # -- drawing --------------------------------------------------------------------------------

    @property
    def _header_height(self) -> int:
        return 1

    def _room(self, column: str) -> int:
        """The cells a column takes, its padding with it; none for a folded one."""
        width = self._widths[column]
        return 0 if width == 0 and column in FOLDED else width + 2 * CELL_PADDING

    def set_changes(self, counts: Mapping[PaneId, ChangeCount]) -> None:
        """New change counts (the caller then refreshes those rows' cells)."""
        self.changes.update(counts)

    def _resize_virtual(self) -> None:
        width = sum(self._room(column) for column, _, _ in COLUMNS)
        self.virtual_size = Size(width, self._header_height + len(self._rows))

    def _refresh_row(self, index: int) -> None:
        """Draw row ``index`` again (its cells, the cursor or the mouse moved)."""
        if 0 <= index < len(self._rows):
            self._forget_row(self._rows[index])
            self.refresh_line(self._header_height + index)

    def _forget_row(self, key: str) -> None:
        """Drop the rendered lines of one row (a cell of it changed)."""
        for cursor in (False, True):
            for hover in (False, True):
                self._strips.pop((key, cursor, hover), None)

    def _under(self, index: int) -> tuple[bool, bool]:
        """(under the cursor, under the mouse) for row ``index``: what its line looks like."""
        on_cursor = index == self._cursor and 0 <= index < len(self._rows) and not self._rows[index].startswith(HEADER)
        return on_cursor, index == self._hover

    def _forget_cell(self, key: str, column: str) -> None:
        """Drop the rendered pieces of one cell (its text changed)."""
        for cursor in (False, True):
            for hover in (False, True):
                self._pieces.pop((key, column, cursor, hover), None)

    def _forget_drawing(self) -> None:
        """Every row looks different now (widths, focus, theme, a new set of rows)."""
        self._strips.clear()
        self._pieces.clear()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._forget_drawing()

    def _check_palette(self) -> tuple[Style, ...]:
        palette = (
            self.rich_style,
            self.get_component_rich_style("fleet-list--header"),
            self.get_component_rich_style("fleet-list--cursor"),
            self.get_component_rich_style("fleet-list--hover"),
        )
        if palette != self._palette:  # focus moved, the theme changed: every row looks different
            self._palette = palette
            self._forget_drawing()
        return palette

    def render_lines(self, crop: Region) -> list[Strip]:
        self._check_palette()  # once per paint, not once per line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        base, header, cursor_style, hover_style = self._palette or self._check_palette()
        width = self.size.width
        if y < self._header_height:
            strip = self._strips.get(_LABELS)
            if strip is None or strip.cell_length != width:
                strip = self._render_row("", self._labels, header, header, Style.null(), width, base, None)
                self._strips[_LABELS] = strip
            return strip
        index = y - self._header_height + int(self.scroll_y)
        if not 0 <= index < len(self._rows):
            return Strip.blank(width, base)
        cursor, hover = self._under(index)
        key = (self._rows[index], cursor, hover)
        strip = self._strips.get(key)
        if strip is None or strip.cell_length != width:
            over = Style.null()
            if hover:
                over += hover_style
            if cursor:
                over += cursor_style
            # The cursor's text colour wins over a cell's own; a cell's own background (a
            # state's badge) wins over the cursor's, as in a DataTable.
            post = Style.from_color(over.color) if (cursor or hover) else Style.null()
            strip = self._render_row(key[0], self._cells[key[0]], base + over, base + over, post, width, base, key)
            self._strips[key] = strip
        return strip

    def _render_row(
        self,
        row_key: str,
        cells: Mapping[str, Text],
        pre: Style,
        fill: Style,
        post: Style,
        width: int,
        base: Style,
        strip_key: tuple[str, bool, bool] | None,
    ) -> Strip:
        """One line: each column's text padded to its width, then ``fill`` to the edge. The
        cells' pieces are kept (``strip_key`` given), so a tick redraws only the cells it moved."""
        segments: list[Segment] = []
        for number, (column, _, _) in enumerate(COLUMNS):
            if self._room(column) == 0:
                continue
            piece_key = (row_key, column, *strip_key[1:]) if strip_key is not None else None
            piece = self._pieces.get(piece_key) if piece_key is not None else None
            if piece is None:
                piece = self._render_cell(cells.get(column), number, self._widths[column], pre, post)
                if piece_key is not None:
                    self._pieces[piece_key] = piece
            segments.extend(piece)
        used = sum(segment.cell_length for segment in segments)
        if used < width:
            segments.append(Segment(" " * (width - used), fill))
        return Strip(segments).adjust_cell_length(width, base).simplify()

    def _render_cell(self, cell: Text | None, number: int, width: int, pre: Style, post: Style) -> list[Segment]:
        """A cell's segments: padding, its text cut or filled to ``width``, padding."""
        # Each cell keeps segments of its own (meta differs by column), so a screenshot places
        # every cell's text at its column, whatever a viewer's font measures.
        cell_pre = pre + _COLUMN_META[number]
        pad = Segment(" " * CELL_PADDING, cell_pre)
        segments = [pad]
        used = 0
        if cell is not None and cell.plain:
            text = cell
            if cell_len(cell.plain) > width:
                text = cell.copy()
                text.truncate(width, overflow=cell.overflow or "ellipsis")
            console = self.app.console
            # Text.render leaves out the text's own style when it has no spans
            own = console.get_style(text.style, default=Style.null()) if not text.spans else None
            for segment in text.render(console, end=""):
                used += segment.cell_length
                style = own if own is not None else segment.style or Style.null()
                segments.append(Segment(segment.text, cell_pre + style + post))
        if used < width:
            segments.append(Segment(" " * (width - used), cell_pre))
        segments.append(pad)
        return segments

    # -- what a row says (nbs_tui/widgets/fleet_rows.py) ------------------------------------------

    def _row_values(
        self, pane: PaneInfo, status: PaneStatus | None, changed_at: float | None, now: float
    ) -> dict[str, str]:
        """The text of each of a pane's cells (`OperatorFleetList` adds its marks to them)."""
        return row_values(pane, status, changed_at, now, self.offline_hosts, self.changes.get(pane.pane_id))

    def _styled(self, pane: PaneInfo, key: str, value: str, status: PaneStatus | None = None) -> Text:
        return styled_cell(pane, key, value, self.offline_hosts)
