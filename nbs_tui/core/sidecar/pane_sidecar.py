"""The per-pane sidecar as a pure state machine with an injected clock.

nbs-claude ran one bash loop per agent; nbs-tui runs one `PaneSidecar` per pane, ticked once a
second by `nbs_tui.sidecar.sidecar_runner.SidecarRunner`. A tick takes the time, the pane's screen (or
None when it has not changed) and a `SidecarContext`, and returns `Action` values for the runner
to carry out. Nothing here touches tmux, files or threads, so every rule is unit-testable.

Seed semantics kept: a screen change resets the idle counter; when the screen has been stable
for the poll interval at an idle prompt with an empty input box, the poll command is injected,
then counting waits ``backoff`` (10 s) before starting again. Added safety:

* injection is a handshake advanced by later ticks: type the text (`InjectPoll`) → see it in
  the input box → press Enter (`SubmitPoll`) → see it leave the box; Enter is retried once if
  the text stays, the text is retyped once only if the box is still empty, and the handshake
  gives up (never guessing) when the box holds anything else, e.g. the operator's typing;
* never while paused (``.nbs/control-pause``), while the operator types, during context
  pressure, with a menu open, or with text in the box; never a bare Enter;
* other text (the stuck watch's nudge) goes through the same handshake: `request_text`
  queues it for the next tick, and its actions and its end (`HandshakeEnded`) carry its ``purpose``;
* a usage-limited agent (``limited``) gets no poll and no nudge; only the resume after its
  reset (`request_resume`, purpose ``resume``) may type into its free input box;
* a caller's text (purpose ``send``: ``nbs-tui send``, the work queue) goes through the same
  handshake, pasted whole (`InjectPoll.paste`) and typed once only: never retyped, and seen in
  the box as `nbs_tui.core.sidecar.delivery_rules.box_holds` reads a pasted text;
* the plan menu is answered once per menu, by label (`choose_plan_option`), after it has been
  seen on two ticks, and the machine checks that the menu went away;
* ``\\nbs-`` lines are reported once each while they stay on screen or scroll.
"""

from __future__ import annotations

import hashlib
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from nbs_tui.core.control.control_commands import scan_screen_lines
from nbs_tui.core.detection.detect import FLAG_CONTEXT_PRESSURE, choose_plan_option, detect_lines
from nbs_tui.core.fleet.model import AgentState, Detection, MenuOption, PaneId
from nbs_tui.core.sidecar.delivery_rules import SEND_PURPOSE, box_holds

BACKOFF = 10.0
"""Seconds after an injection before the idle counter starts again (the seed's ``sleep 10``)."""
CONFIRM_TIMEOUT = 3.0
"""Seconds to wait for typed text to show in (or leave) the input box before acting again."""
PLAN_SETTLE = 1.0
"""A plan menu must be seen this long (two ticks) with the same options before it is answered."""
PLAN_CONFIRM_TIMEOUT = 5.0
"""Seconds after pressing a plan option before the choice is declared not to have landed."""
PLAN_GONE = 2.0
"""The plan menu must be gone this long before another plan menu counts as a new one."""
COMMAND_FORGET = 10.0
"""A ``\\nbs-`` line must be off screen this long before it can count as issued again."""
HISTORY_LENGTH = 50


# --- actions ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StateChanged:
    """The detected state changed (the app shows a badge; headless prints a ``state`` event)."""

    old: AgentState | None
    new: AgentState
    detection: Detection


@dataclass(frozen=True, slots=True)
class InjectPoll:
    """Type ``text`` literally, no Enter; only if the live box is still empty and idle."""

    text: str
    attempt: int = 1
    purpose: str = "poll"
    """``poll`` (the poll command) or what `PaneSidecar.request_text` was given (``nudge``)."""
    paste: bool = False
    """Paste the text (bracketed: whole, its newlines kept) rather than type it: a caller's text."""


@dataclass(frozen=True, slots=True)
class SubmitPoll:
    """Press Enter; only if the live input box holds exactly ``text`` (so it is never bare)."""

    text: str
    attempt: int = 1
    purpose: str = "poll"


