"""What the sidecar tells its listeners: one frozen class per thing it reports in one pane (a
`SidecarEvent`, on the runner's thread), and `SidecarSnapshot` (what the runner knew after its
last tick, read by any thread without a lock). Values only: the app, headless, the pushes and
the lease's relay all read them, and test them with ``isinstance`` or ``match``.

Each event has its JSON form (`SidecarEvent.as_json`): the line ``--headless`` prints
(docs/reference.md; other tools read it, so its keys and their order stay as they are), and
its fields (`SidecarEvent.details`) are what the lease relays to views through tmux
(`nbs_tui.core.sidecar.relay`), from which a view builds the same event again (`relayed_event`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from nbs_tui.core.detection.detect import Detection, detection_as_json
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.core.sidecar.pane_sidecar import SidecarStatus
from nbs_tui.core.sidecar.relay import RelayedAction
from nbs_tui.core.sidecar.stuck_agents import StuckStatus

Details = tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class SidecarEvent:
    """Something the sidecar saw or did in one pane (a subclass says what)."""

    KIND: ClassVar[str] = ""
    """The ``event`` of its JSON line and its name in the relay's ring."""

    pane_id: PaneId
    at: float
    """Wall-clock time (``time.time()``)."""
    message: str = ""
    _: KW_ONLY
    by: str = ""
    """Who acted when this is another process's action relayed to this one (``HOST pid PID``,
    the lease holder's, or a stop or restart by anyone); "" for this process's own."""

    def details(self) -> Details:
        """The event's own fields, in the order its JSON line has them."""
        return ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.KIND, "pane": self.pane_id, "time": round(self.at, 3)}
        out.update(self.details())
        if self.by:
            out["by"] = self.by
        if self.message:
            out["message"] = self.message
        return out

    def history(self) -> str | None:
        """The line of the pane's history this event writes (None: it writes none)."""
        text = self._history()
        if text is not None and self.by:  # relayed from another process (core/relay.py)
            text += f" (by sidecar {self.by})"
        return text

    def _history(self) -> str | None:
        return f"{self.KIND}: {self.message}"


def _some(*pairs: tuple[str, Any]) -> Details:
    """The pairs whose value is given (None: absent, as a relayed event whose field was empty)."""
    return tuple((key, value) for key, value in pairs if value is not None)


def _stepped(kind: str, result: str, what: object, message: str) -> str:
    text = " ".join(str(x) for x in (kind, result, what) if x)
    return f"{text}: {message}" if message else text


@dataclass(frozen=True, slots=True)
class StateChange(SidecarEvent):
    """The detected state changed; ``message`` is the detection's reason."""

    KIND: ClassVar[str] = "state"
    _: KW_ONLY
    detection: Detection
    question: str = ""
    """A menu's question, one line (`question_line`), for a push notification; not in the JSON
    (headless lines and the service log carry no screen text)."""

    def details(self) -> Details:
        return tuple(detection_as_json(self.detection).items())

    def _history(self) -> str | None:
        text = f"state → {self.detection.state.value}"
        return f"{text} ({self.message})" if self.message else text


@dataclass(frozen=True, slots=True)
class PaneLeft(SidecarEvent):
    """The pane is gone or runs no agent any more: the sidecar stops watching it (a ``state``
    line with the state ``gone``)."""

    KIND: ClassVar[str] = "state"

    def details(self) -> Details:
        return (("state", "gone"),)

    def _history(self) -> str | None:
        return f"state → gone ({self.message})" if self.message else "state → gone"


@dataclass(frozen=True, slots=True)
class TypingStep(SidecarEvent):
    """A step of the typing handshake (``result``: queued, typed, enter, submitted, failed,
    refused, recovered...); a subclass says whose handshake."""

    _: KW_ONLY
    result: str
    text: str | None = None
    attempt: int | None = None

    def details(self) -> Details:
        return _some(("result", self.result), ("text", self.text), ("attempt", self.attempt))


@dataclass(frozen=True, slots=True)
class PollStep(TypingStep):
    """A step of ``/nbs-poll``'s injection."""

    KIND: ClassVar[str] = "poll"

    def _history(self) -> str | None:
        return _stepped(self.KIND, self.result, self.text, self.message)


@dataclass(frozen=True, slots=True)
class NudgeStep(TypingStep):
    """A step of a stuck agent's nudge (``nudge``: its number, when queued or refused)."""

    KIND: ClassVar[str] = "nudge"
    _: KW_ONLY
    nudge: int | None = None

    def details(self) -> Details:
        return _some(
            ("result", self.result), ("text", self.text), ("nudge", self.nudge), ("attempt", self.attempt)
        )


@dataclass(frozen=True, slots=True)
class ResumeStep(TypingStep):
    """A step of resuming a limited agent after its reset (also wait-chosen, held)."""

    KIND: ClassVar[str] = "resume"


@dataclass(frozen=True, slots=True)
class SendStep(TypingStep):
    """A step of typing a caller's text (``nbs-tui send``, the work queue): queued, typed,
    enter, submitted, failed, refused."""

    KIND: ClassVar[str] = "send"

    def _history(self) -> str | None:
        return _stepped(self.KIND, self.result, self.text, self.message)


TYPING_STEPS: Mapping[str, type[TypingStep]] = MappingProxyType(
    {"poll": PollStep, "nudge": NudgeStep, "resume": ResumeStep, "send": SendStep}
)
"""The step's class by the handshake's purpose (`nbs_tui.core.sidecar.pane_sidecar.InjectPoll.purpose`)."""


