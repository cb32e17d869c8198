"""What the sidecar tells its listeners: `SidecarEvent` (one thing seen or done in one pane, on
the runner's thread) and `SidecarSnapshot` (what the runner knew after its last tick, read by
any thread without a lock). Values only: the app, headless and the lease's relay all read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.pane_sidecar import SidecarStatus
from nbs_tui.core.sidecar.stuck_agents import StuckStatus


@dataclass(frozen=True, slots=True)
class SidecarEvent:
    """Something the sidecar saw or did in one pane.

    ``kind``: ``state`` (detected state changed), ``poll`` (injection steps: typed, submitted,
    failed, refused), ``plan-select`` (pressed, landed, failed, waiting), ``command`` (a
    ``\\nbs-`` line seen), ``nudge`` (a stuck agent's nudge: queued, typed, enter, submitted,
    failed, refused), ``escalate`` (a stuck agent needs a person), ``agent-ended`` (its process
    exited or its pane is gone), ``status`` (settings or countdown changed; not printed
    headless), ``error`` (a tmux call failed).
    """

    kind: str
    pane_id: PaneId
    at: float
    """Wall-clock time (``time.time()``)."""
    message: str = ""
    status: SidecarStatus | None = None
    data: tuple[tuple[str, Any], ...] = ()
    question: str = ""
    """``state`` events of a menu: the question it asks, one line (`question_line`), for a push
    notification; not in `as_json` (headless lines and the service log carry no screen text)."""

    @property
    def relayed_by(self) -> str:
        """Who acted when this is the lease holder's action relayed to a view (``HOST pid PID``);
        "" for this process's own."""
        return str(dict(self.data).get("by", ""))

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.kind, "pane": self.pane_id, "time": round(self.at, 3)}
        out.update(self.data)
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True, slots=True)
class SidecarSnapshot:
    """What the runner knew at the end of its last tick or operator change; immutable, so any
    thread reads it without a lock."""

    statuses: Mapping[PaneId, SidecarStatus]
    stuck: Mapping[PaneId, StuckStatus]
    """Each watched pane's place in the stuck cycle."""
    escalated: Mapping[PaneId, str]
    """Panes whose stuck agent was escalated and has not worked since, with a short reason."""
    ticks: int = 0


EMPTY_SNAPSHOT = SidecarSnapshot(MappingProxyType({}), MappingProxyType({}), MappingProxyType({}))


def event_kinds() -> Mapping[str, str]:
    """The event kinds, for documentation and the headless reader."""
    return {
        "state": "detected state changed (state, options, input, safe_to_inject, plan_choice, flags)",
        "poll": "poll injection step: typed, enter, submitted, failed, refused",
        "plan-select": "plan menu: pressed, landed, failed, waiting",
        "command": "a \\nbs- line seen on screen (line, project)",
        "nudge": "a stuck agent's nudge: queued, refused (nudge: its number), typed, enter (attempt), submitted, failed",
        "limit": "a usage limit seen or gone (result: limited, cleared; reset_at: unix seconds or null)",
        "resume": "resuming a limited agent after its reset: wait-chosen (2.1.1xx's limit menu), held (why), queued, refused, typed, enter, submitted, failed",
        "escalate": "a stuck agent needs a person: idle past the grace period after its nudges (reason)",
        "agent-ended": "the agent's process exited or its tmux pane is gone (liveness: exited, gone)",
        "status": "per-pane status changed (not printed by --headless)",
        "error": "a tmux call or the control plane failed",
        "meters": "an agent's meters as the sidecar lease holder published them (meters: nbs_tui.core.sidecar.meters.Meters or null; not printed by --headless)",
        "stop": "another process (nbs-tui stop, another dashboard) stopped an agent (result: sent, failed; pane, target, text: how, reason, by)",
        "restart": "another process (nbs-tui restart, another dashboard) restarted an agent in place (result, pane, target, text: claude --resume ID, reason, by)",
        "relay": "actions of the sidecar lease holder were missed between two reads (poll, plan-select, nudge and escalate events of another process carry its by)",
    }
