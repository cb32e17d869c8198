"""Forward-only reading of an append-only control inbox: :class:`~nbs_tui.files.tail.TailReader`
with inbox lines (:func:`nbs_tui.core.control.inbox.decode_line`) and notices as inbox notices.

The reader never writes, truncates or locks the inbox, so agents appending to it are never
disturbed; partial last lines, over-long lines, replacement, deletion and truncation are
handled as :mod:`nbs_tui.files.tail` describes.
"""

from __future__ import annotations

import os

from nbs_tui.core.control.inbox import (
    DEFAULT_MAX_LINE,
    InboxItem,
    InboxLine,
    InboxNotice,
    decode_line,
)
from nbs_tui.files.tail import TailNotice, TailReader


class ForwardReader:
    """Reads new complete lines of one inbox, forward only. Not thread-safe; one owner."""

    def __init__(self, path: str | os.PathLike[str], max_line: int = DEFAULT_MAX_LINE) -> None:
        self._tail: TailReader[InboxLine] = TailReader(path, decode_line, max_line=max_line)

    @property
    def path(self) -> str:
        return self._tail.path

    @property
    def max_line(self) -> int:
        return self._tail.max_line

    @property
    def offset(self) -> int:
        """Byte offset just after the last complete line returned."""
        return self._tail.offset

    @property
    def lines_read(self) -> int:
        return self._tail.lines_read

    @property
    def has_partial(self) -> bool:
        """A last line without newline is waiting."""
        return self._tail.has_partial

    def read_new(self, limit: int | None = None) -> list[InboxItem]:
        """Every complete line appended since the last call (at most about ``limit`` bytes
        of file are read when given, so a huge backlog can be taken in slices)."""
        items = self._tail.read(limit)
        # notices are rare: only then is the list rebuilt (a replay reads 100k lines at a time)
        if self._tail.noticed:
            return [InboxNotice(item.message) if isinstance(item, TailNotice) else item for item in items]
        return items  # type: ignore[return-value]  # no TailNotice in it: all InboxLine
