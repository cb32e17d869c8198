"""The work queue's pure model: records, their fold into tasks, and the feeder's choices."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbs_tui.core.queue.handout import (
    QueueAgent,
    blocked_for_good,
    folder_limit,
    may_take,
    plan_handouts,
    within,
)
from nbs_tui.core.queue.records import (
    NewerRecordError,
    QueuePaused,
    QueueResumed,
    Record,
    RecordError,
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
    parse_line,
    record_line,
)
from nbs_tui.core.queue.task_states import QueueState, TaskState, fold


def added(task: str, text: str = "do it", **fields: object) -> TaskAdded:
    return TaskAdded(task=task, at=float(task), text=text, **fields)  # type: ignore[arg-type]


def idle(pane: str, folder: str = "/p", window: str = "w", worker: str = "") -> QueueAgent:
    return QueueAgent(pane=pane, folder=folder, window=window, worker=worker, state="idle")


# -- records ------------------------------------------------------------------------------------


def test_a_record_is_one_line_and_reads_back() -> None:
    record = added(
        "7",
        text="line one\nline two \u00e9",
        folder="/p",
        agents="w*",
        start=True,
        after="3",
        priority=2,
    )
    line = record_line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert parse_line(line[:-1]) == record


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"not json", "not JSON"),
        (b"[1]", "not a JSON object"),
        (b'{"kind":"added","task":"1","at":1,"text":"x"}', "no format number"),
        (b'{"v":1,"kind":"added","at":1,"text":"x"}', "without task"),
        (b'{"v":1,"kind":"added","task":"1","at":1}', "exactly one of text and worker"),
        (
            b'{"v":1,"kind":"added","task":"1","at":1,"text":"x","worker":"w"}',
            "exactly one of text and worker",
        ),
        (b'{"v":1,"kind":"added","task":1,"at":1,"text":"x"}', "not a str"),
        (b'{"v":1,"kind":"failed","task":"1","at":1,"final":"yes"}', "not a bool"),
        (b'{"v":1,"kind":"moved","task":"1","at":1,"priority":true}', "not a int"),
    ],
)
def test_lines_that_are_not_records_say_why(line: bytes, why: str) -> None:
    with pytest.raises(RecordError, match=why):
        parse_line(line)


def test_records_of_a_newer_nbs_tui_are_told_apart() -> None:
    with pytest.raises(NewerRecordError):
        parse_line(b'{"v":2,"kind":"added","task":"1","at":1,"text":"x"}')
    with pytest.raises(NewerRecordError):
        parse_line(b'{"v":1,"kind":"teleported","task":"1","at":1}')


RECORDS = st.one_of(
    st.builds(
        TaskAdded,
        task=st.text(min_size=1),
        at=st.floats(0, 1e10),
        text=st.text(min_size=1),
        priority=st.integers(-5, 5),
    ),
    st.builds(
        TaskHanding,
        task=st.text(min_size=1),
        at=st.floats(0, 1e10),
        pane=st.text(),
        window=st.text(),
        token=st.text(),
    ),
    st.builds(TaskDone, task=st.text(min_size=1), at=st.floats(0, 1e10), message=st.text()),
    st.builds(
        TaskFailed,
        task=st.text(min_size=1),
        at=st.floats(0, 1e10),
        reason=st.text(),
        final=st.booleans(),
    ),
    st.builds(
        TaskMoved,
        task=st.text(min_size=1),
        at=st.floats(0, 1e10),
        priority=st.integers(),
        rank=st.floats(-1e9, 1e9),
    ),
    st.builds(QueuePaused, at=st.floats(0, 1e10)),
)


@given(RECORDS)
def test_every_record_reads_back_from_its_line(record: Record) -> None:
    line = record_line(record)
    assert line.count(b"\n") == 1
    assert parse_line(line[:-1]) == record


# -- the fold -------------------------------------------------------------------------------------


def test_a_task_goes_out_runs_waits_and_ends_done_with_the_message() -> None:
    queue = fold([added("1"), TaskHanding("1", 2.0, pane="%1", token="t")])
    task = queue.get("1")
    assert (
        task is not None
        and task.state is TaskState.HANDING
        and task.pane == "%1"
        and task.handing is not None
    )
    for record, state in (
        (TaskHanded("1", 3.0, pane="%1", session_id="s"), TaskState.RUNNING),
        (TaskNeeds("1", 4.0, why="permission"), TaskState.NEEDS),
        (TaskRunning("1", 5.0), TaskState.RUNNING),
        (TaskDone("1", 6.0, message="all green"), TaskState.DONE),
    ):
        queue.apply(record)
        task = queue.get("1")
        assert task is not None and task.state is state
    assert (
        task.message == "all green"
        and task.handouts == 1
        and task.handed_at == 2.0
        and task.changed_at == 6.0
    )


def test_a_failure_hands_the_task_out_once_more_then_it_stays_failed() -> None:
    queue = fold(
        [
            added("1"),
            TaskHanding("1", 2, pane="%1"),
            TaskHanded("1", 3, pane="%1"),
            TaskFailed("1", 4, "exited"),
        ]
    )
    task = queue.get("1")
    assert task is not None and task.state is TaskState.QUEUED and task.failures == 1
    for record in (
        TaskHanding("1", 5, pane="%2"),
        TaskHanded("1", 6, pane="%2"),
        TaskFailed("1", 7, "limited"),
    ):
        queue.apply(record)
    task = queue.get("1")
    assert (
        task is not None
        and task.state is TaskState.FAILED
        and task.reason == "limited"
        and task.handouts == 2
    )


def test_an_unhanded_task_is_queued_again_without_spending_a_handout() -> None:
    queue = fold(
        [added("1"), TaskHanding("1", 2, pane="%1"), TaskUnhanded("1", 3, reason="refused: working")]
    )
    task = queue.get("1")
    assert (
        task is not None
        and task.state is TaskState.QUEUED
        and task.failures == 0
        and task.handouts == 0
    )
    assert task.reason == "refused: working"


def test_an_outcome_settles_only_the_handout_it_names() -> None:
    """A holder that lost the lease mid-hand-out may write its outcome after the next holder
    settled that hand-out and started another: it must not settle the new one."""
    queue = fold(
        [
            added("1"),
            TaskHanding("1", 2, pane="%1", mark="old"),
            TaskUnhanded("1", 3, mark="old", reason="not submitted"),
            TaskHanding("1", 4, pane="%2", mark="new"),
            TaskHanded("1", 5, mark="old", pane="%1"),
            TaskUnhanded("1", 5, mark="old"),
        ]
    )
    task = queue.get("1")
    assert task is not None and task.state is TaskState.HANDING and task.pane == "%2"
    queue.apply(TaskHanded("1", 6, mark="new", pane="%2"))
    task = queue.get("1")
    assert task is not None and task.state is TaskState.RUNNING and task.handouts == 1


def test_a_cancelled_task_ignores_the_outcomes_that_come_after() -> None:
    queue = fold(
        [
            added("1"),
            TaskHanding("1", 2, pane="%1"),
            TaskCancelled("1", 3),
            TaskHanded("1", 4, pane="%1"),
        ]
    )
    task = queue.get("1")
    assert task is not None and task.state is TaskState.CANCELLED
    queue.apply(TaskDone("1", 5))
    queue.apply(TaskCancelled("1", 6))
    task = queue.get("1")
    assert task is not None and task.state is TaskState.CANCELLED and task.changed_at == 3


def test_records_out_of_turn_change_nothing() -> None:
    queue = fold(
        [
            added("1"),
            TaskHanded("1", 2, pane="%1"),
            TaskDone("1", 3),
            TaskNeeds("1", 4),
            TaskRunning("9", 5),
        ]
    )
    task = queue.get("1")
    assert task is not None and task.state is TaskState.QUEUED and task.pane == ""
    queue.apply(TaskHanding("1", 6, pane="%1"))
    queue.apply(TaskHanding("1", 7, pane="%2"))  # a second mark for a task already handing
    task = queue.get("1")
    assert task is not None and task.pane == "%1"
    queue.apply(TaskFailed("1", 8, "not final while handing"))
    assert queue.get("1").state is TaskState.HANDING  # type: ignore[union-attr]


def test_an_id_is_added_once_and_the_next_id_is_one_more() -> None:
    queue = fold([added("1", "first"), added("2"), added("1", "again")])
    assert len(queue) == 2 and queue.get("1").text == "first"  # type: ignore[union-attr]
    assert queue.last_id() == 2 and QueueState().last_id() == 0


def test_pause_and_resume() -> None:
    assert fold([QueuePaused(1)]).paused and not fold([QueuePaused(1), QueueResumed(2)]).paused


def test_a_task_shows_as_json_for_ls_and_mcp() -> None:
    queue = fold(
        [
            added("1", folder="/p"),
            TaskHanding("1", 2, pane="%4"),
            TaskHanded("1", 3, pane="%4", session_id="s"),
        ]
    )
    task = queue.get("1")
    assert task is not None
    shown = task.as_json()
    assert (
        shown["id"] == "1"
        and shown["state"] == "running"
        and shown["pane"] == "%4"
        and shown["folder"] == "/p"
    )
    json.dumps(shown)


# -- which agent may take which task --------------------------------------------------------------


def test_within_is_the_folder_or_below_never_a_sibling_with_the_same_start() -> None:
    assert within("/a/b", "/a/b") and within("/a/b/c", "/a/b") and within("/a/b/", "/a/b")
    assert not within("/a/bc", "/a/b") and not within("/a", "/a/b") and not within("", "/a")
    assert within("/a/b", "/")


def test_may_take_by_folder_glob_or_any() -> None:
    queue = fold(
        [
            added("1"),
            added("2", folder="/p/sub"),
            added("3", agents="rev*"),
            added("4", worker="builder", text="", folder="/p"),
        ]
    )
    anyone, in_folder, by_glob, worker_task = (queue.get(i) for i in "1234")
    assert anyone and in_folder and by_glob and worker_task
    assert may_take(anyone, idle("%1", folder="/elsewhere"))
    assert may_take(in_folder, idle("%1", folder="/p/sub/deep")) and not may_take(
        in_folder, idle("%1", folder="/p")
    )
    assert may_take(by_glob, idle("%1", window="review-2")) and may_take(
        by_glob, idle("%1", worker="reviewer")
    )
    assert not may_take(by_glob, idle("%1", window="builder"))
    assert not may_take(worker_task, idle("%1", folder="/p")), (
        "a worker task always gets its own new agent"
    )


def test_next_by_priority_then_age_to_idle_agents_that_hold_nothing() -> None:
    queue = fold([added("1"), added("2", priority=5), added("3"), added("4")])
    agents = [idle("%1"), QueueAgent("%2", "/p", "w", state="working"), idle("%3"), idle("%4")]
    plan = plan_handouts(queue, agents, {})
    assert [(h.task.id, h.pane) for h in plan] == [("2", "%1"), ("1", "%3"), ("3", "%4")]
    queue.apply(TaskHanding("2", 9, pane="%1"))
    queue.apply(TaskHanded("2", 9, pane="%1"))
    plan = plan_handouts(queue, agents, {})
    assert [(h.task.id, h.pane) for h in plan] == [("1", "%3"), ("3", "%4")], (
        "%1 holds task 2 though it shows idle"
    )


def test_moved_reorders_among_equal_priorities() -> None:
    queue = fold([added("1"), added("2"), added("3"), TaskMoved("3", 4, priority=0, rank=0.5)])
    assert [t.id for t in queue.ordered()] == ["3", "1", "2"]


def test_max_concurrent_caps_a_folders_tasks_out_at_once() -> None:
    queue = fold([added(str(i), folder="/p") for i in range(1, 6)] + [added("6", folder="/q")])
    agents = [idle(f"%{i}", folder="/p") for i in range(1, 4)] + [idle("%9", folder="/q")]
    plan = plan_handouts(queue, agents, {"/p": 2})
    assert [(h.task.id, h.pane) for h in plan] == [("1", "%1"), ("2", "%2"), ("6", "%9")]
    queue.apply(TaskHanding("1", 9, pane="%1"))
    plan = plan_handouts(queue, [a for a in agents if a.pane != "%1"], {"/p": 2})
    assert [h.task.id for h in plan] == ["2", "6"]


def test_a_subfolders_tasks_count_against_the_nearest_configured_folder() -> None:
    assert folder_limit("/p/a/b", {"/p": 3, "/p/a": 1}) == ("/p/a", 1)
    assert folder_limit("/q", {"/p": 3}) == ("", None)


def test_with_no_agent_free_a_task_that_may_start_one_gets_a_new_agent() -> None:
    queue = fold(
        [
            added("1", folder="/p", start=True),
            added("2", folder="/q"),
            added("3", folder="/r"),
            added("4", worker="w", text="", folder="/p"),
        ]
    )
    plan = plan_handouts(queue, [], {"/r": 1})
    assert [(h.task.id, h.starts) for h in plan] == [("1", True), ("3", True), ("4", True)]
    assert not plan_handouts(fold([added("1", start=True)]), [], {}), "no folder to start in"


def test_under_a_limit_a_folder_with_enough_agents_waits_for_them_instead_of_starting_more() -> None:
    queue = fold([added("1", folder="/r"), added("2", folder="/r"), added("3", folder="/r")])
    busy = [QueueAgent("%1", "/r", state="working")]
    assert [h.starts for h in plan_handouts(queue, busy, {"/r": 2})] == [True], "one agent, room for one more"
    busy.append(QueueAgent("%2", "/r/sub", state="permission"))
    assert len(plan_handouts(queue, busy, {"/r": 3})) == 1
    assert plan_handouts(queue, busy, {"/r": 2}) == [], "two agents there already: wait for them"


def test_after_waits_for_done_and_a_dead_predecessor_blocks_for_good() -> None:
    queue = fold([added("1"), added("2", after="1"), added("3", after="9")])
    assert [h.task.id for h in plan_handouts(queue, [idle("%1"), idle("%2")], {})] == ["1"]
    assert [(t.id, why) for t, why in blocked_for_good(queue)] == [
        ("3", "it runs after task 9, which does not exist")
    ]
    for record in (TaskHanding("1", 5, pane="%1"), TaskHanded("1", 6, pane="%1"), TaskDone("1", 7)):
        queue.apply(record)
    assert [h.task.id for h in plan_handouts(queue, [idle("%2")], {})] == ["2"]
    queue = fold([added("1"), added("2", after="1"), TaskCancelled("1", 3)])
    assert [(t.id, why) for t, why in blocked_for_good(queue)] == [
        ("2", "it runs after task 1, which cancelled")
    ]


def test_paused_hands_nothing() -> None:
    assert plan_handouts(fold([added("1"), QueuePaused(2)]), [idle("%1")], {}) == []


STATES = st.sampled_from(["idle", "working", "permission", "stuck", "limited", ""])
AGENTS = st.lists(
    st.builds(
        QueueAgent,
        pane=st.sampled_from([f"%{i}" for i in range(6)]),
        folder=st.sampled_from(["/p", "/p/a", "/q", ""]),
        window=st.sampled_from(["w1", "rev", "x"]),
        state=STATES,
    ),
    max_size=6,
    unique_by=lambda agent: agent.pane,
)
TASK_SPECS = st.lists(
    st.tuples(
        st.sampled_from(["", "/p", "/p/a", "/q"]),
        st.sampled_from(["", "rev*"]),
        st.booleans(),
        st.integers(0, 2),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(TASK_SPECS, AGENTS, st.lists(st.integers(0, 11), max_size=6), st.integers(1, 3))
def test_a_plan_never_gives_an_agent_two_tasks_nor_a_folder_more_than_its_limit(
    specs: list[tuple[str, str, bool, int]], agents: list[QueueAgent], out: list[int], limit: int
) -> None:
    records: list[Record] = [
        TaskAdded(
            task=str(i + 1),
            at=float(i),
            text="t",
            folder=folder,
            agents=glob,
            start=start,
            priority=priority,
        )
        for i, (folder, glob, start, priority) in enumerate(specs)
    ]
    panes = [agent.pane for agent in agents]
    for n, index in enumerate(out):  # some tasks already out, each with its own agent
        if index < len(specs) and n < len(panes):
            records.append(TaskHanding(str(index + 1), 50.0, pane=panes[n]))
    queue = fold(records)
    limits = {"/p": limit}
    plan = plan_handouts(queue, agents, limits)
    given_to = [h.pane for h in plan if h.pane]
    assert len(given_to) == len(set(given_to)), "an agent got two tasks in one plan"
    holding = {t.pane for t in queue if t.state.out}
    assert not set(given_to) & holding, "a task went to an agent that holds one"
    assert all(h.task.state is TaskState.QUEUED for h in plan)
    assert len({h.task.id for h in plan}) == len(plan)
    by_pane = {a.pane: a for a in agents}
    assert all(by_pane[h.pane].idle and may_take(h.task, by_pane[h.pane]) for h in plan if h.pane)
    out_in_p = sum(1 for t in queue if t.state.out and within(t.folder, "/p"))
    planned_in_p = sum(1 for h in plan if within(h.task.folder, "/p"))
    assert planned_in_p <= max(0, limit - out_in_p)
    # in order: a task planned after another never outranks it
    orders = [h.task.order for h in plan]
    assert orders == sorted(orders)
