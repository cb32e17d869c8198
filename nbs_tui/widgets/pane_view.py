"""The live mirror of one tmux pane: a line-API widget over a PaneScreen.

Every row becomes a Strip of Rich Segments carrying the cell's full SGR look (16/256/true
colour, bold, dim, italic, underline, reverse, strikethrough, blink). Strips are cached by
``(row_version, ...)`` so an unchanged row, or one a scroll moved, is never rebuilt, and `ScreenLines.changed`
tells the owner which rows to repaint, so one redraw of six rows repaints six rows.

Dim (SGR 2) comes from the backend's `nbs_tui.core.screen.pane_screen.Cell.dim` (plain pyte drops it);
a plain pyte ``Char`` renders too, just without dim.

A pane bigger than the widget is cropped, never wrapped: the widget shows the bottom of the
content (where a Claude Code prompt lives), a ``›`` in the last column marks rows cut on the
right, and the border subtitle says what is hidden.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Protocol

from rich.cells import cell_len
from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.app import ComposeResult
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from nbs_tui.core.fleet.model import PaneInfo
from nbs_tui.widgets.direct_paint import DirectPainter
from nbs_tui.widgets.textual_internals import LookReadOncePerPaint


class ScreenSource(Protocol):
    """The part of `nbs_tui.core.screen.pane_screen.PaneScreen` the widgets read (hold ``lock`` while reading)."""

    @property
    def lock(self) -> threading.RLock: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def version(self) -> int: ...
    @property
    def cursor_x(self) -> int: ...
    @property
    def cursor_y(self) -> int: ...
    @property
    def cursor_visible(self) -> bool: ...
    def row_cells(self, y: int) -> Sequence[Any]: ...
    def row_version(self, y: int) -> int:
        """Names row ``y``'s content: equal versions, equal rows, wherever they are (0: never written)."""
        ...


_ANSI_NAMES = {
    "black": 0,
    "red": 1,
    "green": 2,
    "brown": 3,  # pyte calls SGR 33 "brown"
    "yellow": 3,
    "blue": 4,
    "magenta": 5,
    "cyan": 6,
    "white": 7,
}


@lru_cache(maxsize=1024)
def pyte_color(name: str) -> Color | None:
    """A pyte colour (``default``, ``red``, ``brightbrown``, ``ff8700``) as a Rich colour."""
    if not name or name == "default":
        return None
    if name == "bfightmagenta":  # pyte's own typo for SGR 105
        return Color.from_ansi(13)
    bright = name.startswith("bright")
    base = name[6:] if bright else name
    number = _ANSI_NAMES.get(base)
    if number is not None:
        return Color.from_ansi(number + 8 if bright else number)
    if len(name) == 6:
        try:
            return Color.from_rgb(int(name[0:2], 16), int(name[2:4], 16), int(name[4:6], 16))
        except ValueError:
            return None
    try:
        return Color.parse(name)
    except Exception:
        return None


@lru_cache(maxsize=4096)
def cell_style(
    fg: str,
    bg: str,
    bold: bool = False,
    dim: bool = False,
    italic: bool = False,
    underline: bool = False,
    strike: bool = False,
    reverse: bool = False,
    blink: bool = False,
) -> Style:
    """One Rich Style per distinct look; cached because a screen has few distinct looks."""
    return Style(
        color=pyte_color(fg),
        bgcolor=pyte_color(bg),
        bold=bold or None,
        dim=dim or None,
        italic=italic or None,
        underline=underline or None,
        strike=strike or None,
        reverse=reverse or None,
        blink=blink or None,
    )


_CURSOR = Style(reverse=True)
_MARKER = Style(color="yellow", bold=True)
BLANK_STYLE = Style()

_LOOKS: dict[tuple[Any, ...], Style] = {}
"""Style per cell look: the cell's fields after ``data`` (plus a cursor flag), as a tuple."""


