"""What nbs-tui remembers of a tmux server's fleet, to bring it back after a reboot or a lost server.

Per window that holds an agent: its session, index, name and layout (``#{window_layout}``), and
each of its panes in order (its folder, and for an agent pane the agent: name, the command it
was started with, its current Claude Code session id, model, permission mode, worktree, the
Claude config folder its conversation is kept in, the base its changes are counted from). Windows without an agent are not the fleet's.

`remember` folds what the server shows now into the memory: the same server (`ServerInstance`:
tmux's pid and start time) replaces the windows (a pane the operator closed is forgotten); a
server started since keeps the old fleet as ``previous`` (the one to restore), so a tmux started
by hand after a reboot does not erase it; no server changes nothing. `fleet_to_restore` picks the
windows a restore brings back. The store (``nbs_tui.files.fleet_store``) writes the memory only
when `remember` changed it.

The session id changes under a running agent (``/clear`` and ``/resume`` start another; seen on
2.1.332: ``SessionEnd`` of the old id, then ``SessionStart`` with ``source: clear`` and the new
one, the status file following 40 ms later). `current_session` picks it from what each source
said last: every hook event and the status file's ``statusUpdatedAt`` say "as of this time the
session is X"; a transcript says it only as of its first record (when that session began), since
the old conversation's transcript was still written to 80 ms after the ``/clear``. Newest wins;
on a tie the hook, then the status file, then the transcript. (2.1.100 does not rewrite its
status file after ``/clear``: it keeps the old id with its old time, and newest-wins reads past it.)

Pure: the JSON form is here (`memory_to_json`, `memory_from_json`), the file is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from nbs_tui.core.fleet.host_spec import LOCAL
from nbs_tui.core.fleet.model import ServerAddress, server_key
from nbs_tui.core.review.agent_base import AgentBase

SCHEMA = 1
"""The JSON form's version: a file with a newer one is left alone (a newer nbs-tui wrote it)."""


# -- the current session id ----------------------------------------------------------------------


class SessionSource(StrEnum):
    HOOK = "hook"
    STATUS = "status"
    TRANSCRIPT = "transcript"


_RANK = {SessionSource.HOOK: 2, SessionSource.STATUS: 1, SessionSource.TRANSCRIPT: 0}


@dataclass(frozen=True, slots=True)
class SessionSighting:
    """One source saying which session a pane's agent is in, as of ``at`` (wall-clock seconds,
    the agent's host's clock): a hook event's time, the status file's ``statusUpdatedAt``, a
    transcript's first record."""

    session_id: str
    source: SessionSource
    at: float


def current_session(sightings: Iterable[SessionSighting]) -> SessionSighting | None:
    """The newest sighting (module docstring); None when there is none."""
    best: SessionSighting | None = None
    for seen in sightings:
        if not seen.session_id:
            continue
        if best is None or (seen.at, _RANK[seen.source]) > (best.at, _RANK[best.source]):
            best = seen
    return best


# -- the model ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServerInstance:
    """One run of a tmux server (``#{pid}``, ``#{start_time}``): a restarted server is another."""

    pid: int
    started: int


@dataclass(frozen=True, slots=True)
class RememberedAgent:
    name: str
    """Claude Code's ``-n`` name, else the window's name: how restore's NAME... picks it."""
    session_id: str | None
    """The conversation to resume (None: never seen; such an agent cannot be brought back)."""
    command: tuple[str, ...] = ()
    """The command line it was started with, as run (for the operator; restore builds its own)."""
    model: str | None = None
    permission_mode: str | None = None
    worktree: bool = False
    """Started with ``-w``: its folder is the worktree Claude Code made (resumed there, without -w)."""
    worktree_name: str | None = None
    config_dir: str | None = None
    """The agent's Claude config folder (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``): its transcripts."""
    worker: str | None = None
    """The NBS worker it runs (``.nbs/workers/<worker>.md``), if any."""
    base: AgentBase | None = None
    """The commit and branch its folder stood at when nbs-tui started it (``@nbs_base``): its
    changes are counted from there (`nbs_tui.core.review.agent_base`)."""


@dataclass(frozen=True, slots=True)
class RememberedPane:
    index: int
    folder: str
    """An agent's working folder (its process's, so a worktree's); a shell's current folder."""
    pane_id: str = ""
    """The tmux pane id when last seen (``%12``): not kept by a new server, shown for reference."""
    agent: RememberedAgent | None = None


