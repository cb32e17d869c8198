"""One file's diff, hunk by hunk, unified or side by side: a line-API widget.

git's diff of the file, read into numbered hunks (`nbs_tui.core.review.unified_diff`), becomes
rows: a hunk's header, then its lines (unified: one per line, both numbers in the gutter; side by
side: the base's line on the left beside the agent's on the right), and under a line the
operator's comments on it. Only the rows on screen are drawn, each highlighted once (Pygments,
the lexer chosen by the file's name) and cached, so a 5,000-line diff opens as fast as a short one.

The cursor is a row: the operator's comment goes on its line (or its whole hunk), and ``n``/``N``
move it hunk by hunk. The layout is side by side when the widget is at least `SPLIT_MIN_WIDTH`
columns wide (unless the operator chose one), else unified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_for_filename
from pygments.util import ClassNotFound
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.syntax import ANSI_DARK, ANSISyntaxTheme, SyntaxTheme
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from nbs_tui.core.review.review_comments import ReviewComment
from nbs_tui.core.review.unified_diff import DiffLine, Hunk, LineKind, ParsedDiff, side_by_side

SPLIT_MIN_WIDTH = 120
"""Columns from which the diff is shown side by side (each side ~58 columns of code)."""
LAYOUTS = ("auto", "unified", "split")

ADDED_BG = Style(bgcolor="#12361f")
REMOVED_BG = Style(bgcolor="#3c1618")
GUTTER = Style(color="#7a8590")
HEADER = Style(color="#56b6c2", bold=True)
COMMENT = Style(color="#e5c07b", italic=True)
CURSOR = Style(bgcolor="#2c3e50", bold=True)
NOTE = Style(color="#9aa4ad", italic=True)
_THEME: SyntaxTheme = ANSISyntaxTheme(ANSI_DARK)
"""Token colours: rich's ANSI theme for dark terminals (the terminal's own palette)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the view: a hunk's header, a line (or a side-by-side pair), a comment, a note."""

    hunk: int
    """The hunk it belongs to (-1: a note before any hunk)."""
    left: DiffLine | None = None
    right: DiffLine | None = None
    """Unified: the line is ``left`` and ``right`` is None; side by side: the two sides."""
    header: str = ""
    comment: ReviewComment | None = None
    note: str = ""

    @property
    def line(self) -> DiffLine | None:
        """The line a comment on this row names (side by side: the agent's side first)."""
        return self.right or self.left


def build_rows(diff: ParsedDiff, comments: Sequence[ReviewComment], *, split: bool) -> list[Row]:
    """The view's rows for ``diff``, with ``comments`` (this file's) under their lines."""
    rows: list[Row] = []
    if diff.binary:
        return [Row(-1, note="Binary file: not shown (git says only that it differs).")]
    if not diff.hunks:
        return [Row(-1, note="No textual change (a mode change, an empty file, or the same content).")]
    by_line: dict[int, list[ReviewComment]] = {}
    for comment in comments:
        by_line.setdefault(comment.line, []).append(comment)
    for index, hunk in enumerate(diff.hunks):
        rows.append(Row(index, header=hunk.header))
        pairs = side_by_side(hunk) if split else [(line, None) for line in hunk.lines]
        for left, right in pairs:
            rows.append(Row(index, left, right))
            line = right or left
            assert line is not None
            rows.extend(Row(index, comment=comment) for comment in by_line.pop(line.line, []))
    for leftover in by_line.values():  # a comment whose line is not shown (a hunk comment on context)
        rows.extend(Row(len(diff.hunks) - 1, comment=comment) for comment in leftover)
    if diff.cut:
        rows.append(Row(len(diff.hunks) - 1, note=f"… {diff.cut} more lines of this diff not shown (too long to review here)."))
    return rows


@lru_cache(maxsize=256)
def _lexer(path: str) -> Lexer | None:
    try:
        return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


def highlighted(path: str, text: str) -> Text:
    """One line of code, coloured by its tokens (a line alone: a string across lines may be off)."""
    lexer = _lexer(path)
    shown = Text(text.expandtabs(4), no_wrap=True, end="")
    if lexer is None:
        return shown
    shown = Text(no_wrap=True, end="")
    for token_type, value in lexer.get_tokens(text.expandtabs(4)):
        shown.append(value.rstrip("\n"), _THEME.get_style_for_token(token_type))
    return shown


