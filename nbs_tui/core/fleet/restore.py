"""The restore plan: which remembered agents come back, where, with what command, and why not.

`plan_restore` takes the remembered windows (`nbs_tui.core.fleet.fleet_memory.fleet_to_restore`), what
the server shows now (`LiveServer`), the conversations live anywhere (a pane of any watched host,
one of Claude Code's background sessions), and what was checked of the host (is it up, which
folders and conversations still exist). Its rules:

* the tmux server is started when none runs; sessions are made under their old names, windows
  under their old names at their old index (the next free one when that is taken), in their old
  order, and each window's layout is applied once all its panes are back (a layout fits only
  that number of panes: with one left out it is not applied, and the plan says so);
* each agent comes back as ``claude --resume <its session id>`` in its folder (a worktree's
  agent in the worktree, without ``-w``), with its name, model and permission mode, started
  ``stagger`` seconds after the one before it; a pane without an agent comes back as a shell in
  its folder, so the layout fits;
* an agent is not brought back, with the reason, when: its host is down; its conversation id was
  never seen; that conversation is live already (anywhere: resuming it twice would fork it) or
  planned for another pane; its folder is gone; its conversation is gone (no transcript); its
  window is open on the server already (restore never touches a window it did not make); the
  installed Claude Code cannot start it (`nbs_tui.core.fleet.agent_spec.LaunchError`).
  A check not made (None) does not stop an agent: what happens then shows at its start.

``names`` restores only the agents (or windows) named; a name that matches nothing is an error.
`plan_lines` is ``restore --dry-run``'s text, `plan_as_json` its ``--json``;
`sessions_in_agents_json` reads ``claude agents --json`` (one source of the live conversations). Pure.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nbs_tui.core.fleet.agent_spec import (
    ASSUMED_FLAGS,
    ClaudeFlags,
    ClaudeLaunch,
    LaunchError,
    SpecError,
    claude_argv,
    shell_command,
)
from nbs_tui.core.fleet.fleet_memory import RememberedAgent, RememberedPane, RememberedWindow
from nbs_tui.core.fleet.host_spec import LOCAL
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.review.agent_base import AgentBase

STAGGER = 2.0
"""Seconds between two agents' starts (``restore_stagger``): 20 resumed at once load every
transcript together and hit the API together."""


@dataclass(frozen=True, slots=True)
class LiveWindow:
    session: str
    index: int
    name: str


@dataclass(frozen=True, slots=True)
class LiveServer:
    """What the tmux server shows now; ``running`` False: no server (the plan starts one)."""

    running: bool
    windows: tuple[LiveWindow, ...] = ()

    @property
    def sessions(self) -> frozenset[str]:
        return frozenset(w.session for w in self.windows)


@dataclass(frozen=True, slots=True)
class HostChecks:
    """What was found out about the host before planning (None: not checked)."""

    up: bool = True
    why_down: str = ""
    folders: Mapping[str, bool] = field(default_factory=dict)
    """Folder -> it exists (and is a folder) on the host."""
    conversations: Mapping[str, bool] = field(default_factory=dict)
    """Session id -> its transcript exists in the agent's config folder."""


@dataclass(frozen=True, slots=True)
class PlannedPane:
    index: int
    """The pane's place in its window (as remembered)."""
    folder: str
    """Where it starts; "" for the server's default (a shell pane whose folder is gone)."""
    argv: tuple[str, ...] | None
    """The agent's command; None: a plain shell."""
    agent: str | None = None
    session_id: str | None = None
    start_after: float = 0.0
    """Seconds after the restore began (the stagger)."""
    base: AgentBase | None = None
    """The base its changes are counted from, put back on the new pane (``@nbs_base``)."""


@dataclass(frozen=True, slots=True)
class PlannedWindow:
    session: str
    index: int | None
    """The old index; None: it is taken, tmux picks the next free one."""
    name: str
    layout: str | None
    """Applied once its panes are up; None: not applied (``note`` says why)."""
    panes: tuple[PlannedPane, ...]
    note: str = ""


@dataclass(frozen=True, slots=True)
class NotRestored:
    name: str
    where: str
    """``session:window.pane`` as remembered."""
    reason: str


@dataclass(frozen=True, slots=True)
class RestorePlan:
    host: str
    server: ServerAddress
    start_server: bool
    create_sessions: tuple[str, ...]
    windows: tuple[PlannedWindow, ...]
    not_restored: tuple[NotRestored, ...]

    @property
    def agents(self) -> tuple[PlannedPane, ...]:
        return tuple(p for w in self.windows for p in w.panes if p.argv is not None)


