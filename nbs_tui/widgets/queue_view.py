"""The work queue's view (``4``): each task's state, agent and age, with add, cancel and reorder.

It shows `nbs_tui.files.queue_watch.QueueSnapshot`s and asks for edits with its messages
(`AddWanted`, `CancelWanted`, `MoveWanted`); the dashboard's queue part
(`nbs_tui.dashboard.queue_shown`) appends the records, and the file's next read shows them. Its
keys are the key table's ``queue`` scope (`nbs_tui.dashboard.key_table`).

Rows: the tasks with an agent first, then the queued ones in the order they will be handed out,
then those that ended, newest first (at most `ENDED_SHOWN`). On a phone (under
`nbs_tui.widgets.breakpoints.NARROW_BELOW` columns) the priority column is left out and the
task's text gets what is left.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static
from textual.widgets.data_table import RowDoesNotExist

from nbs_tui.core.queue.task_states import Task, TaskState
from nbs_tui.core.screen.text import printable
from nbs_tui.dashboard.key_table import scope_bindings
from nbs_tui.files.queue_watch import QueueSnapshot
from nbs_tui.widgets.breakpoints import is_narrow
from nbs_tui.widgets.pane_text import format_duration

ENDED_SHOWN = 50
"""Ended tasks listed (the newest); the file keeps them all, ``nbs-tui queue ls`` lists them."""

STATE_STYLES: Mapping[TaskState, str] = {
    TaskState.QUEUED: "",
    TaskState.HANDING: "bold yellow",
    TaskState.RUNNING: "bold green",
    TaskState.NEEDS: "bold black on yellow",
    TaskState.DONE: "cyan",
    TaskState.FAILED: "bold white on red",
    TaskState.CANCELLED: "dim",
}

WIDE_COLUMNS = (("#", "id", 5), ("State", "state", 11), ("Pri", "priority", 4), ("Agent", "agent", 18), ("Age", "age", 7))
NARROW_COLUMNS = (("#", "id", 4), ("State", "state", 10), ("Agent", "agent", 10), ("Age", "age", 6))


def rows_in_order(tasks: Sequence[Task]) -> list[Task]:
    """The rows' order (module docstring)."""
    out = [task for task in tasks if task.state.out]
    queued = sorted((task for task in tasks if task.state is TaskState.QUEUED), key=lambda task: task.order)
    ended = sorted((task for task in tasks if task.state.ended), key=lambda task: -task.changed_at)
    return out + queued + ended[:ENDED_SHOWN]


def task_text(task: Task) -> str:
    """The task as one line: its text's first line, or the worker it runs."""
    if task.worker:
        return f"worker {printable(task.worker)}"
    return printable(next((line.strip() for line in task.text.splitlines() if line.strip()), ""))


def summary_line(snapshot: QueueSnapshot) -> Text:
    """``2 running · 3 queued · 5 done``, and PAUSED when the feeder hands nothing out."""
    text = Text()
    if snapshot.paused:
        text.append(" PAUSED ", style="bold black on yellow")
        text.append("  ")
    counts = {state: sum(1 for task in snapshot.tasks if task.state is state) for state in TaskState}
    parts = [f"{counts[state]} {state}" for state in TaskState if counts[state]]
    text.append(" · ".join(parts) if parts else "no task", style="bold" if parts else "dim")
    return text