def _look_style(look: tuple[Any, ...]) -> Style:
    """The Style of a look tuple ``(fg, bg, bold, italics, underscore, strike, reverse, blink[, dim][, cursor])``."""
    style = _LOOKS.get(look)
    if style is None:
        fg, bg, bold, italics, underscore, strike, reverse, blink = look[:8]
        dim = bool(look[8]) if len(look) > 8 and look[8] is not _CURSOR_FLAG else False
        style = cell_style(fg, bg, bool(bold), dim, bool(italics), bool(underscore), bool(strike), bool(reverse), bool(blink))
        if look[-1] is _CURSOR_FLAG:
            style = style + _CURSOR
        if len(_LOOKS) > 8192:
            _LOOKS.clear()
        _LOOKS[look] = style
    return style


class _CursorFlag:
    """Appended to a look tuple for the cell under the cursor (an identity nothing else has)."""


_CURSOR_FLAG = _CursorFlag()


def cells_to_segments(
    cells: Sequence[Any], columns: int, cursor_x: int | None = None
) -> tuple[list[Segment], int]:
    """Turn cells into Segments filling at most ``columns`` cells; returns them and the width used.

    Runs of cells with the same look become one Segment: a cell's look is compared as a tuple
    with the previous one, so a Style is looked up once per run, not once per cell. The empty
    stub a terminal puts after a wide character is skipped (the wide character already covers
    it); a wide character that would straddle the crop edge becomes a space so the row never
    overflows.
    """
    segments: list[Segment] = []
    text: list[str] = []
    run_look: tuple[Any, ...] | None = None
    used = 0
    for x, cell in enumerate(cells):
        if used >= columns:
            break
        data = cell[0]
        if not data:
            continue
        if data.isascii():
            width = 1
        else:
            width = max(1, min(2, cell_len(data)))
            if used + width > columns:
                data, width = " ", 1
        look = tuple(cell[1:])  # a plain tuple for pyte Chars and Cells alike
        if x == cursor_x:
            look = (*look, _CURSOR_FLAG)
        if look != run_look:
            if text:
                segments.append(Segment("".join(text), _look_style(run_look)))  # type: ignore[arg-type]
                text = []
            run_look = look
        text.append(data)
        used += width
    if text and run_look is not None:
        segments.append(Segment("".join(text), _look_style(run_look)))
    return segments, used


def row_is_blank(cells: Sequence[Any]) -> bool:
    """True if a row has no visible character and no coloured background."""
    for cell in cells:
        if cell.data not in ("", " ") or cell.bg != "default" or cell.reverse:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Viewport:
    """Which part of the pane a widget shows: rows ``top..top+rows`` and the first ``columns``."""

    top: int
    rows: int
    columns: int
    pane_width: int
    pane_height: int
    cropped_right: bool
    cropped_rows: bool

    def describe(self) -> str:
        """A short note on what is hidden, for a border subtitle; "" when nothing is."""
        if not (self.cropped_right or self.cropped_rows):
            return ""
        parts = [f"cropped: {self.columns}×{self.rows} of {self.pane_width}×{self.pane_height}"]
        if self.cropped_rows:
            parts.append(f"rows {self.top + 1}-{self.top + self.rows}")
        if self.cropped_right:
            parts.append("› marks cut rows")
        return " · ".join(parts)


