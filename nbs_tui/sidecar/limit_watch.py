"""Usage limits (`nbs_tui.core.detection.usage_limits`): each tick feeds every agent's limit, if any, to one
fleet-wide `ResumePlanner`; no poll and no nudge reach a ``limited`` agent (its detection is not
safe to type into). With ``limit_resume`` on, once a reset has passed (plus a margin) the
planner names one agent per ``limit_resume_stagger`` seconds (a 2.1.1xx limit menu is first
answered "Stop and wait for limit to reset", by label, once); the runner re-checks its live
screen and types the resume message through the poll's handshake (purpose ``resume``). Only a
runner that acts (the lease holder) resumes; every step is an event and a line of the action
log. Where Claude Code says it continues by itself, nothing is sent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nbs_tui.config import Settings
from nbs_tui.core.detection.usage_limits import (
    LimitEvent,
    ResumeConfig,
    ResumePlanner,
    is_wait_option,
)
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.sidecar.live_safety import live_refusal
from nbs_tui.core.sidecar.pane_sidecar import InjectPoll, PaneSidecar
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.sidecar.events import LimitStep, ResumeStep, SidecarError
from nbs_tui.sidecar.live_pane import LivePane
from nbs_tui.sidecar.watched_panes import EventOutlet, TrackedPane, WatchedPanes
from nbs_tui.tmux.port import PaneGone, TmuxUnavailable

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

log = logging.getLogger(__name__)

LIMIT_MENU_SETTLE = 1.0
"""A usage-limit menu must be on screen this long (two ticks) before its wait option is pressed."""


def zone(name: str | None) -> tzinfo:
    """The zone a limit's reset is written in: the one the screen names, else this machine's."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            log.info("unknown time zone %r on a usage-limit screen: using the local zone", name)
    local = datetime.now().astimezone().tzinfo
    return local if local is not None else UTC


def resume_config(settings: Settings) -> ResumeConfig:
    return ResumeConfig(
        enabled=settings.limit_resume,
        message=settings.limit_resume_message,
        margin=settings.limit_resume_margin,
        stagger=settings.limit_resume_stagger,
    )



