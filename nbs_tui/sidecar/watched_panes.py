"""What the parts of the `SidecarRunner` share, as two objects each part is given: the agent
panes it watches (`WatchedPanes`: a `PaneSidecar` per pane, the context a pane's sidecar
decides in, the snapshot the UI reads) and where its events leave (`EventOutlet`).

Every part reads and writes them on the tick's thread, or under the tick lock
(`nbs_tui.sidecar.operator_queue`), so none of them locks anything itself.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.core.detection.detect import ScreenKey, detect_lines, screen_key
from nbs_tui.core.fleet.model import AgentState, Detection, PaneId, PaneInfo
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.core.screen.screen_rows import CapturedScreen, RowCache
from nbs_tui.core.sidecar.pane_sidecar import (
    PaneSidecar,
    SidecarConfig,
    SidecarContext,
    SidecarStatus,
)
from nbs_tui.core.sidecar.stuck_agents import Phase, StuckStatus
from nbs_tui.sidecar.events import EMPTY_SNAPSHOT, SidecarEvent, SidecarSnapshot, StatusChange

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

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
class TrackedPane:
    """One agent pane the runner watches: its sidecar and what the runner remembers of it."""

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
    detected: tuple[ScreenKey, Detection] | None = None
    """The last screen run through detection (its `screen_key`) and what was found."""


class EventOutlet:
    """Where the runner's events leave: recorded in the lease (relayed to every view,
    docs/lease.md) when they are this process's own, and handed to ``on_event``."""

    def __init__(
        self,
        on_event: Callable[[SidecarEvent], None],
        lease: SidecarLease | None,
        wall: Callable[[], float],
    ) -> None:
        self.on_event = on_event
        self.lease = lease
        self.wall = wall

    def emit(self, event: SidecarEvent) -> None:
        """An event of this process's own: relayed to every view, then delivered."""
        if self.lease is not None:
            self.lease.record(event)  # relayed to every view (docs/lease.md)
        self.deliver(event)

    def deliver(self, event: SidecarEvent) -> None:
        """Hand an event to the listener only (a status, or another process's relayed action)."""
        try:
            self.on_event(event)
        except Exception:
            log.exception("sidecar event listener failed")


