"""What an operator's edit of the queue appends, decided on the queue as it is: an add, a cancel,
a move, a pause or resume.

The dashboard's queue view (`nbs_tui.widgets.queue_view`) asks for "task 3 one place up"; the
store (`nbs_tui.files.queue_store.QueueStore.append_checked`) calls these under the writers'
lock with the queue read to its end, so the record fits the queue of that moment, whatever
another dashboard or the feeder appended since the view last showed it.

A move is a `TaskMoved`: the priority and rank of the place between two neighbours in hand-out
order (`Task.order`: priority, then rank). Only queued tasks have a place to move in: a task out
with an agent, or ended, keeps its own.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from nbs_tui.core.queue.records import (
    QueuePaused,
    QueueResumed,
    TaskAdded,
    TaskCancelled,
    TaskMoved,
)
from nbs_tui.core.queue.task_states import QueueState, Task, TaskState
from nbs_tui.core.sidecar.delivery_rules import clean_text


class EditRefused(ValueError):
    """The edit does not fit the queue as it is now; the message says why, for the operator."""


@dataclass(frozen=True, slots=True)
class NewTask:
    """A task as the dashboard's "add task" form collects it (the fields of ``nbs-tui queue add``)."""

    text: str
    folder: str = ""
    """Absolute ("" any agent's folder)."""
    agents: str = ""
    priority: int = 0
    start: bool = False

    def record(self, task_id: str, at: float) -> TaskAdded:
        """The ``added`` record (the text as it will be typed: `new_task_problems` said it may be)."""
        return TaskAdded(
            task=task_id, at=at, text=clean_text(self.text), folder=posixpath.normpath(self.folder) if self.folder else "",
            agents=self.agents, priority=self.priority, start=self.start,
        )  # fmt: skip


def new_task_problems(task: NewTask) -> list[str]:
    """What is wrong with ``task`` before it is added, one line each (none: it may be added)."""
    found = []
    if not task.text.strip():
        found.append("The task needs a text: the prompt typed into the agent that takes it.")
    else:
        try:  # as the sidecar will type it, and as `nbs-tui queue add` checks it
            clean_text(task.text)
        except ValueError as error:
            found.append(f"The text cannot be typed: {error}.")
    if task.folder and not posixpath.isabs(task.folder):
        found.append(f"The folder must be an absolute path: {task.folder}")
    if task.start and not task.folder:
        found.append("Starting a new agent needs the folder to start it in.")
    return found


def cancel_record(queue: QueueState, task_id: str, at: float) -> TaskCancelled:
    """The record that cancels ``task_id``; `EditRefused` when it is unknown or has ended."""
    task = queue.get(task_id)
    if task is None:
        raise EditRefused(f"there is no task {task_id} in the queue")
    if task.state.ended:
        raise EditRefused(f"task {task_id} has ended already ({task.state})")
    return TaskCancelled(task=task_id, at=at)


def pause_record(queue: QueueState, at: float) -> QueuePaused | QueueResumed:
    """Pause the queue if it runs, resume it if paused (as it is now, not as last shown)."""
    return QueueResumed(at=at) if queue.paused else QueuePaused(at=at)


def waiting(queue: QueueState) -> list[Task]:
    """The queued tasks in hand-out order: the ones a move reorders."""
    return [task for task in queue.ordered() if task.state is TaskState.QUEUED]


def move_record(queue: QueueState, task_id: str, steps: int, at: float) -> TaskMoved:
    """The record that moves queued ``task_id`` ``steps`` places (negative: sooner) among the
    queued tasks, taking the priority of the task it passes; `EditRefused` when it cannot move
    (not queued, already first or last)."""
    line = waiting(queue)
    index = next((i for i, task in enumerate(line) if task.id == task_id), None)
    if index is None:
        task = queue.get(task_id)
        state = "not in the queue" if task is None else f"{task.state}, not queued"
        raise EditRefused(f"task {task_id} is {state}: only a queued task moves")
    others = line[:index] + line[index + 1 :]
    place = min(max(index + steps, 0), len(others))
    if place == index:
        raise EditRefused(f"task {task_id} is {'first' if steps < 0 else 'last'} in the queue already")
    before = others[place - 1] if place > 0 else None
    after = others[place] if place < len(others) else None
    priority, rank = _between(before, after)
    return TaskMoved(task=task_id, at=at, priority=priority, rank=rank)


def _between(before: Task | None, after: Task | None) -> tuple[int, float]:
    """A (priority, rank) that sorts after ``before`` and ahead of ``after`` (`Task.order`)."""
    if before is None:
        assert after is not None  # a move passes at least one task
        return after.priority, after.rank - 1.0
    if after is None or after.priority != before.priority:
        return before.priority, before.rank + 1.0
    middle = (before.rank + after.rank) / 2
    if not before.rank < middle < after.rank:  # ranks this close after ~50 halvings: rare
        raise EditRefused("the tasks' ranks are too close to move between; move another task first")
    return before.priority, middle
