"""What the control plane tells the world: snapshots, history entries and events (all immutable).

The plane calls its listener with one :data:`ControlEvent` at a time, on the plane thread;
:func:`event_as_json` is the one-line form ``--headless`` prints. See
:mod:`nbs_tui.files.control_plane` for the service itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from nbs_tui.core.control.chat import ChatSummary
from nbs_tui.core.control.control_commands import Outcome
from nbs_tui.core.control.registry import RegistryEntry


class HistoryEntry(NamedTuple):
    """One inbox line (or scanned command, or file notice) and what became of it.

    A NamedTuple rather than a frozen dataclass: equally immutable, and four times cheaper to
    make, which matters when a 100,000-line inbox is replayed at launch."""

    seen: float
    """Wall-clock time (``time.time()``) when nbs-tui read it."""
    project: str
    source: str
    """Where it came from: ``control-inbox:12``, ``control-inbox-alice:3``, ``pane %4``."""
    channel: str
    """``""`` for ``control-inbox``/``control-registry``, else the agent handle."""
    line: str
    outcome: Outcome
    why: str = ""
    seq: int = 0
    """Position in the plane's history (1, 2, ...): lets a panel skip entries it already has."""


HISTORY_KEEP = 2_000
"""The newest history entries a control plane keeps, and the inbox panel shows: the panel never
showed more, and at about 430 bytes an entry the 20,000 kept before filled to 8.6 MB in the
service over hours (the inbox files themselves keep every line, forward-only)."""


@dataclass(frozen=True, slots=True)
class EntryStatus:
    kind: str
    path: str
    absolute: str
    exists: bool


@dataclass(frozen=True, slots=True)
class ChannelSnapshot:
    handle: str
    inbox: str
    registry: str
    entries: tuple[EntryStatus, ...] = ()
    unparsed: tuple[str, ...] = ()
    lines_read: int = 0
    poll_interval: float | None = None

    @property
    def label(self) -> str:
        return self.handle or "(shared)"


@dataclass(frozen=True, slots=True)
class ProjectSnapshot:
    root: str
    has_nbs: bool
    channels: tuple[ChannelSnapshot, ...] = ()
    chats: tuple[ChatSummary, ...] = ()
    paused: bool = False
    poll_interval: float | None = None
    """The last ``set-poll-interval`` applied in this project (any channel), None if never."""
    panes: tuple[str, ...] = ()
    error: str = ""
    """The latest problem with this project's files (e.g. read-only ``.nbs/``), or ``""``."""
    unregistered_chats: tuple[str, ...] = ()
    """``.nbs/chat/*.chat`` files (not archives) that no registry of the project lists."""

    @property
    def nbs(self) -> str:
        return os.path.join(self.root, ".nbs")

    @property
    def name(self) -> str:
        return os.path.basename(self.root.rstrip("/")) or self.root


@dataclass(frozen=True, slots=True)
class PlaneSnapshot:
    projects: tuple[ProjectSnapshot, ...] = ()
    history_total: int = 0

    def project(self, root: str | os.PathLike[str]) -> ProjectSnapshot | None:
        given = os.fspath(root)
        for project in self.projects:  # as given first: another host's ``hosta:/path``
            if project.root == given:
                return project
        wanted = os.path.realpath(root)
        for project in self.projects:
            if project.root == wanted:
                return project
        return None


@dataclass(frozen=True, slots=True)
class SnapshotChanged:
    snapshot: PlaneSnapshot


@dataclass(frozen=True, slots=True)
class HistoryAppended:
    entries: tuple[HistoryEntry, ...]


@dataclass(frozen=True, slots=True)
class RegistryChanged:
    project: str
    channel: str
    entries: tuple[RegistryEntry, ...]


@dataclass(frozen=True, slots=True)
class PauseChanged:
    project: str
    paused: bool


@dataclass(frozen=True, slots=True)
class PollIntervalChanged:
    project: str
    channel: str
    seconds: float


ControlEvent = SnapshotChanged | HistoryAppended | RegistryChanged | PauseChanged | PollIntervalChanged
"""What the control plane tells its listener. Its failures are not events: they go to its problem
sink (`nbs_tui.core.fleet.problems`), as every backend's do."""
Listener = Callable[[ControlEvent], None]


class ControlPlaneError(Exception):
    """An edit asked of the control plane cannot be done; the message is for a person."""


def event_as_json(event: ControlEvent) -> dict[str, Any]:
    """A JSON-ready dict for one event (for ``--headless``'s one-event-per-line output)."""
    if isinstance(event, SnapshotChanged):
        return {
            "event": "control-snapshot",
            "projects": [
                {
                    "root": p.root,
                    "paused": p.paused,
                    "poll_interval": p.poll_interval,
                    "registry": {c.label: [f"{e.kind}:{e.path}" for e in c.entries] for c in p.channels},
                    "error": p.error,
                }
                for p in event.snapshot.projects
            ],
        }
    if isinstance(event, HistoryAppended):
        return {
            "event": "control-history",
            "entries": [
                {"project": e.project, "source": e.source, "line": e.line, "outcome": e.outcome.value, "why": e.why}
                for e in event.entries
            ],
        }
    if isinstance(event, RegistryChanged):
        return {
            "event": "registry-changed",
            "project": event.project,
            "channel": event.channel,
            "entries": [e.line for e in event.entries],
        }
    if isinstance(event, PauseChanged):
        return {"event": "pause-changed", "project": event.project, "paused": event.paused}
    return {"event": "poll-interval", "project": event.project, "channel": event.channel, "seconds": event.seconds}

