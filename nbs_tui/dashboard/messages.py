"""App-wide messages and the small value types they carry.

The fleet's callbacks arrive on its own threads; the app's `FleetBridge` turns each into one of
these messages (``post_message`` is thread-safe), so nothing written by a thread is ever read
by a widget except through a message. Screen changes are the exception by design: they are too
frequent for one message each, so they are collected in a set and drained once per frame.

Textual's `Message` sets private attributes after construction, so the messages themselves are
plain dataclasses; every field they carry is immutable (tuples, frozensets, frozen dataclasses),
which is what matters when they cross threads. The value types they carry live in the pure
`nbs_tui.core.fleet.pane_state` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.pane_state import (
    ClaudeFacts,
    HistoryEntry,
    PaneStatus,
    RawFacts,
    fuse_claude,
)
from nbs_tui.core.review.agent_changes import ChangeCount
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.sidecar.events import AgentEnded, LifecycleNews

__all__ = [
    "AgentNews",
    "BackendNews",
    "BackendProblem",
    "BackgroundSessionsChanged",
    "ClaudeFacts",
    "ClaudeSignalsChanged",
    "ConnectionChanged",
    "FleetChanged",
    "HistoryEntry",
    "LeaseChanged",
    "PaneStatus",
    "PaneStatusChanged",
    "fuse_claude",
]


class BackendNews(Message):
    """What a backend reported, posted to the app by its bridge; every kind below is one, and
    the dashboard screen takes them all in one place (`DashboardScreen.news_arrived`)."""


@dataclass
class FleetChanged(BackendNews):
    """The fleet's panes (or their details) changed; ``panes`` is the whole fleet."""

    panes: tuple[PaneInfo, ...]

    def can_replace(self, message: Message) -> bool:
        # each carries the whole fleet: a queued older one is worthless
        return isinstance(message, FleetChanged)


@dataclass
class ConnectionChanged(BackendNews):
    """The tmux server went away or came back."""

    connected: bool
    message: str


@dataclass
class PaneStatusChanged(BackendNews):
    """The sidecar has news about one pane: a new status, a history line, or both."""

    pane_id: PaneId
    status: PaneStatus | None = None
    history: HistoryEntry | None = None


@dataclass
class RelayedMeters(BackendNews):
    """The lease holder published new meters for one pane (None: none any more)."""

    pane_id: PaneId
    meters: Meters | None


@dataclass
class AgentNews(BackendNews):
    """An agent ended, or another process stopped or restarted one: the dashboard says so
    (`nbs_tui.notify.toasts` decides how)."""

    event: AgentEnded | LifecycleNews


@dataclass
class ClaudeSignalsChanged(BackendNews):
    """Raw `nbs_tui.claude.watcher.ClaudeFacts` for the panes whose facts changed."""

    facts: tuple[tuple[PaneId, RawFacts], ...]


@dataclass
class LeaseChanged(BackendNews):
    """Who holds the server's sidecar lease (docs/lease.md), worded for the status bar."""

    text: str
    acting: bool
    """This dashboard holds it (it acts); False: a viewer."""


@dataclass
class HostsChanged(BackendNews):
    """Several hosts watched: each one's connection and lease (`nbs_tui.runtime.hosts`)."""

    states: tuple[HostState, ...]


@dataclass
class BackgroundSessionsChanged(BackendNews):
    """Claude Code's background sessions, all of them, as ``claude agents --json`` last said."""

    sessions: tuple[BackgroundSession, ...]

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, BackgroundSessionsChanged)


@dataclass
class ChangesCounted(BackendNews):
    """These agents' change counts (files, +/-) changed: the fleet list's change column."""

    counts: tuple[tuple[PaneId, ChangeCount], ...]


@dataclass
class BackendProblem(BackendNews):
    """A backend failed in a way the operator should see (kept on the problems screen, counted in
    the status bar, notified)."""

    source: str
    message: str