class WatchedPanes:
    """The agent panes the runner watches, the context each decides in, and the snapshot.

    ``tracked`` is written on the tick's thread under the tick lock; ``snapshot`` is replaced
    whole (`publish`), so any thread reads it without a lock."""

    def __init__(
        self,
        config: SidecarConfig,
        *,
        lease: SidecarLease | None,
        monitor: AgentMonitor,
        outlet: EventOutlet,
        clock: Callable[[], float],
        wall: Callable[[], float],
    ) -> None:
        self.config = config
        """The defaults every pane's sidecar follows (the operator's global switches change it)."""
        self.lease = lease
        self.monitor = monitor
        self.outlet = outlet
        self.clock = clock
        self.wall = wall
        self.tracked: dict[PaneId, TrackedPane] = {}
        self.pending: dict[PaneId, dict[str, Any]] = {}
        """Per-pane settings asked for before the pane was seen as an agent (applied when it is),
        or kept from the agent that was there before (`forget`)."""
        self.detections = 0
        """Screens run through detection (for benchmarks and tests)."""
        self.ticks = 0
        """Ticks begun (`nbs_tui.sidecar.sidecar_runner.SidecarRunner.tick`)."""
        self.snapshot: SidecarSnapshot = EMPTY_SNAPSHOT
        self.held: Callable[[PaneId], str | None] = lambda pane_id: None
        """Why the budget governor feeds a pane nothing more (`nbs_tui.sidecar.budget_watch`)."""
        self.budget_needs: Callable[[], Mapping[PaneId, str]] = dict
        """The budget governor's needs-you lines (one per account at a cap)."""

    # -- the panes -----------------------------------------------------------------------------

    def track(self, info: PaneInfo) -> TrackedPane:
        """The pane's tracked sidecar, made (with the switches kept for it) if it is new."""
        tracked = self.tracked.get(info.pane_id)
        if tracked is None:
            tracked = TrackedPane(PaneSidecar(info.pane_id, self.config), info.pid)
            self.tracked[info.pane_id] = tracked
            for name, value in self.pending.pop(info.pane_id, {}).items():
                getattr(tracked.sidecar, name)(value)
        tracked.info = info
        return tracked

    def forget(self, pane_id: PaneId) -> TrackedPane:
        """Stop watching a pane whose agent is gone; the operator's switches outlive an agent
        restart in the same pane (kept in ``pending``)."""
        gone = self.tracked.pop(pane_id)
        old = gone.sidecar
        kept = {
            "set_poll_enabled": old.poll_enabled_override,
            "set_plan_policy": old.plan_policy_override,
            "set_poll_interval": old.poll_interval_override,
        }
        kept = {k: v for k, v in kept.items() if v is not None}
        if kept:
            self.pending[pane_id] = kept
        return gone

    def set_config(self, config: SidecarConfig) -> None:
        """New defaults for every pane, now and later."""
        self.config = config
        for tracked in self.tracked.values():
            tracked.sidecar.config = config

    def detect(self, tracked: TrackedPane, lines: list[str], faint: list[int]) -> Detection:
        """Detection of a pane's screen, run once per screen: the live re-read before a key
        (`nbs_tui.sidecar.live_pane.LivePane.read`) usually finds the screen the tick just read, and
        detection is a pure function of what `screen_key` keeps, so it is not run again."""
        key = screen_key(lines, faint)
        if tracked.detected is not None and tracked.detected[0] == key:
            return tracked.detected[1]
        detection = detect_lines(lines, faint_rows=faint)
        self.detections += 1
        tracked.detected = (key, detection)
        return detection

    # -- what a pane's sidecar may do now -------------------------------------------------------

    @staticmethod
    def paused(info: PaneInfo | None) -> bool:
        """The project's pause file (``.nbs/control-pause``) is there."""
        if info is None or not info.current_path:
            return False
        return os.path.exists(os.path.join(info.current_path, ".nbs", "control-pause"))

    def context(self, tracked: TrackedPane, now: float, for_show: bool = False) -> SidecarContext:
        """What the pane's sidecar may do now; ``for_show`` (a status to publish, never to act
        on): the pause file as seen in this tick, if it was looked at."""
        lease = self.lease
        tick, paused = tracked.paused_file
        if not for_show or tick != self.ticks:
            paused = self.paused(tracked.info)
            tracked.paused_file = (self.ticks, paused)
        return SidecarContext(
            paused=paused or (lease is not None and lease.paused),
            operator_typing=now - tracked.operator_at < OPERATOR_QUIET,
            viewer=lease is not None and not lease.acting(),
            held=self.held(tracked.sidecar.pane_id),
        )

    # -- statuses and the snapshot --------------------------------------------------------------

    def status_now(self, tracked: TrackedPane, now: float) -> SidecarStatus:
        return tracked.sidecar.status(now, self.context(tracked, now, for_show=True))

    def emit_status(self, pane_id: PaneId, message: str) -> None:
        """A ``status`` event for the pane (not relayed: every view computes its own)."""
        tracked = self.tracked.get(pane_id)
        if tracked is None:
            return
        status = self.status_now(tracked, self.clock())
        self.outlet.deliver(StatusChange(pane_id, self.wall(), message, status=status))

    def publish(self, panes: set[PaneId] | None = None) -> None:
        """With the tick lock held: publish a new snapshot (``panes``: only their statuses moved)."""
        now = self.clock()
        old = self.snapshot
        if panes is None:
            statuses = {p: self.status_now(t, now) for p, t in self.tracked.items()}
            stuck: dict[PaneId, StuckStatus] = {}
            escalated: dict[PaneId, str] = {}
            for pane_id, verdict in self.monitor.verdicts().items():
                stuck[pane_id] = verdict.stuck
                if verdict.stuck.phase is Phase.ESCALATED:
                    n = verdict.stuck.nudges
                    escalated[pane_id] = f"stuck ({n} nudge{'' if n == 1 else 's'})" if n else "stuck"
            escalated.update(self.budget_needs())
            self.snapshot = SidecarSnapshot(
                MappingProxyType(statuses),
                MappingProxyType(stuck),
                MappingProxyType(escalated),
                self.ticks,
            )
            return
        statuses = dict(old.statuses)
        for pane_id in panes:
            tracked = self.tracked.get(pane_id)
            if tracked is not None:
                statuses[pane_id] = self.status_now(tracked, now)
        self.snapshot = replace(old, statuses=MappingProxyType(statuses))
