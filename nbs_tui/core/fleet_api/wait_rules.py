"""``nbs-tui wait``'s judgement, pure: what each look at an agent's published state means for
the state waited for (``--until idle|needs|done|gone``).

The command looks at the states the lease holder publishes on each agent pane (``@nbs_state``,
``@nbs_needs``), every half second or so, and feeds each look to the agent's `TargetWait`:

- ``idle``: the agent is idle now;
- ``needs``: it waits on a person (any needs-you state the holder publishes: permission, plan,
  question, dialog, error, stuck);
- ``done``: it was *seen working after the wait began* and is idle now. An idle agent at the
  start is not done (herdr's lesson #3506: never a stale idle); neither is a state's ``since``
  that moved (a new holder republishes every state with a new ``since`` and no work done).
  ``working`` counts once the holder that published it is seen renewing its lease after that
  look (`Holder`): a holder killed while its agent worked leaves ``working`` on the pane, stale,
  until another takes over;
- ``gone``: its pane is gone, dead, or holds another process now, or the holder has published
  no state for it for `UNPUBLISHED_GRACE` seconds (its agent exited: the holder unpublishes a
  pane that is no longer an agent; a holder taking over clears every state for a moment).

A pane gone while waiting for anything else ends that agent's wait: it can never get there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from nbs_tui.core.fleet.model import PaneId

UNPUBLISHED_GRACE = 3.0
"""Seconds a live pane may show no published state before its agent counts as gone: longer
than the holder's tick (1 s) that republishes every state after a takeover clears them."""


@dataclass(frozen=True, slots=True)
class Holder:
    """The lease as one look read it: the holder's token and its renewal count."""

    token: str
    seq: int

    def renewed_since(self, earlier: Holder) -> bool:
        """The same holder renewed after ``earlier`` was read: it was alive after that look."""
        return self.token == earlier.token and self.seq > earlier.seq


class Until(StrEnum):
    IDLE = "idle"
    NEEDS = "needs"
    DONE = "done"
    GONE = "gone"


@dataclass(frozen=True, slots=True)
class PaneLook:
    """One agent pane as one ``list-panes`` showed it (None for a pane not listed at all)."""

    pid: int
    dead: bool
    state: str
    """``@nbs_state`` as the holder published it; "" when none is."""
    needs: str = ""


class TargetWait:
    """One agent's wait: fed each look, it says when the state waited for is reached."""

    def __init__(self, pane_id: PaneId, pid: int, until: Until, started: float) -> None:
        self.pane_id = pane_id
        self.pid = pid
        """The pane's first process when the wait began: another one there is another agent."""
        self.until = until
        self.started = started
        self.seen_working = False
        self.state = ""
        """The last published state seen ("" none; ``gone`` once the agent is gone)."""
        self.needs = ""
        self.reached_at: float | None = None
        self.gone_why = ""
        """Why the agent counts as gone, once it does."""
        self._unpublished_since: float | None = None
        self._working_under: Holder | None = None
        """The lease when ``working`` was seen, until a renewal confirms it."""

    @property
    def reached(self) -> bool:
        return self.reached_at is not None

    @property
    def ended(self) -> bool:
        """Reached, or gone while waiting for something else: nothing more to wait for."""
        return self.reached or bool(self.gone_why)

    def look(self, seen: PaneLook | None, now: float, holder: Holder | None) -> None:
        """Take one look at the pane (its row of one ``list-panes``, or None: not listed), with
        the lease as the same tmux command line read it (None: free, or not nbs-tui's)."""
        if self.ended:
            return
        gone = self._gone_why(seen, now)
        if gone:
            self.state, self.needs, self.gone_why = "gone", "", gone
            if self.until is Until.GONE:
                self.reached_at = now
            return
        under = self._working_under
        if under is not None and holder is not None and holder.renewed_since(under):
            self.seen_working = True
        if seen is None or not seen.state:
            return  # unpublished for a moment (a holder taking over): no news either way
        self.state, self.needs = seen.state, seen.needs
        if seen.state == "working" and holder is not None and (under is None or under.token != holder.token):
            self._working_under = holder
        if self._there(seen):
            self.reached_at = now

    def _there(self, seen: PaneLook) -> bool:
        if self.until is Until.IDLE:
            return seen.state == "idle"
        if self.until is Until.NEEDS:
            return bool(seen.needs)
        if self.until is Until.DONE:
            return seen.state == "idle" and self.seen_working
        return False

    def _gone_why(self, seen: PaneLook | None, now: float) -> str:
        if seen is None:
            return "the pane is gone"
        if seen.dead:
            return "the pane's program has exited"
        if not self.pid:
            self.pid = seen.pid  # the first look: the process the wait is about
        elif seen.pid != self.pid:
            return f"the pane holds another process now ({self.pid} -> {seen.pid})"
        if seen.state:
            self._unpublished_since = None
            return ""
        if self._unpublished_since is None:
            self._unpublished_since = now
        if now - self._unpublished_since >= UNPUBLISHED_GRACE:
            return "its agent is gone (the lease holder publishes no state for it)"
        return ""

    def as_json(self) -> dict[str, Any]:
        return {
            "pane_id": self.pane_id,
            "state": self.state or None,
            "needs": self.needs or None,
            "reached": self.reached,
            "seen_working": self.seen_working,
            "gone": self.gone_why or None,
            "after": round(self.reached_at - self.started, 3) if self.reached_at is not None else None,
        }


def all_reached(waits: list[TargetWait], any_one: bool) -> bool:
    """Whether the wait is over: every agent reached the state (``any_one``: one of them did)."""
    return any(w.reached for w in waits) if any_one else all(w.reached for w in waits)


def hopeless(waits: list[TargetWait], any_one: bool) -> bool:
    """Whether the wait can no longer succeed: an agent it needs is gone (waiting for another
    state), or, with ``any_one``, every one is."""
    stuck = [w.ended and not w.reached for w in waits]
    return all(stuck) if any_one else any(stuck)
