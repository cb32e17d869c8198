"""The app's `RuntimeListener`: what the backends report, on their threads, becomes messages.

Pane-set, connection, Claude and sidecar news become messages (``post_message`` is
thread-safe). Screen changes, which can come at ~60 Hz a pane, are no messages: they go to the
app's frame scheduler (`nbs_tui.dashboard.frames.FrameScheduler.changed`, thread-safe), which
decides when the frame that draws them runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.pane_state import HistoryEntry, PaneStatus
from nbs_tui.core.review.agent_changes import ChangeCount
from nbs_tui.core.sidecar.lease_rules import LeaseValue, describe_holder
from nbs_tui.dashboard.frames import FrameScheduler
from nbs_tui.dashboard.messages import (
    AgentNews,
    BackendProblem,
    BackgroundSessionsChanged,
    ChangesCounted,
    ClaudeSignalsChanged,
    ConnectionChanged,
    FleetChanged,
    HostsChanged,
    LeaseChanged,
    PaneStatusChanged,
    RelayedMeters,
)
from nbs_tui.files.control_plane import ControlEvent
from nbs_tui.runtime.contract import RuntimeListener
from nbs_tui.sidecar.events import AgentEnded, LifecycleNews, MetersNews, SidecarEvent, StatusChange

if TYPE_CHECKING:
    from nbs_tui.widgets.control_view import ControlView


class BridgedApp(Protocol):
    """What the bridge asks of the app (`nbs_tui.app.NbsApp`): posting is thread-safe, the
    Control view is read as documented on it."""

    def post_message(self, message: Message) -> bool: ...

    @property
    def control_view(self) -> ControlView | None: ...


class FleetBridge(RuntimeListener):
    """The app's `RuntimeListener`: called on the backends' threads, touches no widget."""

    shows_background_sessions = True
    shows_changes = True

    def __init__(self, app: BridgedApp, frames: FrameScheduler) -> None:
        self._app = app
        self._frames = frames

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self._app.post_message(FleetChanged(tuple(panes)))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        self._frames.changed(pane_ids)

    def connection_changed(self, connected: bool, message: str) -> None:
        self._app.post_message(ConnectionChanged(connected, message))

    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        self._app.post_message(ClaudeSignalsChanged(tuple(facts.items())))

    def sidecar_event(self, event: SidecarEvent) -> None:
        """Turn the event into messages, touch nothing else: what they mean is the app's parts'
        (`nbs_tui.dashboard.news`, and `nbs_tui.notify.toasts` for an `AgentNews`)."""
        app = self._app
        if isinstance(event, MetersNews):
            app.post_message(RelayedMeters(event.pane_id, event.meters))
            return
        if isinstance(event, AgentEnded | LifecycleNews):
            app.post_message(AgentNews(event))
        status = PaneStatus.from_sidecar(event.status) if isinstance(event, StatusChange) else None
        history = HistoryEntry.from_sidecar_event(event)
        if event.pane_id and (status is not None or history is not None):
            app.post_message(PaneStatusChanged(event.pane_id, status, history))

    def control_event(self, event: ControlEvent) -> None:
        """The Control view's listener is thread-safe."""
        control_view = self._app.control_view
        if control_view is not None:
            control_view.plane_listener(event)

    def problem(self, source: str, message: str) -> None:
        self._app.post_message(BackendProblem(source, message))

    def lease_changed(self, holder: LeaseValue, acting: bool) -> None:
        self._app.post_message(LeaseChanged(describe_holder(holder, acting), acting))

    def hosts_changed(self, states: tuple[HostState, ...]) -> None:
        self._app.post_message(HostsChanged(states))

    def changes_counted(self, counts: Mapping[PaneId, ChangeCount]) -> None:
        """The change column's news (`nbs_tui.runtime.change_counter`)."""
        self._app.post_message(ChangesCounted(tuple(counts.items())))

    def background_sessions_changed(self, sessions: tuple[BackgroundSession, ...]) -> None:
        """Claude Code's background sessions (`nbs_tui.lifecycle.background_poll`)."""
        self._app.post_message(BackgroundSessionsChanged(sessions))
