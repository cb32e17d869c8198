"""Which of the sidecar's events the dashboard shows as a toast, and how: an agent that ended,
and a stop or restart another process made (``nbs-tui stop``, another dashboard). The bridge
only carries the event to the app (`nbs_tui.dashboard.messages.AgentNews`); this decides what it says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nbs_tui.sidecar.events import AgentEnded, LifecycleNews, SidecarEvent

TOAST_SECONDS = 8.0


@dataclass(frozen=True, slots=True)
class Toast:
    """One toast: Textual's ``notify`` arguments."""

    title: str
    text: str
    severity: Literal["information", "warning", "error"]
    timeout: float = TOAST_SECONDS


def toast_for(event: SidecarEvent) -> Toast | None:
    """The toast this event makes (None: none). A stop or restart is news only when another
    process made it (this dashboard's own says so where the operator asked for it)."""
    match event:
        case LifecycleNews(by=by) if by:
            where = f"{event.target or event.pane_id} ({event.pane_id})"
            severity: Literal["information", "warning"] = "warning" if event.result == "failed" else "information"
            return Toast(f"Agent {event.KIND}", f"{where}: {event.message}\nby {by}", severity)
        case AgentEnded():  # an ``error`` event reaches the problems screen through the runtime
            return Toast("Agent ended", f"{event.pane_id}: {event.message}", "warning")
    return None