class LimitWatch:
    """The runner's usage-limit watch: every view's ``limit`` events, the holder's resumes."""

    def __init__(
        self,
        planner: ResumePlanner,
        panes: WatchedPanes,
        live: LivePane,
        outlet: EventOutlet,
        action_log: ActionLog,
        *,
        lease: SidecarLease | None,
        wall: Callable[[], float],
    ) -> None:
        self.limits = planner
        """The fleet's usage limits and who is resumed when (`nbs_tui.core.detection.usage_limits`)."""
        self.panes = panes
        self.live = live
        self._emit = outlet.emit
        self.action_log = action_log
        self.lease = lease
        self.wall = wall
        self.on_limit: Callable[[PaneInfo, str, float | None], None] = lambda info, kind, reset_at: None
        """Told of each usage limit seen (its kind and reset): the budget watch's usage figures."""

    def observe(self, info: PaneInfo, sidecar: PaneSidecar, now: float, wall_now: float) -> None:
        """After a pane's tick: its limit, if any, to the planner (``limit`` events when one is
        seen or gone), and the reset it knows of to the pane's sidecar (for its status)."""
        current = sidecar.detection
        limit = current.limit if current.state is AgentState.LIMITED else None
        for event in self.limits.observe(info.pane_id, limit, wall_now):
            self._limit_event(info, event, acting=False)
            if event.kind == "limited" and limit is not None:
                self.on_limit(info, limit.kind, event.reset_at)
        reset_at = self.limits.reset_at(info.pane_id)
        sidecar.limit_reset_at = None if reset_at is None else now + (reset_at - wall_now)

    def forget(self, pane_id: PaneId) -> None:
        """The pane's agent is gone: its limit with it."""
        self.limits.forget(pane_id)

    def resume_limited(self, panes: Mapping[PaneId, PaneInfo], now: float, wall_now: float) -> None:
        """After the pass: resume the one limited agent whose turn has come (see the docstring)."""
        acting = self.lease is None or self.lease.acting()
        planned = self.limits.next_resume(wall_now)
        for pane_id, tracked in self.panes.tracked.items():
            at = planned.get(pane_id)
            tracked.sidecar.resume_at = None if at is None else now + (at - wall_now)
        if not acting or not self.limits.limited():
            return
        if self.limits.config.enabled:
            for pane_id in self.limits.limited():
                info = panes.get(pane_id)
                menu_pane = self.panes.tracked.get(pane_id)
                if info is not None and menu_pane is not None:
                    self._choose_wait(menu_pane, info, now)
        ready = []
        for pane_id in self.limits.limited():
            limited = self.panes.tracked.get(pane_id)
            if limited is None:
                continue
            d = limited.sidecar.detection
            context = self.panes.context(limited, now)
            if (
                d.input_text == ""
                and not limited.sidecar.injecting
                and not context.paused
                and not context.held
                and not context.operator_typing
            ):
                ready.append(pane_id)
        chosen, events = self.limits.due(wall_now, ready)
        for event in events:
            info = panes.get(event.pane_id)
            if info is not None:
                self._limit_event(info, event, acting=True)
        if chosen is None:
            return
        target = self.panes.tracked.get(chosen)
        info = panes.get(chosen)
        if target is None or info is None:
            self.limits.failed(chosen)
            return
        text = self.limits.config.message
        try:
            live = self.live.read(target)
            why = live_refusal(live, InjectPoll(text, 1, "resume"))
            if why is None:
                ok, message = target.sidecar.request_resume(text)
                why = None if ok else message
        except (PaneGone, TmuxUnavailable) as error:
            why = str(error)
        if why is not None:
            self.limits.failed(chosen)
            self.resume_step(info, "refused", why, text)
            return
        self.resume_step(info, "queued", "reset passed: resume queued", text)

    def _choose_wait(self, tracked: TrackedPane, info: PaneInfo, now: float) -> None:
        """2.1.1xx asks "What do you want to do?" at the limit: with resume on, answer "Stop and
        wait for limit to reset" (by label, once per menu, after a live re-check) so the agent's
        box is free for the resume after the reset. The other options cost money: never those."""
        sidecar = tracked.sidecar
        d = sidecar.detection
        context = self.panes.context(tracked, now)
        if d.state is not AgentState.LIMITED or not d.options or context.paused or context.operator_typing:
            return
        wait = next((o for o in d.options if is_wait_option(o.label)), None)
        changed = sidecar.last_change
        menu = (tuple(o.label for o in d.options), d.prompt)
        if wait is None or tracked.limit_menu == menu or changed is None or now - changed < LIMIT_MENU_SETTLE:
            return
        tracked.limit_menu = menu
        text = f"{wait.number}. {wait.label}"
        try:
            live = self.live.read(tracked)
            if live.state is not AgentState.LIMITED or tuple(o.label for o in live.options) != menu[0]:
                why: str | None = f"the usage-limit menu changed ({live.state.value}: {live.reason})"
            elif not self.live.press(info.pane_id, str(wait.number)):
                why = "not sent: this process no longer holds the sidecar lease"
            else:
                why = None
        except (PaneGone, TmuxUnavailable) as error:
            why = str(error)
        if why is not None:
            self.resume_step(info, "refused", f"limit menu: {why}", text)
            return
        self.resume_step(info, "wait-chosen", f"limit menu answered: {text}", text)

    def _limit_event(self, info: PaneInfo, event: LimitEvent, *, acting: bool) -> None:
        """A step of the limit watch: ``limit`` events for every view; the holder's decisions
        (held, due) are ``resume`` events and action-log lines too."""
        if not acting:
            self._emit(LimitStep(info.pane_id, self.wall(), event.message, result=event.kind, reset_at=event.reset_at))
            return
        if event.kind == "held":
            self.resume_step(info, "held", event.message, self.limits.config.message)

    def resume_step(
        self, info: PaneInfo, result: str, message: str, text: str, *, emit: bool = True
    ) -> None:
        if emit:
            self._emit(ResumeStep(info.pane_id, self.wall(), message, result=result, text=text))
        outcome = {
            "submitted": Outcome.SENT,
            "failed": Outcome.FAILED,
        }.get(result, Outcome.SKIPPED if result in ("held", "refused") else None)
        if outcome is None and result not in ("queued", "typed", "enter", "wait-chosen"):
            return
        try:
            self.action_log.append(
                ActionRecord(
                    time=self.wall(),
                    action=f"resume {result}",
                    pane_id=info.pane_id,
                    target=info.target,
                    sent=text if result not in ("held",) else "",
                    why="usage limit reset" if result != "held" else "usage limit",
                    outcome=outcome or Outcome.SENT,
                    reason=message,
                )
            )
        except OSError as error:  # the event above still tells the operator
            self._emit(SidecarError(info.pane_id, self.wall(), f"action log: {error}"))
