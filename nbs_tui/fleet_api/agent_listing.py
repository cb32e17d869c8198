"""The agents of one tmux server, read from state that already exists: the options the leased
service publishes on each agent pane (``@nbs_state``, ``@nbs_needs``, ``@nbs_since``,
``@nbs_meters``: `nbs_tui.sidecar.pane_options`), the worker name `nbs_tui.lifecycle.fleet_keeper`
sets (``@nbs_worker``) and Claude Code's status files (session id, version). One ``list-panes``
for all; only the panes that wait on a person are captured (in one tmux command line), for
their question's first line and their menu's id.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from nbs_tui.claude.status import find_claude_process, process_table
from nbs_tui.core.detection.answer import detection_menu_id
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.model import Detection, PaneId
from nbs_tui.core.fleet.process_tree import children_map
from nbs_tui.core.fleet_api.agent_row import AgentRow
from nbs_tui.core.sidecar.lease_rules import NEEDS_OPTION, SINCE_OPTION, STATE_OPTION
from nbs_tui.core.sidecar.meters_relay import METERS_OPTION, parse_meters
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

WORKER_OPTION = "@nbs_worker"
"""As `nbs_tui.lifecycle.fleet_keeper.WORKER_OPTION` (the fleet API may not import the lifecycle
room's keeper for one name: it pulls in the whole room)."""

_FIELDS = (
    "#{pane_id}", "#{session_name}", "#{window_index}", "#{pane_index}", "#{pane_pid}",
    "#{window_activity}", f"#{{{STATE_OPTION}}}", f"#{{{NEEDS_OPTION}}}", f"#{{{SINCE_OPTION}}}",
    f"#{{{METERS_OPTION}}}",  # ASCII JSON: never a tab
    "#{pane_current_path}", f"#{{{WORKER_OPTION}}}",
    "#{window_name}",  # last: the only field a person names freely
)  # fmt: skip


def list_agents(
    commands: TmuxServerCommands, host: str, server: str, claude_homes: tuple[Path, ...], now: float | None = None
) -> list[AgentRow]:
    """Every agent pane of the server (a pane the lease holder publishes a state for), in tmux's
    order. ``claude_homes``: Claude Code config folders to look in first for status files."""
    now = time.time() if now is None else now
    out = commands.run("list-panes", "-a", "-F", "\t".join(_FIELDS))
    table = children = None
    rows: list[AgentRow] = []
    for line in out.lines:
        fields = line.split("\t", len(_FIELDS) - 1)
        if len(fields) != len(_FIELDS):
            continue
        pane_id, session, window, pane, pid, activity, state, needs, since, meters, folder, worker, name = fields
        if not state:
            continue  # not an agent, or the holder has not published it yet
        if table is None or children is None:  # read /proc once, for every pane
            table = process_table()
            children = children_map(table)
        claude = find_claude_process(int(pid), table, claude_homes, children=children) if pid.isdigit() else None
        status = claude.status if claude is not None else None
        parsed = parse_meters(meters)
        rows.append(
            AgentRow(
                host=host,
                server=server,
                pane_id=pane_id,
                session=session,
                window_index=int(window),
                pane_index=int(pane),
                window_name=name,
                worker=worker,
                folder=folder,
                state=state,
                needs=needs,
                since=int(since) if since.isdigit() else 0,
                quiet_seconds=max(0, int(now) - int(activity)) if activity.isdigit() else None,
                session_id=(status.session_id or "") if status else "",
                model=(parsed.context_model or "") if parsed else "",
                version=(status.version or "") if status else "",
            )
        )
    asking = [row.pane_id for row in rows if row.needs and row.needs not in ("stuck", "budget", "burn")]  # no question on screen
    menus = read_menus(commands, asking)
    return [
        replace(row, needs_line=_first_line(menus[row.pane_id].prompt), menu=detection_menu_id(menus[row.pane_id]))
        if row.pane_id in menus else row
        for row in rows
    ]  # fmt: skip


def capture(commands: TmuxServerCommands, pane_id: PaneId, lines: int | None = None) -> str:
    """The pane's screen as text, one ``capture-pane``; ``lines``: that many rows of history
    above it too."""
    start = ("-S", f"-{lines}") if lines else ()
    return commands.run("capture-pane", "-p", "-t", pane_id, *start).text


_SEPARATOR = "\x1fnbs-fleet-api-screen"
"""Printed between the screens of one batched capture (a unit separator no screen shows)."""


def read_menus(commands: TmuxServerCommands, pane_ids: list[PaneId]) -> dict[PaneId, Detection]:
    """What each pane's screen shows (its menu's question and options, as the answer card reads
    them), the screens captured in one tmux command line. A pane gone meanwhile fails the whole
    line: then one by one, a gone pane read as an empty screen."""
    if not pane_ids:
        return {}
    batch: list[tuple[str, ...]] = []
    for pane_id in pane_ids:
        batch += [("display-message", "-p", _SEPARATOR), ("capture-pane", "-p", "-t", pane_id)]
    try:
        screens = commands.run_many(batch).text.split(_SEPARATOR + "\n")[1:]
    except TmuxError:
        screens = []
    if len(screens) != len(pane_ids):
        screens = []
        for pane_id in pane_ids:
            try:
                screens.append(capture(commands, pane_id))
            except TmuxError:
                screens.append("")
    return {pane_id: detect_text(screen) for pane_id, screen in zip(pane_ids, screens, strict=True)}


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
