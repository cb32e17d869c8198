# mypy: disable-error-code="assignment,arg-type,index,misc,call-overload"
# (pyte types its cells as ``Char``; ours are the field-compatible ``Cell``.)
"""The mirror of one tmux pane: a terminal that matches what tmux itself shows.

`PaneScreen` is fed the pane's raw output (tmux control-mode ``%output``) and can be seeded
from ``capture-pane -p -e -N``. The terminal under it (`nbs_tui.core.screen.terminal`) and its
parser (`nbs_tui.core.screen.terminal_stream`) fix the places where plain pyte and tmux disagree.

Threading: every method that changes the screen takes ``lock`` itself; a reader on another
thread holds ``with screen.lock:`` across the reads that must be consistent (for example all
rows of one repaint). The lock is re-entrant.

Cells are `nbs_tui.core.screen.terminal.Cell` (re-exported here).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from pyte.screens import Margins

from nbs_tui.core.screen.terminal import BLANK, Cell, Terminal
from nbs_tui.core.screen.terminal_stream import TerminalStream

__all__ = ["BLANK", "Cell", "PaneScreen"]


class PaneScreen:
    """A pane's live screen model. See the module docstring for the threading rule.

    ``version`` bumps on every change (content, cursor, size, screen switch);
    ``row_version(y)`` changes whenever row ``y`` changes, so renderers can cache rows. Row
    versions are unique stamps that travel with a row's content: when the screen scrolls, the
    rows that moved keep theirs (at their new place) and only the row scrolled in gets a new
    one, so a renderer keyed by version alone draws a scroll from what it already has. (0 is a
    row never written: blank.)
    """

    def __init__(self, width: int = 80, height: int = 24) -> None:
        self.lock = threading.RLock()
        self._term = Terminal(max(1, width), max(1, height))
        self._stream = TerminalStream(self._term)
        self._term.dirty.clear()
        self.version = 0
        self.seeded = False
        """Whether `seed` ever painted it (a fleet's model of a pane is blank until then)."""
        self._row_versions: list[int] = [0] * self._term.lines
        self._counter = 0
        self._carried = False
        """Rows moved by a scroll since the last commit (the screen changed even if none is dirty)."""
        self._term.before_scroll = self._carry_rows
        self.errors = 0
        """How many chunks raised inside the parser (the rest of such a chunk is lost)."""

    # -- properties ------------------------------------------------------------------------

    @property
    def width(self) -> int:
        return int(self._term.columns)

    @property
    def height(self) -> int:
        return int(self._term.lines)

    @property
    def cursor_x(self) -> int:
        return min(int(self._term.cursor.x), self._term.columns - 1)

    @property
    def cursor_y(self) -> int:
        return int(self._term.cursor.y)

    @property
    def cursor_visible(self) -> bool:
        return not self._term.cursor.hidden

    @property
    def alternate(self) -> bool:
        """True while the pane shows its alternate screen (full-screen programs)."""
        return bool(self._term.alternate)

    # -- changes ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Apply raw pane output (any chunking; UTF-8 may be split across calls)."""
        if not data:
            return
        with self.lock:
            term = self._term
            before = (term.cursor.x, term.cursor.y, term.cursor.hidden, term.alternate)
            try:
                self._stream.feed_bytes(data)
            except Exception:
                self.errors += 1
                self._stream._initialize_parser()
            self._commit(before)

    def resize(self, width: int, height: int) -> None:
        """Change the size as tmux reports it (a re-seed from capture-pane should follow)."""
        width, height = max(1, width), max(1, height)
        with self.lock:
            term = self._term
            if width == term.columns and height == term.lines:
                return
            term.resize(lines=height, columns=width)
            term.tabstops = {x for x in range(8, width, 8)}
            if len(self._row_versions) < height:
                self._row_versions.extend([0] * (height - len(self._row_versions)))
            else:
                del self._row_versions[height:]
            term.dirty.update(range(height))
            self._commit(None)

    def seed(
        self,
        capture: bytes,
        cursor_x: int,
        cursor_y: int,
        *,
        alternate: bool = False,
        cursor_visible: bool = True,
        main_capture: bytes | None = None,
        scroll_region: tuple[int, int] | None = None,
        saved_cursor: tuple[int, int] | None = None,
    ) -> None:
        """Replace the whole screen with ``capture-pane -p -e -N`` output (one line per row).

        ``alternate`` says the capture is of the alternate screen; ``main_capture`` (from
        ``capture-pane -a``) is then the hidden main screen shown again when the program
        leaves it, and ``saved_cursor`` (tmux's ``alternate_saved_x/y``) where its cursor goes
        back to. ``scroll_region`` is tmux's ``(scroll_region_upper, scroll_region_lower)``.
        """
        with self.lock:
            term = self._term
            term.reset()
            term.cursor.attrs = BLANK
            self._stream._initialize_parser()
            self._stream.decoder.reset()
            if alternate:
                if main_capture is not None:
                    self._paint(main_capture)
                term._alternate_on(save_cursor=saved_cursor is not None)
                if saved_cursor is not None and term._saved_alt_cursor is not None:
                    term._saved_alt_cursor.x, term._saved_alt_cursor.y = saved_cursor
                    term._saved_alt_cursor.attrs = BLANK
            self._paint(capture)
            self._stream._initialize_parser()
            self._stream.decoder.reset()
            term.cursor.attrs = BLANK
            term.cursor.x = max(0, min(cursor_x, term.columns - 1))
            term.cursor.y = max(0, min(cursor_y, term.lines - 1))
            term.cursor.hidden = not cursor_visible
            if scroll_region is not None:
                top, bottom = scroll_region
                if 0 <= top < bottom <= term.lines - 1 and (top, bottom) != (0, term.lines - 1):
                    term.margins = Margins(top, bottom)
            term.dirty.update(range(term.lines))
            self.seeded = True
            self._commit(None)

    def _paint(self, capture: bytes) -> None:
        term = self._term
        rows = capture.split(b"\n")
        if rows and rows[-1] == b"":
            rows.pop()
        for y, row in enumerate(rows[: term.lines]):
            term.cursor.x, term.cursor.y = 0, y
            try:
                self._stream.feed_bytes(row.replace(b"\r", b""))
            except Exception:
                self.errors += 1
                self._stream._initialize_parser()

    def _stamp_dirty(self) -> bool:
        """A new version for each row written since the last stamping; True if there was one."""
        dirty = self._term.dirty
        if not dirty:
            return False
        rows = self._row_versions
        height = len(rows)
        counter = self._counter
        for y in dirty:
            if 0 <= y < height:
                counter += 1
                rows[y] = counter
        self._counter = counter
        dirty.clear()
        return True

    def _carry_rows(self, top: int, bottom: int, step: int) -> None:
        """The terminal is about to scroll rows ``top..bottom`` by one: their versions move with them."""
        self._stamp_dirty()  # a row written before the scroll moves with its new version
        rows = self._row_versions
        bottom = min(bottom, len(rows) - 1)
        if top >= bottom:
            return
        if step > 0:
            rows[top:bottom] = rows[top + 1 : bottom + 1]
        else:
            rows[top + 1 : bottom + 1] = rows[top:bottom]
        self._carried = True

    def _commit(self, before: tuple[Any, ...] | None) -> None:
        term = self._term
        changed = self._stamp_dirty() or self._carried
        self._carried = False
        if before is None or changed or before != (
            term.cursor.x, term.cursor.y, term.cursor.hidden, term.alternate
        ):
            self.version += 1

    # -- reading (hold ``lock`` across reads that must agree) -------------------------------

    def row_cells(self, y: int) -> Sequence[Cell]:
        """Exactly ``width`` cells of row ``y``; the cell after a wide character has data ``""``."""
        with self.lock:
            term = self._term
            line = term.buffer.get(y)
            if line is None:
                return [BLANK] * term.columns
            return [line[x] for x in range(term.columns)]

    def row_version(self, y: int) -> int:
        """A number that changes whenever row ``y`` changes (monotonic)."""
        rows = self._row_versions
        return rows[y] if 0 <= y < len(rows) else 0

    def row_text(self, y: int) -> str:
        """Row ``y`` as plain text, trailing spaces stripped."""
        with self.lock:
            line = self._term.buffer.get(y)
            if line is None:
                return ""
            return "".join(line[x].data for x in range(self._term.columns)).rstrip()

    def text_lines(self) -> list[str]:
        """Every row as plain text, trailing spaces stripped."""
        with self.lock:
            return [self.row_text(y) for y in range(self._term.lines)]

    def __repr__(self) -> str:
        return f"PaneScreen({self.width}x{self.height}, version={self.version})"
