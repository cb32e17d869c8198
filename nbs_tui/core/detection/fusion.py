"""One state per pane from every source: the screen, hooks, session-status files, transcripts.

Pure: the caller passes the readings and ``now`` (wall-clock seconds, the clock hooks and
status files use), and the previous result so a long disagreement can be timed.

Precedence, in order (each rule names the source it trusts):

1. A menu or dialog on screen (permission, plan, question, dialog), or a usage limit, beats an
   exact source that says working, idle or error: the screen is a live mirror, a prompt is not in
   the transcript, and a limit is only an API error (or a Stop) to the other sources.
   An exact source that knows which menu it is (a PermissionRequest for ExitPlanMode is a
   plan) refines the screen's reading when the screen only says "permission".
2. A transcript API error newer than every other exact event, while the screen does not show
   work or a menu, is the state: the agent stopped on an error (no hook fires for it).
3. The newest exact reading (hook or status file) wins when it is newer than the last screen
   change and not older than ``quiet_after``: a source that went quiet is not trusted forever.
   Between a hook and a status file the newer wins; a status file's bare "waiting" takes the
   hook's finer plan/question when the hook reports that menu.
4. Otherwise the screen, when it recognises the state.
5. Otherwise the newest exact reading of any age, then the transcript's own guess.

Where the screen and the newest exact source disagree for longer than ``disagree_after`` the
result says so (``disagreement``), whichever of them is trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from nbs_tui.core.fleet.model import AgentState, Detection

MENU_STATES = frozenset({AgentState.PERMISSION, AgentState.PLAN, AgentState.QUESTION, AgentState.DIALOG})


class Source(StrEnum):
    SCREEN = "screen"
    HOOK = "hook"
    STATUS = "status"
    TRANSCRIPT = "transcript"


@dataclass(frozen=True, slots=True)
class Reading:
    """What one source says, and since when (wall-clock seconds)."""

    source: Source
    state: AgentState
    at: float
    """When this value was last confirmed: screen change, hook time, status change, record time."""
    detail: str = ""
    """For people: ``Stop``, ``waiting: permission prompt``, ``assistant called Bash``."""


@dataclass(frozen=True, slots=True)
class FusionPolicy:
    quiet_after: float = 120.0
    """An exact reading older than this no longer overrides a screen that recognises its state."""
    disagree_after: float = 10.0
    """Sources that disagree for longer than this are reported."""


DEFAULT_POLICY = FusionPolicy()


@dataclass(frozen=True, slots=True)
class FusedState:
    state: AgentState
    source: Source
    """The source trusted for ``state``."""
    why: str
    readings: tuple[Reading, ...]
    """Every source's last value, in Source order (for the pane's detail view)."""
    disagreement: str | None = None
    disagree_since: float | None = None

    def reading(self, source: Source) -> Reading | None:
        return next((r for r in self.readings if r.source == source), None)


def screen_reading(detection: Detection, changed_at: float) -> Reading:
    """The screen's reading: its detection, dated by the last time the screen changed."""
    return Reading(Source.SCREEN, detection.state, changed_at, detection.reason)


def _coarse(state: AgentState) -> str:
    if state in MENU_STATES:
        return "waiting"
    return state.value


def _describe(reading: Reading, now: float) -> str:
    detail = f" ({reading.detail})" if reading.detail else ""
    return f"{reading.source.value} says {reading.state.value}{detail}, {max(0.0, now - reading.at):.0f}s ago"


