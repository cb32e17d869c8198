"""Claude Code's own background sessions (``claude --bg``), as ``claude agents --json`` reports them.

Measured on the real CLI (docs/lifecycle.md, "Background sessions"): ``agents --json`` exists from
2.1.150 (its ``agents --help`` names ``--json``), ``--bg`` from 2.1.197, ``attach <id>`` from 2.1.150
(hidden from ``--help`` until 2.1.265; ``claude attach --help`` of 2.1.120 says "'attach' is not
available in this release"). The reply is a JSON array, one object a live session:

* 2.1.197, while a session starts: ``id`` (8 hex digits, what ``attach`` takes), ``cwd``, ``kind``
  (``background``; ``interactive`` for a session in a terminal), ``startedAt`` (ms), ``sessionId``,
  ``name``, ``state`` (``working``; ``stopped`` with ``--all``);
* once it runs (2.1.197, 2.1.265, 2.1.332): also ``pid`` and ``status`` (``busy``, ``idle``, the
  status file's word; ``state`` is the job's and stays ``working`` while it lives).

`parse_agents_json` keeps what it knows and ignores any other field; a reply that is not such an
array is a `problem` (one line, shown as a backend problem), never an exception. Pure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

BACKGROUND_KIND = "background"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
"""What an ``attach`` id may be: it goes on a command line (no spaces, no options)."""


@dataclass(frozen=True, slots=True)
class BackgroundSession:
    """One live Claude Code session as ``claude agents --json`` reports it."""

    id: str
    """The short id ``claude attach`` takes."""
    kind: str = BACKGROUND_KIND
    name: str = ""
    cwd: str = ""
    session_id: str = ""
    status: str = ""
    """``busy`` / ``idle`` / ...: what the session says it does (absent while it starts)."""
    state: str = ""
    """The job's state: ``working`` while it lives."""
    pid: int | None = None
    started_at: float | None = None
    """Unix seconds."""

    @property
    def reported(self) -> str:
        """The state to show: its status once it has one, else the job's state, else "starting"."""
        return self.status or self.state or "starting"

    @property
    def label(self) -> str:
        """Its name, else its id."""
        return self.name or self.id


@dataclass(frozen=True, slots=True)
class AgentsReply:
    """What one ``claude agents --json`` said: the background sessions, or why it could not be read."""

    sessions: tuple[BackgroundSession, ...] = ()
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class BackgroundSupport:
    """What the installed Claude Code offers of background sessions (read once from its help)."""

    list_json: bool = False
    """``claude agents --json`` (2.1.150+)."""
    attach: bool = False
    """``claude attach <id>`` (2.1.150+)."""


NO_SUPPORT = BackgroundSupport()


def background_support(agents_help: str, attach_help: str) -> BackgroundSupport:
    """From ``claude agents --help`` and ``claude attach --help`` (each "" when it failed)."""
    flat = " ".join(agents_help.split())
    return BackgroundSupport(
        list_json=bool(re.search(r"(?:^|\s)--json\b", flat)),
        attach=bool(re.search(r"^Usage:.*\battach\b", attach_help, re.M)),
    )


def _text(item: dict[str, object], key: str) -> str:
    value = item.get(key)
    return value if isinstance(value, str) else ""


def parse_agents_json(text: str) -> AgentsReply:
    """The background sessions in a reply of ``claude agents --json`` (module docstring).
    Interactive sessions are left out: they run in a terminal of their own (a tmux pane is
    already in the fleet). An entry without a usable id is skipped; a reply that is not a JSON
    array of objects is a problem."""
    try:
        data = json.loads(text)
    except ValueError as error:
        return AgentsReply(problem=f"claude agents --json printed no JSON ({error}): {_quote(text)}")
    if not isinstance(data, list):
        return AgentsReply(problem=f"claude agents --json printed a {type(data).__name__}, not a list: {_quote(text)}")
    found: list[BackgroundSession] = []
    for item in data:
        if not isinstance(item, dict):
            return AgentsReply(problem=f"claude agents --json listed a {type(item).__name__}, not a session: {_quote(text)}")
        short = _text(item, "id")
        if _text(item, "kind") != BACKGROUND_KIND or not _ID.match(short):
            continue
        pid = item.get("pid")
        started = item.get("startedAt")
        found.append(
            BackgroundSession(
                id=short, name=_text(item, "name"), cwd=_text(item, "cwd"), session_id=_text(item, "sessionId"),
                status=_text(item, "status"), state=_text(item, "state"),
                pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                started_at=started / 1000 if isinstance(started, int | float) and not isinstance(started, bool) else None,
            )
        )  # fmt: skip
    return AgentsReply(tuple(sorted(found, key=lambda s: (s.started_at or 0.0, s.id))))


def attach_argv(claude_words: list[str], session: BackgroundSession) -> list[str]:
    """``claude_command attach ID``: opens the session in the terminal it runs in."""
    return [*claude_words, "attach", session.id]


def _quote(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
