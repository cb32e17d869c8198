"""One pass of the sidecar over every agent pane of a fleet (`SidecarTick.run`), the runner's
thread calling it once a second under the tick lock.

The walk of a ``/nbs-poll``, in order: the lease's switches and requests (`LeaseSync.sync`);
the fleet's panes, and an agent gone reported (`AgentWatch.report_end`); the due captures of
every unwatched pane in one round trip (``fleet.prefetch``); then, per pane, its screen from
tmux (the mirror, or ``fleet.captured``), detection once per screen version, the pane's
`PaneSidecar` deciding (core), each action carried out by the `ActionCarrier` (a fresh
capture judged by `nbs_tui.core.sidecar.live_safety`, then the keys), the `LimitWatch` and the
`AgentWatch` fed; after the pass, the one limited agent whose turn has come resumed, and (as
the lease holder) every pane's state published into tmux.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.core.fleet.model import AgentState, PaneInfo
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.core.screen.screen_rows import CapturedScreen, screen_lines_and_faint
from nbs_tui.sidecar.action_carrier import ActionCarrier
from nbs_tui.sidecar.agent_watch import AgentWatch
from nbs_tui.sidecar.budget_watch import BudgetWatch
from nbs_tui.sidecar.events import PaneLeft
from nbs_tui.sidecar.lease_sync import LeaseSync
from nbs_tui.sidecar.limit_watch import LimitWatch
from nbs_tui.sidecar.send_desk import SendDesk
from nbs_tui.sidecar.watched_panes import ControlPort, EventOutlet, TrackedPane, WatchedPanes
from nbs_tui.tmux.port import FleetPort

log = logging.getLogger(__name__)


class SidecarTick:
    """One pass over every agent pane (module docstring); run with the tick lock held."""

    def __init__(
        self,
        fleet: FleetPort,
        panes: WatchedPanes,
        carrier: ActionCarrier,
        agent_watch: AgentWatch,
        limit_watch: LimitWatch,
        outlet: EventOutlet,
        monitor: AgentMonitor,
        *,
        lease_sync: LeaseSync | None,
        control: ControlPort | None,
        clock: Callable[[], float],
        wall: Callable[[], float],
        desk: SendDesk,
        budget: BudgetWatch | None = None,
    ) -> None:
        self.fleet = fleet
        self.panes = panes
        self.carrier = carrier
        self.agent_watch = agent_watch
        self.limit_watch = limit_watch
        self._emit = outlet.emit
        self.monitor = monitor
        self.lease_sync = lease_sync
        """With a lease: its switches read before the pass, pane state published after it."""
        self.control = control
        self.budget = budget
        """The budget governor: which panes are fed nothing more (read by each pane's context)."""
        self.clock = clock
        self.wall = wall
        self.desk = desk

    def run(self) -> None:
        self.panes.ticks += 1
        now = self.clock()
        wall_now = self.wall()
        if self.lease_sync is not None:
            self.lease_sync.sync()
        every = {p.pane_id: p for p in self.fleet.panes()}
        panes = {pane_id: p for pane_id, p in every.items() if p.is_agent and not p.dead}
        tracked_panes = self.panes.tracked
        for pane_id in list(tracked_panes):
            info = panes.get(pane_id)
            if info is None or info.pid != tracked_panes[pane_id].pid:
                gone = self.panes.forget(pane_id)  # the operator's switches are kept for the next
                self._emit(PaneLeft(pane_id, self.wall(), "pane gone or no longer an agent"))
                self.agent_watch.report_end(gone, every.get(pane_id))
                self.monitor.forget(pane_id)
                self.limit_watch.forget(pane_id)
        prefetch = getattr(self.fleet, "prefetch", None)
        if prefetch is not None:  # the due captures of every pane in one round trip, not one each
            # The fleet reads a pane that keeps printing only every few seconds (CAPTURE_MAX_AGE),
            # which is right only for one already seen working (its spinner). A pane last seen
            # still is read on the tick it changes: a turn shorter than the max age is then seen
            # starting (idle -> working -> idle is a "finished"), and a handshake sees what it typed.
            eager = {
                p for p, t in tracked_panes.items()
                if p in panes and (t.sidecar.injecting or t.sidecar.detection.state is not AgentState.WORKING)
            }  # fmt: skip
            prefetch(panes, eager=eager)
        if self.budget is not None:
            self.budget.update(panes, wall_now)
        for info in panes.values():
            self._tick_pane(self.panes.track(info), info, now, wall_now)
        self.limit_watch.resume_limited(panes, now, wall_now)
        self.desk.sweep()  # a send whose pane went, or that a viewer's tick dropped, is answered
        if self.lease_sync is not None and self.lease_sync.lease.acting():
            self.lease_sync.publish_options()

    def _tick_pane(self, tracked: TrackedPane, info: PaneInfo, now: float, wall_now: float) -> None:
        screen: PaneScreen | CapturedScreen | None = self.fleet.screen(info.pane_id)
        if screen is not None and not self.fleet.first_seeded(info.pane_id):
            # Just watched (the operator selected it): a blank model until its seed lands, not
            # the pane's screen. What was read before stands; read as blank, a waiting menu
            # left the needs-you queue and A found no card (test_limited_tmux, under load).
            screen = tracked.screen
        if screen is None:
            screen = self.fleet.captured(info.pane_id)  # unwatched: read from tmux when it changed
            if screen is None:
                return
        sidecar = tracked.sidecar
        lines = None
        detection = None
        if screen is not tracked.screen or screen.version != tracked.version:
            tracked.screen, tracked.version = screen, screen.version
            if isinstance(screen, CapturedScreen):
                lines, faint = list(screen.lines), list(screen.faint_rows)
            else:
                lines, faint = screen_lines_and_faint(screen, tracked.rows)
            detection = self.panes.detect(tracked, lines, faint)
        if self.control is not None:
            try:
                sidecar.project_poll_interval = self.control.poll_interval_for_pane(info.pane_id)
            except Exception:  # the control plane is optional help, never a reason to stop
                log.exception("control plane poll interval lookup failed")
        context = self.panes.context(tracked, now)
        actions = sidecar.tick(now, lines, context, detection=detection)
        for action in actions:
            self.carrier.carry_out(tracked, info, action, now)
        self.limit_watch.observe(info, sidecar, now, wall_now)
        if sidecar.detection.state is not tracked.shown_state:
            tracked.shown_state, tracked.state_wall = sidecar.detection.state, wall_now
        key = (sidecar.detection.state, sidecar.injecting, context.paused, sidecar.poll_enabled, context.held)
        if key != tracked.last_key:
            tracked.last_key = key
            self.panes.emit_status(info.pane_id, "")
        self.agent_watch.watch(tracked, info, now, wall_now, context)

