"""One agent as the fleet API shows it (``nbs-tui agents``, ``read``), built from what the
leased service already published on the pane and Claude Code's status file: no capture."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nbs_tui.core.fleet.model import PaneId


@dataclass(frozen=True, slots=True)
class AgentRow:
    host: str
    """The host's name (``local`` for this machine)."""
    server: str
    """`nbs_tui.core.fleet.model.server_key` of the tmux server."""
    pane_id: PaneId
    session: str
    window_index: int
    pane_index: int
    window_name: str
    worker: str = ""
    """The NBS worker run in the pane (``@nbs_worker``), or empty."""
    folder: str = ""
    state: str = ""
    """As the lease holder published it (``@nbs_state``); empty before it has."""
    needs: str = ""
    since: int = 0
    """Wall time the state began (the holder's clock), 0 when not known."""
    quiet_seconds: int | None = None
    session_id: str = ""
    model: str = ""
    version: str = ""
    needs_line: str = ""
    """The first line of the question the agent waits on, when it waits on one."""
    task: str = ""
    """The id of the work-queue task the agent holds (`nbs_tui.core.queue`), or empty."""
    task_state: str = ""
    """That task's state (handing, running, needs)."""
    menu: str = ""
    """The id of the menu it waits on (`nbs_tui.core.detection.answer.menu_id`), when it waits
    on one: ``nbs-tui answer --menu ID`` answers that menu and no other."""

    @property
    def target(self) -> str:
        """``host/server/%3``, as `nbs_tui.core.fleet.card_target` names a pane across processes."""
        return f"{self.host}/{self.server}/{self.pane_id}"

    @property
    def address(self) -> str:
        """``session:window.pane``, as tmux's own ``-t`` takes it."""
        return f"{self.session}:{self.window_index}.{self.pane_index}"

    def as_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "host": self.host,
            "server": self.server,
            "pane_id": self.pane_id,
            "address": self.address,
            "window_name": self.window_name,
            "worker": self.worker or None,
            "folder": self.folder or None,
            "state": self.state or None,
            "needs": self.needs or None,
            "since": self.since or None,
            "quiet_seconds": self.quiet_seconds,
            "session_id": self.session_id or None,
            "model": self.model or None,
            "version": self.version or None,
            "needs_line": self.needs_line or None,
            "task": {"id": self.task, "state": self.task_state} if self.task else None,
            "menu": self.menu or None,
        }


def row_from_json(data: dict[str, Any]) -> AgentRow:
    """The row another host's ``nbs-tui agents --json`` printed (`AgentRow.as_json`), under the
    host name this machine knows it by. Raises KeyError/ValueError/TypeError on a bad one."""
    session, _, rest = str(data["address"]).rpartition(":")
    window, _, pane = rest.partition(".")
    quiet = data.get("quiet_seconds")
    return AgentRow(
        host=str(data["host"]),
        server=str(data["server"]),
        pane_id=str(data["pane_id"]),
        session=session,
        window_index=int(window),
        pane_index=int(pane),
        window_name=str(data.get("window_name") or ""),
        worker=str(data.get("worker") or ""),
        folder=str(data.get("folder") or ""),
        state=str(data.get("state") or ""),
        needs=str(data.get("needs") or ""),
        since=int(data.get("since") or 0),
        quiet_seconds=int(quiet) if quiet is not None else None,
        session_id=str(data.get("session_id") or ""),
        model=str(data.get("model") or ""),
        version=str(data.get("version") or ""),
        needs_line=str(data.get("needs_line") or ""),
        task=str((data.get("task") or {}).get("id") or ""),
        task_state=str((data.get("task") or {}).get("state") or ""),
        menu=str(data.get("menu") or ""),
    )


_COLUMNS = ("TARGET", "ADDRESS", "WINDOW", "WORKER", "STATE", "FOR", "QUIET", "MODEL", "FOLDER", "NEEDS YOU")


def agents_table(rows: Sequence[AgentRow], now: float | None = None) -> str:
    """The rows as a plain table, one agent a line, under a header (``nbs-tui agents``)."""
    now = time.time() if now is None else now
    body = [
        (
            row.target,
            row.address,
            row.window_name,
            row.worker or "-",
            row.state or "?",
            _duration(now - row.since) if row.since else "-",
            _duration(row.quiet_seconds) if row.quiet_seconds is not None else "-",
            row.model or "-",
            row.folder or "-",
            row.needs_line or (row.needs and f"({row.needs})") or "",
        )
        for row in rows
    ]
    if not body:
        return "no agents"
    table = [_COLUMNS, *body]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table)

def _duration(seconds: float) -> str:
    """``45s``, ``12m``, ``3h``, ``2d``: the unit that keeps the number short."""
    seconds = max(0, int(seconds))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
