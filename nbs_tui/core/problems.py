"""Problems a person should see: a bounded, de-duplicating record of what went wrong.

Every backend failure (a tmux client that died, a spool that cannot be read, a control-plane
listener that raised) is reported as ``(source, message)``. The same problem reported again is
one entry with a count and its first and last time, so a failure that repeats every second
cannot push the others out; past ``limit`` entries the one seen longest ago is dropped.

Pure: no clock of its own (the caller passes ``now``), no I/O, no threads. The app keeps one
on its UI thread; the log file and ``--headless`` see every report as it happens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

ProblemSink = Callable[[str, str], None]
"""Where a backend reports a problem: ``sink(source, message)``, from any thread."""

LIMIT = 200


@dataclass(frozen=True, slots=True)
class Problem:
    source: str
    """Which backend: ``tmux``, ``sidecar``, ``control plane``, ``Claude Code signals``..."""
    message: str
    first: float
    last: float
    count: int = 1

    @property
    def key(self) -> tuple[str, str]:
        return (self.source, self.message)


class Problems:
    """The record (see the module docstring). Not thread-safe: one owner calls it."""

    def __init__(self, limit: int = LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        self.limit = limit
        self._entries: dict[tuple[str, str], Problem] = {}
        """By key, in order of last report (oldest first)."""
        self.dropped = 0
        """Entries pushed out by the limit."""

    def record(self, source: str, message: str, now: float) -> Problem:
        """Note one report; returns the entry as it now stands (``count == 1``: new)."""
        source, message = source.strip() or "nbs-tui", message.strip() or "(no message)"
        key = (source, message)
        old = self._entries.pop(key, None)
        entry = (
            Problem(source, message, now, now)
            if old is None
            else replace(old, last=max(old.last, now), count=old.count + 1)
        )
        self._entries[key] = entry
        while len(self._entries) > self.limit:
            del self._entries[next(iter(self._entries))]
            self.dropped += 1
        return entry

    def entries(self) -> list[Problem]:
        """Newest report first."""
        return list(reversed(self._entries.values()))

    def clear(self) -> None:
        self._entries.clear()
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def reports(self) -> int:
        """Reports of the entries still held (repeats included)."""
        return sum(p.count for p in self._entries.values())
