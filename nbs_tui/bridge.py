"""The app's `RuntimeListener`: what the backends report, on their threads, becomes messages.

Pane-set, connection, Claude and sidecar news become messages (``post_message`` is
thread-safe). Screen changes, which can come at ~60 Hz, only add pane ids to a set that the
app's frame timer drains; a change of the pane the mirror shows schedules one frame on the UI
loop (`NbsApp.mirror_due_soon`, or a `MirrorDue` message before the app is mounted; at most as
often as the fleet reports changes, never two pending) so the app runs that frame at once. The frame timer sleeps
while nothing changes (`sleep_frames`); the first change after that which no `MirrorDue`
will draw posts one `FramesWake`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from textual.message import Message

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.core.hosts import HostState
from nbs_tui.core.lease import LeaseValue, describe_holder
from nbs_tui.core.meters import Meters
from nbs_tui.core.model import PaneId, PaneInfo
from nbs_tui.core.pane_state import HistoryEntry, PaneStatus
from nbs_tui.files.control_plane import ControlEvent
from nbs_tui.messages import (
    BackendProblem,
    ClaudeSignalsChanged,
    ConnectionChanged,
    FleetChanged,
    HostsChanged,
    LeaseChanged,
    PaneStatusChanged,
    RelayedMeters,
)
from nbs_tui.sidecar.runner import SidecarEvent

if TYPE_CHECKING:
    from textual.notifications import SeverityLevel

    from nbs_tui.widgets.control_view import ControlView


class BridgedApp(Protocol):
    """What the bridge asks of the app (`nbs_tui.app.NbsApp`): posting is thread-safe, the rest
    is read or called as documented on each."""

    def post_message(self, message: Message) -> bool: ...

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information", timeout: float | None = None) -> None: ...

    def mirror_due_soon(self) -> bool:
        """Schedule the mirror's frame on the UI loop; False before the app is mounted."""
        ...

    @property
    def control_view(self) -> ControlView | None: ...

class MirrorDue(Message):
    """The mirrored pane's screen changed: run the frame now rather than at the next tick."""

    bubble = False

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, MirrorDue)


class FramesWake(Message):
    """A screen changed while the app's frame timer slept: start it again."""

    bubble = False

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, FramesWake)


class FleetBridge:
    """The app's `RuntimeListener`: called on the backends' threads, touches no widget."""

    def __init__(self, app: BridgedApp) -> None:
        self._app = app
        self._lock = threading.Lock()
        self._dirty: set[PaneId] = set()
        self.watched: PaneId | None = None
        """The pane the mirror shows (set on the UI thread); its changes are posted at once."""
        self._due_pending = False
        self._frames_asleep = False

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self._app.post_message(FleetChanged(tuple(panes)))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        watched = self.watched
        with self._lock:
            self._dirty |= pane_ids
            # The fleet already paces these calls (at most `max_rate` a second); deferring a
            # change to the 30 Hz frame timer instead would hold it up to a whole frame.
            due = watched is not None and watched in pane_ids and not self._due_pending
            if due:
                self._due_pending = True
            # A queued `MirrorDue` runs a frame that drains every change, this one included:
            # a sleeping frame timer need not wake for it (it would run once and find nothing).
            wake = self._frames_asleep and not self._due_pending
            if wake:
                self._frames_asleep = False
        if wake:
            self._app.post_message(FramesWake())
        if due and not self._app.mirror_due_soon():
            self._app.post_message(MirrorDue())

    def sleep_frames(self) -> bool:
        """The UI thread found nothing to draw: True (and the next change posts `FramesWake`)
        unless a change came in since it looked."""
        with self._lock:
            if self._dirty:
                return False
            self._frames_asleep = True
            return True

    @property
    def frames_asleep(self) -> bool:
        """The app's frame timer is paused until the next change."""
        return self._frames_asleep

    def frames_awake(self) -> None:
        """The UI thread started its frame timer again by itself."""
        with self._lock:
            self._frames_asleep = False

    def due_handled(self) -> None:
        with self._lock:
            self._due_pending = False

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

    def drain(self) -> set[PaneId]:
        with self._lock:
            dirty, self._dirty = self._dirty, set()
        return dirty
