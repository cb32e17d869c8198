"""Problems a person should see: a bounded, de-duplicating record of what went wrong.

Every backend failure (a tmux client that died, a spool that cannot be read, a control-plane
listener that raised) is reported as ``(source, message)``. The same problem reported again is
one entry with a count and its first and last time, so a failure that repeats every second
cannot push the others out; past ``limit`` entries the one seen longest ago is dropped.

Pure: no clock of its own (the caller passes ``now``), no I/O, no threads. The app keeps one
on its UI thread; the log file and ``--headless`` see every report as it happens.

The one route. Every backend is given a `ProblemSink` and reports nothing any other way (no
error event of its own, no toast): the tmux fleet, each host, the sidecar (its ``error``
events, turned into reports by the runtime), the sidecar lease, the control plane (a
project's unreadable files, a failed pass, a listener that raised; another host's over its
ssh channel), Claude Code's signals, the action log, notifications and the operator's
actions. The sink they are given is `nbs_tui.runtime.runtime.Runtime.problem`: it writes the
log line (``source: message``) and tells the runtime's listener, whose ``problem`` is the
dashboard's `BackendProblem` (this record, the ``E`` screen, the status bar's count, a
notification) or ``--headless``'s ``error`` line. A host's runtime names its host in the
message first, so all three say the same words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

ProblemSink = Callable[[str, str], None]
"""Where a backend reports a problem: ``sink(source, message)``, from any thread; it never
raises (see "The one route" above)."""

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
