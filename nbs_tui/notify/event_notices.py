"""The sidecar's events as the dashboard's notification rules see them (`nbs_tui.core.notifications`).

A process without a dashboard (``--headless``, the service) has no operator looking at a pane
and no per-tick view of the fleet: it follows the sidecar's ``state`` and ``escalate`` events
one by one. `--headless` prints what this decides as ``notify`` lines; the lease holder sends
it as push notifications (`nbs_tui.notify.push`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.notifications.notify_rules import (
    Notification,
    NotifyDecider,
    parse_kinds,
)
from nbs_tui.notify.mute import Mute, ServerMute
from nbs_tui.sidecar.events import Escalation, PaneLeft, SidecarEvent, StateChange


class EventNotices:
    """One `NotifyDecider` fed with sidecar events (any one thread at a time)."""

    def __init__(self, settings: Settings, servers: Callable[[], Sequence[ServerMute]] = tuple) -> None:
        self._plan_waits = settings.plan_policy == "off"
        self.decider = NotifyDecider(muted=parse_kinds(settings.notify_mute), repeat=settings.notify_repeat)
        self.mute = Mute(self.decider, servers)
        """``notify_mute``, and the server-wide mute a dashboard's palette set (``@nbs_mute``),
        followed at every event."""
        self._states: dict[PaneId, str] = {}

    def observe(self, event: SidecarEvent) -> list[Notification]:
        """The notifications this event makes due (none for most events)."""
        self.mute.follow_servers()
        pane_id = event.pane_id
        match event:
            case StateChange(detection=detection):
                state = detection.state.value
                self._states[pane_id] = state
                return self.decider.observe(pane_id, state, event.at, reason=event.message, plan_waits=self._plan_waits)
            case PaneLeft():
                self._states.pop(pane_id, None)
                self.decider.forget(pane_id)
            case Escalation() if pane_id in self._states:
                return self.decider.observe(pane_id, self._states[pane_id], event.at, stuck=event.message or "stuck")
        return []

    def outcomes(self, notes: Sequence[Notification]) -> list[Notification]:
        """One-time events' notifications (queue tasks that ended: `nbs_tui.core.notifications.task_notices`)
        that the mute, here or server-wide, lets through."""
        self.mute.follow_servers()
        return [allowed for note in notes if (allowed := self.decider.allow_outcome(note)) is not None]