@dataclass(frozen=True, slots=True)
class SelectPlanOption:
    """Press the digit of plan-menu option ``number`` (label given for the history)."""

    number: int
    label: str
    options: tuple[MenuOption, ...] = ()


@dataclass(frozen=True, slots=True)
class ReportCommand:
    """An agent printed a ``\\nbs-`` command; hand it to the control plane."""

    line: str


@dataclass(frozen=True, slots=True)
class HandshakeEnded:
    """A typing handshake of ``purpose`` is over: its text was submitted, or it failed
    (``message`` says what happened, for the pane's history)."""

    purpose: str
    submitted: bool
    message: str


@dataclass(frozen=True, slots=True)
class PlanNotice:
    """What became of the plan menu: the pressed option ``landed`` (the menu went), ``failed``
    (it stayed), or the menu is ``waiting`` for the operator."""

    result: Literal["landed", "failed", "waiting"]
    message: str


Action = StateChanged | InjectPoll | SubmitPoll | SelectPlanOption | ReportCommand | HandshakeEnded | PlanNotice


# --- inputs and outputs -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SidecarContext:
    """Facts from outside the screen for one tick."""

    paused: bool = False
    """The project is paused (``.nbs/control-pause`` exists): no injection at all."""
    operator_typing: bool = False
    """The operator sent keys to this pane moments ago (through the app)."""
    viewer: bool = False
    """Another process holds the sidecar lease (docs/lease.md): detect and report, never act."""
    held: str | None = None
    """The budget governor feeds this agent nothing more (its account or itself at a cap), and
    why (nbs_tui/core/fleet/budget_rules.py): no poll, no nudge, no resume."""


@dataclass(frozen=True, slots=True)
class SidecarConfig:
    """Global defaults; every pane may override poll enabled, interval and plan policy."""

    poll_interval: float = 30.0
    poll_enabled: bool = True
    plan_policy: str = "no-prompts"
    plan_fallback: int | None = None
    poll_command: str = "/nbs-poll"
    backoff: float = BACKOFF
    confirm_timeout: float = CONFIRM_TIMEOUT


@dataclass(frozen=True, slots=True)
class HistoryItem:
    at: float
    """The tick clock's time (the runner's monotonic clock)."""
    text: str


@dataclass(frozen=True, slots=True)
class SidecarStatus:
    """What the app shows for one pane: badge, idle time, next-poll countdown, history tail."""

    pane_id: PaneId
    at: float
    """Clock time this status was taken (``next_poll_at = at + next_poll_in``)."""
    detection: Detection
    idle_since: float | None
    """Clock time the screen last changed (None before the first screen)."""
    idle_seconds: float
    next_poll_in: float | None
    """Seconds until the poll would be injected if nothing changes; None when none is due."""
    poll_enabled: bool
    poll_interval: float
    plan_policy: str
    paused: bool
    injecting: bool
    history: tuple[HistoryItem, ...] = ()
    limit_reset_at: float | None = None
    """For ``limited``: clock time of the limit's reset (None: unknown or not limited)."""
    resume_at: float | None = None
    """Clock time nbs-tui plans to resume the agent (None: it will not, e.g. not opted in)."""

    @property
    def state(self) -> AgentState:
        return self.detection.state

    @property
    def next_poll_at(self) -> float | None:
        return None if self.next_poll_in is None else self.at + self.next_poll_in


class _Phase(StrEnum):
    READY = "ready"
    TYPED = "typed"
    SUBMITTED = "submitted"


@dataclass(slots=True)
class _Plan:
    labels: tuple[str, ...]
    options: tuple[MenuOption, ...]
    since: float
    pressed: int | None = None
    pressed_at: float = 0.0
    reported: bool = False
    gone_since: float | None = None


_UNKNOWN = Detection(AgentState.UNKNOWN, reason="no screen yet")


def _digest(lines: Sequence[str]) -> bytes:
    text = "\n".join(lines).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(text, digest_size=16).digest()