def fuse(
    readings: Sequence[Reading],
    now: float,
    previous: FusedState | None = None,
    policy: FusionPolicy = DEFAULT_POLICY,
) -> FusedState:
    """Fuse the latest reading of each source into one state (see the module's rules)."""
    latest: dict[Source, Reading] = {}
    for reading in readings:
        known = latest.get(reading.source)
        if known is None or reading.at >= known.at:
            latest[reading.source] = reading
    ordered = tuple(latest[s] for s in Source if s in latest)
    screen = latest.get(Source.SCREEN)
    hook = latest.get(Source.HOOK)
    status = latest.get(Source.STATUS)
    transcript = latest.get(Source.TRANSCRIPT)
    exact = [r for r in (hook, status) if r is not None and r.state != AgentState.UNKNOWN]
    newest_exact = max(exact, key=lambda r: (r.at, r.source == Source.HOOK)) if exact else None
    screen_known = screen is not None and screen.state != AgentState.UNKNOWN

    def result(state: AgentState, source: Source, why: str) -> FusedState:
        note, since = _disagreement(screen, newest_exact, now, previous, policy)
        return FusedState(state, source, why, ordered, note, since)

    # 1. A menu or a usage limit on screen.
    if screen is not None and screen.state is AgentState.LIMITED:
        return result(screen.state, Source.SCREEN, f"screen shows limited: {screen.detail}".rstrip(": "))
    if screen is not None and screen.state in MENU_STATES:
        refined = _refine_menu(screen.state, hook)
        if refined != screen.state and hook is not None:
            return result(refined, Source.HOOK, f"screen shows a menu; {_describe(hook, now)}")
        return result(screen.state, Source.SCREEN, f"screen shows {screen.state.value}: {screen.detail}".rstrip(": "))

    # 2. An API error the agent stopped on.
    if (
        transcript is not None
        and transcript.state == AgentState.ERROR
        and all(transcript.at >= r.at for r in exact if r.state != AgentState.IDLE)
        and (hook is None or transcript.at >= hook.at)
        and not (screen is not None and screen.state == AgentState.WORKING and screen.at > transcript.at)
    ):
        return result(AgentState.ERROR, Source.TRANSCRIPT, _describe(transcript, now))

    # 3. A fresh exact event newer than the last screen change.
    if (
        newest_exact is not None
        and now - newest_exact.at <= policy.quiet_after
        and (screen is None or not screen_known or newest_exact.at >= screen.at)
    ):
        state = newest_exact.state
        source = newest_exact.source
        if source == Source.STATUS and state == AgentState.PERMISSION and hook is not None:
            finer = _refine_menu(state, hook)
            if finer != state:
                return result(finer, Source.HOOK, _describe(hook, now))
        return result(state, source, f"{_describe(newest_exact, now)}; newer than the screen")

    # 4. The screen.
    if screen is not None and screen_known:
        return result(screen.state, Source.SCREEN, f"screen shows {screen.state.value}: {screen.detail}".rstrip(": "))

    # 5. Anything at all.
    if newest_exact is not None:
        return result(newest_exact.state, newest_exact.source, f"{_describe(newest_exact, now)}; screen not recognised")
    if transcript is not None and transcript.state != AgentState.UNKNOWN:
        return result(transcript.state, Source.TRANSCRIPT, _describe(transcript, now))
    return result(AgentState.UNKNOWN, Source.SCREEN, "no source recognises the state")


def _refine_menu(state: AgentState, hook: Reading | None) -> AgentState:
    """A bare "permission" becomes the hook's plan or question when the hook knows better."""
    if state == AgentState.PERMISSION and hook is not None and hook.state in (AgentState.PLAN, AgentState.QUESTION):
        return hook.state
    return state


def _disagreement(
    screen: Reading | None,
    exact: Reading | None,
    now: float,
    previous: FusedState | None,
    policy: FusionPolicy,
) -> tuple[str | None, float | None]:
    if screen is None or exact is None or screen.state == AgentState.UNKNOWN:
        return None, None
    if _coarse(screen.state) == _coarse(exact.state):
        return None, None
    if screen.state is AgentState.LIMITED and exact.state in (AgentState.IDLE, AgentState.ERROR):
        return None, None  # a limit ends the turn: a Stop or an API error to the other sources
    since = previous.disagree_since if previous is not None and previous.disagree_since is not None else now
    if now - since < policy.disagree_after:
        return None, since
    note = (
        f"for {now - since:.0f}s the screen says {screen.state.value} but the {exact.source.value} "
        f"says {exact.state.value}" + (f" ({exact.detail})" if exact.detail else "")
    )
    return note, since
