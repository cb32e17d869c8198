"""What the dashboard knows about each pane, in one object: the fleet, the sidecar's reading of
each screen, Claude Code's own signals, the state shown (the two fused), history and quiet time.

Pure and single-threaded: the app feeds it on the UI thread from messages; nothing here
touches a widget, a thread or a file. Every per-pane table is pruned in one place
(`PaneState.set_fleet`), so a pane that leaves the fleet leaves every table at once.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from nbs_tui.core.detection.fusion import FusedState, Reading, Source, fuse
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo, UsageLimit
from nbs_tui.core.sidecar.meters import Meters, sum_meters
from nbs_tui.core.sidecar.pane_sidecar import SidecarStatus

HISTORY_LENGTH = 50


class EventLike(Protocol):
    """What a history line reads of a `nbs_tui.sidecar.events.SidecarEvent`."""

    @property
    def at(self) -> float: ...

    def history(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One line of a pane's history: what happened and when (wall clock, seconds)."""

    at: float
    text: str

    @classmethod
    def from_sidecar_event(cls, event: EventLike) -> HistoryEntry | None:
        """The line a `nbs_tui.sidecar.events.SidecarEvent` writes (None for most ``status`` and
        ``meters`` events): each event class words its own."""
        text = event.history()
        return None if text is None else cls(event.at, text)


@dataclass(frozen=True, slots=True)
class ClaudeFacts:
    """What the Claude Code side (hooks, status files, transcripts) knows about a pane, as shown."""

    session_id: str | None = None
    model: str | None = None
    last_message: str | None = None
    source: str = ""
    """Where the state came from and how far to trust it (e.g. ``hook``, ``screen``)."""
    state: AgentState | None = None
    extra: tuple[tuple[str, str], ...] = ()
    meters: Meters | None = None
    """Tokens, context and cost from the transcript (None: no transcript read)."""


@dataclass(frozen=True, slots=True)
class PaneStatus:
    """What the sidecar says about one pane: its state, since when, and the next poll."""

    pane_id: PaneId
    state: AgentState | None = None
    reason: str = ""
    idle_since: float | None = None
    """Monotonic time the pane went quiet; None while it works."""
    next_poll_at: float | None = None
    """Monotonic time of the next ``/nbs-poll``; None when no poll is scheduled."""
    flags: frozenset[str] = field(default_factory=frozenset)
    limit: UsageLimit | None = None
    """For ``limited``: the limit on screen."""
    limit_reset_at: float | None = None
    """Monotonic time the limit resets (None: unknown or not limited)."""
    resume_at: float | None = None
    """Monotonic time nbs-tui plans to resume the agent (None: it will not)."""

    @classmethod
    def from_sidecar(cls, status: SidecarStatus) -> PaneStatus:
        """From a `nbs_tui.core.sidecar.pane_sidecar.SidecarStatus`."""
        detection = status.detection
        flags = set(detection.flags)
        if status.paused:
            flags.add("paused")
        if not status.poll_enabled:
            flags.add("poll-off")
        if status.injecting:
            flags.add("injecting")
        return cls(
            pane_id=status.pane_id,
            state=detection.state,
            reason=detection.reason,
            idle_since=status.idle_since,
            next_poll_at=status.next_poll_at if status.poll_enabled and not status.paused else None,
            flags=frozenset(flags),
            limit=detection.limit if detection.state is AgentState.LIMITED else None,
            limit_reset_at=status.limit_reset_at,
            resume_at=status.resume_at,
        )


class RawFacts(Protocol):
    """The part of `nbs_tui.claude.watcher.ClaudeFacts` that fusion and the detail panel read."""

    @property
    def pane_id(self) -> PaneId: ...

    @property
    def readings(self) -> tuple[Reading, ...]: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def model(self) -> str | None: ...

    @property
    def last_assistant_message(self) -> str | None: ...