@dataclass(frozen=True, slots=True)
class RememberedWindow:
    session: str
    index: int
    name: str
    layout: str
    """``#{window_layout}``: applied once all the window's panes are back (it fits that count only)."""
    panes: tuple[RememberedPane, ...]

    @property
    def agents(self) -> tuple[RememberedPane, ...]:
        return tuple(p for p in self.panes if p.agent is not None)


@dataclass(frozen=True, slots=True)
class FleetMemory:
    """One tmux server's remembered fleet (one file per server, `store_key`)."""

    host: str
    server: ServerAddress
    instance: ServerInstance | None
    windows: tuple[RememberedWindow, ...] = ()
    previous: tuple[RememberedWindow, ...] = ()
    """The fleet of a server run that ended (a reboot, a kill): what a restore brings back."""
    previous_instance: ServerInstance | None = None

    def agent_names(self, windows: Sequence[RememberedWindow] | None = None) -> list[str]:
        return [p.agent.name for w in (self.windows if windows is None else windows) for p in w.panes if p.agent]


def _in_order(windows: Iterable[RememberedWindow]) -> tuple[RememberedWindow, ...]:
    kept = [replace(w, panes=tuple(sorted(w.panes, key=lambda p: p.index))) for w in windows if w.agents]
    return tuple(sorted(kept, key=lambda w: (w.session, w.index)))


def remember(
    memory: FleetMemory | None,
    host: str,
    server: ServerAddress,
    instance: ServerInstance | None,
    windows: Iterable[RememberedWindow],
) -> FleetMemory:
    """The memory after the server showed ``windows`` (module docstring). Equal to ``memory``
    (``==``) when nothing changed, so the store writes only on a change."""
    live = _in_order(windows)
    if memory is None:
        return FleetMemory(host, server, instance, live if instance is not None else ())
    if instance is None:
        return memory  # no server: nothing learnt, nothing forgotten
    if memory.instance == instance:
        return memory if memory.windows == live else replace(memory, windows=live)
    if memory.windows:  # a new run of the server: the last run's fleet is the one to restore
        return replace(memory, instance=instance, windows=live, previous=memory.windows, previous_instance=memory.instance)
    return replace(memory, instance=instance, windows=live)


def fleet_to_restore(memory: FleetMemory, live: ServerInstance | None) -> tuple[RememberedWindow, ...]:
    """The windows a restore brings back, given the server running now (None: none runs)."""
    if live is not None and live == memory.instance:
        return memory.previous  # this run's own fleet is live; the one before it was lost
    return memory.windows or memory.previous


def forget_restored(memory: FleetMemory) -> FleetMemory:
    """After a restore: the lost fleet is back (or reported), no longer offered."""
    return replace(memory, previous=(), previous_instance=None)


def store_key(host: str, server: ServerAddress) -> str:
    """The memory file's name part: the service's own key for this machine (``default``,
    ``L-name``, ``S-_path``), prefixed with the host for another one."""
    if host and host != LOCAL:
        return re.sub(r"[^A-Za-z0-9._-]", "_", f"H-{host}-") + server_key(server)
    return server_key(server)


# -- the JSON form --------------------------------------------------------------------------------


class MemoryFormatError(ValueError):
    """A memory file nbs-tui cannot read; the message names where in it."""


class NewerSchemaError(MemoryFormatError):
    """Written by a newer nbs-tui: read nothing, write nothing over it."""


def _instance_json(instance: ServerInstance | None) -> dict[str, int] | None:
    return None if instance is None else {"pid": instance.pid, "started": instance.started}


def _agent_json(agent: RememberedAgent) -> dict[str, Any]:
    return {
        "name": agent.name,
        "session_id": agent.session_id,
        "command": list(agent.command),
        "model": agent.model,
        "permission_mode": agent.permission_mode,
        "worktree": agent.worktree,
        "worktree_name": agent.worktree_name,
        "config_dir": agent.config_dir,
        "worker": agent.worker,
        "base": None if agent.base is None else agent.base.as_json(),
    }


def _windows_json(windows: Sequence[RememberedWindow]) -> list[dict[str, Any]]:
    return [
        {
            "session": w.session,
            "index": w.index,
            "name": w.name,
            "layout": w.layout,
            "panes": [
                {
                    "index": p.index,
                    "folder": p.folder,
                    "pane_id": p.pane_id,
                    "agent": None if p.agent is None else _agent_json(p.agent),
                }
                for p in w.panes
            ],
        }
        for w in windows
    ]


def memory_to_json(memory: FleetMemory) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "host": memory.host,
        "server": {"socket_name": memory.server.socket_name, "socket_path": memory.server.socket_path},
        "instance": _instance_json(memory.instance),
        "windows": _windows_json(memory.windows),
        "previous": None
        if not memory.previous
        else {"instance": _instance_json(memory.previous_instance), "windows": _windows_json(memory.previous)},
    }