@dataclass(frozen=True, slots=True)
class PlanSelect(SidecarEvent):
    """The plan menu: an option pressed (``number``, ``label``), landed, failed, waiting, refused."""

    KIND: ClassVar[str] = "plan-select"
    _: KW_ONLY
    result: str
    number: int | None = None
    label: str | None = None

    def details(self) -> Details:
        return _some(("result", self.result), ("number", self.number), ("label", self.label))

    def _history(self) -> str | None:
        return _stepped(self.KIND, self.result, self.label or self.number, self.message)


@dataclass(frozen=True, slots=True)
class CommandSeen(SidecarEvent):
    """A ``\\nbs-`` line seen on the pane's screen (``project``: the pane's directory)."""

    KIND: ClassVar[str] = "command"
    _: KW_ONLY
    line: str
    project: str

    def details(self) -> Details:
        return (("line", self.line), ("project", self.project))

    def _history(self) -> str | None:
        return f"command {self.line}"


@dataclass(frozen=True, slots=True)
class Escalation(SidecarEvent):
    """A stuck agent needs a person: idle past the grace period after its nudges."""

    KIND: ClassVar[str] = "escalate"
    _: KW_ONLY
    reason: str | None = "stuck"

    def details(self) -> Details:
        return _some(("reason", self.reason))


@dataclass(frozen=True, slots=True)
class AgentEnded(SidecarEvent):
    """The agent's process exited or its pane is gone (``liveness``: exited, gone); said once."""

    KIND: ClassVar[str] = "agent-ended"
    _: KW_ONLY
    liveness: str

    def details(self) -> Details:
        return (("liveness", self.liveness),)


@dataclass(frozen=True, slots=True)
class LimitStep(SidecarEvent):
    """A usage limit seen or gone (``result``: limited, cleared; ``reset_at``: unix seconds or
    None, printed as null)."""

    KIND: ClassVar[str] = "limit"
    _: KW_ONLY
    result: str
    reset_at: float | None

    def details(self) -> Details:
        return (("result", self.result), ("reset_at", self.reset_at))


@dataclass(frozen=True, slots=True)
class StatusChange(SidecarEvent):
    """The pane's settings or countdown changed (not printed by ``--headless``)."""

    KIND: ClassVar[str] = "status"
    _: KW_ONLY
    status: SidecarStatus

    def _history(self) -> str | None:
        return None


@dataclass(frozen=True, slots=True)
class SidecarError(SidecarEvent):
    """A tmux call or the control plane failed (the runtime reports it as a problem)."""

    KIND: ClassVar[str] = "error"


@dataclass(frozen=True, slots=True)
class RelayGap(SidecarEvent):
    """Actions of the lease holder were missed between two reads of its relay."""

    KIND: ClassVar[str] = "relay"


@dataclass(frozen=True, slots=True)
class MetersNews(SidecarEvent):
    """An agent's meters as the lease holder published them (None: it has none; not printed by
    ``--headless``)."""

    KIND: ClassVar[str] = "meters"
    _: KW_ONLY
    meters: Meters | None

    def details(self) -> Details:
        return (("meters", self.meters),)

    def _history(self) -> str | None:
        return None


@dataclass(frozen=True, slots=True)
class LifecycleNews(SidecarEvent):
    """Another process (``nbs-tui stop|restart``, another dashboard) stopped or restarted an
    agent (``by`` says who); read from the server's ring, so every field may be missing."""

    _: KW_ONLY
    result: str | None = None
    text: str | None = None
    reason: str | None = None
    target: str | None = None

    def details(self) -> Details:
        return _some(("result", self.result), ("text", self.text), ("reason", self.reason), ("target", self.target))


@dataclass(frozen=True, slots=True)
class AgentStopped(LifecycleNews):
    """An agent stopped by another process (``text``: how, e.g. ``/exit``)."""

    KIND: ClassVar[str] = "stop"


@dataclass(frozen=True, slots=True)
class AgentRestarted(LifecycleNews):
    """An agent restarted in place by another process (``text``: ``claude --resume ID``)."""

    KIND: ClassVar[str] = "restart"


RELAYED_EVENTS = (PollStep, PlanSelect, NudgeStep, Escalation, ResumeStep, SendStep)
"""What only the lease holder does, relayed to every view (`nbs_tui.core.sidecar.relay`; a view
detects states and commands itself)."""


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return None if value is None or value == "" else str(value)


def _number(data: Mapping[str, Any], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def relayed_event(action: RelayedAction, pane_id: PaneId) -> SidecarEvent | None:
    """The event another process's relayed ``action`` stands for, marked ``by`` it (None: a
    kind this version does not know)."""
    data = dict(action.data)
    head = (pane_id, action.at, action.message)
    result = _text(data, "result") or ""
    match action.kind:
        case "poll" | "nudge" | "resume" | "send":
            step = TYPING_STEPS[action.kind]
            text, attempt = _text(data, "text"), _number(data, "attempt")
            if step is NudgeStep:
                return NudgeStep(*head, by=action.by, result=result, text=text, attempt=attempt, nudge=_number(data, "nudge"))
            return step(*head, by=action.by, result=result, text=text, attempt=attempt)
        case "plan-select":
            return PlanSelect(*head, by=action.by, result=result, number=_number(data, "number"), label=_text(data, "label"))
        case "escalate":
            return Escalation(*head, by=action.by, reason=_text(data, "reason"))
        case "stop" | "restart":
            news = AgentStopped if action.kind == "stop" else AgentRestarted
            return news(
                *head, by=action.by, result=_text(data, "result"), text=_text(data, "text"),
                reason=_text(data, "reason"), target=_text(data, "target"),
            )  # fmt: skip
    return None


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
        "send": "a caller's text (nbs-tui send, the work queue): queued, typed, enter, submitted, failed, refused",
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
