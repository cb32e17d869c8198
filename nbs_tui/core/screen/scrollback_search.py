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


# -- following new output -------------------------------------------------------------------------

ALIGN_TRIES = 64
"""How many candidate offsets `align` verifies in full before it gives up (a log of identical
lines would otherwise cost a full comparison per line)."""


@dataclass(frozen=True, slots=True)
class Grown:
    """How a new read of a pane's history continues the one on show."""

    dropped: int
    """Rows gone from the top of the old read (tmux's history limit, or the view's)."""
    kept: int
    """Rows of the old read, after the dropped ones, that the new read repeats unchanged."""
    fresh: tuple[str, ...]
    """The new read's rows after the kept ones: they replace the rest of the old read."""
    reset: bool = False
    """The new read does not continue the old one (the history was cleared, or the pane was
    resized and tmux reflowed it): everything was replaced."""

    @property
    def unchanged(self) -> bool:
        return not self.dropped and not self.fresh and not self.reset


def align(old: Sequence[str], old_fixed: int, new: Sequence[str]) -> Grown:
    """Line the new read ``new`` up with ``old``, whose first ``old_fixed`` rows were history
    (tmux never changes a row once it scrolled off the screen; the screen's rows below it may
    change in place). The old history must reappear in the new read, its top maybe dropped;
    rows after it are kept as long as they are equal, so a read that only grew keeps them all."""
    fixed = max(0, min(old_fixed, len(old)))
    dropped = _dropped(old, fixed, new)
    if dropped is None:
        return Grown(len(old), 0, tuple(new), reset=True)
    kept = fixed - dropped
    limit = min(len(old) - dropped, len(new))
    while kept < limit and old[dropped + kept] == new[kept]:
        kept += 1
    return Grown(dropped, kept, tuple(new[kept:]))


def _dropped(old: Sequence[str], fixed: int, new: Sequence[str]) -> int | None:
    """The smallest count of top rows dropped from the old history that makes the rest of it
    the start of ``new``; None when there is none (checked in full at most `ALIGN_TRIES` times)."""
    if fixed == 0:
        return 0
    tries = 0
    last = old[fixed - 1]
    for dropped in range(fixed):
        length = fixed - dropped
        if length > len(new) or old[dropped] != new[0] or new[length - 1] != last:
            continue
        if list(old[dropped:fixed]) == list(new[:length]):
            return dropped
        tries += 1
        if tries >= ALIGN_TRIES:
            break
    return None


def carry_match(old: Match | None, dropped: int, matches: Sequence[Match]) -> int | None:
    """The index in ``matches`` (found afresh in the grown history) of the match that was
    current (``old``, before ``dropped`` rows went from the top): the same place if it is still
    there, else the first match on its row, else the nearest above it; None without matches."""
    if not matches:
        return None
    if old is None:
        return None
    row = old.row - dropped
    on_row = [i for i, match in enumerate(matches) if match.row == row]
    for i in on_row:
        if matches[i].start == old.start:
            return i
    if on_row:
        return on_row[0]
    return nearest_above(matches, max(row, 0))


def splice_tail(
    old: Sequence[str], old_fixed: int, old_size: int, tail: Sequence[str], tail_fixed: int, new_size: int, limit: int
) -> list[str] | None:
    """The whole read that a read of only the last rows stands for, or None when it cannot tell.

    ``old`` is the read on show: its first ``old_fixed`` rows history, of the ``old_size`` tmux
    held then. ``tail`` is a new read of only the last ``tail_fixed`` history rows and the screen,
    of ``new_size`` held now. If tmux dropped or cleared nothing, ``new_size - old_size`` rows
    scrolled into the history since, so the tail's first rows are the old history's last: they
    must be equal (else something was dropped or cleared: read it all). At most ``limit`` history
    rows are kept, as a whole read would."""
    scrolled = new_size - old_size
    overlap = tail_fixed - scrolled
    if scrolled < 0 or overlap < 1 or overlap > old_fixed or tail_fixed > len(tail):
        return None
    if list(old[old_fixed - overlap : old_fixed]) != list(tail[:overlap]):
        return None
    whole = [*old[: old_fixed - overlap], *tail]
    history = old_fixed - overlap + tail_fixed
    return whole[max(0, history - limit) :]