@dataclass(slots=True)
class _Reader:
    """Typed field access that names the place of a bad value (``windows[1].panes[0].folder``)."""

    data: Mapping[str, Any]
    where: str = ""

    def _at(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def _get(self, key: str, kinds: tuple[type, ...], what: str, default: Any, required: bool) -> Any:
        if key not in self.data or self.data[key] is None:
            if required:
                raise MemoryFormatError(f"{self._at(key)} is missing")
            return default
        value = self.data[key]
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise MemoryFormatError(f"{self._at(key)}: expected {what}, found {type(value).__name__}")
        return value

    def text(self, key: str, *, required: bool = False) -> str | None:
        return self._get(key, (str,), "a string", None, required)

    def number(self, key: str, *, required: bool = False) -> int | None:
        return self._get(key, (int,), "an integer", None, required)

    def flag(self, key: str) -> bool:
        return bool(self._get(key, (bool,), "true or false", False, False))

    def words(self, key: str) -> tuple[str, ...]:
        value = self._get(key, (list,), "a list of strings", [], False)
        if not all(isinstance(v, str) for v in value):
            raise MemoryFormatError(f"{self._at(key)}: expected a list of strings")
        return tuple(value)

    def child(self, key: str, *, required: bool = False) -> _Reader | None:
        value = self._get(key, (dict,), "an object", None, required)
        return None if value is None else _Reader(value, self._at(key))

    def children(self, key: str) -> list[_Reader]:
        value = self._get(key, (list,), "a list", [], False)
        found = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise MemoryFormatError(f"{self._at(key)}[{i}]: expected an object")
            found.append(_Reader(item, f"{self._at(key)}[{i}]"))
        return found


def _instance(reader: _Reader | None) -> ServerInstance | None:
    if reader is None:
        return None
    return ServerInstance(reader.number("pid", required=True) or 0, reader.number("started", required=True) or 0)


def _agent(r: _Reader) -> RememberedAgent:
    return RememberedAgent(
        name=r.text("name", required=True) or "",
        session_id=r.text("session_id"),
        command=r.words("command"),
        model=r.text("model"),
        permission_mode=r.text("permission_mode"),
        worktree=r.flag("worktree"),
        worktree_name=r.text("worktree_name"),
        config_dir=r.text("config_dir"),
        worker=r.text("worker"),
        base=_base(r.child("base")),
    )


def _base(r: _Reader | None) -> AgentBase | None:
    if r is None:
        return None
    return AgentBase(r.text("commit", required=True) or "", r.text("branch"))


def _windows(readers: Sequence[_Reader]) -> tuple[RememberedWindow, ...]:
    windows = []
    for w in readers:
        panes = []
        for p in w.children("panes"):
            agent = p.child("agent")
            panes.append(
                RememberedPane(
                    index=p.number("index", required=True) or 0,
                    folder=p.text("folder", required=True) or "",
                    pane_id=p.text("pane_id") or "",
                    agent=None if agent is None else _agent(agent),
                )
            )
        windows.append(
            RememberedWindow(
                session=w.text("session", required=True) or "",
                index=w.number("index", required=True) or 0,
                name=w.text("name") or "",
                layout=w.text("layout") or "",
                panes=tuple(panes),
            )
        )
    return _in_order(windows)


def memory_from_json(data: Any) -> FleetMemory:
    """The memory from its JSON form; raises `MemoryFormatError` naming what is wrong and where.
    Keys it does not know are passed over (a later nbs-tui of the same schema may add some)."""
    if not isinstance(data, dict):
        raise MemoryFormatError("not a JSON object")
    root = _Reader(data)
    schema = root.number("schema", required=True)
    if schema is not None and schema > SCHEMA:
        raise NewerSchemaError(f"schema {schema} is newer than this nbs-tui's ({SCHEMA})")
    if schema != SCHEMA:
        raise MemoryFormatError(f"schema {schema} is not one this nbs-tui reads ({SCHEMA})")
    server = root.child("server")
    previous = root.child("previous")
    return FleetMemory(
        host=root.text("host") or LOCAL,
        server=ServerAddress(server.text("socket_name"), server.text("socket_path")) if server else ServerAddress(),
        instance=_instance(root.child("instance")),
        windows=_windows(root.children("windows")),
        previous=_windows(previous.children("windows")) if previous else (),
        previous_instance=_instance(previous.child("instance")) if previous else None,
    )