class ScreenLines:
    """Turns a screen's rows into Strips for one widget, caching by row version.

    Also remembers which row versions it last showed, so `changed` can name just the rows
    to repaint after the screen moved on.
    """

    def __init__(self, cache_size: int = 512, crop_marker: bool = True) -> None:
        self.crop_marker = crop_marker
        self.outside = BLANK_STYLE
        """The look of cells beyond the pane's edges, so a person sees where the pane ends."""
        self.source: ScreenSource | None = None
        self._cache: LRUCache[tuple[int, int, int, bool, Style | None], Strip] = LRUCache(cache_size)
        self._by_content: LRUCache[tuple[Any, ...], Strip] = LRUCache(cache_size)
        """Strips by what the row holds, so a row that scrolled to another line is not rebuilt."""
        self._outside_blank: dict[tuple[int, Style | None], Strip] = {}
        self._blank: dict[int, tuple[int, bool]] = {}
        self._shown: dict[int, int] = {}
        self._shown_cursor: tuple[int, int, bool] = (-1, -1, False)
        self._shown_version = -1
        self.viewport: Viewport | None = None

    def set_outside(self, style: Style) -> None:
        if style != self.outside:
            self.outside = style
            self._clear_strips()

    def attach(self, source: ScreenSource | None) -> None:
        if source is not self.source:
            self.source = source
            self._clear_strips()
            self._blank.clear()
            self._shown.clear()
            self._shown_version = -1
            self.viewport = None

    def _clear_strips(self) -> None:
        self._cache.clear()
        self._by_content.clear()
        self._outside_blank.clear()

    def content_bottom(self) -> int:
        """One past the last row that has anything on it (or the cursor); hold the lock."""
        source = self.source
        if source is None:
            return 0
        bottom = source.cursor_y + 1 if source.cursor_visible else 0
        for y in range(source.height - 1, bottom - 1, -1):
            version = source.row_version(y)
            known = self._blank.get(y)
            if known is None or known[0] != version:
                known = (version, row_is_blank(source.row_cells(y)))
                self._blank[y] = known
            if not known[1]:
                return y + 1
        return bottom

    def layout(self, size: Size, anchor_content: bool = True) -> Viewport | None:
        """Choose the viewport for a widget of ``size``; hold the lock."""
        source = self.source
        if source is None:
            self.viewport = None
            return None
        pane_w, pane_h = source.width, source.height
        rows = min(size.height, pane_h)
        if pane_h > size.height:
            bottom = max(self.content_bottom(), rows) if anchor_content else pane_h
            top = max(0, min(bottom, pane_h) - rows)
        else:
            top = 0
        cropped_right = pane_w > size.width
        columns = min(size.width, pane_w)
        self.viewport = Viewport(top, rows, columns, pane_w, pane_h, cropped_right, pane_h > rows)
        return self.viewport

    def strip(self, y: int, width: int, draw_cursor: bool = True, base: Style | None = None) -> Strip:
        """Widget row ``y`` as a Strip exactly ``width`` cells wide, with ``base`` applied under it.

        Two caches: by ``row_version``, which travels with a row's content when the pane
        scrolls (`PaneScreen`), so a scroll's moved rows cost no look at their cells; then by
        the row's cells themselves, so a row written again with the same content reuses its
        Strip instead of being rebuilt (cells are shared objects, so comparing a row with a
        cached one is mostly identity checks).
        """
        source, view = self.source, self.viewport
        if source is None or view is None:
            return Strip.blank(width, base)
        if y >= view.rows:
            blank_key = (width, base)
            blank = self._outside_blank.get(blank_key)
            if blank is None:
                blank = Strip.blank(width, self.outside if base is None else base + self.outside)
                self._outside_blank[blank_key] = blank
            return blank
        with source.lock:
            row = view.top + y
            if row >= source.height or source.width != view.pane_width:
                return Strip.blank(width, base)
            version = source.row_version(row)
            cursor_x = source.cursor_x if (draw_cursor and source.cursor_visible and source.cursor_y == row) else -1
            # a version names one content wherever the row now is (it moved up with a scroll)
            key = (version, cursor_x, width, view.cropped_right, base)
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            cells = tuple(source.row_cells(row))
        content_key = (cells, cursor_x, width, view.cropped_right, base)
        strip = self._by_content.get(content_key)
        if strip is None:
            strip = self._build(cells, width, cursor_x, view.cropped_right, base)
            self._by_content[content_key] = strip
        self._cache[key] = strip
        return strip

    def _build(self, cells: Sequence[Any], width: int, cursor_x: int, cropped_right: bool, base: Style | None) -> Strip:
        columns = min(width, len(cells))
        marker = False
        if self.crop_marker and cropped_right and len(cells) > width and width > 1:
            marker = not row_is_blank(cells[width - 1 :])
            if marker:
                columns = width - 1
        segments, used = cells_to_segments(cells, columns, cursor_x if cursor_x >= 0 else None)
        if marker:
            segments.append(Segment("›", _MARKER))
            used += 1
        if used < width:
            segments.append(Segment(" " * (width - used), self.outside))
        if base is not None:
            segments = list(Segment.apply_style(segments, base))
        return Strip(segments).adjust_cell_length(width, base)

    def changed(self, size: Size, anchor_content: bool = True) -> list[tuple[int, int]] | None:
        """Rows of the widget to repaint as ``(start, count)`` runs; None means repaint everything.

        Call on the UI thread when the fleet says this pane's screen changed.
        """
        source = self.source
        if source is None:
            return None
        with source.lock:
            if source.version == self._shown_version and self.viewport is not None:
                return []
            before = self.viewport
            view = self.layout(size, anchor_content)
            self._shown_version = source.version
            cursor = (source.cursor_x, source.cursor_y, source.cursor_visible)
            if view is None or before is None or view != before:
                self._remember(view)
                self._shown_cursor = cursor
                return None
            dirty: list[int] = []
            for y in range(view.rows):
                version = source.row_version(view.top + y)
                if self._shown.get(y) != version:
                    self._shown[y] = version
                    dirty.append(y)
            if cursor != self._shown_cursor:
                for cy in (self._shown_cursor[1], cursor[1]):
                    if view.top <= cy < view.top + view.rows:
                        dirty.append(cy - view.top)
                self._shown_cursor = cursor
        return _runs(sorted(set(dirty)))

    def _remember(self, view: Viewport | None) -> None:
        self._shown.clear()
        source = self.source
        if view is None or source is None:
            return
        for y in range(view.rows):
            self._shown[y] = source.row_version(view.top + y)


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for y in rows:
        if runs and runs[-1][0] + runs[-1][1] == y:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((y, 1))
    return runs