def _wanted(windows: Sequence[RememberedWindow], names: Collection[str]) -> set[tuple[str, int, int]]:
    """The (session, window, pane) of the agents ``names`` asks for; raises `SpecError` for a
    name that matches no remembered agent or window."""
    chosen: set[tuple[str, int, int]] = set()
    unknown = []
    for name in names:
        hits = {
            (w.session, w.index, p.index)
            for w in windows
            for p in w.panes
            if p.agent is not None and name in (p.agent.name, w.name, f"{w.session}:{w.name}")
        }
        if not hits:
            unknown.append(name)
        chosen |= hits
    if unknown:
        known = sorted({p.agent.name for w in windows for p in w.panes if p.agent is not None})
        listed = ", ".join(known) if known else "none"
        raise SpecError([f"no remembered agent or window named {n!r} (remembered agents: {listed})" for n in unknown])
    return chosen


def plan_restore(
    windows: Sequence[RememberedWindow],
    live: LiveServer,
    live_sessions: Mapping[str, str],
    checks: HostChecks,
    *,
    host: str = LOCAL,
    server: ServerAddress | None = None,
    claude_command: str = "claude",
    flags: ClaudeFlags = ASSUMED_FLAGS,
    stagger: float = STAGGER,
    names: Collection[str] = (),
) -> RestorePlan:
    """The plan (module docstring). ``live_sessions``: session id -> where it is live, for the reason."""
    wanted = _wanted(windows, names) if names else None
    open_windows = {(w.session, w.name) for w in live.windows}
    taken = {(w.session, w.index) for w in live.windows}
    planned_ids: dict[str, str] = {}
    out_windows: list[PlannedWindow] = []
    skipped: list[NotRestored] = []
    sessions: list[str] = []
    started = 0
    for window in windows:
        picked = [p for p in window.agents if wanted is None or (window.session, window.index, p.index) in wanted]
        if not picked:
            continue
        restored: dict[int, PlannedPane] = {}
        for pane in picked:
            agent = pane.agent
            assert agent is not None
            where = f"{window.session}:{window.index}.{pane.index}"
            why = _why_not(window, pane, agent, live_sessions, checks, planned_ids, open_windows)
            argv: list[str] = []
            if why is None:
                try:
                    argv = claude_argv(
                        claude_command,
                        ClaudeLaunch(name=agent.name, model=agent.model, permission_mode=agent.permission_mode, resume=agent.session_id),
                        flags,
                    )
                except LaunchError as error:
                    why = str(error)
            if why is not None:
                skipped.append(NotRestored(agent.name, where, why))
                continue
            assert agent.session_id is not None
            planned_ids[agent.session_id] = where
            restored[pane.index] = PlannedPane(
                pane.index, pane.folder, tuple(argv), agent.name, agent.session_id, started * stagger, agent.base
            )
            started += 1
        if not restored:
            continue
        first = min(p.start_after for p in restored.values())
        panes: list[PlannedPane] = []
        for pane in window.panes:
            if pane.index in restored:
                panes.append(restored[pane.index])
            elif pane.agent is None:
                folder = pane.folder if checks.folders.get(pane.folder, True) else ""
                panes.append(PlannedPane(pane.index, folder, None, start_after=first))
        left_out = len(window.panes) - len(panes)
        note = ""
        layout: str | None = window.layout or None
        if left_out:
            layout = None
            note = f"layout not applied: {left_out} of its {len(window.panes)} panes not restored"
        index: int | None = window.index
        if (window.session, window.index) in taken:
            index = None
            note = "; ".join(filter(None, [f"{window.session}:{window.index} is taken: at the next free index", note]))
        taken.add((window.session, window.index))
        if window.session not in live.sessions and window.session not in sessions:
            sessions.append(window.session)
        out_windows.append(PlannedWindow(window.session, index, window.name, layout, tuple(panes), note))
    return RestorePlan(
        host=host,
        server=server or ServerAddress(),
        start_server=not live.running and bool(out_windows),
        create_sessions=tuple(sessions),
        windows=tuple(out_windows),
        not_restored=tuple(skipped),
    )


