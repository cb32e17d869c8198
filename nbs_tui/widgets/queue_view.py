"""The work queue's view (``4``): each task's state, agent and age, with add, cancel and reorder.

It shows `nbs_tui.files.queue_watch.QueueSnapshot`s and asks for edits with its messages
(`AddWanted`, `CancelWanted`, `MoveWanted`); the dashboard's queue part
(`nbs_tui.dashboard.queue_shown`) appends the records, and the file's next read shows them. Its
keys are the key table's ``queue`` scope (`nbs_tui.dashboard.key_table`).

Rows: the tasks with an agent first, then the queued ones in the order they will be handed out,
then those that ended, newest first (at most `ENDED_SHOWN`). The task's text gets the width the
other columns leave, cut with an ellipsis (the table never scrolls sideways). On a phone (under
`nbs_tui.widgets.breakpoints.NARROW_BELOW` columns) a task takes two lines: its id, state and
text, then its agent and age under the text.
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
from nbs_tui.widgets.pane_text import TASK_STYLES, task_text

ENDED_SHOWN = 50
"""Ended tasks listed (the newest); the file keeps them all, ``nbs-tui queue ls`` lists them."""

WIDE_COLUMNS = (("#", "id", 4), ("State", "state", 13), ("Pri", "priority", 3), ("Agent", "agent", 18), ("Age", "age", 7))
NARROW_COLUMNS = (("#", "id", 3), ("State", "state", 11))
TASK_MIN = 12
"""The task column's least width."""


