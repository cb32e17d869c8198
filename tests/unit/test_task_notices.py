"""Which queue tasks' outcomes are pushed (nbs_tui/core/notifications/task_notices.py): a first
look seeds; a task done, a failure (handed out again or for good) each once; the mute, not the
repeat limit, applies; the push's text names the task and how it ended."""

from __future__ import annotations

from nbs_tui.core.notifications.notify_rules import (
    Notification,
    NotifyDecider,
    NotifyKind,
    push_message,
)
from nbs_tui.core.notifications.task_notices import TaskNotices
from nbs_tui.core.queue.records import (
    Record,
    TaskAdded,
    TaskDone,
    TaskFailed,
    TaskHanded,
    TaskHanding,
)
from nbs_tui.core.queue.task_states import QueueState


def handed(queue: QueueState, task: str, pane: str, at: float) -> None:
    queue.apply(TaskHanding(task=task, at=at, pane=pane))
    queue.apply(TaskHanded(task=task, at=at, pane=pane))


def apply(queue: QueueState, *records: Record) -> QueueState:
    for record in records:
        queue.apply(record)
    return queue


def kinds(notes: list[Notification]) -> list[tuple[NotifyKind, str]]:
    return [(note.kind, note.pane_id) for note in notes]


def test_a_first_look_seeds_then_each_outcome_is_said_once() -> None:
    queue = apply(QueueState(), TaskAdded(task="1", at=1.0, text="fix the flaky test\nand more"), TaskAdded(task="2", at=1.0, text="b"))
    handed(queue, "1", "%1", 2.0)
    queue.apply(TaskDone(task="1", at=3.0, message="All 12 tests pass.\nDetails below"))
    notices = TaskNotices()
    assert notices.observe(queue, 3.0) == []  # ended before this process looked: not pushed
    handed(queue, "2", "%2", 4.0)
    assert notices.observe(queue, 4.0) == []
    queue.apply(TaskFailed(task="2", at=5.0, reason="the agent exited"))
    [failed] = notices.observe(queue, 5.0)
    assert (failed.kind, failed.pane_id, failed.state) == (NotifyKind.TASK_FAILED, "%2", "queued")
    assert failed.reason == "task 2: b\nfailed (handed out once more): the agent exited"
    assert notices.observe(queue, 5.5) == []  # once
    handed(queue, "2", "%3", 6.0)
    queue.apply(TaskFailed(task="2", at=7.0, reason="usage limit"))
    [final] = notices.observe(queue, 7.0)
    assert final.reason == "task 2: b\nfailed (failed for good): usage limit"
    queue.apply(TaskAdded(task="3", at=8.0, worker="reviewer", folder="/p"))
    handed(queue, "3", "%4", 8.0)
    queue.apply(TaskDone(task="3", at=9.0, message="Reviewed."))
    [done] = notices.observe(queue, 9.0)
    assert (done.kind, done.pane_id, done.reason) == (NotifyKind.TASK_DONE, "%4", "task 3: worker reviewer\ndone: Reviewed.")


def test_two_tasks_done_by_one_agent_within_the_repeat_limit_are_two_pushes_unless_muted() -> None:
    queue = apply(QueueState(), TaskAdded(task="1", at=1.0, text="a"), TaskAdded(task="2", at=1.0, text="b"))
    notices, decider = TaskNotices(), NotifyDecider(repeat=60.0)
    notices.observe(queue, 1.0)
    allowed = []
    for task, at in (("1", 2.0), ("2", 4.0)):
        handed(queue, task, "%1", at)
        queue.apply(TaskDone(task=task, at=at + 1))
        allowed += [n for n in notices.observe(queue, at + 1) if decider.allow_outcome(n) is not None]
    assert kinds(allowed) == [(NotifyKind.TASK_DONE, "%1"), (NotifyKind.TASK_DONE, "%1")]
    muted = NotifyDecider(also_muted=frozenset({NotifyKind.TASK_DONE}))
    assert muted.allow_outcome(allowed[0]) is None
    assert NotifyDecider(muted=frozenset({NotifyKind.TASK_FAILED})).allow_outcome(allowed[0]) is allowed[0]


def test_the_push_names_the_agent_the_task_and_how_it_ended() -> None:
    note = Notification(NotifyKind.TASK_DONE, "%1", "done", "task 3: fix it\ndone: All pass.", 1.0)
    assert push_message(note, "agents:1.0", link="https://h/open/x") == (
        "nbs-tui: agents:1.0 task done", "task 3: fix it\ndone: All pass.\nhttps://h/open/x"
    )
    started = Notification(NotifyKind.TASK_FAILED, "", "failed", "task 4: x\nfailed (failed for good)", 1.0)
    assert push_message(started, "")[0] == "nbs-tui: a new agent task failed"