class DiffView(ScrollView, can_focus=True):
    """The selected file's diff (see the module docstring)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.diff = ParsedDiff("", ())
        self.comments: tuple[ReviewComment, ...] = ()
        self.layout_choice = "auto"
        self.rows: list[Row] = []
        self.cursor = 0
        self._split = False
        self._strips: LRUCache[tuple[int, int, bool, bool], Strip] = LRUCache(2048)

    # -- what is shown -----------------------------------------------------------------------

    def show(self, diff: ParsedDiff, comments: Sequence[ReviewComment]) -> None:
        """A file's diff (the cursor on its first changed line)."""
        self.diff = diff
        self.comments = tuple(comments)
        self._rebuild(cursor=None)

    def set_comments(self, comments: Sequence[ReviewComment]) -> None:
        self.comments = tuple(comments)
        self._rebuild(cursor=self.cursor)

    def cycle_layout(self) -> str:
        """auto → unified → side by side → auto; says which is shown."""
        self.layout_choice = LAYOUTS[(LAYOUTS.index(self.layout_choice) + 1) % len(LAYOUTS)]
        self._rebuild(cursor=self.cursor)
        return self.layout_name

    @property
    def split(self) -> bool:
        return self._split

    @property
    def layout_name(self) -> str:
        shown = "side by side" if self._split else "unified"
        return f"{shown} (as the width allows)" if self.layout_choice == "auto" else shown

    @property
    def _width(self) -> int:
        """Columns for the rows: the widget's, less its vertical scrollbar."""
        return self.scrollable_content_region.width

    def _wants_split(self) -> bool:
        if self.layout_choice == "auto":
            return self._width >= SPLIT_MIN_WIDTH
        return self.layout_choice == "split"

    def _rebuild(self, cursor: int | None) -> None:
        keep = self.rows[cursor].line if cursor is not None and cursor < len(self.rows) else None
        self._split = self._wants_split()
        self.rows = build_rows(self.diff, self.comments, split=self._split)
        self._strips.clear()
        self.virtual_size = Size(self._width, len(self.rows))
        if keep is not None:
            self.cursor = next((i for i, row in enumerate(self.rows) if row.line is not None and row.line.line == keep.line), 0)
        else:
            self.cursor = next((i for i, row in enumerate(self.rows) if row.line and row.line.kind is not LineKind.CONTEXT), 0)
            self.scroll_to(y=0, animate=False)
        self._follow()
        self.refresh()

    def on_resize(self) -> None:
        if self._wants_split() != self._split:
            self._rebuild(cursor=self.cursor)
        else:
            self._strips.clear()
            self.virtual_size = Size(self._width, len(self.rows))

    # -- the cursor ----------------------------------------------------------------------------

    @property
    def current(self) -> Row | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    @property
    def current_hunk(self) -> Hunk | None:
        row = self.current
        return self.diff.hunks[row.hunk] if row is not None and 0 <= row.hunk < len(self.diff.hunks) else None

    def move(self, delta: int) -> None:
        """``delta`` rows down (up), the comments' rows skipped: the cursor is on a line or a header."""
        if not self.rows:
            return
        row = max(0, min(len(self.rows) - 1, self.cursor + delta))
        step = 1 if delta > 0 else -1
        while self.rows[row].comment is not None and 0 <= row + step < len(self.rows):
            row += step
        if self.rows[row].comment is None:
            self._set_cursor(row)

    def page(self, direction: int) -> None:
        self.move(direction * max(1, self.size.height - 2))

    def hunk_step(self, direction: int) -> bool:
        """The cursor to the next (1) or previous (-1) hunk's header; False at the end."""
        here = self.current.hunk if self.current else -1
        starts = [i for i, row in enumerate(self.rows) if row.header]
        target = next((i for i in starts if self.rows[i].hunk > here), None) if direction > 0 else (
            next((i for i in reversed(starts) if self.rows[i].hunk < here), None)
        )  # fmt: skip
        if target is None:
            return False
        self._set_cursor(target)
        self.scroll_to(y=target, animate=False)
        return True

    def _set_cursor(self, row: int) -> None:
        old, self.cursor = self.cursor, row
        self._follow()
        self.refresh_line(old)
        self.refresh_line(row)

    def refresh_line(self, row: int) -> None:
        self.refresh_lines(row - int(self.scroll_offset.y), 1)

    def _follow(self) -> None:
        top, height = int(self.scroll_offset.y), max(1, self.size.height)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False)

    # -- drawing ---------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        index = int(self.scroll_offset.y) + y
        width = self._width
        if index >= len(self.rows):
            return Strip.blank(width)
        key = (index, width, index == self.cursor, self.has_focus)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._draw(self.rows[index], width, index == self.cursor)
            self._strips[key] = strip
        return strip

    def _draw(self, row: Row, width: int, at_cursor: bool) -> Strip:
        if row.header:
            text = Text(row.header, style=HEADER, no_wrap=True, end="")
        elif row.note:
            text = Text(row.note, style=NOTE, no_wrap=True, end="")
        elif row.comment is not None:
            text = Text(f"      ✎ {row.comment.place}: {row.comment.text}", style=COMMENT, no_wrap=True, end="")
        elif self._split:
            half = (width - 1) // 2
            text = self._side(row.left, half, old=True) + Text("│", style=GUTTER) + self._side(row.right, width - half - 1, old=False)
        else:
            text = self._side(row.left, width, old=None)
        segments = list(text.render(self.app.console))
        strip = Strip(segments).crop_extend(0, width, None)
        if at_cursor:
            strip = strip.apply_style(CURSOR if self.has_focus else Style(bgcolor="#26313a"))
        return strip

    def _side(self, line: DiffLine | None, width: int, *, old: bool | None) -> Text:
        """One side's cell: the gutter (the line's number(s) and its mark), then its code, cut or padded to ``width``."""
        if line is None:
            return Text(" " * width, no_wrap=True, end="")
        mark = {LineKind.ADDED: "+", LineKind.REMOVED: "-", LineKind.CONTEXT: " "}[line.kind]
        if old is None:
            gutter = f"{_num(line.old)} {_num(line.new)} {mark} "
        else:
            gutter = f"{_num(line.old if old else line.new)} {mark} "
        text = Text(gutter, style=GUTTER, no_wrap=True, end="")
        text.append_text(highlighted(self.diff.path, line.text))
        bg = ADDED_BG if line.kind is LineKind.ADDED else REMOVED_BG if line.kind is LineKind.REMOVED else None
        text.truncate(width, pad=True)
        if cell_len(text.plain) > width:
            text = Text(text.plain[:width])
        if bg is not None:
            text.stylize(bg)
        return text


def _num(number: int | None) -> str:
    return f"{number:>5}" if number is not None else "     "


def strip_text(strip: Strip) -> str:
    """A strip's characters (tests read rows with it)."""
    return "".join(segment.text for segment in strip if isinstance(segment, Segment))
