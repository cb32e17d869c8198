"""Painting a widget's changed rows straight to the terminal, past Textual's compositor.

Why: the mirror of a busy pane scrolls ~20 times a second and every scroll changes every row.
Through Textual each such frame waits for the screen's next update tick, re-runs the compositor
over every widget under the mirror (its frame, the containers, the screen), wraps each row in
new strips (the widget's styles, the app's line filters) and turns each into escape sequences
again: the dashboard's largest cost (bench/README.md). A row's final escape sequence depends
only on what the row holds and on the widget's look, so `DirectPainter` keeps it per row
content, and a frame becomes a cursor move and a kept string per changed row.

Textual still draws everything else, and the widget itself whenever this cannot be certain to
look exactly as Textual would draw it: `paint` says no (and the caller refreshes through
Textual) unless the app writes to a real terminal, the widget is on the top screen, its
content wholly visible, with nothing drawn over any part of it, and no layout or repaint is
pending. The escape sequence of a row is made by Textual itself (the widget's own
`render_lines`, so its styles and the app's filters, then `Strip.render`), only once per
distinct row.

Rows are the widget's content rows: inside its border and padding, left of its scrollbar (a
scrollbar is a widget drawn over the gutter, so painting the content beside it covers nothing).

It leans on Textual internals (the driver, the compositor's visible map, the styles cache), each
reached through `nbs_tui.widgets.textual_internals` (which says what it relies on, and is
tested against each Textual release); `direct_paint_supported` checks they are there, so a
Textual that moved one gets the ordinary path, never a broken screen.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

from textual.app import App
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from nbs_tui.widgets.textual_internals import (
    direct_paint_supported,
    forget_rendered_lines,
    in_batch_update,
    output_look,
    synchronized_output,
    terminal_driver,
    update_pending,
    visible_widgets,
)

_SYNC_START = "\x1b[?2026h"
_SYNC_END = "\x1b[?2026l"


def _move_to(x: int, y: int) -> str:
    return f"\x1b[{y + 1};{x + 1}H"


class DirectPainter:
    """Writes one widget's changed rows to the terminal itself, when that is safe.

    ``content_strip(y)`` is the widget's own row ``y`` before Textual styles it, cached by
    what the row holds (the same object for the same content), so it keys the finished escape
    sequences.
    """

    def __init__(self, max_rows: int = 1024) -> None:
        self._max_rows = max_rows
        self._sequences: dict[int, tuple[Strip, str]] = {}
        """Finished escape sequence per content strip (by id; the strip is held so its id stays its own)."""
        self._spans: dict[Hashable, str] = {}
        """Finished escape sequence per part of a row, by its columns and what it shows."""
        self._look: tuple[Any, ...] | None = None
        self._checked_map: object = None
        self._unobstructed: Region | None = None
        self._supported: bool | None = None
        self.rows_painted = 0
        """Rows written past the compositor, for the log and the tests."""
        self.frames_painted = 0
        self.frames_declined = 0

    def paint(self, widget: Widget, runs: Sequence[tuple[int, int]], content_strip: Callable[[int], Strip]) -> bool:
        """Write rows ``runs`` (``(start, count)`` pairs) of ``widget``; False if it must go through Textual."""
        if not runs:
            return True
        region = self._begin(widget)
        if region is None:
            return False
        width = region.width
        left, top = widget.gutter.left, widget.gutter.top  # content row y is the widget's line top + y
        console = widget.app.console
        out: list[str] = []
        for start, count in runs:
            # Textual's own cache of these rows is stale now; it renders them afresh if it paints them.
            forget_rendered_lines(widget, Region(0, top + start, widget.outer_size.width, count))
            for y in range(start, min(start + count, region.height)):
                out.append(_move_to(region.x, region.y + y))
                out.append(self._sequence(widget, left, top + y, width, content_strip(y), console))
                self.rows_painted += 1
        self._write(widget, out)
        return True

    def paint_spans(self, widget: Widget, spans: Sequence[tuple[int, int, int, Hashable]]) -> bool:
        """Write parts of rows: ``(y, x1, x2, key)`` is columns ``x1`` to ``x2`` of content row
        ``y``, whose look ``key`` says in full (the same key, the same cells: a clock's "7s" in
        one row is drawn as in the next). Each key's sequence is cut from the row as Textual
        styles it, once. False if it must go through Textual."""
        if not spans:
            return True
        region = self._begin(widget)
        if region is None:
            return False
        width = region.width
        left, top = widget.gutter.left, widget.gutter.top
        console = widget.app.console
        out: list[str] = []
        for y, x1, x2, key in spans:
            if not 0 <= y < region.height:
                continue
            forget_rendered_lines(widget, Region(0, top + y, widget.outer_size.width, 1))
            x2 = min(x2, width)  # a part past the right edge is cut there, as Textual cuts it
            if not 0 <= x1 < x2:
                continue  # nothing of it on screen
            cell_key = (x1, x2, key)
            sequence = self._spans.get(cell_key)
            if sequence is None:
                finished = widget.render_lines(Region(left, top + y, width, 1))[0]
                sequence = finished.crop(x1, x2).render(console)
                if len(self._spans) >= self._max_rows:
                    self._spans.clear()
                self._spans[cell_key] = sequence
            out.append(_move_to(region.x + x1, region.y + y))
            out.append(sequence)
            self.rows_painted += 1
        self._write(widget, out)
        return True

    def _begin(self, widget: Widget) -> Region | None:
        """The screen region to paint the widget's content at, with the kept sequences checked
        against its look; None (and counted) when Textual must draw it."""
        app = widget.app
        if self._supported is None:
            self._supported = direct_paint_supported(app, widget)
        region = self._region_if_safe(app, widget) if self._supported else None
        if region is None:
            self.frames_declined += 1
            return None
        look = (
            region.width,
            widget.rich_style,
            widget.background_colors,
            output_look(app),
            widget.opacity,
        )
        if look != self._look:
            self._sequences.clear()
            self._spans.clear()
            self._look = look
        return region

    def _write(self, widget: Widget, out: list[str]) -> None:
        """Send the moves and sequences as one synchronized update, the cursor put back."""
        app = widget.app
        cursor = widget.screen.outer_size.clamp_offset(app.cursor_position)
        out.append(_move_to(cursor.x, cursor.y))
        text = "".join(out)
        if synchronized_output(app):
            text = _SYNC_START + text + _SYNC_END
        driver = terminal_driver(app)
        assert driver is not None  # `_region_if_safe` checked
        driver.write(text)
        driver.flush()
        self.frames_painted += 1

    def _sequence(self, widget: Widget, x: int, y: int, width: int, content: Strip, console: Any) -> str:
        """The finished sequence of the widget's line ``y`` (columns ``x`` on), which holds ``content``."""
        kept = self._sequences.get(id(content))
        if kept is not None and kept[0] is content:
            return kept[1]
        # Textual's own styling of the row (the widget's styles, the app's filters), made once.
        finished = widget.render_lines(Region(x, y, width, 1))[0]
        sequence = finished.render(console)
        if len(self._sequences) >= self._max_rows:
            self._sequences.clear()
        self._sequences[id(content)] = (content, sequence)
        return sequence

    def _region_if_safe(self, app: App[Any], widget: Widget) -> Region | None:
        """The screen region of the widget's content if Textual would draw it exactly there and
        nothing covers it."""
        if terminal_driver(app) is None or app.is_headless or app.is_inline or in_batch_update(app):
            return None
        if not app.is_running:  # not started, or shutting down
            return None
        screen = widget.screen
        if screen is not app.screen or update_pending(screen):
            return None
        visible = visible_widgets(screen)
        if visible is not self._checked_map:
            self._checked_map = visible
            self._unobstructed = unobstructed_region(visible, widget, content=True)
        region = self._unobstructed
        if region is None or region.size != widget.scrollable_content_region.size:
            return None
        return region


def unobstructed_region(
    visible: Mapping[Widget, tuple[Region, Region]], widget: Widget, content: bool = False
) -> Region | None:
    """The widget's region (its content's, with ``content``: inside border, padding and
    scrollbars) if that is wholly inside its clip and no widget drawn over it touches it.

    ``visible`` is the compositor's map in drawing order, front first: everything before the
    widget is drawn over whatever it overlaps.
    """
    placed = visible.get(widget)
    if placed is None:
        return None
    region, clip = placed
    if content:  # the same offsets from where the compositor placed the widget
        inner = widget.scrollable_content_region
        outer = widget.region
        region = Region(region.x + inner.x - outer.x, region.y + inner.y - outer.y, inner.width, inner.height)
    if not clip.contains_region(region):
        return None
    for other, (other_region, other_clip) in visible.items():
        if other is widget:
            return region
        if other_region.intersection(other_clip).overlaps(region):
            return None
    return None
