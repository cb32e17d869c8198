"""Stuck agents (oj's design, `nbs_tui.core.sidecar.stuck_agents`): each tick also feeds the pane's
detection, the time its screen last changed and Claude Code's own facts (``signals``:
`ClaudeSignals`, or None for the screen alone) to an `AgentMonitor`. A ``Nudge`` is re-checked
on the live screen and typed through the same handshake as ``/nbs-poll``
(`PaneSidecar.request_text`: text whole, Enter apart, confirmed, never over the operator's
typing, never paused or under context pressure); a nudge that is not delivered is not counted.
``Escalate`` and ``Ended`` become ``escalate`` and ``agent-ended`` events; a pane that stops
being an agent or disappears is reported ``agent-ended`` too (once per agent).
"""

from __future__ import annotations

import logging

from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.core.detection.detect import FLAG_CONTEXT_PRESSURE
from nbs_tui.core.fleet.model import PaneInfo
from nbs_tui.core.sidecar.live_safety import live_refusal
from nbs_tui.core.sidecar.pane_sidecar import InjectPoll, SidecarContext
from nbs_tui.core.sidecar.stuck_agents import Ended, Escalate, Nudge, Phase, StuckAction
from nbs_tui.sidecar.events import AgentEnded, Escalation, NudgeStep, SidecarError
from nbs_tui.sidecar.live_pane import LivePane
from nbs_tui.sidecar.watched_panes import EventOutlet, TrackedPane, WatchedPanes
from nbs_tui.tmux.port import PaneGone, TmuxUnavailable

log = logging.getLogger(__name__)


class AgentWatch:
    """The runner's watch over stuck and ended agents: nudges typed through the handshake,
    escalations, ended agents (each reported once)."""

    def __init__(
        self,
        monitor: AgentMonitor,
        panes: WatchedPanes,
        live: LivePane,
        outlet: EventOutlet,
        *,
        max_nudges: int,
    ) -> None:
        self.monitor = monitor
        """Fusion with Claude Code's signals and the stuck watch (nudge, escalate, ended)."""
        self.panes = panes
        self.live = live
        self._emit = outlet.emit
        self.wall = outlet.wall
        self.max_nudges = max_nudges

    def watch(
        self, tracked: TrackedPane, info: PaneInfo, now: float, wall_now: float, context: SidecarContext
    ) -> None:
        """After a pane's tick: its screen to the monitor, and what the monitor says carried out."""
        sidecar = tracked.sidecar
        changed = sidecar.last_change
        if changed is None:
            return
        detection = sidecar.detection
        safe = (
            detection.safe_to_inject
            and FLAG_CONTEXT_PRESSURE not in detection.flags
            and not sidecar.injecting
            and not context.paused
            and not context.held
            and not context.operator_typing
            and not context.viewer
        )
        try:
            _, actions = self.monitor.observe(
                info.pane_id,
                detection,
                wall_now - (now - changed),
                wall_now,
                safe_to_nudge=safe,
                busy=sidecar.injecting,
            )
        except Exception as error:  # the stuck watch is help, never a reason to stop the tick
            log.exception("stuck watch failed")
            self._emit(SidecarError(info.pane_id, self.wall(), f"stuck watch: {error}"))
            return
        for action in actions:
            self._carry_out_stuck(tracked, info, action, now)
        verdict = self.monitor.verdict(info.pane_id)
        if verdict is not None and verdict.stuck.phase is not Phase.ENDED:
            tracked.ended = False  # running again: a later exit is news again

    def _carry_out_stuck(self, tracked: TrackedPane, info: PaneInfo, action: StuckAction, now: float) -> None:
        pane_id = info.pane_id
        if isinstance(action, Escalate):
            self._emit(Escalation(pane_id, self.wall(), action.why, reason="stuck"))
            return
        if isinstance(action, Ended):
            if not tracked.ended:
                tracked.ended = True
                self._emit(AgentEnded(pane_id, self.wall(), action.why, liveness=action.liveness.value))
            return
        if isinstance(action, Nudge):
            self._nudge(tracked, info, action, now)

    def _nudge(self, tracked: TrackedPane, info: PaneInfo, action: Nudge, now: float) -> None:
        """Queue the nudge on the pane's typing handshake after a look at the live screen."""
        pane_id = info.pane_id
        try:
            live = self.live.read(tracked)
            why = live_refusal(live, InjectPoll(action.text, action.attempt, "nudge"))
            if why is None and self.panes.context(tracked, now).paused:
                why = "project is paused (.nbs/control-pause)"
            if why is None:
                ok, message = tracked.sidecar.request_text(action.text, "nudge")
                why = None if ok else message
        except (PaneGone, TmuxUnavailable) as error:
            why = str(error)
        if why is not None:
            self.monitor.nudge_failed(pane_id)
            self._emit(NudgeStep(pane_id, self.wall(), why, result="refused", text=action.text, nudge=action.attempt))
            return
        said = f"stuck: nudge {action.attempt} of {self.max_nudges} queued"
        self._emit(NudgeStep(pane_id, self.wall(), said, result="queued", text=action.text, nudge=action.attempt))

    def report_end(self, tracked: TrackedPane, current: PaneInfo | None) -> None:
        """The agent in a pane the runner watched is no longer there: say why, once."""
        if tracked.ended:
            return
        tracked.ended = True
        pane_id = tracked.sidecar.pane_id
        if current is None:
            liveness, why = "gone", "its tmux pane is gone"
        elif current.dead:
            liveness, why = "exited", "the pane's process exited"
        elif current.pid != tracked.pid:
            liveness, why = "exited", f"the pane's process was replaced (pid {tracked.pid} -> {current.pid})"
        else:
            liveness, why = "exited", "Claude Code no longer runs in the pane"
        self._emit(AgentEnded(pane_id, self.wall(), why, liveness=liveness))
