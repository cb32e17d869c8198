"""Carrying out what a pane's sidecar decided (`nbs_tui.core.sidecar.pane_sidecar`'s typed actions): events
for what it saw, the control plane for a ``\\nbs-`` line, and the typing handshake (type the
text, press Enter, pick a plan option), each after a look at the live screen (`LivePane`).
"""

from __future__ import annotations

import logging

from nbs_tui.core.detection.detect import detection_as_json
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.notify import question_line
from nbs_tui.core.sidecar.pane_sidecar import (
    Action,
    InjectPoll,
    Notice,
    PaneSidecar,
    ReportCommand,
    SelectPlanOption,
    StateChanged,
    SubmitPoll,
)
from nbs_tui.sidecar.lease_sync import LeaseSync
from nbs_tui.sidecar.limits import LimitResume
from nbs_tui.sidecar.state import _Tracked
from nbs_tui.tmux.port import PaneGone, TmuxUnavailable

log = logging.getLogger(__name__)


class ActionCarrier(LimitResume, LeaseSync):
    """The runner's hands: each action of a pane's sidecar, carried out or refused (a resume's
    steps are logged by `LimitResume`, a handshake's in-flight mark cleared by `LeaseSync`)."""

    def _carry_out(self, tracked: _Tracked, info: PaneInfo, action: Action, now: float) -> None:
        pane_id = info.pane_id
        sidecar = tracked.sidecar
        if isinstance(action, StateChanged):
            d = action.detection
            self._emit("state", pane_id, d.reason, question=question_line(d.prompt), **detection_as_json(d))
            return
        if isinstance(action, ReportCommand):
            project = info.current_path
            self._emit("command", pane_id, "", line=action.line, project=project)
            if self.lease is not None and not self.lease.acting():
                return  # the holder carries it out
            if self.control is not None:
                try:
                    self.control.apply_scanned_command(pane_id, project, action.line)
                except Exception as error:
                    self._emit("error", pane_id, f"control plane refused {action.line!r}: {error}")
            elif action.line.startswith("\\nbs-set-poll-interval "):
                try:
                    sidecar.set_poll_interval(float(action.line.split()[1]))
                except ValueError as error:
                    self._emit("error", pane_id, f"bad interval in {action.line!r}: {error}")
            return
        if isinstance(action, Notice):
            if action.kind.startswith("plan"):
                kind = "plan-select"
            elif action.kind.startswith("nudge"):
                kind = "nudge"
            elif action.kind.startswith("resume"):
                kind = "resume"
            else:
                kind = "poll"
            result = {
                "poll": "submitted",
                "poll-failed": "failed",
                "nudge": "submitted",
                "nudge-failed": "failed",
                "resume": "submitted",
                "resume-failed": "failed",
                "plan-select": "landed",
                "plan-failed": "failed",
                "plan-waiting": "waiting",
            }.get(action.kind, action.kind)
            if action.kind == "nudge-failed":
                self.monitor.nudge_failed(pane_id)
            if action.kind == "resume-failed":
                self.limits.failed(pane_id)
            if action.kind in ("poll", "poll-failed", "nudge", "nudge-failed", "resume", "resume-failed"):
                self._clear_inflight(pane_id)  # the handshake is over either way
            if kind == "resume":
                self._resume_step(info, result, action.message, self.limits.config.message)
                return
            self._emit(kind, pane_id, action.message, result=result)
            return
        try:
            live = self._live(info)
            why = self._refusal(live, action)
            if why is not None:
                self._refused(sidecar, action, now, why)
                self._emit(self._kind(action), pane_id, why, result="refused")
                return
            if isinstance(action, InjectPoll):
                self._handshake_step(tracked, info, action, now, self._type(pane_id, action.text), "typed", "typed")
            elif isinstance(action, SubmitPoll):
                sent = self._press(pane_id, "Enter")
                self._handshake_step(tracked, info, action, now, sent, "enter", "Enter pressed after")
            elif isinstance(action, SelectPlanOption):
                if not self._press(pane_id, str(action.number)):
                    self._lease_refused(sidecar, action, now, pane_id)
                    return
                self._emit(
                    "plan-select",
                    pane_id,
                    "",
                    result="pressed",
                    number=action.number,
                    label=action.label,
                )
        except (PaneGone, TmuxUnavailable) as error:
            self._refused(sidecar, action, now, str(error))
            self._emit("error", pane_id, f"{self._kind(action)}: {error}")
        except Exception as error:
            log.exception("sidecar action failed")
            self._refused(sidecar, action, now, str(error))
            self._emit("error", pane_id, f"{self._kind(action)}: {error}")

    def _handshake_step(
        self, tracked: _Tracked, info: PaneInfo, action: InjectPoll | SubmitPoll, now: float,
        sent: bool, result: str, verb: str,
    ) -> None:  # fmt: skip
        """After typing the text or pressing Enter: the event, or the lease's refusal if not sent."""
        if not sent:
            self._lease_refused(tracked.sidecar, action, now, info.pane_id)
            return
        said = self._said(action, verb)
        self._emit(action.purpose, info.pane_id, said, result=result, text=action.text, attempt=action.attempt)
        if action.purpose == "resume":
            self._resume_step(info, result, said, action.text, emit=False)

    def _refused(
        self, sidecar: PaneSidecar, action: Action, now: float, why: str, clear: bool = True
    ) -> None:
        sidecar.action_refused(now, action, why)
        if clear and isinstance(action, InjectPoll | SubmitPoll):
            self._clear_inflight(sidecar.pane_id)
        if isinstance(action, InjectPoll | SubmitPoll) and action.purpose == "nudge":
            self.monitor.nudge_failed(sidecar.pane_id)  # not delivered: it does not count
        if isinstance(action, InjectPoll | SubmitPoll) and action.purpose == "resume":
            self.limits.failed(sidecar.pane_id)

    def _lease_refused(self, sidecar: PaneSidecar, action: Action, now: float, pane_id: PaneId) -> None:
        why = "not sent: this process no longer holds the sidecar lease"
        self._refused(sidecar, action, now, why, clear=False)  # the mark is the next holder's
        self._emit(self._kind(action), pane_id, why, result="refused")

    @staticmethod
    def _said(action: InjectPoll | SubmitPoll, what: str) -> str:
        """The history line of a typing step (poll steps have none: the app words them)."""
        return "" if action.purpose == "poll" else f"{what} {action.text!r}"

    @staticmethod
    def _kind(action: Action) -> str:
        if isinstance(action, InjectPoll | SubmitPoll):
            return action.purpose
        return "plan-select" if isinstance(action, SelectPlanOption) else "poll"