def fuse_claude(
    raw: RawFacts,
    status: PaneStatus | None,
    changed_at: float | None,
    now: float,
    wall_now: float,
    previous: FusedState | None,
) -> tuple[FusedState, ClaudeFacts, PaneStatus]:
    """Fuse a pane's screen reading with Claude Code's own signals (`nbs_tui.core.detection.fusion`).

    Returns the fused state, the facts for the detail panel, and the status to show (the
    sidecar's, with the trusted state).
    """
    readings = list(raw.readings)
    if status is not None and status.state is not None:
        times = [t for t in (status.idle_since, changed_at) if t is not None]
        since = max(times) if times else None
        at = wall_now - (now - since) if since is not None else wall_now
        readings.append(Reading(Source.SCREEN, status.state, at, status.reason))
    fused = fuse(readings, wall_now, previous)
    extra: list[tuple[str, str]] = []
    liveness = getattr(raw, "liveness", None)
    if liveness is not None:
        extra.append(("process", f"{liveness.value} {getattr(raw, 'liveness_why', '')}".strip()))
    if getattr(raw, "version", None):
        extra.append(("version", str(getattr(raw, "version", ""))))
    if getattr(raw, "last_hook_event", None):
        extra.append(("last hook", str(getattr(raw, "last_hook_event", ""))))
    api_error = getattr(raw, "api_error", None)
    if api_error is not None:
        extra.append(("api error", f"{api_error.kind}: {api_error.text}"))
    if fused.disagreement:
        extra.append(("disagree", fused.disagreement))
    for reading in fused.readings:  # each source's last value, and when it was last confirmed
        stamp = time.strftime("%H:%M:%S", time.localtime(reading.at))
        said = " · ".join(x for x in (reading.state.value, reading.detail, stamp) if x)
        extra.append((f"· {reading.source.value}", said))
    facts = ClaudeFacts(
        session_id=raw.session_id,
        model=raw.model,
        last_message=raw.last_assistant_message,
        source=fused.source.value if fused.source == Source.SCREEN else f"{fused.source.value}: {fused.why}",
        state=fused.state,
        extra=tuple(extra),
        meters=getattr(raw, "meters", None),
    )
    base = status or PaneStatus(raw.pane_id)
    shown = replace(base, state=fused.state, reason=base.reason if fused.source == Source.SCREEN else fused.why)
    return fused, facts, shown