class PaneSidecar:
    """The sidecar of one pane. Not thread-safe: one thread ticks it (the runner's)."""

    def __init__(self, pane_id: PaneId, config: SidecarConfig | None = None) -> None:
        self.pane_id = pane_id
        self.config = config or SidecarConfig()
        self.poll_enabled_override: bool | None = None
        self.poll_interval_override: float | None = None
        self.plan_policy_override: str | None = None
        self.project_poll_interval: float | None = None
        """The project's ``set-poll-interval`` (from the control plane), below the pane's own."""
        self.detection: Detection = _UNKNOWN
        self.history: deque[HistoryItem] = deque(maxlen=HISTORY_LENGTH)
        self._digest: bytes | None = None
        self._last_change: float | None = None
        self._backoff_until = float("-inf")
        self._paused = False
        self._phase = _Phase.READY
        self._phase_at = 0.0
        self._attempt = 0
        self._force = False
        self._queued: tuple[str, str] | None = None
        """Text (and its purpose) `request_text` queued for the next tick."""
        self._text = self.config.poll_command
        self._purpose = "poll"
        self._plan: _Plan | None = None
        self._cmd_known: Counter[str] = Counter()
        self._cmd_seen: Counter[str] = Counter()
        self._cmd_low_since: dict[str, float] = {}
        self._now = 0.0
        self.limit_reset_at: float | None = None
        """Set by the runner (its fleet-wide `nbs_tui.core.detection.usage_limits.ResumePlanner` knows it)."""
        self.resume_at: float | None = None

    # -- settings ------------------------------------------------------------------------------

    @property
    def poll_enabled(self) -> bool:
        if self.poll_enabled_override is not None:
            return self.poll_enabled_override
        return self.config.poll_enabled

    @property
    def poll_interval(self) -> float:
        return (
            self.poll_interval_override or self.project_poll_interval or self.config.poll_interval
        )

    @property
    def plan_policy(self) -> str:
        return self.plan_policy_override or self.config.plan_policy

    def set_poll_enabled(self, enabled: bool | None) -> None:
        """Turn injection on/off for this pane; None follows the global setting."""
        self.poll_enabled_override = enabled
        self._note(f"poll injection {'default' if enabled is None else 'on' if enabled else 'off'}")

    def set_poll_interval(self, seconds: float | None) -> None:
        """``set-poll-interval`` for this pane; None returns to the global interval."""
        if seconds is not None and seconds <= 0:
            raise ValueError(f"poll interval must be positive, not {seconds}")
        self.poll_interval_override = seconds
        self._note(f"poll interval {'default' if seconds is None else f'{seconds:g}s'}")

    def set_plan_policy(self, policy: str | None) -> None:
        if policy not in (None, "no-prompts", "off"):
            raise ValueError(f"plan policy must be 'no-prompts' or 'off', not {policy!r}")
        self.plan_policy_override = policy
        self._note(f"plan auto-select {policy or 'default'}")

    def request_poll(self) -> tuple[bool, str]:
        """The operator's "poll now": inject at the next tick if the box is safe, ignoring the
        interval (never the safety rules)."""
        if self._phase is not _Phase.READY:
            return False, "an injection is already in progress"
        if not self.detection.safe_to_inject:
            return (
                False,
                f"not safe to type: {self.detection.state.value} ({self.detection.reason})",
            )
        if self._paused:
            return False, "project is paused (.nbs/control-pause)"
        self._force = True
        return True, "poll queued for the next tick"

    def request_text(self, text: str, purpose: str) -> tuple[bool, str]:
        """Type ``text`` and submit it through the poll's handshake, starting at the next tick
        (every safety rule of the poll applies; its end is a ``purpose`` or ``purpose-failed``
        notice). Refused while another text is being typed or queued."""
        if not text:
            return False, "nothing to type"
        if self._phase is not _Phase.READY or self._queued is not None:
            return False, "an injection is already in progress"
        if not self.detection.safe_to_inject:
            return (
                False,
                f"not safe to type: {self.detection.state.value} ({self.detection.reason})",
            )
        if self._paused:
            return False, "project is paused (.nbs/control-pause)"
        self._queued = (text, purpose)
        self._note(f"{purpose} queued: {text}")
        return True, f"{purpose} queued for the next tick"

    def request_resume(self, text: str) -> tuple[bool, str]:
        """Type ``text`` into a usage-limited agent's empty input box after its reset, through
        the poll's handshake (purpose ``resume``): the one text a ``limited`` pane accepts."""
        d = self.detection
        if d.state is not AgentState.LIMITED:
            return False, f"not limited any more: {d.state.value} ({d.reason})"
        if d.limit is not None and d.limit.auto_resume:
            return False, "Claude Code continues by itself"
        if d.input_text != "":
            return False, "input box not free" if d.input_text is None else f"box holds {d.input_text!r}"
        if self._phase is not _Phase.READY or self._queued is not None:
            return False, "an injection is already in progress"
        if self._paused:
            return False, "project is paused (.nbs/control-pause)"
        self._queued = (text, "resume")
        self._note(f"resume queued: {text}")
        return True, "resume queued for the next tick"

    @property
    def last_change(self) -> float | None:
        """Clock time the screen last changed (None before the first screen)."""
        return self._last_change

    # -- the tick ------------------------------------------------------------------------------

    def tick(
        self,
        now: float,
        screen_lines: Sequence[str] | None,
        context: SidecarContext | None = None,
        *,
        detection: Detection | None = None,
    ) -> list[Action]:
        """Advance one step. ``screen_lines`` None means "unchanged since the last tick"
        (the runner skips reading screens whose version did not move). ``detection`` may be
        passed when the caller already has it (e.g. from attributes of a pyte screen)."""
        ctx = context or SidecarContext()
        self._now = now
        self._paused = ctx.paused
        actions: list[Action] = []
        changed = False
        if screen_lines is not None:
            digest = _digest(screen_lines)
            if digest != self._digest:
                changed = True
                self._digest = digest
                self._last_change = now
                new = detection if detection is not None else detect_lines(screen_lines)
                if new.state is not self.detection.state or self.detection is _UNKNOWN:
                    old = None if self.detection is _UNKNOWN else self.detection.state
                    actions.append(StateChanged(old, new.state, new))
                    self._note(f"state {new.state.value}: {new.reason}")
                self.detection = new
                actions.extend(self._scan_commands(screen_lines, now))
        if self._last_change is None:
            return actions
        if not changed:
            self._decay_commands(now)
        if ctx.viewer:
            # Whatever was under way is the holder's now: start afresh if this one acts again.
            self._phase, self._queued, self._force = _Phase.READY, None, False
            return actions
        actions.extend(self._plan_step(now))
        actions.extend(self._poll_step(now, ctx))
        return actions

    # -- poll injection ------------------------------------------------------------------------

    def _poll_blocker(self, ctx: SidecarContext, purpose: str = "poll") -> str | None:
        d = self.detection
        if ctx.viewer:
            return "another sidecar acts"
        if ctx.paused:
            return "paused"
        if ctx.held:
            return f"budget: {ctx.held}"
        if ctx.operator_typing:
            return "operator typing"
        if FLAG_CONTEXT_PRESSURE in d.flags and purpose != SEND_PURPOSE:
            return "context pressure"  # a caller may well be sending /compact
        if purpose == "resume" and d.state is AgentState.LIMITED:
            if d.limit is not None and d.limit.auto_resume:
                return "Claude Code continues by itself"
            if d.input_text is None:
                return "input box not in view"
            return "text in the input box" if d.input_text else None
        if d.state is not AgentState.IDLE:
            return d.state.value
        if d.input_text:
            return "text in the input box"
        if not d.safe_to_inject:
            return "input box not in view"
        return None

    def _idle_start(self) -> float:
        assert self._last_change is not None
        return max(self._last_change, self._backoff_until)

    def _poll_step(self, now: float, ctx: SidecarContext) -> list[Action]:
        d = self.detection
        if self._phase is _Phase.READY:
            queued, self._queued = self._queued, None
            blocker = self._poll_blocker(ctx, queued[1] if queued is not None else "poll")
            if blocker is not None:
                self._force = False
                if queued is not None:
                    why = f"{queued[0]} not typed: {blocker}"
                    self._note(f"{queued[1]} abandoned: {why}")
                    return [HandshakeEnded(queued[1], False, why)]
                return []
            if queued is not None:
                self._text, self._purpose = queued
            else:
                due = self.poll_enabled and now - self._idle_start() >= self.poll_interval
                if not (due or self._force):
                    return []
                self._force = False
                self._text, self._purpose = self.config.poll_command, "poll"
            text, purpose = self._text, self._purpose
            self._phase, self._phase_at, self._attempt = _Phase.TYPED, now, 1
            self._note(f"typing {text}")
            return [InjectPoll(text, 1, purpose, paste=purpose == SEND_PURPOSE)]

        text, purpose = self._text, self._purpose

        typed = d.input_text
        shows = box_holds(text, typed) if purpose == SEND_PURPOSE else typed == text
        if self._phase is _Phase.TYPED:
            if shows:
                if ctx.operator_typing:
                    return self._give_up(now, "operator started typing; left the text for them")
                self._phase, self._phase_at, self._attempt = _Phase.SUBMITTED, now, 1
                return [SubmitPoll(text, 1, purpose)]
            if now - self._phase_at < self.config.confirm_timeout:
                return []
            if (
                typed == ""
                and purpose != SEND_PURPOSE  # a caller's text is typed once, never again
                and d.state in (AgentState.IDLE, AgentState.LIMITED)
                and self._attempt == 1
                and self._poll_blocker(ctx, purpose) is None
            ):
                self._phase_at, self._attempt = now, 2
                self._note(f"{text} did not show in the input box; typing it again")
                return [InjectPoll(text, 2, purpose)]
            why = "box not in view" if typed is None else f"box holds {typed!r}"
            return self._give_up(now, f"{text} did not show in the input box ({why})")

        # SUBMITTED: the text must leave the box
        if not shows:
            self._phase = _Phase.READY
            self._backoff_until = now + self.config.backoff
            self._note(f"{text} submitted")
            return [HandshakeEnded(purpose, True, f"{text} submitted")]
        if now - self._phase_at < self.config.confirm_timeout:
            return []
        if self._attempt == 1:
            self._phase_at, self._attempt = now, 2
            self._note(f"{text} still in the input box; pressing Enter once more")
            return [SubmitPoll(text, 2, purpose)]
        return self._give_up(now, f"{text} stayed in the input box after two Enters")

    def _give_up(self, now: float, why: str) -> list[Action]:
        self._phase = _Phase.READY
        self._backoff_until = now + self.config.backoff
        self._note(f"{self._purpose} abandoned: {why}")
        return [HandshakeEnded(self._purpose, False, why)]

    def action_refused(self, now: float, action: Action, why: str) -> None:
        """The runner did not carry ``action`` out (live screen not safe, pane gone, error)."""
        if isinstance(action, InjectPoll | SubmitPoll):
            self._phase = _Phase.READY
            self._backoff_until = now + self.config.backoff
            self._note(f"{action.purpose} not sent: {why}")
        elif isinstance(action, SelectPlanOption):
            self._note(f"plan option {action.number} not pressed: {why}")

    # -- plan approval -------------------------------------------------------------------------

    def _plan_step(self, now: float) -> list[Action]:
        d = self.detection
        plan = self._plan
        if d.state is not AgentState.PLAN:
            if plan is None:
                return []
            if plan.gone_since is None:
                plan.gone_since = now
            if now - plan.gone_since < PLAN_GONE:
                return []
            self._plan = None
            if plan.pressed is not None:
                msg = f"plan option {plan.pressed} landed (menu gone)"
                self._note(msg)
                return [PlanNotice("landed", msg)]
            return []
        labels = tuple(o.label for o in d.options)
        if plan is None:
            self._plan = _Plan(labels, d.options, now)
            return []
        plan.gone_since = None
        if plan.pressed is not None:
            if not plan.reported and now - plan.pressed_at >= PLAN_CONFIRM_TIMEOUT:
                plan.reported = True
                msg = f"plan option {plan.pressed} did not land; the menu is left for the operator"
                self._note(msg)
                return [PlanNotice("failed", msg)]
            return []
        if labels != plan.labels:
            plan.labels, plan.options, plan.since = labels, d.options, now
            return []
        if now - plan.since < PLAN_SETTLE or plan.reported:
            return []
        if self.plan_policy == "off":
            plan.reported = True
            self._note("plan menu waiting for the operator (auto-select off)")
            return [PlanNotice("waiting", "plan menu waiting for the operator (auto-select off)")]
        choice = choose_plan_option(d.options, self.plan_policy, self.config.plan_fallback)
        if choice is None:
            plan.reported = True
            msg = "plan menu: no option proceeds without prompts; left for the operator"
            self._note(msg)
            return [PlanNotice("waiting", msg)]
        label = next(o.label for o in d.options if o.number == choice)
        plan.pressed, plan.pressed_at = choice, now
        self._note(f"plan menu: choosing {choice}. {label}")
        return [SelectPlanOption(choice, label, d.options)]

    # -- \nbs- commands ------------------------------------------------------------------------

    def _scan_commands(self, lines: Sequence[str], now: float) -> list[Action]:
        seen = Counter(scan_screen_lines(lines))
        self._cmd_seen = seen
        actions: list[Action] = []
        for line, count in seen.items():
            known = self._cmd_known[line]
            if count > known:
                for _ in range(count - known):
                    actions.append(ReportCommand(line))
                    self._note(f"screen command: {line}")
                self._cmd_known[line] = count
            if count >= self._cmd_known[line]:
                self._cmd_low_since.pop(line, None)
        self._decay_commands(now)
        return actions

    def _decay_commands(self, now: float) -> None:
        for line in list(self._cmd_known):
            if self._cmd_seen[line] >= self._cmd_known[line]:
                continue
            since = self._cmd_low_since.setdefault(line, now)
            if now - since >= COMMAND_FORGET:
                self._cmd_known[line] = self._cmd_seen[line]
                del self._cmd_low_since[line]
                if self._cmd_known[line] == 0:
                    del self._cmd_known[line]

    # -- status --------------------------------------------------------------------------------

    def _note(self, text: str) -> None:
        self.history.append(HistoryItem(self._now, text))

    @property
    def injecting(self) -> bool:
        return self._phase is not _Phase.READY

    @property
    def busy(self) -> bool:
        """A text is being typed, or is queued for the next tick (`request_text`)."""
        return self._phase is not _Phase.READY or self._queued is not None or self._force

    def status(
        self, now: float, context: SidecarContext | None = None, history: int = 10
    ) -> SidecarStatus:
        ctx = context or SidecarContext(paused=self._paused)
        if self._last_change is None:
            idle_since, idle_seconds, next_in = None, 0.0, None
        else:
            idle_since = self._last_change
            idle_seconds = max(0.0, now - self._last_change)
            next_in = None
            if (
                self.poll_enabled
                and self._phase is _Phase.READY
                and self._poll_blocker(ctx) is None
            ):
                next_in = max(0.0, self.poll_interval - (now - self._idle_start()))
        return SidecarStatus(
            pane_id=self.pane_id,
            at=now,
            detection=self.detection,
            idle_since=idle_since,
            idle_seconds=idle_seconds,
            next_poll_in=next_in,
            poll_enabled=self.poll_enabled,
            poll_interval=self.poll_interval,
            plan_policy=self.plan_policy,
            paused=ctx.paused,
            injecting=self.injecting,
            history=tuple(self.history)[-history:] if history else (),
            limit_reset_at=self.limit_reset_at if self.detection.state is AgentState.LIMITED else None,
            resume_at=self.resume_at if self.detection.state is AgentState.LIMITED else None,
        )


__all__ = [
    "Action",
    "HandshakeEnded",
    "HistoryItem",
    "InjectPoll",
    "PaneSidecar",
    "PlanNotice",
    "ReportCommand",
    "SelectPlanOption",
    "SidecarConfig",
    "SidecarContext",
    "SidecarStatus",
    "StateChanged",
    "SubmitPoll",
]
