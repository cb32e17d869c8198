"""The operator's edits of the queue, pure (nbs_tui/core/queue/edits.py): a move puts a queued task
exactly where asked among the queued ones, whatever priorities they have; a cancel or move that
does not fit the queue as it is now is refused with a reason; an add is checked first."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbs_tui.core.queue.edits import (
    EditRefused,
    NewTask,
    cancel_record,
    move_record,
    new_task_problems,
    waiting,
)
from nbs_tui.core.queue.records import TaskAdded, TaskCancelled, TaskDone, TaskHanded, TaskHanding
from nbs_tui.core.queue.task_states import QueueState, fold


def queue_of(priorities: list[int]) -> QueueState:
    return fold(TaskAdded(task=str(n), at=float(n), text=f"task {n}", priority=p) for n, p in enumerate(priorities, 1))


def ids(queue: QueueState) -> list[str]:
    return [task.id for task in waiting(queue)]


def test_a_move_sooner_and_later_by_one_place() -> None:
    queue = queue_of([0, 0, 0, 0])
    queue.apply(move_record(queue, "3", -1, 10.0))
    assert ids(queue) == ["1", "3", "2", "4"]
    queue.apply(move_record(queue, "3", -1, 11.0))
    assert ids(queue) == ["3", "1", "2", "4"]
    queue.apply(move_record(queue, "1", 2, 12.0))
    assert ids(queue) == ["3", "2", "4", "1"]


def test_passing_a_task_of_another_priority_takes_its_priority() -> None:
    queue = queue_of([5, 0, 0])  # task 1 goes first by priority
    record = move_record(queue, "2", -1, 10.0)
    assert record.priority == 5
    queue.apply(record)
    assert ids(queue) == ["2", "1", "3"]
    record = move_record(queue, "1", 2, 11.0)
    assert record.priority == 0
    queue.apply(record)
    assert ids(queue) == ["2", "3", "1"]


def test_refused_moves_and_cancels_say_why() -> None:
    queue = queue_of([0, 0])
    with pytest.raises(EditRefused, match="first in the queue already"):
        move_record(queue, "1", -1, 1.0)
    with pytest.raises(EditRefused, match="last in the queue already"):
        move_record(queue, "2", 1, 1.0)
    with pytest.raises(EditRefused, match="not in the queue"):
        move_record(queue, "9", 1, 1.0)
    queue.apply(TaskHanding(task="1", at=2.0, pane="%1"))
    queue.apply(TaskHanded(task="1", at=2.0, pane="%1"))
    with pytest.raises(EditRefused, match="running, not queued"):
        move_record(queue, "1", 1, 3.0)
    assert cancel_record(queue, "1", 4.0) == TaskCancelled(task="1", at=4.0)  # a running task may be cancelled
    queue.apply(TaskDone(task="1", at=5.0))
    with pytest.raises(EditRefused, match=r"ended already \(done\)"):
        cancel_record(queue, "1", 6.0)
    with pytest.raises(EditRefused, match="no task 7"):
        cancel_record(queue, "7", 6.0)


@settings(max_examples=200, deadline=None)
@given(
    priorities=st.lists(st.integers(-2, 2), min_size=2, max_size=8),
    moves=st.lists(st.tuples(st.integers(0, 7), st.integers(-9, 9).filter(bool)), max_size=25),
)
def test_any_moves_put_the_task_where_asked_and_keep_the_others_in_order(
    priorities: list[int], moves: list[tuple[int, int]]
) -> None:
    queue = queue_of(priorities)
    for which, steps in moves:
        before = ids(queue)
        task_id = before[which % len(before)]
        try:
            record = move_record(queue, task_id, steps, 100.0)
        except EditRefused:
            index = before.index(task_id)
            assert (index == 0 and steps < 0) or (index == len(before) - 1 and steps > 0)
            continue
        queue.apply(record)
        expected = [t for t in before if t != task_id]
        expected.insert(min(max(before.index(task_id) + steps, 0), len(expected)), task_id)
        assert ids(queue) == expected


def test_a_new_task_is_checked_before_it_is_added() -> None:
    assert new_task_problems(NewTask("fix it")) == []
    assert new_task_problems(NewTask("fix it", folder="/srv/app", start=True)) == []
    assert new_task_problems(NewTask("  ")) == ["The task needs a text: the prompt typed into the agent that takes it."]
    assert new_task_problems(NewTask("x", folder="app")) == ["The folder must be an absolute path: app"]
    assert new_task_problems(NewTask("x", start=True)) == ["Starting a new agent needs the folder to start it in."]
    # as nbs-tui queue add and the sidecar's typing: no control character (an Escape opens menus)
    [escape] = new_task_problems(NewTask("fix it\x1b[A"))
    assert escape.startswith("The text cannot be typed: the text holds a control character")
    assert new_task_problems(NewTask("x" * 200_000))[0].startswith("The text cannot be typed: the text has 200000 characters")
    assert NewTask("two\r\nlines  \n\n").record("1", 1.0).text == "two\nlines"
    record = NewTask("fix it", folder="/srv/app/", agents="w-*", priority=3, start=True).record("4", 9.0)
    assert record == TaskAdded(task="4", at=9.0, text="fix it", folder="/srv/app", agents="w-*", priority=3, start=True)
