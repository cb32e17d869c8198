"""Value types shared across nbs-tui: panes, agent states, detections.

Everything here is a frozen dataclass or an enum so it can cross threads and travel
inside Textual messages without copying or locking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

PaneId = str
"""A tmux pane id such as ``%12``: unique on its server for the server's lifetime. With several
hosts watched at once, a pane of another machine is ``HOST:%12`` (`nbs_tui.core.fleet.host_spec`)."""


@dataclass(frozen=True, slots=True)
class ServerAddress:
    """Which tmux server to talk to, chosen as tmux itself does (``-L NAME`` / ``-S PATH``)."""

    socket_name: str | None = None
    socket_path: str | None = None

    def tmux_args(self) -> list[str]:
        """The arguments that select this server on a ``tmux`` command line."""
        if self.socket_path:
            return ["-S", self.socket_path]
        if self.socket_name:
            return ["-L", self.socket_name]
        return []

    def describe(self) -> str:
        if self.socket_path:
            return f"tmux server at {self.socket_path}"
        if self.socket_name:
            return f"tmux server -L {self.socket_name}"
        return "the default tmux server"


def server_key(server: ServerAddress) -> str:
    """A file-name-safe name of a server on its host (``default``, ``L-name``, ``S-_tmp_sock``):
    the service's pid file, the fleet memory and the answer card's target all use it."""
    if server.socket_path:
        raw = "S-" + server.socket_path
    elif server.socket_name:
        raw = "L-" + server.socket_name
    else:
        raw = "default"
    return re.sub(r"[^A-Za-z0-9._-]", "_", raw)


@dataclass(frozen=True, slots=True)
class PaneInfo:
    """One tmux pane as discovered, with whether it runs a Claude Code agent."""

    pane_id: PaneId
    session_name: str
    window_index: int
    window_name: str
    pane_index: int
    title: str
    current_command: str
    current_path: str
    pid: int
    width: int
    height: int
    active: bool = False
    dead: bool = False
    is_agent: bool = False
    host: str = ""
    """The watched host it is on, when several are watched (empty: the only one)."""

    @property
    def target(self) -> str:
        """``session:window.pane`` (``host:session:window.pane`` with several hosts), the name a
        person reads."""
        where = f"{self.session_name}:{self.window_index}.{self.pane_index}"
        return f"{self.host}:{where}" if self.host else where


class AgentState(StrEnum):
    """What an agent pane is doing, as detected from its screen (and later other sources)."""

    WORKING = "working"
    IDLE = "idle"
    PERMISSION = "permission"
    PLAN = "plan"
    QUESTION = "question"
    DIALOG = "dialog"
    ERROR = "error"
    LIMITED = "limited"
    """The account hit a usage limit: the agent waits for the reset (`UsageLimit`), not on a person."""
    UNKNOWN = "unknown"

    @property
    def needs_person(self) -> bool:
        """States in which the agent waits on a human, not on itself."""
        return self in (AgentState.PERMISSION, AgentState.QUESTION, AgentState.DIALOG, AgentState.ERROR)


@dataclass(frozen=True, slots=True)
class MenuOption:
    """One numbered option of a menu on screen."""

    number: int
    label: str
    selected: bool = False


@dataclass(frozen=True, slots=True)
class UsageLimit:
    """A usage-limit message on screen, as `nbs_tui.core.detection.usage_limits.parse_limit` read it.

    The reset is kept as the screen gives it (a wall-clock time in a named zone, sometimes a
    date): turning it into an instant needs the zone's rules, which the caller supplies
    (`nbs_tui.core.detection.usage_limits.reset_instant`).
    """

    kind: str
    """``session``, ``5-hour``, ``weekly``, ``Opus weekly``, ``usage`` (older wording)…"""
    text: str
    """The line that says so, stripped."""
    resets: str = ""
    """The reset as shown: ``12:50am (America/Los_Angeles)``, ``Aug 3 at 12am (Asia/Tokyo)``."""
    hour: int | None = None
    minute: int = 0
    month: int | None = None
    day: int | None = None
    tz: str | None = None
    """The IANA zone named in parentheses; None when the screen names none (the local zone)."""
    epoch: float | None = None
    """An exact reset instant (unix seconds) when the screen prints one (``…reached|1750000000``)."""
    auto_resume: bool = False
    """Claude Code says it will continue by itself at the reset (2.1.3xx): send no continue."""


@dataclass(frozen=True, slots=True)
class Detection:
    """The result of reading one screen: the state and what else a sidecar needs to act."""

    state: AgentState
    options: tuple[MenuOption, ...] = ()
    input_text: str | None = None
    """Text typed in the input box; ``""`` for an empty box, ``None`` when no box is in view."""
    safe_to_inject: bool = False
    """True only when typing into the pane now cannot disturb anyone: idle, empty box, no menu."""
    plan_choice: int | None = None
    """For ``plan``: the option number the default no-prompt policy picks."""
    reason: str = ""
    """A short human-readable why, for the pane's detail view and for debugging."""
    flags: frozenset[str] = field(default_factory=frozenset)
    """Extra facts such as ``context-pressure`` or ``plan-mode`` that do not change the state."""
    limit: UsageLimit | None = None
    """For ``limited``: what the screen says about the limit and its reset."""
    prompt: str = ""
    """For a menu: the rows above its options (the question, the command asked about), for a
    person to read and for checking later that the same menu is still open."""
