"""What every part of the `SidecarRunner` shares: the pane it tracks per agent (`_Tracked`), the
attributes the runner builds (`RunnerState`, annotations only: `SidecarRunner.__init__` sets
them), the snapshot it publishes, the context a pane's sidecar decides in, and how events leave.

The runner is one class joined from one module per concern (see `nbs_tui.sidecar.runner`); each
concern is a class over `RunnerState` so that it reads and writes the same state on the tick's
thread, under the tick lock, exactly as one class would.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.config import Settings
from nbs_tui.core.detection.usage_limits import ResumePlanner
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.core.screen.screen_rows import CapturedScreen, RowCache
from nbs_tui.core.sidecar.pane_sidecar import (
    PaneSidecar,
    SidecarConfig,
    SidecarContext,
    SidecarStatus,
)
from nbs_tui.core.sidecar.stuck_agents import Phase, StuckStatus
from nbs_tui.operator.action_log import ActionLog
from nbs_tui.sidecar.events import SidecarEvent, SidecarSnapshot
from nbs_tui.tmux.port import FleetPort

if TYPE_CHECKING:
    from nbs_tui.sidecar.lease import SidecarLease

log = logging.getLogger(__name__)

OPERATOR_QUIET = 5.0
"""Seconds after the operator's last keystroke in a pane before the sidecar may type there."""


class ControlPort(Protocol):
    """What the runner needs from the control plane (`nbs_tui.files.control_plane.ControlPlane`)."""

    def apply_scanned_command(
        self, pane_id: str, project_dir: str, line: str, handle: str | None = None
    ) -> None: ...

    def poll_interval_for_pane(self, pane_id: str) -> float | None: ...


@dataclass(slots=True)
class _Tracked:
    sidecar: PaneSidecar
    pid: int
    screen: PaneScreen | CapturedScreen | None = None
    """The mirror (or capture) last read, held (an ``id`` could be reused by a replacement)."""
    version: int = -1
    last_state: AgentState | None = None
    operator_at: float = float("-inf")
    info: PaneInfo | None = None
    last_key: tuple[Any, ...] = field(default_factory=tuple)
    rows: RowCache = field(default_factory=RowCache)
    ended: bool = False
    """``agent-ended`` was reported for this agent (it is reported once)."""
    shown_state: AgentState | None = None
    state_wall: float = 0.0
    """Wall time the detected state last changed (published as ``@nbs_since``)."""
    limit_menu: tuple[object, ...] | None = None
    """The usage-limit menu (options, prompt) whose "wait" option was pressed: once per menu."""
    paused_file: tuple[int, bool] = (-1, False)
    """(tick, whether the project's pause file was there): shown statuses reuse the tick's
    look instead of another stat a pane; decisions always look again."""


class RunnerState:
    """The state every concern of the runner reads and writes (set by `SidecarRunner.__init__`,
    where each is explained), with the snapshot, the pane's context and the events."""

    fleet: FleetPort
    lease: SidecarLease | None
    settings: Settings
    on_event: Callable[[SidecarEvent], None]
    control: ControlPort | None
    clock: Callable[[], float]
    wall: Callable[[], float]
    config: SidecarConfig
    monitor: AgentMonitor
    limits: ResumePlanner
    action_log: ActionLog
    ticks: int
    _tracked: dict[PaneId, _Tracked]
    _tick_lock: threading.Lock
    _snapshot: SidecarSnapshot

    # -- the snapshot --------------------------------------------------------------------------

    def _publish(self, panes: set[PaneId] | None = None) -> None:
        """With the tick lock held: publish a new snapshot (``panes``: only their statuses moved)."""
        now = self.clock()
        old = self._snapshot
        if panes is None:
            statuses = {p: self._status_now(t, now) for p, t in self._tracked.items()}
            stuck: dict[PaneId, StuckStatus] = {}
            escalated: dict[PaneId, str] = {}
            for pane_id, verdict in self.monitor.verdicts().items():
                stuck[pane_id] = verdict.stuck
                if verdict.stuck.phase is Phase.ESCALATED:
                    n = verdict.stuck.nudges
                    escalated[pane_id] = f"stuck ({n} nudge{'' if n == 1 else 's'})" if n else "stuck"
            self._snapshot = SidecarSnapshot(
                MappingProxyType(statuses),
                MappingProxyType(stuck),
                MappingProxyType(escalated),
                self.ticks,
            )
            return
        statuses = dict(old.statuses)
        for pane_id in panes:
            tracked = self._tracked.get(pane_id)
            if tracked is not None:
                statuses[pane_id] = self._status_now(tracked, now)
        self._snapshot = replace(old, statuses=MappingProxyType(statuses))

    def _status_now(self, tracked: _Tracked, now: float) -> SidecarStatus:
        return tracked.sidecar.status(now, self._context(tracked, now, for_show=True))

    # -- what a pane's sidecar may do now -------------------------------------------------------

    def _paused(self, info: PaneInfo | None) -> bool:
        if info is None or not info.current_path:
            return False
        return os.path.exists(os.path.join(info.current_path, ".nbs", "control-pause"))

    def _context(self, tracked: _Tracked, now: float, for_show: bool = False) -> SidecarContext:
        """What the pane's sidecar may do now; ``for_show`` (a status to publish, never to act
        on): the pause file as seen in this tick, if it was looked at."""
        lease = self.lease
        tick, paused = tracked.paused_file
        if not for_show or tick != self.ticks:
            paused = self._paused(tracked.info)
            tracked.paused_file = (self.ticks, paused)
        return SidecarContext(
            paused=paused or (lease is not None and lease.paused),
            operator_typing=now - tracked.operator_at < OPERATOR_QUIET,
            viewer=lease is not None and not lease.acting(),
        )

    # -- events --------------------------------------------------------------------------------

    def _emit(self, kind: str, pane_id: PaneId, message: str = "", *, question: str = "", **data: Any) -> None:
        event = SidecarEvent(kind, pane_id, self.wall(), message, None, tuple(data.items()), question)
        if self.lease is not None:
            self.lease.record(event)  # relayed to every view (docs/lease.md)
        self._deliver(event)

    def _emit_status(self, pane_id: PaneId, message: str) -> None:
        tracked = self._tracked.get(pane_id)
        if tracked is None:
            return
        now = self.clock()
        status = tracked.sidecar.status(now, self._context(tracked, now, for_show=True))
        self._deliver(SidecarEvent("status", pane_id, self.wall(), message, status))

    def _deliver(self, event: SidecarEvent) -> None:
        try:
            self.on_event(event)
        except Exception:
            log.exception("sidecar event listener failed")

