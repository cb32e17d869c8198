"""Carrying out what a pane's sidecar decided (`nbs_tui.core.sidecar.pane_sidecar`'s typed actions): events
for what it saw, the control plane for a ``\\nbs-`` line, and the typing handshake (type the
text, press Enter, pick a plan option), each after a look at the live screen (`LivePane`). A
caller's text (purpose ``send``) is pasted, and each of its steps told to the `SendDesk`, which
answers the caller before the in-flight mark is cleared (a holder killed in between leaves the
answer given and the mark for the next holder, never a text typed with no answer and no mark).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.notifications.notify_rules import question_line
from nbs_tui.core.sidecar.delivery_rules import SEND_PURPOSE, mark_text
from nbs_tui.core.sidecar.live_safety import live_refusal
from nbs_tui.core.sidecar.pane_sidecar import (
    Action,
    HandshakeEnded,
    InjectPoll,
    PaneSidecar,
    PlanNotice,
    ReportCommand,
    SelectPlanOption,
    StateChanged,
    SubmitPoll,
)
from nbs_tui.sidecar.events import (
    TYPING_STEPS,
    CommandSeen,
    PlanSelect,
    PollStep,
    SidecarError,
    SidecarEvent,
    StateChange,
)
from nbs_tui.sidecar.lease_sync import LeaseSync
from nbs_tui.sidecar.limit_watch import LimitWatch
from nbs_tui.sidecar.live_pane import LivePane
from nbs_tui.sidecar.send_desk import SendDesk
from nbs_tui.sidecar.watched_panes import ControlPort, EventOutlet, TrackedPane
from nbs_tui.tmux.errors import TmuxTimeout
from nbs_tui.tmux.port import PaneGone, TmuxUnavailable

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

log = logging.getLogger(__name__)

SAID_CHARS = 80
"""A typed text is quoted this far in a step's history line."""


