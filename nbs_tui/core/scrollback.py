"""Search in a pane's scrollback: where a query matches, and which match comes next.

Pure: the scrollback view (`nbs_tui.widgets.scrollback`) gives the plain text of each line and
shows the result. Smart case, as in less and vim: a query with no capital letter matches any
case; one with a capital matches exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Match:
    row: int
    start: int
    """Offset in the line's text (characters)."""
    end: int


def find_matches(lines: Sequence[str], query: str) -> list[Match]:
    """Every non-overlapping occurrence of ``query``, top to bottom, left to right."""
    if not query:
        return []
    exact = query != query.lower()
    needle = query if exact else query.lower()
    found: list[Match] = []
    for row, line in enumerate(lines):
        hay = line if exact else line.lower()
        start = hay.find(needle)
        while start >= 0:
            found.append(Match(row, start, start + len(needle)))
            start = hay.find(needle, start + len(needle))
    return found


def nearest_above(matches: Sequence[Match], row: int) -> int | None:
    """The index of the last match at or above ``row`` (searching back from what is on show),
    else of the first match below it; None when there is none."""
    if not matches:
        return None
    above = [i for i, match in enumerate(matches) if match.row <= row]
    return above[-1] if above else 0


def step(matches: Sequence[Match], current: int | None, forward: bool) -> int | None:
    """The next (``forward``: further down) or previous match after ``current``, wrapping."""
    if not matches:
        return None
    if current is None:
        return 0 if forward else len(matches) - 1
    return (current + (1 if forward else -1)) % len(matches)
