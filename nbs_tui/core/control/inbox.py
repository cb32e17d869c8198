"""What reading an append-only control inbox yields: lines and notices about the file.

The reading itself (forward by byte offset, partial last line held back, over-long lines
bounded, replacement, deletion and truncation followed) is :mod:`nbs_tui.files.inbox_reader`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

DEFAULT_MAX_LINE = 64 * 1024
"""Longest inbox line kept, in bytes; a path is at most 4 KiB, so this is generous."""


class InboxLine(NamedTuple):
    """One complete line of an inbox, decoded. (A NamedTuple: immutable, and cheap to make by
    the hundred thousand when a long inbox is replayed.)"""

    number: int
    """1-based line number in the current file."""
    offset: int
    """Byte offset of the line's start."""
    text: str
    """Decoded with replacement characters for invalid UTF-8; no newline."""
    valid_utf8: bool = True
    length: int = 0
    """Length of the line in bytes (without newline)."""
    too_long: bool = False
    """True when the line exceeded ``max_line``: ``text`` is only its first bytes."""


@dataclass(frozen=True, slots=True)
class InboxNotice:
    """Something happened to the file itself (replaced, deleted, truncated, unreadable)."""

    message: str


InboxItem = InboxLine | InboxNotice


def decode_line(number: int, offset: int, raw: bytes, length: int, too_long: bool) -> InboxLine:
    """One inbox line from its bytes (a CR before the newline dropped; invalid UTF-8 replaced).

    A cut preview of an over-long line may end mid-character, so only whole lines are judged
    for valid UTF-8."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return InboxLine(number, offset, raw.decode("utf-8"), True, length, too_long)
    except UnicodeDecodeError:
        return InboxLine(number, offset, raw.decode("utf-8", errors="replace"), too_long, length, too_long)
