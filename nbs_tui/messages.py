"""App-wide messages and the small value types they carry.

The fleet's callbacks arrive on its own threads; the app's `FleetBridge` turns each into one of
these messages (``post_message`` is thread-safe), so nothing written by a thread is ever read
by a widget except through a message. Screen changes are the exception by design: they are too
frequent for one message each, so they are collected in a set and drained once per frame.

Textual's `Message` sets private attributes after construction, so the messages themselves are
plain dataclasses; every field they carry is immutable (tuples, frozensets, frozen dataclasses),
which is what matters when they cross threads.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from textual.message import Message

from nbs_tui.core.model import AgentState, PaneId, PaneInfo


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One line of a pane's history: what happened and when (wall clock, seconds)."""

    at: float
    text: str

    @classmethod
    def from_sidecar_event(cls, event: Any) -> HistoryEntry | None:
        """A line for a `nbs_tui.sidecar_runner.SidecarEvent` (None for ``status`` events)."""
        if event.kind == "status":
            return None
        data = dict(event.data)
        if event.kind == "state":
            text = f"state → {data.get('state', '?')}"
            if event.message:
                text += f" ({event.message})"
        elif event.kind in ("poll", "plan-select"):
            result = data.get("result", "")
            what = data.get("text") or data.get("label") or data.get("number") or ""
            text = " ".join(str(x) for x in (event.kind, result, what) if x)
            if event.message:
                text += f": {event.message}"
        elif event.kind == "command":
            text = f"command {data.get('line', '')}"
        else:
            text = f"{event.kind}: {event.message}"
        return cls(event.at, text)


@dataclass(frozen=True, slots=True)
class ClaudeFacts:
    """What the Claude Code side (hooks, status files, transcripts) knows about a pane."""

    session_id: str | None = None
    model: str | None = None
    last_message: str | None = None
    source: str = ""
    """Where the state came from and how far to trust it (e.g. ``hook``, ``screen``)."""
    state: AgentState | None = None
    extra: tuple[tuple[str, str], ...] = ()


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

    @classmethod
    def from_sidecar(cls, status: Any) -> PaneStatus:
        """From a `nbs_tui.core.sidecar.SidecarStatus` (read on the sidecar's thread)."""
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
        )


@dataclass
class FleetChanged(Message):
    """The fleet's panes (or their details) changed; ``panes`` is the whole fleet."""

    panes: tuple[PaneInfo, ...]

    def can_replace(self, message: Message) -> bool:
        # each carries the whole fleet: a queued older one is worthless
        return isinstance(message, FleetChanged)


@dataclass
class ConnectionChanged(Message):
    """The tmux server went away or came back."""

    connected: bool
    message: str


@dataclass
class PaneStatusChanged(Message):
    """The sidecar has news about one pane: a new status, a history line, or both."""

    pane_id: PaneId
    status: PaneStatus | None = None
    history: HistoryEntry | None = None


@dataclass
class PaneStatusesRefreshed(Message):
    """Every pane's sidecar status, read once a second (clocks and countdowns move without events)."""

    statuses: tuple[PaneStatus, ...]


@dataclass
class ClaudeSignalsChanged(Message):
    """Raw `nbs_tui.claude.watcher.ClaudeFacts` for the panes whose facts changed."""

    facts: tuple[tuple[PaneId, Any], ...]


@dataclass
class BackendProblem(Message):
    """A backend failed in a way the operator should see (shown as a notification)."""

    source: str
    message: str


def fuse_claude(
    raw: Any,
    status: PaneStatus | None,
    changed_at: float | None,
    now: float,
    wall_now: float,
    previous: Any,
) -> tuple[Any, ClaudeFacts, PaneStatus] | None:
    """Fuse a pane's screen reading with Claude Code's own signals (`nbs_tui.core.fusion`).

    Returns the fused state, the facts for the detail panel, and the status to show (the
    sidecar's, with the trusted state); None when fusion is unavailable.
    """
    try:
        from nbs_tui.core.fusion import Reading, Source, fuse
    except ImportError:
        return None
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
        extra.append(("version", str(raw.version)))
    if getattr(raw, "last_hook_event", None):
        extra.append(("last hook", str(raw.last_hook_event)))
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
    )
    base = status or PaneStatus(raw.pane_id)
    shown = replace(base, state=fused.state, reason=base.reason if fused.source == Source.SCREEN else fused.why)
    return fused, facts, shown
