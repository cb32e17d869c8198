"""Which work queue tasks ended since the queue was last looked at: the pushes ``task-done`` and
``task-failed`` (issue 36: "a push when a task is done or fails").

Pure: the push sender (`nbs_tui.notify.push.PushSender`, in the lease holder) hands `TaskNotices`
the queue each time its file grew, and offers what comes back under the same mute as the other
kinds (`NotifyDecider.allow_outcome`). The queue's records are the truth, not the agents'
states: the feeder (`docs/queue.md`) decides when a task is done or failed and writes it down,
and this says so once.

Rules:
- the first look only seeds: a process that takes the lease over does not push every task that
  ended before it;
- ``task-done``: a task became done;
- ``task-failed``: a task's failures went up, whether it is handed out once more or stays failed
  (the body says which).
"""

from __future__ import annotations

from collections.abc import Iterable

from nbs_tui.core.notifications.notify_rules import PUSH_LINE, Notification, NotifyKind
from nbs_tui.core.queue.task_states import Task, TaskState


def _line(text: str) -> str:
    """The first non-blank line of ``text``, printable, at most `PUSH_LINE` characters."""
    first = next((" ".join(line.split()) for line in text.splitlines() if line.strip()), "")
    clean = "".join(ch for ch in first if ch.isprintable())
    return clean if len(clean) <= PUSH_LINE else clean[: PUSH_LINE - 1] + "…"


def task_title(task: Task) -> str:
    """``task 3: fix the flaky test`` (a worker task: ``task 3: worker NAME``)."""
    what = f"worker {task.worker}" if task.worker else _line(task.text)
    return f"task {task.id}: {what}"


def task_note(kind: NotifyKind, task: Task, at: float) -> Notification:
    """The notification of one task's outcome; its ``reason`` is the push's body."""
    if kind is NotifyKind.TASK_DONE:
        outcome = f"done: {_line(task.message)}" if task.message.strip() else "done"
    else:
        again = "handed out once more" if task.state is TaskState.QUEUED else "failed for good"
        outcome = f"failed ({again})" + (f": {_line(task.reason)}" if task.reason.strip() else "")
    return Notification(kind, task.pane, str(task.state), f"{task_title(task)}\n{outcome}", at)


class TaskNotices:
    """Remembers each task's state and failures between looks (module docstring)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[TaskState, int]] | None = None

    def observe(self, tasks: Iterable[Task], at: float) -> list[Notification]:
        """The queue as it is now; the notifications its changes since the last look make due."""
        first, seen = self._seen is None, self._seen or {}
        now: dict[str, tuple[TaskState, int]] = {}
        notes: list[Notification] = []
        for task in tasks:
            now[task.id] = (task.state, task.failures)
            if first:
                continue
            state, failures = seen.get(task.id, (TaskState.QUEUED, 0))
            if task.state is TaskState.DONE and state is not TaskState.DONE:
                notes.append(task_note(NotifyKind.TASK_DONE, task, at))
            if task.failures > failures:
                notes.append(task_note(NotifyKind.TASK_FAILED, task, at))
        self._seen = now
        return notes