class ScreenWidget(LookReadOncePerPaint):
    """A widget that draws a PaneScreen with the line API; base of the mirror and thumbnails."""

    ANCHOR_CONTENT: ClassVar[bool] = True
    CROP_MARKER: ClassVar[bool] = True
    """Mark rows cut on the right with ``›`` (the mirror does; small thumbnails would be all marks)."""

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.lines = ScreenLines(crop_marker=self.CROP_MARKER)
        self.pane: PaneInfo | None = None
        self._laid_out_for: Size | None = None

    def show(self, pane: PaneInfo | None, source: ScreenSource | None) -> None:
        """Point the widget at another pane (or none) and repaint it whole."""
        moved = source is not self.lines.source or (pane and pane.pane_id) != (self.pane and self.pane.pane_id)
        relabel = pane != self.pane
        self.pane = pane
        self.lines.attach(source)
        if moved:
            self._laid_out_for = None
            self.refresh()
        if moved or relabel:
            self.describe_view()

    def screen_changed(self) -> None:
        """The pane's screen moved on: repaint only the rows that changed."""
        runs = self.lines.changed(self.size, self.ANCHOR_CONTENT)
        if runs is None:
            self.refresh()
            self.describe_view()
            return
        if runs and self.paint_directly(runs):
            return
        width = self.size.width
        for start, count in runs:
            self.refresh(Region(0, start, width, count))

    def paint_directly(self, runs: list[tuple[int, int]]) -> bool:
        """Hook: write these rows to the terminal without Textual; False leaves them to it."""
        return False

    def describe_view(self) -> None:
        """Hook: update titles after the viewport changed."""

    def on_resize(self) -> None:
        self._laid_out_for = None
        self.refresh()

    def render_line(self, y: int) -> Strip:
        source = self.lines.source
        if source is None:
            return self.render_empty_line(y)
        size = self.painting_size or self.size
        if self._laid_out_for != size or self.lines.viewport is None:
            with source.lock:
                self.lines.layout(size, self.ANCHOR_CONTENT)
                self.lines._remember(self.lines.viewport)
            self._laid_out_for = size
            self.call_later(self.describe_view)
        return self.lines.strip(y, size.width, base=self.rich_style)

    def render_empty_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width, self.rich_style)


