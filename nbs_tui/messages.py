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

from dataclasses import dataclass, field

from textual.message import Message

from nbs_tui.core.model import AgentState, PaneId, PaneInfo


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One line of a pane's history: what happened and when (wall clock, seconds)."""

    at: float
    text: str


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


@dataclass
class FleetChanged(Message):
    """The fleet's panes (or their details) changed; ``panes`` is the whole fleet."""

    panes: tuple[PaneInfo, ...]


@dataclass
class ConnectionChanged(Message):
    """The tmux server went away or came back."""

    connected: bool
    message: str


@dataclass
class PaneStatusChanged(Message):
    """The sidecar has news about one pane."""

    status: PaneStatus
    history: HistoryEntry | None = None


@dataclass
class ClaudeFactsChanged(Message):
    """The Claude Code side has news about one pane."""

    pane_id: PaneId
    facts: ClaudeFacts


@dataclass
class BackendProblem(Message):
    """A backend failed in a way the operator should see (shown as a notification)."""

    source: str
    message: str