class QueueView(Vertical):
    """The queue's tasks in a table (module docstring)."""

    DEFAULT_CSS = """
    QueueView {
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $text-muted;
    }
    QueueView:focus-within {
        border: round $accent;
    }
    QueueView > #queue-summary {
        height: 1;
        padding: 0 1;
    }
    QueueView > #queue-empty {
        height: auto;
        padding: 1 2;
        color: $text-muted;
    }
    QueueView > DataTable {
        height: 1fr;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = list(scope_bindings("queue"))

    @dataclass
    class AddWanted(Message):
        """The operator asked to add a task (``a``)."""

    @dataclass
    class CancelWanted(Message):
        """The operator asked to cancel the highlighted task (``x``)."""

        task: Task

    @dataclass
    class MoveWanted(Message):
        """The operator asked to move the highlighted queued task ``steps`` places (negative: sooner)."""

        task: Task
        steps: int

    def __init__(self, *, id: str | None = None, wall: Callable[[], float]) -> None:
        super().__init__(id=id)
        self.border_title = "queue"
        self._wall = wall
        self.snapshot = QueueSnapshot()
        self.names: Mapping[str, str] = {}
        """pane id -> the agent's name as the fleet list shows it."""
        self.where = ""
        """Whose queue this is (a file, or why none is shown), for the empty view."""
        self.table: DataTable[Text | str] = DataTable(id="queue-table", cursor_type="row", zebra_stripes=False)
        self._summary = Static("", id="queue-summary")
        self._empty = Static("", id="queue-empty")
        self._narrow: bool | None = None
        self._shown: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        yield self._summary
        yield self._empty
        yield self.table

    def on_mount(self) -> None:
        self.set_interval(5.0, self.refresh_ages, name="queue ages")
        self._render_rows()

    def on_resize(self) -> None:
        if is_narrow(self.app.size.width) != self._narrow:
            self._render_rows()

    def show(self, snapshot: QueueSnapshot, names: Mapping[str, str] | None = None) -> None:
        """Show the queue as read (UI thread); ``names``: the agents' names, when they changed."""
        self.snapshot = snapshot
        if names is not None:
            self.names = names
        self._render_rows()

    def refresh_ages(self) -> None:
        if self.display and self.snapshot.tasks:
            self._render_rows()

    @property
    def highlighted(self) -> Task | None:
        """The task under the cursor."""
        table = self.table
        if not table.row_count:
            return None
        try:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        except RowDoesNotExist:
            return None
        return next((task for task in self.snapshot.tasks if task.id == key), None)

    def move_cursor(self, delta: int) -> None:
        """``j``/``k`` (the dashboard's move keys) move the cursor here."""
        if self.table.row_count:
            self.table.move_cursor(row=max(0, min(self.table.row_count - 1, self.table.cursor_row + delta)))

    def select_task(self, task_id: str) -> None:
        """Put the cursor on ``task_id`` (if listed)."""
        with contextlib.suppress(RowDoesNotExist):  # not listed (an old ended task)
            self.table.move_cursor(row=self.table.get_row_index(task_id))

    # -- drawing ---------------------------------------------------------------------------------

    def _render_rows(self) -> None:
        if not self.is_mounted:
            return
        narrow = is_narrow(self.app.size.width)
        now = self._wall()
        tasks = rows_in_order(self.snapshot.tasks)
        rows = [self._row(task, now, narrow) for task in tasks]
        key = (narrow, tuple(str(cell) for row in rows for cell in row), self.names.get)
        if key[:2] == self._shown[:2]:
            return
        self._shown = key
        self._summary.update(summary_line(self.snapshot))
        self._empty.display = not tasks
        self.table.display = bool(tasks)
        self._empty.update(
            Text(
                "No task in the queue. a adds one here; nbs-tui queue add TEXT from a script or an agent.\n"
                + self.where
            )
        )
        table, highlighted = self.table, self.highlighted
        with self.app.batch_update():
            if narrow != self._narrow:
                self._narrow = narrow
                table.clear(columns=True)
                for label, key_name, width in NARROW_COLUMNS if narrow else WIDE_COLUMNS:
                    table.add_column(label, key=key_name, width=width)
                table.add_column("Task", key="task")
            else:
                table.clear()
            for task, row in zip(tasks, rows, strict=True):
                table.add_row(*row, key=task.id)
            if highlighted is not None:
                self.select_task(highlighted.id)

    def _row(self, task: Task, now: float, narrow: bool) -> list[Text | str]:
        state = Text(f" {task.state} ", style=STATE_STYLES.get(task.state, ""))
        if task.failures and task.state is TaskState.QUEUED:
            state.append(" ↻", style="red")  # failed once, waits to be handed out again
        agent = self.names.get(task.pane, task.pane) if task.pane else ("new agent" if task.worker or task.added.start else "—")
        what = Text(task_text(task))
        note = task.reason if task.state in (TaskState.NEEDS, TaskState.FAILED) or task.failures else ""
        if task.state is TaskState.DONE and task.message.strip():
            note = task.message
        if note.strip():
            what.append(f"  {printable(note.strip().splitlines()[0])}", style="dim")
        age = format_duration(now - task.added.at)
        cells: list[Text | str] = [Text(task.id, style="bold"), state]
        if not narrow:
            cells.append(str(task.priority) if task.priority else "")
        cells += [Text(printable(agent), style="" if task.pane else "dim"), age, what]
        return cells

    # -- the keys (the key table's ``queue`` scope) ------------------------------------------------

    def action_add(self) -> None:
        self.post_message(self.AddWanted())

    def action_cancel(self) -> None:
        task = self.highlighted
        if task is None:
            self.notify("No task to cancel here.", timeout=3)
            return
        self.post_message(self.CancelWanted(task))

    def action_move(self, steps: int) -> None:
        task = self.highlighted
        if task is None:
            return
        self.post_message(self.MoveWanted(task, steps))