class MirrorRows(ScreenWidget):
    """The mirror's rows, drawn inside `PaneView`'s border by a widget with no border of its own.

    Textual makes a bordered line's edge styles anew for every line it paints: a 48-row mirror
    took 2.4 ms to paint with the border on the rows' own widget and 1.4 ms without, and a busy
    selected pane repaints every row ~20 times a second."""

    DEFAULT_CSS = """
    MirrorRows {
        height: 1fr;
        width: 1fr;
    }
    MirrorRows > .pane-view--outside {
        background: $panel-darken-2;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"pane-view--outside"}

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.painter = DirectPainter()
        """Writes a scroll's rows to the terminal itself when nothing covers the mirror."""

    def paint_directly(self, runs: list[tuple[int, int]]) -> bool:
        """Straight to the terminal when that is safe (`DirectPainter.paint` says), else through
        Textual. The painter keys what it keeps by `render_line`'s strips, cached by content."""
        self._read_outside_style()
        with self.look_read_once():
            return self.painter.paint(self, runs, self.render_line)

    def _read_outside_style(self) -> None:
        self.lines.set_outside(self.get_component_rich_style("pane-view--outside", partial=True))

    def render_lines(self, crop: Region) -> list[Strip]:
        self._read_outside_style()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        if self.painting_style is None:  # called on its own, not from render_lines
            self._read_outside_style()
        return super().render_line(y)

    def describe_view(self) -> None:
        frame = self.parent
        if isinstance(frame, PaneView):
            frame.describe_view()

    def render_empty_line(self, y: int) -> Strip:
        width = self.size.width
        if y == self.size.height // 2:
            text = "no pane selected" if self.pane is None else "waiting for the pane's screen…"
            pad = max(0, (width - len(text)) // 2)
            return Strip([Segment(" " * pad), Segment(text, Style(dim=True))]).adjust_cell_length(width).apply_style(self.rich_style)
        return Strip.blank(width, self.rich_style)


class PaneView(Widget, can_focus=True):
    """The big mirror of the selected pane: a border with the pane's name and what is cropped,
    around its rows (`MirrorRows`, which draws them)."""

    DEFAULT_CSS = """
    PaneView {
        height: 1fr;
        width: 1fr;
        border: round $primary 50%;
        border-title-color: $text;
        border-subtitle-color: $warning;
    }
    PaneView:focus {
        border: round $accent;
    }
    """

    class HistoryWanted(Message):
        """The wheel turned up over the mirror: the operator wants the pane's scrollback."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.rows = MirrorRows()

    def compose(self) -> ComposeResult:
        yield self.rows

    @property
    def pane(self) -> PaneInfo | None:
        return self.rows.pane

    @property
    def lines(self) -> ScreenLines:
        return self.rows.lines

    def show(self, pane: PaneInfo | None, source: ScreenSource | None) -> None:
        """Point the mirror at another pane (or none) and repaint it whole."""
        self.rows.show(pane, source)

    def screen_changed(self) -> None:
        """The pane's screen moved on: repaint only the rows that changed."""
        self.rows.screen_changed()

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        event.stop()
        if self.pane is not None:
            self.post_message(self.HistoryWanted())

    def describe_view(self) -> None:
        pane = self.pane
        if pane is None:
            self.border_title = "no pane selected"
            self.border_subtitle = ""
            return
        title = f"{pane.target}  {pane.title}".rstrip()
        self.border_title = title
        view = self.lines.viewport
        self.border_subtitle = view.describe() if view is not None else ""
