"""The queue as its records fold into it: tasks, their states, the agent each is with.

`QueueState.apply` takes the records in file order, one at a time (the store reads only the
lines appended since it last looked), so the fold is incremental; `fold` is the whole file's.
A record that does not fit the task's state (an outcome for a task no longer out, anything
about an unknown task) changes nothing: records come from several processes, and the last word
on a cancelled or finished task is that it ended.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from nbs_tui.core.queue.records import (
    QueuePaused,
    QueueResumed,
    Record,
    TaskAdded,
    TaskCancelled,
    TaskDone,
    TaskFailed,
    TaskHanded,
    TaskHanding,
    TaskMoved,
    TaskNeeds,
    TaskRunning,
    TaskUnhanded,
)

HANDOUTS = 2
"""How many times a task is handed out: a failure queues it once more, the next one is final."""


class TaskState(StrEnum):
    QUEUED = "queued"
    HANDING = "handing"
    """Being typed into an agent (or an agent being started for it): the in-flight mark is
    written, the outcome is not (docs/queue.md)."""
    RUNNING = "running"
    NEEDS = "needs"
    """Its agent waits on the operator."""
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def out(self) -> bool:
        """With an agent (or on its way to one): the agent holds this task and no other."""
        return self in (TaskState.HANDING, TaskState.RUNNING, TaskState.NEEDS)

    @property
    def ended(self) -> bool:
        return self in (TaskState.DONE, TaskState.FAILED, TaskState.CANCELLED)


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    added: TaskAdded
    state: TaskState = TaskState.QUEUED
    seq: int = 0
    """The order it was added in (its age, unless `rank` moved it)."""
    priority: int = 0
    rank: float = 0.0
    """Its place among tasks of equal priority: lower first (the add order, until moved)."""
    pane: str = ""
    """The agent's pane while out, and the last one after."""
    handing: TaskHanding | None = None
    """The in-flight mark while `state` is handing."""
    session_id: str = ""
    handed_at: float = 0.0
    """When the prompt was last handed (the transcript's prompt is looked for from here)."""
    failures: int = 0
    handouts: int = 0
    """How many times the prompt reached an agent."""
    message: str = ""
    """The agent's last assistant message, once done."""
    reason: str = ""
    """Why it failed, was unhanded or needs the operator (the last one)."""
    changed_at: float = 0.0

    @property
    def text(self) -> str:
        return self.added.text

    @property
    def worker(self) -> str:
        return self.added.worker

    @property
    def folder(self) -> str:
        return self.added.folder

    @property
    def order(self) -> tuple[int, float]:
        """Sort key: higher priority first, then lower rank (older)."""
        return (-self.priority, self.rank)

    def as_json(self) -> dict[str, Any]:
        """A task as ``queue ls --json`` and MCP show it."""
        return {
            "id": self.id,
            "state": str(self.state),
            "text": self.text or None,
            "worker": self.worker or None,
            "folder": self.folder or None,
            "agents": self.added.agents or None,
            "start": self.added.start,
            "after": self.added.after or None,
            "priority": self.priority,
            "added_at": self.added.at,
            "changed_at": self.changed_at,
            "pane": self.pane or None,
            "session_id": self.session_id or None,
            "handouts": self.handouts,
            "failures": self.failures,
            "reason": self.reason or None,
            "message": self.message or None,
        }


class QueueState:
    """The queue folded from its records (module docstring). Mutable only through `apply`."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self.paused = False
        self.records = 0
        """How many records were applied."""

    def apply(self, record: Record) -> None:
        self.records += 1
        if isinstance(record, QueuePaused):
            self.paused = True
            return
        if isinstance(record, QueueResumed):
            self.paused = False
            return
        if isinstance(record, TaskAdded):
            if record.task not in self._tasks:  # an id is given once (under the writers' lock)
                seq = len(self._tasks) + 1
                self._tasks[record.task] = Task(
                    id=record.task,
                    added=record,
                    seq=seq,
                    priority=record.priority,
                    rank=float(seq),
                    changed_at=record.at,
                )
            return
        task = self._tasks.get(record.task)
        if task is None:
            return
        changed = _next(task, record)
        if changed is not task:
            self._tasks[task.id] = replace(changed, changed_at=record.at)

    def get(self, task_id: str) -> Task | None:
        return self._tasks.get(task_id)

    def __iter__(self) -> Iterator[Task]:
        """Every task, in the order they were added."""
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)

    def ordered(self) -> list[Task]:
        """Every task in the order the queue hands them out (priority, then rank)."""
        return sorted(self._tasks.values(), key=lambda task: task.order)

    def last_id(self) -> int:
        """The highest numeric task id (0 for none): the next add takes one more."""
        return max((int(task_id) for task_id in self._tasks if task_id.isdecimal()), default=0)

    def holder_of(self, pane: str) -> Task | None:
        """The task the agent in ``pane`` holds, if any."""
        for task in self._tasks.values():
            if task.state.out and task.pane == pane:
                return task
        return None


def _next(task: Task, record: Record) -> Task:
    """``task`` after ``record`` (the same object when the record does not apply to it now)."""
    state = task.state
    if isinstance(record, TaskCancelled):
        return task if state.ended else replace(task, state=TaskState.CANCELLED, handing=None)
    if isinstance(record, TaskMoved):
        return replace(task, priority=record.priority, rank=record.rank)
    if isinstance(record, TaskHanding):
        if state is not TaskState.QUEUED:
            return task
        return replace(task, state=TaskState.HANDING, handing=record, pane=record.pane, reason="")
    if isinstance(record, TaskHanded):
        if state is not TaskState.HANDING or not _settles(task, record.mark):
            return task
        return replace(
            task,
            state=TaskState.RUNNING,
            handing=None,
            pane=record.pane or task.pane,
            session_id=record.session_id,
            handed_at=task.handing.at if task.handing else record.at,
            handouts=task.handouts + 1,
        )
    if isinstance(record, TaskUnhanded):
        if state is not TaskState.HANDING or not _settles(task, record.mark):
            return task
        return replace(task, state=TaskState.QUEUED, handing=None, reason=record.reason)
    if isinstance(record, TaskNeeds):
        return (
            replace(task, state=TaskState.NEEDS, reason=record.why)
            if state is TaskState.RUNNING
            else task
        )
    if isinstance(record, TaskRunning):
        return (
            replace(task, state=TaskState.RUNNING, reason="") if state is TaskState.NEEDS else task
        )
    if isinstance(record, TaskDone):
        if state not in (TaskState.RUNNING, TaskState.NEEDS):
            return task
        return replace(task, state=TaskState.DONE, message=record.message, reason="")
    if isinstance(record, TaskFailed):
        if state.ended or (state is TaskState.HANDING and not record.final):
            return task
        failures = task.failures + 1
        again = not record.final and failures < HANDOUTS
        return replace(
            task,
            state=TaskState.QUEUED if again else TaskState.FAILED,
            handing=None,
            failures=failures,
            reason=record.reason,
        )
    return task


def _settles(task: Task, mark: str) -> bool:
    """An outcome settles the hand-out it names, no other."""
    return task.handing is not None and task.handing.mark == mark


def fold(records: Iterable[Record]) -> QueueState:
    queue = QueueState()
    for record in records:
        queue.apply(record)
    return queue