class PaneState:
    """Per-pane state of the fleet on show (see the module docstring).

    ``statuses`` is what is shown: the sidecar's status (``sidecar_statuses``) fused with Claude
    Code's signals (``raw_claude``) when there are any. Times: ``now`` is the monotonic clock of
    the sidecar and the quiet times, ``wall_now`` the wall clock of Claude Code's signals.
    """

    def __init__(self, history_length: int = HISTORY_LENGTH) -> None:
        self.history_length = history_length
        self.panes: list[PaneInfo] = []
        self.pane_by_id: dict[PaneId, PaneInfo] = {}
        self.statuses: dict[PaneId, PaneStatus] = {}
        self.sidecar_statuses: dict[PaneId, PaneStatus] = {}
        self.facts: dict[PaneId, ClaudeFacts] = {}
        self.raw_claude: dict[PaneId, RawFacts] = {}
        self.fused: dict[PaneId, FusedState] = {}
        self.history: dict[PaneId, deque[HistoryEntry]] = {}
        self.relayed_meters: dict[PaneId, Meters] = {}
        """Meters the lease holder published (`nbs_tui.core.sidecar.meters_relay`): shown for a pane
        whose transcript this process does not read (another host's agents)."""
        self.last_change: dict[PaneId, float] = {}
        """Monotonic time each pane's screen last changed."""

    def _tables(self) -> tuple[dict[PaneId, Any], ...]:
        return (
            self.statuses, self.sidecar_statuses, self.facts, self.raw_claude, self.fused,
            self.history, self.relayed_meters, self.last_change,
        )

    def set_fleet(self, panes: Sequence[PaneInfo]) -> None:
        """The whole fleet; every table forgets the panes that left it."""
        self.panes = list(panes)
        self.pane_by_id = {p.pane_id: p for p in self.panes}
        for table in self._tables():
            for pane_id in [k for k in table if k not in self.pane_by_id]:
                del table[pane_id]

    def forget_states(self) -> None:
        """A new tmux server: its pane ids start again, so every pane's story does too (the
        fleet and the screens' quiet times stay until the new fleet arrives)."""
        for table in self._tables():
            if table is not self.last_change:
                table.clear()

    def screens_changed(self, pane_ids: Iterable[PaneId], now: float) -> None:
        for pane_id in pane_ids:
            self.last_change[pane_id] = now

    def add_history(self, pane_id: PaneId, entry: HistoryEntry) -> bool:
        """Append a history line; False when the pane is not in the fleet."""
        if pane_id not in self.pane_by_id:
            return False
        self.history.setdefault(pane_id, deque(maxlen=self.history_length)).append(entry)
        return True

    def set_sidecar_statuses(self, statuses: Iterable[PaneStatus], now: float, wall_now: float) -> list[PaneId]:
        """The sidecar's news; returns the panes whose *shown* status changed."""
        changed = []
        for status in statuses:
            if status.pane_id in self.pane_by_id and self.sidecar_statuses.get(status.pane_id) != status:
                self.sidecar_statuses[status.pane_id] = status
                changed.append(status.pane_id)
        return self.refuse(changed, now, wall_now)

    def set_claude(self, facts: Iterable[tuple[PaneId, RawFacts]], now: float, wall_now: float) -> list[PaneId]:
        """Claude Code's news; returns the panes whose *shown* status changed."""
        changed = []
        for pane_id, raw in facts:
            if pane_id in self.pane_by_id:
                self.raw_claude[pane_id] = raw
                changed.append(pane_id)
        return self.refuse(changed, now, wall_now)

    def refuse(self, pane_ids: Iterable[PaneId], now: float, wall_now: float) -> list[PaneId]:
        """Recompute the shown status of these panes; returns those whose shown status changed."""
        shown: list[PaneId] = []
        for pane_id in pane_ids:
            if pane_id not in self.pane_by_id:
                continue
            status = self._fuse(pane_id, now, wall_now)
            if status is None or self.statuses.get(pane_id) == status:
                continue
            self.statuses[pane_id] = status
            shown.append(pane_id)
        return shown

    def _fuse(self, pane_id: PaneId, now: float, wall_now: float) -> PaneStatus | None:
        status = self.sidecar_statuses.get(pane_id)
        raw = self.raw_claude.get(pane_id)
        if raw is None:
            self.facts.pop(pane_id, None)
            return status
        self.fused[pane_id], self.facts[pane_id], shown = fuse_claude(
            raw, status, self.last_change.get(pane_id), now, wall_now, self.fused.get(pane_id)
        )
        return shown

    def agent_states(self) -> dict[PaneId, AgentState]:
        """The shown state of every agent pane that has one."""
        return {
            pane_id: status.state
            for pane_id, status in self.statuses.items()
            if status.state is not None and (pane := self.pane_by_id.get(pane_id)) is not None and pane.is_agent
        }

    def set_relayed_meters(self, pane_id: PaneId, meters: Meters | None) -> bool:
        """The holder's meters of a pane (None: it publishes none); True when they changed."""
        if pane_id not in self.pane_by_id or self.relayed_meters.get(pane_id) == meters:
            return False
        if meters is None:
            del self.relayed_meters[pane_id]
        else:
            self.relayed_meters[pane_id] = meters
        return True

    def meters_of(self, pane_id: PaneId) -> Meters | None:
        """The pane's meters: from the transcript read here, else as the holder relayed them."""
        facts = self.facts.get(pane_id)
        if facts is not None and facts.meters is not None:
            return facts.meters
        return self.relayed_meters.get(pane_id)

    def facts_shown(self, pane_id: PaneId) -> ClaudeFacts | None:
        """The facts for the details panel, with the relayed meters where none were read here."""
        facts = self.facts.get(pane_id)
        if facts is not None and facts.meters is not None:
            return facts
        relayed = self.relayed_meters.get(pane_id)
        if relayed is None:
            return facts
        return replace(facts, meters=relayed) if facts is not None else ClaudeFacts(meters=relayed)

    def fleet_meters(self) -> Meters | None:
        """The listed panes' meters summed; None while no transcript has been read."""
        found = [m for p in self.panes if (m := self.meters_of(p.pane_id)) is not None]
        return sum_meters(found) if found else None

    def counts(self) -> tuple[int, int, list[AgentState]]:
        """(panes, agents, the agents' shown states) for the status bar."""
        agents = [p for p in self.panes if p.is_agent]
        states = [s.state for p in agents if (s := self.statuses.get(p.pane_id)) and s.state is not None]
        return len(self.panes), len(agents), states