class ActionCarrier:
    """The runner's hands: each action of a pane's sidecar, carried out or refused (a resume's
    steps are logged by the `LimitWatch`, a handshake's in-flight mark cleared by `LeaseSync`)."""

    def __init__(
        self,
        live: LivePane,
        outlet: EventOutlet,
        monitor: AgentMonitor,
        limit_watch: LimitWatch,
        *,
        lease: SidecarLease | None,
        lease_sync: LeaseSync | None,
        control: ControlPort | None,
        desk: SendDesk | None = None,
    ) -> None:
        self.live = live
        self._emit = outlet.emit
        self.wall = outlet.wall
        self.monitor = monitor
        self.limit_watch = limit_watch
        self.limits = limit_watch.limits
        self.lease = lease
        self.lease_sync = lease_sync
        """Without a lease, there are no in-flight marks to clear."""
        self.control = control
        self.desk = desk
        """Told each step of a caller's text (purpose ``send``)."""

    def carry_out(self, tracked: TrackedPane, info: PaneInfo, action: Action, now: float) -> None:
        pane_id = info.pane_id
        sidecar = tracked.sidecar
        if isinstance(action, StateChanged):
            d = action.detection
            self._emit(StateChange(pane_id, self.wall(), d.reason, detection=d, question=question_line(d.prompt)))
            return
        if isinstance(action, ReportCommand):
            project = info.current_path
            self._emit(CommandSeen(pane_id, self.wall(), line=action.line, project=project))
            if self.lease is not None and not self.lease.acting():
                return  # the holder carries it out
            if self.control is not None:
                try:
                    self.control.apply_scanned_command(pane_id, project, action.line)
                except Exception as error:
                    self._emit(SidecarError(pane_id, self.wall(), f"control plane refused {action.line!r}: {error}"))
            elif action.line.startswith("\\nbs-set-poll-interval "):
                try:
                    sidecar.set_poll_interval(float(action.line.split()[1]))
                except ValueError as error:
                    self._emit(SidecarError(pane_id, self.wall(), f"bad interval in {action.line!r}: {error}"))
            return
        if isinstance(action, HandshakeEnded):
            if action.purpose == SEND_PURPOSE and self.desk is not None:
                self.desk.ended(pane_id, action.submitted, action.message)  # answered, then unmarked
            self._clear_inflight(pane_id)  # the handshake is over either way
            result = "submitted" if action.submitted else "failed"
            if action.purpose == "nudge" and not action.submitted:
                self.monitor.nudge_failed(pane_id)
            if action.purpose == "resume":
                if not action.submitted:
                    self.limits.failed(pane_id)
                self.limit_watch.resume_step(info, result, action.message, self.limits.config.message)
                return
            self._emit(TYPING_STEPS[action.purpose](pane_id, self.wall(), action.message, result=result))
            return
        if isinstance(action, PlanNotice):
            self._emit(PlanSelect(pane_id, self.wall(), action.message, result=action.result))
            return
        try:
            live = self.live.read(tracked)
            why = live_refusal(live, action)
            if why is not None:
                self._refused(sidecar, action, now, why)
                self._emit(self._refusal_event(action, pane_id, why))
                return
            if isinstance(action, InjectPoll):
                self._handshake_step(tracked, info, action, now, self._type(pane_id, action), "typed", "typed")
            elif isinstance(action, SubmitPoll):
                sent = self.live.press(pane_id, "Enter")
                self._handshake_step(tracked, info, action, now, sent, "enter", "Enter pressed after")
            elif isinstance(action, SelectPlanOption):
                if not self.live.press(pane_id, str(action.number)):
                    self._lease_refused(sidecar, action, now, pane_id)
                    return
                self._emit(PlanSelect(pane_id, self.wall(), result="pressed", number=action.number, label=action.label))
        except (PaneGone, TmuxUnavailable) as error:
            self._refused(sidecar, action, now, str(error))
            self._emit(SidecarError(pane_id, self.wall(), f"{self._kind(action)}: {error}"))
        except Exception as error:
            log.exception("sidecar action failed")
            self._refused(sidecar, action, now, str(error))
            self._emit(SidecarError(pane_id, self.wall(), f"{self._kind(action)}: {error}"))

    def _type(self, pane_id: PaneId, action: InjectPoll) -> bool:
        """Type the action's text, or paste it (a caller's text); False: a guard refused."""
        if not action.paste:
            return self.live.type(pane_id, action.text)
        fence = self.desk.fence(pane_id) if self.desk is not None else None
        try:
            pasted = self.live.paste(pane_id, action.text, mark_text(action.text), fence)
        except TmuxTimeout:  # its answer was lost: it may have been pasted (never said "not typed")
            if self.desk is not None:
                self.desk.typed(pane_id)
            raise
        if pasted and self.desk is not None:
            self.desk.typed(pane_id)
        return pasted

    def _handshake_step(
        self, tracked: TrackedPane, info: PaneInfo, action: InjectPoll | SubmitPoll, now: float,
        sent: bool, result: str, verb: str,
    ) -> None:  # fmt: skip
        """After typing the text or pressing Enter: the event, or the lease's refusal if not sent."""
        if not sent:
            self._lease_refused(tracked.sidecar, action, now, info.pane_id)
            return
        said = self._said(action, verb)
        step = TYPING_STEPS[action.purpose]
        self._emit(step(info.pane_id, self.wall(), said, result=result, text=action.text, attempt=action.attempt))
        if action.purpose == "resume":
            self.limit_watch.resume_step(info, result, said, action.text, emit=False)

    def _refused(
        self, sidecar: PaneSidecar, action: Action, now: float, why: str, clear: bool = True
    ) -> None:
        sidecar.action_refused(now, action, why)
        if isinstance(action, InjectPoll | SubmitPoll) and action.purpose == SEND_PURPOSE and self.desk is not None:
            self.desk.not_sent(sidecar.pane_id, why)  # answered before the mark is cleared
        if clear and isinstance(action, InjectPoll | SubmitPoll):
            self._clear_inflight(sidecar.pane_id)
        if isinstance(action, InjectPoll | SubmitPoll) and action.purpose == "nudge":
            self.monitor.nudge_failed(sidecar.pane_id)  # not delivered: it does not count
        if isinstance(action, InjectPoll | SubmitPoll) and action.purpose == "resume":
            self.limits.failed(sidecar.pane_id)

    def _lease_refused(self, sidecar: PaneSidecar, action: Action, now: float, pane_id: PaneId) -> None:
        why = "not sent: this process no longer holds the sidecar lease"
        self._refused(sidecar, action, now, why, clear=False)  # the mark is the next holder's
        self._emit(self._refusal_event(action, pane_id, why))

    def _clear_inflight(self, pane_id: PaneId) -> None:
        if self.lease_sync is not None:
            self.lease_sync.clear_inflight(pane_id)

    @staticmethod
    def _said(action: InjectPoll | SubmitPoll, what: str) -> str:
        """The history line of a typing step (poll steps have none: the app words them)."""
        if action.purpose == "poll":
            return ""
        text = action.text if len(action.text) <= SAID_CHARS else action.text[: SAID_CHARS - 3] + "..."
        return f"{what} {text!r}"  # a sent text may be a long prompt: its event carries it whole

    def _refusal_event(self, action: Action, pane_id: PaneId, why: str) -> SidecarEvent:
        """The event of an action not carried out (the step of its handshake, or the plan's)."""
        if isinstance(action, InjectPoll | SubmitPoll):
            return TYPING_STEPS[action.purpose](pane_id, self.wall(), why, result="refused")
        if isinstance(action, SelectPlanOption):
            return PlanSelect(pane_id, self.wall(), why, result="refused")
        return PollStep(pane_id, self.wall(), why, result="refused")

    @staticmethod
    def _kind(action: Action) -> str:
        """The action's name in an error's message."""
        if isinstance(action, InjectPoll | SubmitPoll):
            return action.purpose
        return "plan-select" if isinstance(action, SelectPlanOption) else "poll"
