# mypy: disable-error-code="assignment,arg-type,index,misc,call-overload"
# (pyte types its cells as ``Char``; ours are the field-compatible ``Cell``.)
"""The terminal under a pane's mirror: pyte's `pyte.Screen`, corrected to draw what tmux draws.

`Terminal`, with its parser (`nbs_tui.core.screen.terminal_stream`), fixes the places where plain pyte
and tmux disagree:

* the alternate screen (``?1049``, ``?47``, ``?1047``), which pyte lacks;
* the dim attribute (SGR 2) and colon sub-parameters (``4:3``, ``38:2::r:g:b``);
* CSI sequences with ``<``/``=``/``>`` prefixes or intermediates (``CSI > 4;2 m`` is not SGR),
  DCS/APC/PM/SOS strings and stray C0 controls, which pyte would draw as text;
* background-colour erase as tmux does it (erased cells take only the background colour);
* wide characters that do not fit at the end of a line wrap first, and overwriting half of a
  wide character blanks the other half;
* zero-width joiners and variation selectors stay with the previous character.

Cells are `Cell` named tuples: pyte's `pyte.screens.Char` fields in the same order
(``data, fg, bg, bold, italics, underscore, strikethrough, reverse, blink``) plus ``dim``.
``fg``/``bg`` are ``"default"``, a pyte colour name (``black red green brown blue magenta cyan
white``, each also with a ``bright`` prefix; ``brown`` is yellow) or six hex digits ``rrggbb``
(256-colour indexes 16-255 and truecolour). The cell after a wide character has ``data == ""``.

Used only through `nbs_tui.core.screen.pane_screen.PaneScreen`, which adds the lock and row versions.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any, NamedTuple

import pyte
from pyte import charsets
from pyte import modes as mo
from pyte.graphics import FG_BG_256
from pyte.screens import Cursor, Margins, StaticDefaultDict
from wcwidth import wcwidth

__all__ = ["BLANK", "Cell", "Terminal"]


class Cell(NamedTuple):
    """One styled character cell: pyte's ``Char`` fields, in pyte's order, plus ``dim``."""

    data: str
    fg: str = "default"
    bg: str = "default"
    bold: bool = False
    italics: bool = False
    underscore: bool = False
    strikethrough: bool = False
    reverse: bool = False
    blink: bool = False
    dim: bool = False


BLANK = Cell(" ")
_NAMES = ("black", "red", "green", "brown", "blue", "magenta", "cyan", "white")
_COLOUR_256 = [*_NAMES, *("bright" + n for n in _NAMES), *FG_BG_256[16:]]
_ALT_MODES = frozenset({1049, 47, 1047})


@lru_cache(maxsize=4096)
def _width(char: str) -> int:
    """Cells a character takes: 0 (joins the previous cell), 1 or 2; -1 for controls."""
    if char < " ":
        return -1
    w = wcwidth(char)
    if w < 0:
        return -1
    if w == 0 and (unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf")):
        return 0
    return w if w > 0 else 0


def _sgr_colour(params: list[list[int]], i: int) -> tuple[str | None, int]:
    """Parse the colour after a 38/48 at ``params[i]``; returns (colour, next index)."""
    group = params[i]
    if len(group) > 1:  # colon form: 38:5:n or 38:2:[cs]:r:g:b
        sub = group[1:]
        if sub and sub[0] == 5 and len(sub) >= 2:
            return _COLOUR_256[sub[1] & 255], i + 1
        if sub and sub[0] == 2:
            rgb = sub[-3:] if len(sub) >= 4 else None
            if rgb and len(rgb) == 3:
                return "{:02x}{:02x}{:02x}".format(*(c & 255 for c in rgb)), i + 1
        return None, i + 1
    if i + 1 < len(params):
        kind = params[i + 1][0]
        if kind == 5 and i + 2 < len(params):
            return _COLOUR_256[params[i + 2][0] & 255], i + 3
        if kind == 2 and i + 4 < len(params):
            r, g, b = (params[i + k][0] & 255 for k in (2, 3, 4))
            return f"{r:02x}{g:02x}{b:02x}", i + 5
    return None, len(params)


class _CellCache(dict[str, Cell]):
    """The cells of one set of attributes, by character: cells are immutable and shared.

    The caches are shared by every screen of the process (`_CELLS`): a fleet then holds a few
    thousand distinct cells instead of one per screen position. That matters beyond memory:
    named tuples are never untracked by the garbage collector, and a full collection over
    ~100k cells paused the whole fleet for ~200 ms at 200 panes.
    """

    __slots__ = ("attrs",)

    def __init__(self, attrs: Cell) -> None:
        super().__init__()
        self.attrs = attrs

    def __missing__(self, char: str) -> Cell:
        if len(self) > 1024:
            self.clear()
        cell = self[char] = self.attrs._replace(data=char)
        return cell


_CELLS: dict[Cell, _CellCache] = {}
"""Style -> its cells by character (dict reads and writes are atomic: shared across threads)."""


class Terminal(pyte.Screen):
    """pyte.Screen with the tmux-compatible behaviour listed in the module docstring."""

    def __init__(self, columns: int, lines: int) -> None:
        self.alternate = False
        self.last_char = ""
        self._saved_main: dict[int, StaticDefaultDict[int, Any]] | None = None
        self._saved_alt_cursor: Cursor | None = None
        self.before_scroll: Callable[[int, int, int], None] | None = None
        """Called with ``(top, bottom, step)`` as rows ``top..bottom`` scroll by one (``step`` 1:
        up, -1: down), before they move; with it set, a scroll marks only the row it brings in
        dirty, not every row of the region (`PaneScreen` carries the others' versions along)."""
        super().__init__(columns, lines)
        self.cursor.attrs = BLANK

    @property
    def default_char(self) -> Cell:  # type: ignore[override]
        return BLANK

    def reset(self) -> None:
        super().reset()
        self.cursor.attrs = BLANK
        self.alternate = False
        self._saved_main = None
        self._saved_alt_cursor = None

    # -- drawing ---------------------------------------------------------------------------

    def _cell(self, attrs: Cell, char: str) -> Cell:
        return self._cells_for(attrs)[char]

    def _blank(self) -> Cell:
        bg = self.cursor.attrs.bg
        return BLANK if bg == "default" else self._cells_for(BLANK._replace(bg=bg))[" "]

    def _fix_wide_edges(self, line: StaticDefaultDict[int, Any], start: int, end: int) -> None:
        """Before cells start..end-1 are overwritten, blank wide-character halves cut in two."""
        if start > 0 and line[start].data == "":
            line[start - 1] = self._blank_plain()
        if end < self.columns and line[end].data == "":
            line[end] = self._blank_plain()

    def _blank_plain(self) -> Cell:
        return BLANK

    def draw(self, data: str) -> None:
        if data:
            self.last_char = data[-1]
        if self.charset or self.g0_charset is not charsets.LAT1_MAP:
            data = data.translate(self.g1_charset if self.charset else self.g0_charset)
        if data.isascii() and mo.IRM not in self.mode and mo.DECAWM in self.mode:
            self._draw_ascii(data)
            return
        for char in data:
            self._draw_char(char)

    def _wrap_if_pending(self) -> None:
        if self.cursor.x >= self.columns:
            if mo.DECAWM in self.mode:
                self.dirty.add(self.cursor.y)
                self.cursor.x = 0
                self.index()
            else:
                self.cursor.x = self.columns - 1

    def _draw_ascii(self, data: str) -> None:
        cursor = self.cursor
        columns = self.columns
        cells = self._cells_for(cursor.attrs).__getitem__
        length = len(data)
        pos = 0
        while pos < length:
            self._wrap_if_pending()
            x = cursor.x
            n = min(length - pos, columns - x)
            line = self.buffer[cursor.y]
            self._fix_wide_edges(line, x, x + n)
            line.update(zip(range(x, x + n), map(cells, data[pos : pos + n]), strict=True))
            pos += n
            self.dirty.add(cursor.y)
            cursor.x = x + n

    def _cells_for(self, attrs: Cell) -> _CellCache:
        cache = _CELLS.get(attrs)
        if cache is None:
            if len(_CELLS) > 2048:
                _CELLS.clear()
            cache = _CELLS[attrs] = _CellCache(attrs)
        return cache

    def _draw_char(self, char: str) -> None:
        width = _width(char)
        cursor = self.cursor
        if width < 0:
            return  # a control tmux ignores
        if width == 0:
            self._combine(char)
            return
        if cursor.x >= self.columns or (width == 2 and cursor.x == self.columns - 1):
            if mo.DECAWM in self.mode:
                if cursor.x == self.columns - 1 and width == 2:
                    self.buffer[cursor.y][cursor.x] = self._blank_plain()
                cursor.x = self.columns
                self._wrap_if_pending()
            else:
                cursor.x = self.columns - width
        if mo.IRM in self.mode:
            self.insert_characters(width)
        line = self.buffer[cursor.y]
        x = cursor.x
        self._fix_wide_edges(line, x, x + width)
        line[x] = self._cell(cursor.attrs, char)
        if width == 2 and x + 1 < self.columns:
            line[x + 1] = self._cell(cursor.attrs, "")
        self.dirty.add(cursor.y)
        cursor.x = min(x + width, self.columns)

    def _combine(self, char: str) -> None:
        cursor = self.cursor
        y, x = cursor.y, cursor.x - 1
        if x < 0:
            if y == 0:
                return
            y, x = y - 1, self.columns - 1
        line = self.buffer[y]
        if line[x].data == "" and x > 0:
            x -= 1
        last = line[x]
        line[x] = last._replace(data=unicodedata.normalize("NFC", last.data + char))
        self.dirty.add(y)

    # -- attributes ------------------------------------------------------------------------

    def select_graphic_rendition(self, *attrs: int, groups: list[list[int]] | None = None) -> None:
        params = groups if groups is not None else [[a] for a in attrs]
        if not params:
            params = [[0]]
        cell = self.cursor.attrs
        changes: dict[str, Any] = {}
        i = 0
        while i < len(params):
            group = params[i]
            code = group[0]
            i += 1
            if code == 0:
                cell, changes = BLANK, {}
            elif code == 1:
                changes["bold"] = True
            elif code == 2:
                changes["dim"] = True
            elif code == 3:
                changes["italics"] = True
            elif code == 4:
                changes["underscore"] = not (len(group) > 1 and group[1] == 0)
            elif code in (5, 6):
                changes["blink"] = True
            elif code == 7:
                changes["reverse"] = True
            elif code == 9:
                changes["strikethrough"] = True
            elif code == 21:
                changes["underscore"] = True
            elif code == 22:
                changes["bold"] = False
                changes["dim"] = False
            elif code == 23:
                changes["italics"] = False
            elif code == 24:
                changes["underscore"] = False
            elif code == 25:
                changes["blink"] = False
            elif code == 27:
                changes["reverse"] = False
            elif code == 29:
                changes["strikethrough"] = False
            elif 30 <= code <= 37:
                changes["fg"] = _NAMES[code - 30]
            elif code == 39:
                changes["fg"] = "default"
            elif 40 <= code <= 47:
                changes["bg"] = _NAMES[code - 40]
            elif code == 49:
                changes["bg"] = "default"
            elif 90 <= code <= 97:
                changes["fg"] = "bright" + _NAMES[code - 90]
            elif 100 <= code <= 107:
                changes["bg"] = "bright" + _NAMES[code - 100]
            elif code in (38, 48):
                colour, i = _sgr_colour(params, i - 1)
                if colour is not None:
                    changes["fg" if code == 38 else "bg"] = colour
        self.cursor.attrs = cell._replace(**changes) if changes else cell

    # -- modes -----------------------------------------------------------------------------

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            alt = [m for m in modes if m in _ALT_MODES]
            if alt:
                self._alternate_on(save_cursor=1049 in alt)
            modes = tuple(m for m in modes if m not in _ALT_MODES and m != 3)  # no DECCOLM
        if modes:
            super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private"):
            alt = [m for m in modes if m in _ALT_MODES]
            if alt:
                self._alternate_off(restore_cursor=1049 in alt)
            modes = tuple(m for m in modes if m not in _ALT_MODES and m != 3)
        if modes:
            super().reset_mode(*modes, **kwargs)

    def _alternate_on(self, *, save_cursor: bool) -> None:
        if self.alternate:
            return
        self._saved_main = dict(self.buffer)
        if save_cursor:
            saved = Cursor(self.cursor.x, self.cursor.y, self.cursor.attrs)
            saved.hidden = self.cursor.hidden
            self._saved_alt_cursor = saved
        self.buffer.clear()
        self.alternate = True
        self.dirty.update(range(self.lines))

    def _alternate_off(self, *, restore_cursor: bool) -> None:
        if restore_cursor and self._saved_alt_cursor is not None and not self.alternate:
            self._restore_alt_cursor()
            return
        if not self.alternate:
            return
        self.buffer.clear()
        for y, line in (self._saved_main or {}).items():
            if y < self.lines:
                self.buffer[y] = line
        self._saved_main = None
        if restore_cursor:
            self._restore_alt_cursor()
        self.alternate = False
        self.dirty.update(range(self.lines))

    def _restore_alt_cursor(self) -> None:
        saved = self._saved_alt_cursor
        if saved is None:
            return
        self.cursor.x = min(saved.x, self.columns - 1)
        self.cursor.y = min(saved.y, self.lines - 1)
        self.cursor.attrs = saved.attrs
        self._saved_alt_cursor = None

    def set_margins(self, top: int | None = None, bottom: int | None = None) -> None:
        super().set_margins(top, bottom)
        self.cursor_position()  # tmux homes the cursor on every DECSTBM

    # -- erasing and scrolling, with tmux's background-colour erase ------------------------

    def _clear_line(self, y: int, blank: Cell) -> None:
        line: StaticDefaultDict[int, Any] = StaticDefaultDict(blank)
        self.buffer[y] = line

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        self.dirty.add(self.cursor.y)
        blank = self._blank()
        if how == 2:
            self._clear_line(self.cursor.y, blank)
            return
        line = self.buffer[self.cursor.y]
        x = min(self.cursor.x, self.columns - 1)
        interval = range(x, self.columns) if how == 0 else range(x + 1)
        if how == 0 and x < self.columns and line[x].data == "" and x > 0:
            line[x - 1] = blank
        if how == 1 and x + 1 < self.columns and line[x + 1].data == "":
            line[x + 1] = blank
        for col in interval:
            line[col] = blank

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        blank = self._blank()
        if how == 0:
            interval = range(self.cursor.y + 1, self.lines)
        elif how == 1:
            interval = range(self.cursor.y)
        elif how == 2:
            interval = range(self.lines)
        else:
            return  # 3 clears only the history in tmux (and xterm): nothing visible
        self.dirty.update(interval)
        for y in interval:
            self._clear_line(y, blank)
        if how in (0, 1):
            self.erase_in_line(how)

    def insert_lines(self, count: int | None = None) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        y = self.cursor.y
        if not top <= y <= bottom:
            return
        count = min(count or 1, bottom - y + 1)
        buffer = self.buffer
        self.dirty.update(range(y, bottom + 1))
        for row in range(bottom, y - 1, -1):
            src = row - count
            if src >= y and src in buffer:
                buffer[row] = buffer[src]
            else:
                buffer.pop(row, None)
        self._blank_rows(range(y, y + count))
        self.cursor.x = 0

    def delete_lines(self, count: int | None = None) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        y = self.cursor.y
        if not top <= y <= bottom:
            return
        count = min(count or 1, bottom - y + 1)
        buffer = self.buffer
        self.dirty.update(range(y, bottom + 1))
        for row in range(y, bottom + 1):
            src = row + count
            if src <= bottom and src in buffer:
                buffer[row] = buffer[src]
            else:
                buffer.pop(row, None)
        self._blank_rows(range(bottom - count + 1, bottom + 1))
        self.cursor.x = 0

    def _blank_rows(self, rows: range) -> None:
        """Rows that scrolled in: empty, in the current background colour (tmux's BCE)."""
        blank = self._blank()
        for row in rows:
            if blank is BLANK:
                self.buffer.pop(row, None)
            else:
                self._clear_line(row, blank)

    def scroll_up(self, count: int | None = None) -> None:
        """SU (``CSI n S``): the scroll region moves up, the cursor stays."""
        top, _bottom = self.margins or Margins(0, self.lines - 1)
        saved = self.cursor.x, self.cursor.y
        self.cursor.y = top
        self.delete_lines(count)
        self.cursor.x, self.cursor.y = saved

    def scroll_down(self, count: int | None = None) -> None:
        """SD (``CSI n T``): the scroll region moves down, the cursor stays."""
        top, _bottom = self.margins or Margins(0, self.lines - 1)
        saved = self.cursor.x, self.cursor.y
        self.cursor.y = top
        self.insert_lines(count)
        self.cursor.x, self.cursor.y = saved

    def insert_characters(self, count: int | None = None) -> None:
        y, x = self.cursor.y, min(self.cursor.x, self.columns - 1)
        count = min(count or 1, self.columns - x)
        line = self.buffer[y]
        self.dirty.add(y)
        self._fix_wide_edges(line, x, x)
        for col in range(self.columns - 1, x + count - 1, -1):
            line[col] = line[col - count]
        blank = self._blank()
        for col in range(x, x + count):
            line[col] = blank
        if line[self.columns - 1].data != "" and _width(line[self.columns - 1].data[:1]) == 2:
            line[self.columns - 1] = blank  # a wide character pushed half off the edge

    def delete_characters(self, count: int | None = None) -> None:
        y, x = self.cursor.y, min(self.cursor.x, self.columns - 1)
        count = min(count or 1, self.columns - x)
        line = self.buffer[y]
        self.dirty.add(y)
        self._fix_wide_edges(line, x, x + count)
        for col in range(x, self.columns - count):
            line[col] = line[col + count]
        blank = self._blank()
        for col in range(self.columns - count, self.columns):
            line[col] = blank
        if line[x].data == "":
            line[x] = blank

    def repeat(self, count: int | None = None) -> None:
        """REP (``CSI n b``): the last printed character again."""
        if self.last_char:
            self.draw(self.last_char * min(count or 1, 65535))

    def erase_characters(self, count: int | None = None) -> None:
        self.dirty.add(self.cursor.y)
        blank = self._blank()
        line = self.buffer[self.cursor.y]
        start = min(self.cursor.x, self.columns - 1)
        end = min(start + (count or 1), self.columns)
        self._fix_wide_edges(line, start, end)
        for x in range(start, end):
            line[x] = blank

    def index(self) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y == bottom:
            buffer = self.buffer
            self._scrolling(top, bottom, 1)
            for y in range(top, bottom):
                nxt = buffer.get(y + 1)
                if nxt is None:
                    buffer.pop(y, None)
                else:
                    buffer[y] = nxt
            blank = self._blank()
            if blank is BLANK:
                buffer.pop(bottom, None)
            else:
                self._clear_line(bottom, blank)
        else:
            self.cursor_down()

    def reverse_index(self) -> None:
        top, bottom = self.margins or Margins(0, self.lines - 1)
        if self.cursor.y == top:
            buffer = self.buffer
            self._scrolling(top, bottom, -1)
            for y in range(bottom, top, -1):
                prev = buffer.get(y - 1)
                if prev is None:
                    buffer.pop(y, None)
                else:
                    buffer[y] = prev
            blank = self._blank()
            if blank is BLANK:
                buffer.pop(top, None)
            else:
                self._clear_line(top, blank)
        else:
            self.cursor_up()

    def _scrolling(self, top: int, bottom: int, step: int) -> None:
        hook = self.before_scroll
        if hook is None:
            self.dirty.update(range(top, bottom + 1))
            return
        hook(top, bottom, step)
        self.dirty.add(bottom if step > 0 else top)  # the row scrolled in

    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        """Like tmux: a shorter screen loses blank rows below the cursor first, then rows off
        the top; a narrower one loses the right-hand columns."""
        lines = lines or self.lines
        columns = columns or self.columns
        if (lines, columns) == (self.lines, self.columns):
            return
        if lines < self.lines:
            below = self.lines - 1 - self.cursor.y
            from_bottom = min(self.lines - lines, below)
            from_top = self.lines - lines - from_bottom
            if from_top:
                rows = {y - from_top: row for y, row in self.buffer.items() if y >= from_top}
                self.buffer.clear()
                self.buffer.update(rows)
                self.cursor.y -= from_top
            for y in [y for y in self.buffer if y >= lines]:
                del self.buffer[y]
            if self._saved_main is not None:
                self._saved_main = {y: v for y, v in self._saved_main.items() if y < lines}
        if columns < self.columns:
            for row in self.buffer.values():
                for x in [x for x in row if x >= columns]:
                    del row[x]
        self.lines, self.columns = lines, columns
        self.margins = None
        self.dirty.update(range(lines))
        self.cursor.x = min(self.cursor.x, self.columns - 1)
        self.cursor.y = max(0, min(self.cursor.y, self.lines - 1))
