"""The sidecar's events as the dashboard's notification rules see them (`nbs_tui.core.notify`).

A process without a dashboard (``--headless``, the service) has no operator looking at a pane
and no per-tick view of the fleet: it follows the sidecar's ``state`` and ``escalate`` events
one by one. `--headless` prints what this decides as ``notify`` lines; the lease holder sends
it as push notifications (`nbs_tui.push`).
"""

from __future__ import annotations

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.notify import Notification, NotifyDecider, NotifyKind, parse_kinds
from nbs_tui.sidecar.events import SidecarEvent


class EventNotices:
    """One `NotifyDecider` fed with sidecar events (any one thread at a time)."""

    def __init__(self, settings: Settings) -> None:
        self._plan_waits = settings.plan_policy == "off"
        self.decider = NotifyDecider(muted=parse_kinds(settings.notify_mute), repeat=settings.notify_repeat)
        self._states: dict[PaneId, str] = {}

    def mute_also(self, kinds: frozenset[NotifyKind]) -> None:
        """Mute ``kinds`` on top of ``notify_mute``: the server-wide mute a dashboard's palette
        set (``@nbs_mute``); a kind it no longer names is heard again, unless configured muted."""
        self.decider.also_muted = kinds

    def observe(self, event: SidecarEvent) -> list[Notification]:
        """The notifications this event makes due (none for most events)."""
        pane_id = event.pane_id
        if event.kind == "state":
            state = str(dict(event.data).get("state", ""))
            if state == "gone":
                self._states.pop(pane_id, None)
                self.decider.forget(pane_id)
                return []
            self._states[pane_id] = state
            return self.decider.observe(pane_id, state, event.at, reason=event.message, plan_waits=self._plan_waits)
        if event.kind == "escalate" and pane_id in self._states:
            return self.decider.observe(pane_id, self._states[pane_id], event.at, stuck=event.message or "stuck")
        return []