def task_age(seconds: float) -> str:
    """``40s``, ``42m``, ``3h05m``, ``2d04h``: a queue's ages run to days, and the view redraws
    a row only when its text changes (minutes, not seconds, after the first one)."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    return f"{seconds // 86400}d{(seconds % 86400) // 3600:02d}h"


def rows_in_order(tasks: Sequence[Task]) -> list[Task]:
    """The rows' order (module docstring)."""
    out = [task for task in tasks if task.state.out]
    queued = sorted((task for task in tasks if task.state is TaskState.QUEUED), key=lambda task: task.order)
    ended = sorted((task for task in tasks if task.state.ended), key=lambda task: -task.changed_at)
    return out + queued + ended[:ENDED_SHOWN]


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
        height: auto;
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
    class AgentWanted(Message):
        """Enter (or a click) on a task that has an agent: show that agent."""

        pane_id: str

    @dataclass
    class PauseWanted(Message):
        """The operator asked to pause the queue, or resume it (``p``)."""

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
        self._layout: tuple[object, ...] = ()
        """(narrow, task column width, the rows' task ids) as the table has them."""
        self._summary_shown: str | None = None
        self._cells: list[tuple[str, ...]] = []
        """Each row's cells as the table shows them (compared to update only the changed ones)."""

    def compose(self) -> ComposeResult:
        yield self._summary
        yield self._empty
        yield self.table

    def on_mount(self) -> None:
        self.set_interval(5.0, self.draw_if_shown, name="queue ages")
        self._render_rows()

    def on_resize(self) -> None:
        self._render_rows()  # the task column takes what the others leave

    def show(self, snapshot: QueueSnapshot, names: Mapping[str, str] | None = None) -> None:
        """Show the queue as read (UI thread); ``names``: the agents' names, when they changed."""
        self.snapshot = snapshot
        if names is not None:
            self.names = names
        self.draw_if_shown()

    def draw_if_shown(self) -> None:
        """Draw the rows (every few seconds, as the ages move; on each read of the file; when the
        view switcher shows the view), only while on screen: the switcher's hidden pane leaves
        this widget an empty region. A hidden view only keeps the snapshot: a big queue's rows
        cost tens of milliseconds to build (bench/bench_queue_view.py), for each record the
        feeder writes."""
        if self.region.area:
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

    def task_held_by(self, pane_id: str) -> Task | None:
        """The task the agent in ``pane_id`` holds, as last read (the details panel shows it)."""
        return next((task for task in self.snapshot.tasks if task.state.out and task.pane == pane_id), None)

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
        columns = NARROW_COLUMNS if narrow else WIDE_COLUMNS
        padding = 2 * self.table.cell_padding
        width = max(TASK_MIN, self.table.scrollable_content_region.width - sum(w + padding for *_, w in columns) - padding)
        now = self._wall()
        tasks = rows_in_order(self.snapshot.tasks)
        rows = [self._row(task, now, narrow, width) for task in tasks]
        cells = [tuple(str(cell) for cell in row) for row in rows]
        layout = (narrow, width, tuple(task.id for task in tasks))
        summary = summary_line(self.snapshot)
        if summary.plain != self._summary_shown:  # the counts, PAUSED: they change without a row
            self._summary_shown = summary.plain
            self._summary.update(summary)
        if (layout, cells) == (self._layout, self._cells):
            return
        self._empty.display = not tasks  # the table stays, empty: it keeps the focus and the view's keys
        self._empty.update(
            Text(
                "No task in the queue. a adds one here; nbs-tui queue add TEXT from a script or an agent.\n"
                + self.where
            )
        )
        table = self.table
        if layout == self._layout:  # the same rows: only the cells that changed (the ages, mostly)
            keys = [column.key for column in table.ordered_columns]
            for task, row, new, old in zip(tasks, rows, cells, self._cells, strict=True):
                for key, cell, now_shown, was in zip(keys, row, new, old, strict=True):
                    if now_shown != was:
                        table.update_cell(task.id, key, cell)
            self._cells = cells
            return
        highlighted = self.highlighted
        with self.app.batch_update():
            if layout[:2] != self._layout[:2]:
                table.clear(columns=True)
                for label, key_name, column_width in columns:
                    table.add_column(label, key=key_name, width=column_width)
                table.add_column("Task", key="task", width=width)
            else:
                table.clear()
            for task, row in zip(tasks, rows, strict=True):
                table.add_row(*row, key=task.id, height=2 if narrow else 1)
            if highlighted is not None:
                self.select_task(highlighted.id)
        self._layout, self._cells = layout, cells

    def _row(self, task: Task, now: float, narrow: bool, width: int) -> list[Text | str]:
        state = Text(f" {task.state} ", style=TASK_STYLES.get(task.state, ""))
        if task.failures and task.state is TaskState.QUEUED:
            state.append("↻", style="red")  # failed once, waits to be handed out again
        agent = self.names.get(task.pane, task.pane) if task.pane else ("new agent" if task.worker or task.added.start else "—")
        agent_text = Text(printable(agent), style="" if task.pane else "dim")
        what = Text(task_text(task))
        note = task.reason if task.state in (TaskState.NEEDS, TaskState.FAILED) or task.failures else ""
        if task.state is TaskState.DONE and task.message.strip():
            note = task.message
        age = task_age(now - task.added.at)
        if narrow:  # two lines: the text, then the agent, age and note under it
            what.truncate(width, overflow="ellipsis")
            under = Text.assemble(agent_text, (f" · {age}", "dim"))
            if note.strip():
                under.append(f" · {printable(note.strip().splitlines()[0])}", style="dim")
            under.truncate(width, overflow="ellipsis")
            return [Text(task.id, style="bold"), state, Text("\n").join((what, under))]
        if note.strip():
            what.append(f"  {printable(note.strip().splitlines()[0])}", style="dim")
        what.truncate(width, overflow="ellipsis")
        return [Text(task.id, style="bold"), state, str(task.priority) if task.priority else "", agent_text, age, what]

    # -- the keys (the key table's ``queue`` scope) ------------------------------------------------

    def action_add(self) -> None:
        self.post_message(self.AddWanted())

    def action_cancel(self) -> None:
        task = self.highlighted
        if task is None:
            self.notify("No task to cancel here.", timeout=3)
            return
        self.post_message(self.CancelWanted(task))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        task = next((task for task in self.snapshot.tasks if task.id == event.row_key.value), None)
        if task is not None and task.pane:
            self.post_message(self.AgentWanted(task.pane))
        elif task is not None:
            self.notify(f"Task {task.id} has no agent yet.", timeout=3)

    def action_pause(self) -> None:
        self.post_message(self.PauseWanted())

    def action_move(self, steps: int) -> None:
        task = self.highlighted
        if task is None:
            return
        self.post_message(self.MoveWanted(task, steps))
