"""Stuck agents, after oj's design: idle grace timer, nudge, escalate; exits reported once.

An agent idle at its prompt whose transcript has not grown for ``grace`` seconds is nudged
(at most ``max_nudges`` times, never within ``grace`` of our own last nudge, only when typing is
safe), then escalated. Growth of the transcript restarts the timer; our nudge's own turn does
not count as recovery, but work that goes on longer than ``grace`` after the nudge, or any work
after an escalation, does and clears the count. Pure: the caller passes ``now``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from nbs_tui.core.fleet.model import AgentState, PaneId


class Liveness(StrEnum):
    RUNNING = "running"
    """A Claude Code process runs in the pane."""
    EXITED = "exited"
    """The pane is there but its Claude Code process ended."""
    GONE = "gone"
    """The pane (its tmux session) no longer exists."""
    UNKNOWN = "unknown"
    """No process information (no status file seen): judged from the screen alone."""


@dataclass(frozen=True, slots=True)
class Nudge:
    """Type ``text`` into the pane and press Enter (only sent when typing is safe)."""

    pane_id: PaneId
    text: str
    attempt: int


@dataclass(frozen=True, slots=True)
class Escalate:
    """Put the pane in the "needs you" queue and notify the person."""

    pane_id: PaneId
    why: str


@dataclass(frozen=True, slots=True)
class Ended:
    """The agent's process exited or its tmux session is gone (reported once)."""

    pane_id: PaneId
    liveness: Liveness
    why: str


StuckAction = Nudge | Escalate | Ended


class Phase(StrEnum):
    ACTIVE = "active"
    IDLE = "idle"
    NUDGED = "nudged"
    ESCALATED = "escalated"
    ENDED = "ended"


@dataclass(frozen=True, slots=True)
class StuckStatus:
    """For the pane's detail view: where the agent is in the stuck cycle."""

    phase: Phase
    idle_since: float | None
    nudges: int
    last_nudge_at: float | None
    note: str


class StuckWatch:
    """The per-pane stuck state machine. Call :meth:`observe` on every tick."""

    def __init__(self, pane_id: PaneId, grace: float = 60.0, nudge_text: str = "", max_nudges: int = 1) -> None:
        self.pane_id = pane_id
        self.grace = grace
        self.nudge_text = nudge_text
        self.max_nudges = max_nudges
        self._idle_since: float | None = None
        self._baseline: int | None = None
        self._nudges = 0
        self._last_nudge_at: float | None = None
        self._escalated = False
        self._ended: Liveness | None = None

    @property
    def status(self) -> StuckStatus:
        if self._ended is not None:
            return StuckStatus(Phase.ENDED, None, self._nudges, self._last_nudge_at, f"agent {self._ended.value}")
        if self._escalated:
            phase, note = Phase.ESCALATED, f"stuck: escalated after {self._nudges} nudge(s)"
        elif self._nudges:
            phase, note = Phase.NUDGED, f"nudged {self._nudges}/{self.max_nudges}"
        elif self._idle_since is not None:
            phase, note = Phase.IDLE, "idle at its prompt"
        else:
            phase, note = Phase.ACTIVE, ""
        return StuckStatus(phase, self._idle_since, self._nudges, self._last_nudge_at, note)

    def observe(
        self,
        now: float,
        state: AgentState,
        transcript_size: int | None = None,
        liveness: Liveness = Liveness.UNKNOWN,
        safe_to_nudge: bool = True,
        busy: bool = False,
    ) -> list[StuckAction]:
        """Advance the machine; returns the actions to carry out now (usually none).

        ``busy``: text of ours (a nudge, a poll) is being typed into the pane right now;
        neither nudge nor escalate until it has gone in or failed."""
        if liveness in (Liveness.EXITED, Liveness.GONE):
            self._idle_since = None
            if self._ended == liveness:
                return []
            self._ended = liveness
            why = "its Claude Code process exited" if liveness == Liveness.EXITED else "its tmux session is gone"
            return [Ended(self.pane_id, liveness, why)]
        if self._ended is not None:
            self._ended = None
            self._reset()

        if state != AgentState.IDLE:
            self._idle_since = None
            self._baseline = None
            if state == AgentState.WORKING and (
                self._escalated
                or (self._last_nudge_at is not None and now - self._last_nudge_at > self.grace)
            ):
                self._reset()
            return []

        if self._idle_since is None:
            self._idle_since, self._baseline = now, transcript_size
            return []
        if transcript_size is not None and transcript_size != self._baseline:
            self._idle_since, self._baseline = now, transcript_size
            return []
        if busy or self._escalated or now - self._idle_since < self.grace:
            return []
        if self._last_nudge_at is not None and now - self._last_nudge_at < self.grace:
            return []
        if self._nudges < self.max_nudges:
            if not safe_to_nudge:
                return []
            self._nudges += 1
            self._last_nudge_at = now
            self._idle_since = now
            return [Nudge(self.pane_id, self.nudge_text, self._nudges)]
        self._escalated = True
        idle_for = now - self._idle_since
        if self._nudges:
            why = f"still idle {idle_for:.0f}s after {self._nudges} nudge(s); its transcript is not growing"
        else:
            why = f"idle {idle_for:.0f}s at its prompt; its transcript is not growing"
        return [Escalate(self.pane_id, why)]

    def undo_nudge(self) -> None:
        """The last nudge was not delivered (the screen changed first): it does not count."""
        if self._nudges:
            self._nudges -= 1
            self._last_nudge_at = None

    def _reset(self) -> None:
        self._nudges = 0
        self._last_nudge_at = None
        self._escalated = False
