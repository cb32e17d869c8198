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
from nbs_tui.core.sidecar.lease_rules import LeaseValue, describe_holder
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.core.sidecar.relay import LIFECYCLE_KINDS
from nbs_tui.dashboard.frames import FrameScheduler
from nbs_tui.dashboard.messages import (
    BackendProblem,
    BackgroundSessionsChanged,
    ClaudeSignalsChanged,
    ConnectionChanged,
    FleetChanged,
    HostsChanged,
    LeaseChanged,
    PaneStatusChanged,
    RelayedMeters,
)
from nbs_tui.files.control_plane import ControlEvent
from nbs_tui.sidecar.runner import SidecarEvent

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from nbs_tui.widgets.control_view import ControlView


class BridgedApp(Protocol):
    """What the bridge asks of the app (`nbs_tui.app.NbsApp`): posting is thread-safe, the rest
    is read or called as documented on each."""

    def post_message(self, message: Message) -> bool: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None) -> None: ...

    @property
    def control_view(self) -> ControlView | None: ...


class FleetBridge:
    """The app's `RuntimeListener`: called on the backends' threads, touches no widget."""

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
        """Turn the event into messages, touch nothing else (``notify`` only posts one)."""
        app = self._app
        if event.kind == "meters":
            meters = dict(event.data).get("meters")
            app.post_message(RelayedMeters(event.pane_id, meters if isinstance(meters, Meters) else None))
            return
        if event.kind in LIFECYCLE_KINDS and event.relayed_by:  # another process stopped or restarted one
            data = dict(event.data)
            ok = data.get("result") != "failed"
            app.notify(
                f"{data.get('target') or event.pane_id} ({event.pane_id}): {event.message}\nby {event.relayed_by}",
                title=f"Agent {event.kind}", severity="information" if ok else "warning", timeout=8,
            )  # fmt: skip
        if event.kind == "agent-ended":  # an ``error`` event reaches `problem` through the runtime
            app.notify(f"{event.pane_id}: {event.message}", title="Agent ended", severity="warning", timeout=8)
        status = PaneStatus.from_sidecar(event.status) if event.status is not None else None
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

    def background_sessions_changed(self, sessions: tuple[BackgroundSession, ...]) -> None:
        """Claude Code's background sessions (`nbs_tui.runtime.background_poll`)."""
        self._app.post_message(BackgroundSessionsChanged(sessions))
