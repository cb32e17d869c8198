"""The "needs you" queue: agents waiting on a person, oldest wait first.

An agent joins when its state waits on a human (a permission prompt, a question, a dialog, an
error; a plan menu when nobody answers plans for it), when the stuck watch escalated it (idle,
its transcript quiet, nudged without effect: ``stuck``), or when it has sat idle for longer than
a threshold. It leaves as soon as its state clears, or when its pane goes away. The queue is pure:
the caller feeds it states and the time (an injected clock), and gets back what joined and what
left, so the app can ring a bell for joins and redraw the panel.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from nbs_tui.core.fleet.model import AgentState, PaneId

REASONS: Mapping[AgentState, str] = {
    AgentState.PERMISSION: "permission prompt",
    AgentState.QUESTION: "question",
    AgentState.DIALOG: "dialog",
    AgentState.ERROR: "error",
    AgentState.PLAN: "plan approval",
}


@dataclass(frozen=True, slots=True)
class NeedsYouEntry:
    pane_id: PaneId
    state: AgentState
    reason: str
    """``permission prompt``, ``question``, ``idle``… for the panel."""
    since: float
    """When the wait began (the state change, or the start of the idle spell): the queue's order."""
    joined: float
    """When the entry joined the queue (for idle agents, ``since`` plus the threshold)."""
    label: str = ""

    def waited(self, now: float) -> float:
        return max(0.0, now - self.since)


@dataclass(frozen=True, slots=True)
class QueueChange:
    joined: tuple[NeedsYouEntry, ...] = ()
    left: tuple[PaneId, ...] = ()
    updated: tuple[NeedsYouEntry, ...] = ()
    """Entries still queued whose reason changed (a question became a permission prompt)."""

    def __bool__(self) -> bool:
        return bool(self.joined or self.left or self.updated)


@dataclass(slots=True)
class _Track:
    state: AgentState
    since: float
    label: str
    plan_waits: bool = False
    stuck: str | None = None
    """Why the stuck watch escalated this agent (None: it did not, or the agent moved on)."""


@dataclass
class NeedsYouQueue:
    idle_threshold: float = 300.0
    clock: Callable[[], float] = time.time
    _tracks: dict[PaneId, _Track] = field(default_factory=dict)
    _entries: dict[PaneId, NeedsYouEntry] = field(default_factory=dict)

    # -- feeding -------------------------------------------------------------------------

    def observe(
        self,
        pane_id: PaneId,
        state: AgentState,
        *,
        label: str = "",
        plan_waits: bool = False,
        stuck: str | None = None,
        since: float | None = None,
        now: float | None = None,
    ) -> QueueChange:
        """Record the pane's current state. ``plan_waits``: nobody auto-answers plan menus here.
        ``stuck``: the stuck watch escalated the agent, and why (the panel's reason). ``since``:
        when the state began, if the caller knows (the sidecar's quiet-since, same clock)."""
        now = self.clock() if now is None else now
        track = self._tracks.get(pane_id)
        if track is None or track.state is not state:
            began = min(now, since) if since is not None else now
            track = _Track(state, began, label or (track.label if track else ""), plan_waits, stuck)
            self._tracks[pane_id] = track
        else:
            track.plan_waits = plan_waits
            track.stuck = stuck
            if label:
                track.label = label
        return self._settle(pane_id, track, now)

    def forget(self, pane_id: PaneId) -> QueueChange:
        """The pane is gone."""
        self._tracks.pop(pane_id, None)
        if self._entries.pop(pane_id, None) is not None:
            return QueueChange(left=(pane_id,))
        return QueueChange()

    def sync(
        self,
        states: Mapping[PaneId, AgentState],
        *,
        labels: Mapping[PaneId, str] | None = None,
        plan_waits: frozenset[PaneId] = frozenset(),
        stuck: Mapping[PaneId, str] | None = None,
        since: Mapping[PaneId, float] | None = None,
        now: float | None = None,
    ) -> QueueChange:
        """Observe the whole fleet at once; panes not in ``states`` are forgotten. ``stuck``:
        the panes the stuck watch escalated (`SidecarRunner.escalated`), with the reason."""
        now = self.clock() if now is None else now
        joined: list[NeedsYouEntry] = []
        left: list[PaneId] = []
        updated: list[NeedsYouEntry] = []
        for pane_id in [p for p in self._tracks if p not in states]:
            left.extend(self.forget(pane_id).left)
        for pane_id, state in states.items():
            change = self.observe(
                pane_id,
                state,
                label=(labels or {}).get(pane_id, ""),
                plan_waits=pane_id in plan_waits,
                stuck=(stuck or {}).get(pane_id),
                since=(since or {}).get(pane_id),
                now=now,
            )
            joined.extend(change.joined)
            left.extend(change.left)
            updated.extend(change.updated)
        return QueueChange(tuple(joined), tuple(left), tuple(updated))

    def tick(self, now: float | None = None) -> QueueChange:
        """Let the clock move: idle agents past the threshold join."""
        now = self.clock() if now is None else now
        joined: list[NeedsYouEntry] = []
        for pane_id, track in self._tracks.items():
            joined.extend(self._settle(pane_id, track, now).joined)
        return QueueChange(joined=tuple(joined))

    def _settle(self, pane_id: PaneId, track: _Track, now: float) -> QueueChange:
        wanted = self._wanted(pane_id, track, now)
        current = self._entries.get(pane_id)
        if wanted is None:
            if current is None:
                return QueueChange()
            del self._entries[pane_id]
            return QueueChange(left=(pane_id,))
        if current is None:
            self._entries[pane_id] = wanted
            return QueueChange(joined=(wanted,))
        if current.reason != wanted.reason or current.label != wanted.label:
            # Still waiting on a person, for a new reason: keep the original place in line.
            kept = NeedsYouEntry(pane_id, wanted.state, wanted.reason, current.since, current.joined, wanted.label)
            self._entries[pane_id] = kept
            return QueueChange(updated=(kept,))
        return QueueChange()

    def _wanted(self, pane_id: PaneId, track: _Track, now: float) -> NeedsYouEntry | None:
        state = track.state
        if state.needs_person or (state is AgentState.PLAN and track.plan_waits):
            return NeedsYouEntry(pane_id, state, REASONS[state], track.since, now, track.label)
        if track.stuck:
            current = self._entries.get(pane_id)
            joined = current.joined if current is not None else now
            return NeedsYouEntry(pane_id, state, track.stuck, track.since, joined, track.label)
        if state is AgentState.IDLE and now - track.since >= self.idle_threshold:
            minutes = int((now - track.since) // 60)
            reason = f"idle {minutes} min" if minutes else "idle"
            current = self._entries.get(pane_id)
            if current is not None and current.state is AgentState.IDLE:
                reason = current.reason  # do not churn the panel every minute
            return NeedsYouEntry(pane_id, state, reason, track.since, track.since + self.idle_threshold, track.label)
        return None

    # -- reading -------------------------------------------------------------------------

    def entries(self) -> list[NeedsYouEntry]:
        """Oldest wait first."""
        return sorted(self._entries.values(), key=lambda e: (e.since, e.pane_id))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, pane_id: object) -> bool:
        return pane_id in self._entries

    def next_after(self, pane_id: PaneId | None) -> NeedsYouEntry | None:
        """The entry to jump to next: the oldest, or the one after ``pane_id`` in line (wrapping)."""
        line = self.entries()
        if not line:
            return None
        if pane_id is None or pane_id not in self._entries:
            return line[0]
        index = next(i for i, entry in enumerate(line) if entry.pane_id == pane_id)
        return line[(index + 1) % len(line)]