def _why_not(
    window: RememberedWindow,
    pane: RememberedPane,
    agent: RememberedAgent,
    live_sessions: Mapping[str, str],
    checks: HostChecks,
    planned_ids: Mapping[str, str],
    open_windows: Collection[tuple[str, str]],
) -> str | None:
    if not checks.up:
        return f"its host is down ({checks.why_down})" if checks.why_down else "its host is down"
    if not agent.session_id:
        return "its conversation id was never seen (no hook event, status file or transcript named it)"
    if agent.session_id in live_sessions:
        return f"its conversation {agent.session_id} is live already ({live_sessions[agent.session_id]})"
    if agent.session_id in planned_ids:
        return f"its conversation {agent.session_id} comes back in {planned_ids[agent.session_id]} already"
    if (window.session, window.name) in open_windows:
        return f"a window {window.session}:{window.name} is open already: restore leaves it alone"
    if checks.folders.get(pane.folder) is False:
        return f"its folder {pane.folder} is gone"
    if checks.conversations.get(agent.session_id) is False:
        where = f" in {agent.config_dir}" if agent.config_dir else ""
        return f"its conversation {agent.session_id} is gone (no transcript{where})"
    return None


def sessions_in_agents_json(text: str, host: str = LOCAL) -> dict[str, str]:
    """Session id -> where it runs, from ``claude agents --json`` (2.1.150+: every live session of
    that config folder, interactive and background: ``sessionId``, ``pid``, ``kind``, ``name``,
    ``cwd``). Anything else (older versions print no JSON) gives nothing."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    found: dict[str, str] = {}
    for item in data if isinstance(data, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("sessionId"), str):
            continue
        kind = item.get("kind") if isinstance(item.get("kind"), str) else "session"
        name = f" {item['name']!r}" if isinstance(item.get("name"), str) else ""
        pid = f" pid {item['pid']}" if isinstance(item.get("pid"), int) else ""
        on = "" if host == LOCAL else f" on {host}"
        found[item["sessionId"]] = f"{kind} Claude Code session{name}{pid}{on}"
    return found


# -- showing the plan -----------------------------------------------------------------------------


def plan_lines(plan: RestorePlan) -> list[str]:
    """``nbs-tui restore --dry-run``: the plan as a person reads it, one step a line."""
    where = plan.server.describe() + ("" if plan.host == LOCAL else f" on {plan.host}")
    count = len(plan.agents)
    head = f"restore {count} agent{'s' if count != 1 else ''} to {where}"
    if plan.not_restored:
        head += f"; {len(plan.not_restored)} not restored"
    lines = [head + ":"]
    if plan.start_server:
        lines.append("  start the tmux server")
    for session in plan.create_sessions:
        lines.append(f"  create session {session}")
    for window in plan.windows:
        at = f"{window.session}:{window.index}" if window.index is not None else f"{window.session}:(next)"
        lines.append(f"  window {at} {window.name!r}" + (f" ({window.note})" if window.note else ""))
        for pane in window.panes:
            folder = pane.folder or "the default folder"
            if pane.argv is None:
                lines.append(f"    pane {pane.index}: a shell in {folder}")
            else:
                lines.append(f"    pane {pane.index}: in {pane.folder}, after {pane.start_after:g} s: {shell_command(pane.argv)}")
        if window.layout:
            lines.append(f"    layout {window.layout}")
    if not plan.windows:
        lines.append("  nothing to start")
    for item in plan.not_restored:
        lines.append(f"  not restored: {item.name} ({item.where}): {item.reason}")
    return lines


def plan_as_json(plan: RestorePlan) -> dict[str, Any]:
    """``nbs-tui restore --dry-run --json``: the plan as one JSON object."""
    return {
        "host": plan.host,
        "server": {"socket_name": plan.server.socket_name, "socket_path": plan.server.socket_path},
        "start_server": plan.start_server,
        "create_sessions": list(plan.create_sessions),
        "windows": [
            {
                "session": w.session,
                "index": w.index,
                "name": w.name,
                "layout": w.layout,
                "note": w.note,
                "panes": [
                    {
                        "index": p.index,
                        "folder": p.folder,
                        "argv": None if p.argv is None else list(p.argv),
                        "agent": p.agent,
                        "session_id": p.session_id,
                        "start_after": p.start_after,
                    }
                    for p in w.panes
                ],
            }
            for w in plan.windows
        ],
        "not_restored": [{"name": n.name, "where": n.where, "reason": n.reason} for n in plan.not_restored],
    }
