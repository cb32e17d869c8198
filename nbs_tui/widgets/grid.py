"""The grid: a live thumbnail per pane, each its pane's last rows that fit under a title bar.

Thumbnails share the mirror's line renderer (`ScreenWidget`), so a thumbnail repaints only its
changed rows. `PaneGrid.tick` refreshes only thumbnails that are on screen; one scrolled out of
view is brought up to date when it scrolls back in (its version check finds it stale).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.geometry import Offset
from textual.message import Message

from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.dashboard.messages import PaneStatus
from nbs_tui.widgets.pane_text import STATE_STYLES, project_name
from nbs_tui.widgets.pane_view import ScreenSource, ScreenWidget

DENSITIES: tuple[tuple[int, int], ...] = ((36, 8), (48, 12), (64, 16), (84, 22))
"""Thumbnail (minimum width, height) presets, densest first; ``+``/``-`` step through them."""
DEFAULT_DENSITY = 1


class Thumbnail(ScreenWidget):
    """One pane in the grid: its bottom rows, with target and state in the border."""

    DEFAULT_CSS = """
    Thumbnail {
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $text;
    }
    Thumbnail.non-agent {
        border: round $panel-lighten-2;
        border-title-color: $text-muted;
        opacity: 80%;
    }
    Thumbnail.needs-person {
        border: round $warning;
    }
    Thumbnail.selected {
        border: round $accent 70%;
    }
    Thumbnail:focus {
        border: heavy $foreground;
    }
    """

    can_focus = True
    CROP_MARKER = False

    @dataclass
    class Clicked(Message):
        thumbnail: Thumbnail
        open: bool = False
        """A double click: open the pane, not just select it."""

    def __init__(self, pane: PaneInfo) -> None:
        super().__init__(classes="" if pane.is_agent else "non-agent")
        self.pane = pane
        self.pane_id = pane.pane_id
        self.status: PaneStatus | None = None
        self.quiet = ""
        """How long the screen has been still (``3m05s``), shown after the state when not working."""

    def set_status(self, pane: PaneInfo, status: PaneStatus | None, quiet: str | None = None) -> None:
        quiet = self.quiet if quiet is None else quiet
        if pane == self.pane and status == self.status and quiet == self.quiet and self.border_title:
            return
        self.pane = pane
        self.status = status
        self.quiet = quiet
        self.set_class(not pane.is_agent, "non-agent")
        title = Text(pane.target, style="bold")
        project = project_name(pane)
        if project:
            title.append(f" {project}", style="italic")
        self.border_title = title
        state = status.state if status else None
        self.set_class(bool(pane.is_agent and state is not None and state.needs_person), "needs-person")
        if not pane.is_agent:
            self.border_subtitle = Text(pane.current_command, style="dim")
        elif state is None:
            self.border_subtitle = Text("…", style="dim")
        else:
            badge = Text.assemble((f" {state.value} ", STATE_STYLES.get(state, "")))
            if quiet and state is not AgentState.WORKING:
                badge.append(f" {quiet} ", style="dim")
            self.border_subtitle = badge

    def on_click(self, event: events.Click) -> None:
        self.post_message(self.Clicked(self, open=event.chain >= 2))

    def on_focus(self) -> None:
        self.post_message(self.Clicked(self))


class PaneGrid(VerticalScroll):
    """All panes as thumbnails in a grid that fits as many columns as the width allows."""

    DEFAULT_CSS = """
    PaneGrid {
        layout: grid;
        grid-size: 3;
        grid-gutter: 0 1;
        grid-rows: 12;
        padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "move(-1, 0)", "Left", show=False, id="grid.left"),
        Binding("right,l", "move(1, 0)", "Right", show=False, id="grid.right"),
        Binding("up", "move(0, -1)", "Up", show=False, id="grid.up"),
        Binding("down", "move(0, 1)", "Down", show=False, id="grid.down"),
        Binding("enter", "choose", "Open", show=True, id="grid.open"),
        Binding("plus,equals_sign", "density(1)", "Bigger", show=False, key_display="+", id="grid.bigger"),
        Binding("minus", "density(-1)", "Smaller", show=False, key_display="-", id="grid.smaller"),
    ]

    @dataclass
    class PaneHighlighted(Message):
        """A thumbnail got focus or a click."""

        pane_id: PaneId

    @dataclass
    class PaneChosen(Message):
        """Enter on a thumbnail: open this pane in the mirror."""

        pane_id: PaneId

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._thumbs: dict[PaneId, Thumbnail] = {}
        self._order: list[PaneId] = []
        self.columns = 3
        self.density = DEFAULT_DENSITY
        self._last_offset = Offset(0, 0)

    @property
    def thumbnails(self) -> list[Thumbnail]:
        return [self._thumbs[p] for p in self._order if p in self._thumbs]

    def thumbnail(self, pane_id: PaneId) -> Thumbnail | None:
        return self._thumbs.get(pane_id)

    def on_resize(self, event: events.Resize) -> None:
        self._apply_density()

    def _apply_density(self) -> None:
        min_width, height = DENSITIES[self.density]
        columns = max(1, (self.size.width - 2) // min_width)
        if columns != self.columns:
            self.columns = columns
            self.styles.grid_size_columns = columns
        self.styles.grid_rows = str(height)

    def action_density(self, step: int) -> None:
        """Fewer, bigger thumbnails (``+``) or more, smaller ones (``-``)."""
        density = max(0, min(len(DENSITIES) - 1, self.density + step))
        if density != self.density:
            self.density = density
            self._apply_density()
            focused = self.screen.focused
            if isinstance(focused, Thumbnail):
                self.call_after_refresh(self.scroll_to_widget, focused, animate=False)

    def update_fleet(
        self,
        panes: Sequence[PaneInfo],
        statuses: Mapping[PaneId, PaneStatus],
        screen_of: Callable[[PaneId], ScreenSource | None],
        selected: PaneId | None,
    ) -> None:
        """Add, remove and relabel thumbnails to match the fleet."""
        order = [p.pane_id for p in panes]
        if order != self._order:
            for pane_id in list(self._thumbs):
                if pane_id not in order:
                    self._thumbs.pop(pane_id).remove()
            survivors = [p for p in self._order if p in self._thumbs]
            if order[: len(survivors)] == survivors:
                new = [Thumbnail(p) for p in panes[len(survivors) :]]
            else:  # reordered: rebuild, it is rare (a window moved or renumbered)
                for thumb in self._thumbs.values():
                    thumb.remove()
                self._thumbs.clear()
                new = [Thumbnail(p) for p in panes]
            for thumb in new:
                self._thumbs[thumb.pane_id] = thumb
            if new:
                self.mount_all(new)
            self._order = order
        for pane in panes:
            thumb = self._thumbs[pane.pane_id]
            thumb.set_status(pane, statuses.get(pane.pane_id))
            thumb.set_class(pane.pane_id == selected, "selected")
            source = screen_of(pane.pane_id)
            if source is not thumb.lines.source:
                thumb.show(pane, source)

    def set_status(self, pane: PaneInfo, status: PaneStatus | None) -> None:
        thumb = self._thumbs.get(pane.pane_id)
        if thumb is not None:
            thumb.set_status(pane, status)

    def refresh_clocks(self, quiet: Mapping[PaneId, str]) -> None:
        """Once a second: the quiet time after each on-screen thumbnail's state."""
        if not self.display:
            return
        visible = self.region
        for pane_id, thumb in self._thumbs.items():
            if thumb.pane is not None and thumb.is_mounted and thumb.region.overlaps(visible):
                thumb.set_status(thumb.pane, thumb.status, quiet.get(pane_id, ""))

    def visible_panes(self) -> frozenset[PaneId]:
        """The panes whose thumbnails are on screen now (the fleet keeps live models of these)."""
        if not self.display:
            return frozenset()
        visible = self.region
        return frozenset(
            pane_id
            for pane_id, thumb in self._thumbs.items()
            if thumb.is_mounted and thumb.region.overlaps(visible)
        )

    def tick(
        self, dirty: AbstractSet[PaneId] | None, screen_of: Callable[[PaneId], ScreenSource | None]
    ) -> int:
        """Bring on-screen thumbnails of ``dirty`` panes (None: all) up to date; returns how many.

        Thumbnails off screen are skipped; after a scroll every visible one is checked, which
        is cheap for the unchanged ones (a version compare).
        """
        if not self.display:
            return 0
        offset = self.scroll_offset
        if offset != self._last_offset:
            self._last_offset = offset
            dirty = None
        visible = self.region
        checked = 0
        for pane_id, thumb in self._thumbs.items():
            if dirty is not None and pane_id not in dirty:
                continue
            if thumb.is_mounted and thumb.region.overlaps(visible):
                source = screen_of(pane_id)
                if source is not thumb.lines.source:  # a model made (or dropped) since
                    thumb.show(thumb.pane, source)
                thumb.screen_changed()
                checked += 1
        return checked

    def focus_pane(self, pane_id: PaneId | None) -> None:
        thumb = self._thumbs.get(pane_id) if pane_id else None
        if thumb is None and self._order:
            thumb = self._thumbs.get(self._order[0])
        if thumb is not None:
            thumb.focus()
            self.scroll_to_widget(thumb, animate=False)

    def action_move(self, dx: int, dy: int) -> None:
        thumbs = self.thumbnails
        if not thumbs:
            return
        focused = self.screen.focused
        index = thumbs.index(focused) if isinstance(focused, Thumbnail) and focused in thumbs else 0
        index = max(0, min(len(thumbs) - 1, index + dx + dy * self.columns))
        thumbs[index].focus()
        self.scroll_to_widget(thumbs[index], animate=False)

    def action_choose(self) -> None:
        focused = self.screen.focused
        if isinstance(focused, Thumbnail):
            self.post_message(self.PaneChosen(focused.pane_id))

    def on_thumbnail_clicked(self, event: Thumbnail.Clicked) -> None:
        event.stop()
        self.post_message(self.PaneHighlighted(event.thumbnail.pane_id))
        if event.open:
            self.post_message(self.PaneChosen(event.thumbnail.pane_id))


__all__ = ["DENSITIES", "PaneGrid", "Thumbnail"]
