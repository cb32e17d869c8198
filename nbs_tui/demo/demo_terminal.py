"""The terminal side of the imitation: measuring text in cells, word-wrapping a logical row,
painting a row as one escape-sequence string, and ``Terminal``, which owns the tty (raw mode,
size, title) and redraws only the rows that changed.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import termios
import tty
import unicodedata
from dataclasses import dataclass
from typing import Any

Seg = tuple[str, str]
"""A run of text and the SGR parameters it is drawn with ("" = default)."""



def char_width(ch: str) -> int:
    """Terminal cells taken by one character, as wcwidth would say for what we print."""
    code = ord(ch)
    if code < 32 or 0x7F <= code < 0xA0:
        return 0
    if unicodedata.combining(ch) or code in (0x200B, 0x200D, 0xFE0F):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def text_width(text: str) -> int:
    return sum(char_width(ch) for ch in text)


@dataclass(slots=True)
class Row:
    """One logical line: segments, how continuation lines are indented, and options."""

    segs: list[Seg]
    indent: int = 2
    wrap: bool = True
    fill: str | None = None
    """SGR parameters to pad the row to the full width with (the user-message background)."""
    painted_width: int = -1
    painted: str = ""


def wrap_row(row: Row, width: int) -> list[Row]:
    """Split a logical row into rows that each fit ``width`` cells (word wrap, hard split)."""
    if not row.wrap or width <= row.indent + 4:
        return [row]
    total = sum(text_width(t) for t, _ in row.segs)
    if total <= width:
        return [row]
    out: list[Row] = []
    current: list[Seg] = []
    used = 0
    pad = " " * row.indent

    def flush() -> None:
        nonlocal current, used
        out.append(Row(current, row.indent, False, row.fill))
        current = [(pad, row.fill or "")]
        used = row.indent

    for text, style in row.segs:
        for token in re.findall(r"\S+|\s+", text):
            tw = text_width(token)
            if used + tw <= width:
                current.append((token, style))
                used += tw
            elif token.isspace():
                flush()
            elif tw <= width - row.indent:
                flush()
                current.append((token, style))
                used += tw
            else:
                for ch in token:
                    cw = char_width(ch)
                    if used + cw > width:
                        flush()
                    current.append((ch, style))
                    used += cw
    if used > row.indent or not out:
        out.append(Row(current, row.indent, False, row.fill))
    return out


def paint_row(row: Row, width: int) -> str:
    """The escape-sequence string that draws ``row`` from column 0, clipped to ``width`` (cached)."""
    if row.painted_width == width:
        return row.painted
    row.painted = _paint(row, width)
    row.painted_width = width
    return row.painted


def _paint(row: Row, width: int) -> str:
    parts: list[str] = []
    used = 0
    last_style: str | None = None
    for text, style in row.segs:
        if style != last_style:
            parts.append(f"\x1b[0;{style}m" if style else "\x1b[0m")
            last_style = style
        chunk: list[str] = []
        full = False
        for ch in text:
            cw = char_width(ch)
            if used + cw > width:
                full = True
                break
            chunk.append(ch)
            used += cw
        parts.append("".join(chunk))
        if full or used >= width:
            break
    if row.fill is not None and used < width:
        parts.append(f"\x1b[0;{row.fill}m" if row.fill else "\x1b[0m")
        parts.append(" " * (width - used))
        used = width
    parts.append("\x1b[0m")
    if used < width:
        parts.append("\x1b[K")
    return "".join(parts)


class Terminal:
    """Owns the tty: raw mode, size, and a frame painter that redraws only changed rows.

    When the transcript pinned at the top of the screen moves up by n rows, the painter scrolls
    that region with a scroll margin (DECSTBM) instead of redrawing it, so a busy agent costs a
    few bytes per new line, as a real terminal program would.
    """

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd = in_fd
        self.out_fd = out_fd
        self._saved: list[Any] | None = None
        self._prev: list[str] = []
        self._prev_size = (0, 0)
        self._prev_region: tuple[int, int] | None = None  # (pinned rows, absolute first row)
        self._title = ""

    def size(self) -> tuple[int, int]:
        try:
            columns, lines = os.get_terminal_size(self.out_fd)
        except OSError:
            return 80, 24
        return max(columns, 20), max(lines, 8)

    def enter(self) -> None:
        if os.isatty(self.in_fd):
            self._saved = termios.tcgetattr(self.in_fd)
            tty.setraw(self.in_fd)
        self.write("\x1b[?25l\x1b[?2004h\x1b[2J\x1b[H")

    def leave(self) -> None:
        """Restore the tty; quietly, since on SIGHUP the pty may already be gone."""
        with contextlib.suppress(OSError):
            self.write("\x1b[r\x1b[0m\x1b[?2004l\x1b[?25h\r\n")
        if self._saved is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(self.in_fd, termios.TCSADRAIN, self._saved)

    def write(self, data: str) -> None:
        raw = data.encode("utf-8")
        while raw:
            try:
                written = os.write(self.out_fd, raw)
            except InterruptedError:
                continue
            except BlockingIOError:
                select.select([], [self.out_fd], [], 1.0)
                continue
            raw = raw[written:]

    def set_title(self, title: str) -> None:
        if title != self._title:
            self._title = title
            self.write(f"\x1b]0;{title}\x07")

    def invalidate(self) -> None:
        self._prev = []
        self._prev_region = None

    def paint(self, rows: list[str], width: int, height: int, region: tuple[int, int] | None) -> None:
        """Draw ``rows`` (already painted strings, one per screen row).

        ``region`` is (pinned rows, absolute index of the first transcript row shown) when the
        transcript fills the top ``pinned`` rows, else None.
        """
        out: list[str] = []
        if (width, height) != self._prev_size:
            self._prev = []
            self._prev_region = None
            self._prev_size = (width, height)
            out.append("\x1b[0m\x1b[2J")
        prev = self._prev + [""] * (height - len(self._prev))
        if region and self._prev_region and self._prev and region[0] == self._prev_region[0]:
            pinned = region[0]
            shift = region[1] - self._prev_region[1]
            if 0 < shift < pinned:
                out.append(f"\x1b[0m\x1b[1;{pinned}r\x1b[{pinned};1H" + "\n" * shift + "\x1b[r")
                prev = prev[shift:pinned] + ["\x1b[K"] * shift + prev[pinned:]
        for index, text in enumerate(rows):
            if prev[index] != text:
                out.append(f"\x1b[{index + 1};1H{text}")
        self._prev = list(rows)
        self._prev_region = region
        if out:
            self.write("".join(out))
