"""What each row of the fleet list says: its columns, a pane's cells, a host's header row.

The list (`nbs_tui.widgets.fleet_list.FleetList`) draws and measures the rows; what a cell
holds and how it is styled is decided here, from the pane, its shown status and the clock.
"""

from __future__ import annotations

import posixpath

from rich.text import Text

from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import AgentState, PaneInfo
from nbs_tui.core.review.agent_changes import ChangeCount
from nbs_tui.dashboard.messages import PaneStatus
from nbs_tui.widgets.pane_text import format_duration, project_name, quiet_start, state_text

COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    ("target", "Pane", None),
    ("state", "State", 12),
    ("idle", "Quiet", 6),
    ("poll", "Poll in", 7),
    ("project", "Project", None),
    ("title", "Title", None),
    ("agent", "Agent", None),
    ("changes", "Changes", None),
)
"""Column keys and labels, the state and clocks first: a narrow list still shows them."""

FOLDED = frozenset({"changes"})
"""Columns that take no room while every cell is empty: no agent has changed a file in git (the
change column, `nbs_tui.runtime.change_counter`), or the dashboard does not count them."""

AUTO_WIDTH = frozenset(key for key, _, width in COLUMNS if width is None)
"""Columns as wide as their widest cell."""

HEADER = "# host "
"""Row key prefix of a host's header row (a pane id never holds a space)."""

BACKGROUND = "bg "
"""Row key prefix of a Claude Code background session's row (`background_cells`)."""

BACKGROUND_MARK = "◇"
"""The mark of a background session's row: not a tmux pane (``o`` opens it in one)."""


def header_cells(name: str, state: HostState | None, panes: int) -> dict[str, Text]:
    """A host's header row: name, connection, pane count and who acts as its sidecar."""
    if state is None or state.connected is None:
        link = Text("… connecting", style="dim")
    elif state.connected:
        link = Text("● online", style="bold green")
    else:
        link = Text("✖ offline", style="bold red")
    lease = state.lease.replace("sidecar: ", "sidecar ").split(" since ")[0] if state is not None else ""
    if state is not None and state.acting:
        lease = "⚑ sidecar here"
    elif state is not None and state.connected is False:
        lease = "last view kept"
    return {
        "target": Text(f"▾ {name}", style="bold reverse", no_wrap=True, overflow="ellipsis"),
        "state": link,
        "project": Text(f"{panes} pane{'' if panes == 1 else 's'}", style="dim", no_wrap=True),
        "title": Text(lease[:28], style="dim", no_wrap=True, overflow="ellipsis"),
    }


def background_cells(session: BackgroundSession) -> dict[str, Text]:
    """A Claude Code background session's row (``claude --bg``): its mark and id, the state it
    reports (`BackgroundSession.reported`), its folder and name; no clocks (nbs-tui does not watch it)."""
    folder = posixpath.basename(session.cwd.rstrip("/")) or session.cwd
    return {
        "target": Text(f"{BACKGROUND_MARK} bg {session.id}", style="italic", no_wrap=True, overflow="ellipsis"),
        "state": Text(session.reported, style="italic cyan", no_wrap=True, overflow="ellipsis"),
        "idle": Text("—", style="dim"),
        "poll": Text("—", style="dim"),
        "project": Text(folder[:20], style="italic", no_wrap=True),
        "title": Text(session.name[:28], style="italic", no_wrap=True, overflow="ellipsis"),
        "agent": Text("claude --bg", style="dim", no_wrap=True),
    }


def row_values(
    pane: PaneInfo,
    status: PaneStatus | None,
    changed_at: float | None,
    now: float,
    offline_hosts: frozenset[str],
    changes: ChangeCount | None = None,
) -> dict[str, str]:
    """The text of each of a pane's cells (compared with what is shown to repaint only changes)."""
    state = status.state.value if status and status.state else ""
    quiet_since = quiet_start(status, changed_at)
    idle = format_duration(now - quiet_since) if quiet_since is not None else "—"
    poll = format_duration(status.next_poll_at - now) if status and status.next_poll_at is not None else "—"
    if status is not None and status.state is AgentState.LIMITED:  # the reset's countdown
        reset = status.limit_reset_at
        poll = "⏳" + (format_duration(max(0.0, reset - now)) if reset is not None else "?")
    return {
        "target": pane.target + (" ✖" if pane.host and pane.host in offline_hosts else ""),
        "state": state,
        "idle": idle,
        "poll": poll,
        "project": project_name(pane)[:20],
        "agent": ("claude" if pane.is_agent else pane.current_command[:12]) + (" (dead)" if pane.dead else ""),
        "title": pane.title[:28],
        "changes": changes.text() if changes is not None else "",
    }


def change_text(value: str) -> Text:
    """``3 +12 -4``: the file count plain, the added lines green, the removed red."""
    files, _, rest = value.partition(" ")
    added, _, removed = rest.partition(" ")
    return Text.assemble(files, " ", (added, "green"), " ", (removed, "red"), no_wrap=True)


def styled_cell(pane: PaneInfo, key: str, value: str, offline_hosts: frozenset[str]) -> Text:
    """A cell's text as shown: agents bright, other panes and offline hosts' panes dimmed."""
    if key == "changes" and value:
        return change_text(value)
    if key == "state":
        state = AgentState(value) if value else None
        return state_text(state, pane.is_agent)
    style = "" if pane.is_agent and not pane.dead else "dim"
    if key == "target" and pane.is_agent:
        style = "bold"
    if key == "target" and pane.host and pane.host in offline_hosts:
        style = "dim"
    return Text(value, style=style, no_wrap=True, overflow="ellipsis")
