"""How a pane's facts read on screen, the same in every widget: its state as a coloured badge,
durations short enough for a column, when its screen went quiet, its project's name, the work
queue's task it holds (a task's state colours, its one line).

The fleet list, the grid's borders, the details panel and the status bar's counts all show
these; a state's colour or a duration's form changes here, for all of them at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rich.text import Text

from nbs_tui.core.fleet.model import AgentState, PaneInfo
from nbs_tui.core.queue.task_states import Task, TaskState
from nbs_tui.core.screen.text import printable
from nbs_tui.dashboard.messages import PaneStatus

STATE_STYLES: Mapping[AgentState, str] = {
    AgentState.WORKING: "bold green",
    AgentState.IDLE: "cyan",
    AgentState.PERMISSION: "bold black on yellow",
    AgentState.PLAN: "bold magenta",
    AgentState.QUESTION: "bold black on yellow",
    AgentState.DIALOG: "bold black on yellow",
    AgentState.ERROR: "bold white on red",
    AgentState.LIMITED: "bold black on dark_orange",
    AgentState.UNKNOWN: "dim",
}


def state_text(state: AgentState | None, is_agent: bool = True) -> Text:
    """A pane's state as a short coloured badge."""
    if not is_agent:
        return Text("—", style="dim")
    if state is None:
        return Text("…", style="dim")
    return Text(f" {state.value} ", style=STATE_STYLES.get(state, ""))


def format_duration(seconds: float | None) -> str:
    """``42s``, ``3m05s``, ``2h10m``: short enough for a column."""
    if seconds is None:
        return "—"
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"


def quiet_start(status: PaneStatus | None, changed_at: float | None) -> float | None:
    """When the pane's screen last changed: the later of what the sidecar and the mirror saw."""
    times = [t for t in (status.idle_since if status else None, changed_at) if t is not None]
    return max(times) if times else None


def project_name(pane: PaneInfo) -> str:
    """The folder's last part, printable (a folder's name may hold control characters)."""
    return printable(os.path.basename(pane.current_path.rstrip("/")) or pane.current_path)


TASK_STYLES: Mapping[TaskState, str] = {
    TaskState.QUEUED: "",
    TaskState.HANDING: "bold yellow",
    TaskState.RUNNING: "bold green",
    TaskState.NEEDS: "bold black on yellow",
    TaskState.DONE: "cyan",
    TaskState.FAILED: "bold white on red",
    TaskState.CANCELLED: "dim",
}


def task_text(task: Task) -> str:
    """The task as one line: its text's first line, or the worker it runs."""
    if task.worker:
        return f"worker {printable(task.worker)}"
    return printable(next((line.strip() for line in task.text.splitlines() if line.strip()), ""))
