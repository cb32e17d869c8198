"""The detail panel: everything known about the selected pane in one place.

tmux facts (command, folder, pid, size), the sidecar's state with its reason, idle time and
next poll, the pane's recent history, and what Claude Code itself reports (session, model,
last assistant message, and which source the state was trusted from).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from rich.cells import cell_len
from rich.console import ConsoleRenderable, Group
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.table import Table
from rich.text import Text
from textual.app import RenderResult
from textual.css.styles import RulesMap
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import RenderOptions, Visual, VisualType
from textual.widget import Widget
from textual.widgets import Static

from nbs_tui.core.detection.usage_limits import limit_summary, resume_summary
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneInfo
from nbs_tui.core.queue.task_states import Task
from nbs_tui.core.screen.text import printable
from nbs_tui.core.sidecar.meters import DEFAULT_PRICES, ModelPrice, describe
from nbs_tui.dashboard.messages import ClaudeFacts, HistoryEntry, PaneStatus
from nbs_tui.widgets.pane_text import (
    TASK_STYLES,
    format_duration,
    quiet_start,
    state_text,
    task_text,
)


def _plain(text: str) -> Text:
    """A value as it is: printable (core/screen/text.py) and never read as markup (a title with
    ``[/x]`` in it would otherwise stop the panel with a MarkupError)."""
    return Text(printable(text))


class DetailPanel(Static):
    """Details of one pane; `show` redraws only when what it would print changed."""

    DEFAULT_CSS = """
    DetailPanel {
        height: auto;
        max-height: 50%;
        border: round $primary 40%;
        border-title-color: $text-muted;
        padding: 0 1;
        overflow-y: auto;
    }
    """

    def __init__(self, *, id: str | None = None, prices: Mapping[str, ModelPrice] = DEFAULT_PRICES) -> None:
        super().__init__(id=id)
        self._title = self.border_title = "details"
        self._key: object = None
        self._kept: dict[object, list[Strip]] = {}
        """Rendered rows and lines by what they hold (`_Parts`)."""
        self._parts: _Parts | None = None
        """What the panel draws, when it is the details (else Static's own content)."""
        self._lines: list[Strip] | None = None
        """Their lines as last drawn, to repaint only the rows that changed (None: the panel
        shows something else, which Textual measured)."""
        self.prices = prices
        """USD per million tokens by model, for the meters' cost (the config's ``prices``)."""

    def show(
        self,
        pane: PaneInfo | None,
        status: PaneStatus | None,
        facts: ClaudeFacts | None,
        history: Sequence[HistoryEntry],
        changed_at: float | None,
        now: float,
        host: HostState | None = None,
        task: Task | None = None,
    ) -> None:
        """``host``: the state of the pane's host, when several are watched; ``task``: the work
        queue's task the agent holds."""
        if pane is None:
            key: object = None
            if key != self._key or self._key is None:
                self._key = key
                self.update(Text("Select a pane to see its details.", style="dim"))
            return
        quiet_since = quiet_start(status, changed_at)
        idle = format_duration(now - quiet_since) if quiet_since is not None else None
        poll = format_duration(status.next_poll_at - now) if status and status.next_poll_at is not None else None
        limit = (
            limit_summary(status.limit, status.limit_reset_at, now)
            + resume_summary(status.limit, status.resume_at, now)
            if status and status.limit
            else None
        )
        key = (pane, status, facts, tuple(history[-8:]), idle, poll, host, limit, task)
        if key == self._key:
            return
        self._key = key
        title = f"details · {printable(pane.target)}"
        if title != self._title:  # setting it repaints the whole panel, even to the same title
            self._title = self.border_title = title

        table: list[DetailRow] = []

        def add(label: str | Text, value: Text) -> None:
            table.append(DetailRow(Text(label) if isinstance(label, str) else label, value))

        add("pane", _plain(f"{pane.pane_id}  {printable(pane.target)}  {pane.width}×{pane.height}" + ("  (dead)" if pane.dead else "")))
        if host is not None:
            if host.connected is False:
                add("host", Text(printable(f"{host.name} offline, last view kept: {host.message.removeprefix(host.name + ': ')}"), style="bold red"))
            else:
                add("host", _plain(f"{host.name}" + (f"  ⚑ {host.lease}" if host.lease else "")))
        # every string below may come from a pane, an agent or a file: printable (core/screen/text.py)
        add("title", _plain(pane.title or "—"))
        add("command", _plain(f"{pane.current_command}  pid {pane.pid}"))
        add("folder", _plain(pane.current_path or "—"))
        if pane.is_agent:
            state = Text()
            state.append_text(state_text(status.state if status else None))
            if status and status.reason:
                state.append(f"  {printable(status.reason)}", style="italic")
            if status and status.flags:
                state.append("  " + " ".join(sorted(status.flags)), style="dim")
            add("state", state)
            if task is not None:
                held = Text(f"{task.id} ", style="bold")
                held.append(f" {task.state} ", style=TASK_STYLES.get(task.state, ""))
                held.append(f" {task_text(task)}")
                add("task", held)  # the work queue's
            add("quiet", _plain(idle or "—"))
            add("next poll", _plain(poll or "—"))
            if status is not None and status.limit is not None:
                add("limit", _plain(limit_summary(status.limit, status.limit_reset_at, now)))
                add("resume", _plain(resume_summary(status.limit, status.resume_at, now)))
        else:
            add("agent", Text("not an agent (shown dimmed)", style="dim"))
        if facts is not None:
            if facts.source:
                add("trusted", _plain(facts.source))
            if facts.session_id:
                add("session", _plain(facts.session_id))
            if facts.model:
                add("model", _plain(facts.model))
            if facts.meters is not None and facts.meters.responses:
                meters = facts.meters
                metered = describe(meters, self.prices)
                metered += f" · {meters.responses} response{'' if meters.responses == 1 else 's'}"
                unpriced = meters.cost(self.prices).unpriced
                if unpriced:
                    metered += printable(f" (no price for {', '.join(unpriced)}: add [prices] to the config)")
                add("meters", _plain(metered))
            for name, value in facts.extra:
                add(_plain(name), _plain(value))
        parts: list[DetailRow | Text] = [*table]
        if facts is not None and facts.last_message:
            message = facts.last_message.strip()
            if len(message) > 600:
                message = message[:600] + "…"
            parts.append(Text("last message", style="bold"))
            parts.append(Text(printable(message, multiline=True)))
        if history:
            parts.append(Text("history", style="bold"))
            for entry in history[-8:]:
                stamp = time.strftime("%H:%M:%S", time.localtime(entry.at))
                line = Text(f"{stamp} ", style="dim")
                line.append(printable(entry.text))
                parts.append(line)
        self._update_in_place(parts)

    def _update_in_place(self, parts: Sequence[DetailRow | ConsoleRenderable]) -> None:
        """Redraw from ``parts``: rows of the two-column table, then the rest, top to bottom.

        The "quiet" clock and a working agent's reason change every second while a pane is
        selected. A rich table handed to `update` was rendered five times for each change
        (heights before and after, the layout, the paint; tests/app/test_dashboard_cost.py
        counts them), and even rendered once the whole table took ~4 ms of every second on the
        UI thread at 50 agents (py-spy). Each row and line is rendered on its own now and kept
        by what it holds (`_Parts`): a tick renders the one or two rows that changed, measures
        and paints from the same lines, and lays the screen out again only when the panel's
        height changes."""
        width = self.scrollable_content_region.width
        if width <= 0:  # not laid out yet: Textual measures it when it is
            self.update(_as_group(parts))
            return
        visual = _Parts(self, parts, self._kept)
        lines = visual.height_lines(width)
        shown, self._parts, self._lines = self._lines, visual, lines
        if shown is None or len(shown) != len(lines):
            self.refresh(layout=True)  # another height (or it showed something else): lay out
            return
        if self.scroll_offset != (0, 0):
            self.refresh()  # scrolled: its rows are not at the lines' places
            return
        # Only the rows that changed: a whole-panel refresh made the compositor repaint every
        # row of it, and everything between it and the list's rows, each second.
        for y, (was, now) in enumerate(zip(shown, lines, strict=True)):
            if was != now:
                self.refresh(Region(0, y, width, 1))

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        self._parts = self._lines = None
        super().update(content, layout=layout)

    def render(self) -> RenderResult:
        return self._parts if self._parts is not None else super().render()

    @property
    def content(self) -> VisualType:
        """What the panel shows now (the details, printable whole), not only what `update` got."""
        return self._parts if self._parts is not None else Static.content.fget(self)  # type: ignore[attr-defined]

    @content.setter
    def content(self, content: VisualType) -> None:
        self.update(content)


class DetailRow(NamedTuple):
    """One row of the details' table: a bold label, and its value folded to the width left."""

    label: Text
    value: Text


def _text_key(text: Text) -> tuple[object, ...]:
    return (text.plain, tuple(text.spans), text.style, text.justify, text.overflow, text.no_wrap, text.end)


def _row_table(rows: Sequence[DetailRow], label_width: int | None = None) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold", no_wrap=True, width=label_width)
    table.add_column(overflow="fold")
    for row in rows:
        table.add_row(row.label, row.value)
    return table


def _padded(line: Strip, width: int, pad: Segment) -> Strip:
    short = width - line.cell_length
    if short <= 0:
        return line
    return Strip(Segment.simplify([*line, Segment(pad.text * short, pad.style)]), width)


def _as_group(parts: Sequence[DetailRow | ConsoleRenderable]) -> Group:
    """The details as one rich renderable (the rows one table), for printing them whole."""
    rows = [part for part in parts if isinstance(part, DetailRow)]
    rest = [part for part in parts if not isinstance(part, DetailRow)]
    return Group(*([_row_table(rows)] if rows else []), *rest)


class _Parts(Visual):
    """The details' rows and lines, each rendered once per width and style and kept in
    ``kept`` (the panel's, across updates) by what it holds; a renderable that is not a
    `Text` is rendered on each update, still once for both its height and its paint."""

    MAX_KEPT = 256

    def __init__(self, widget: Widget, parts: Sequence[DetailRow | ConsoleRenderable], kept: dict[object, list[Strip]]) -> None:
        self._widget = widget
        self._parts = parts
        self._kept = kept
        self._key: tuple[int, RichStyle] | None = None
        self._strips: list[Strip] = []

    def __rich__(self) -> ConsoleRenderable:
        """The details themselves, for anything that prints the panel's content."""
        return _as_group(self._parts)

    def _render(self, width: int, style: RichStyle) -> list[Strip]:
        if self._key == (width, style):
            return self._strips
        widget, kept = self._widget, self._kept
        console = widget.app.console
        options = console.options.update(width=width, highlight=False)
        rows = [part for part in self._parts if isinstance(part, DetailRow)]
        label_width = max((row.label.cell_len for row in rows), default=0)
        # as one table would: every row padded to the widest value (or folded at the edge)
        value_width = max((max(map(cell_len, row.value.plain.split("\n"))) for row in rows), default=0)
        table_width = min(width, label_width + 1 + value_width)
        pad = Segment(" ", style)
        strips: list[Strip] = []
        for part in self._parts:
            key: object = None
            if isinstance(part, DetailRow):
                key = ("row", label_width, _text_key(part.label), _text_key(part.value), width, style)
                renderable: ConsoleRenderable = _row_table([part], label_width)
            else:
                if isinstance(part, Text):
                    key = ("text", _text_key(part), width, style)
                renderable = part
            lines = kept.get(key) if key is not None else None
            if lines is None:
                lines = [Strip(line) for line in console.render_lines(widget.post_render(renderable, style), options, pad=False)]
                if key is not None:
                    if len(kept) >= self.MAX_KEPT:
                        kept.clear()
                    kept[key] = lines
            if isinstance(part, DetailRow):
                lines = [_padded(line, table_width, pad) for line in lines]
            strips.extend(lines)
        self._strips, self._key = strips, (width, style)
        return strips
    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return container_width

    def height(self, width: int) -> int:
        """Lines at ``width``, rendered in the style the paint will ask for (so it reuses them)."""
        return len(self.height_lines(width))

    def height_lines(self, width: int) -> list[Strip]:
        """The lines `height` counts (what the paint will draw)."""
        return self._render(width, self._widget.visual_style.rich_style)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self.height(width)

    def render_strips(self, width: int, height: int | None, style: VisualStyle, options: RenderOptions) -> list[Strip]:
        return self._render(width, style.rich_style)[:height]
