"""The needs-you queue: who joins, in what order, and when they leave."""

from __future__ import annotations

from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.fleet.needs_you import NeedsYouQueue


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(threshold: float = 300.0) -> tuple[NeedsYouQueue, Clock]:
    clock = Clock()
    return NeedsYouQueue(idle_threshold=threshold, clock=clock), clock


def test_person_states_join_at_once_and_leave_when_cleared() -> None:
    queue, clock = make()
    change = queue.observe("%1", AgentState.PERMISSION, label="a:0.0")
    assert [e.pane_id for e in change.joined] == ["%1"]
    assert change.joined[0].reason == "permission prompt"
    assert change.joined[0].label == "a:0.0"
    assert not queue.observe("%1", AgentState.PERMISSION)  # no churn, no second bell
    clock.now += 5
    change = queue.observe("%1", AgentState.WORKING)
    assert change.left == ("%1",)
    assert len(queue) == 0


def test_working_plan_and_unknown_do_not_join() -> None:
    queue, _ = make()
    for state in (AgentState.WORKING, AgentState.PLAN, AgentState.UNKNOWN, AgentState.IDLE):
        assert not queue.observe(f"%{state}", state)
    assert queue.entries() == []


def test_plan_joins_when_nobody_answers_plans() -> None:
    queue, _ = make()
    change = queue.observe("%1", AgentState.PLAN, plan_waits=True)
    assert change.joined[0].reason == "plan approval"


def test_oldest_wait_first_and_next_wraps() -> None:
    queue, clock = make()
    queue.observe("%2", AgentState.QUESTION)
    clock.now += 10
    queue.observe("%1", AgentState.ERROR)
    clock.now += 10
    queue.observe("%3", AgentState.DIALOG)
    assert [e.pane_id for e in queue.entries()] == ["%2", "%1", "%3"]
    assert queue.next_after(None).pane_id == "%2"  # type: ignore[union-attr]
    assert queue.next_after("%2").pane_id == "%1"  # type: ignore[union-attr]
    assert queue.next_after("%3").pane_id == "%2"  # type: ignore[union-attr]
    assert queue.next_after("%9").pane_id == "%2"  # type: ignore[union-attr]


def test_idle_joins_after_threshold_by_tick() -> None:
    queue, clock = make(threshold=60)
    assert not queue.observe("%1", AgentState.IDLE)
    clock.now += 59
    assert not queue.tick()
    clock.now += 1
    change = queue.tick()
    assert [e.pane_id for e in change.joined] == ["%1"]
    entry = change.joined[0]
    assert entry.reason == "idle 1 min"
    assert entry.since == 1000.0 and entry.joined == 1060.0
    assert not queue.tick()  # joins once
    clock.now += 600
    assert not queue.tick()  # reason text does not churn
    assert queue.observe("%1", AgentState.WORKING).left == ("%1",)


def test_idle_spell_restarts_after_work() -> None:
    queue, clock = make(threshold=60)
    queue.observe("%1", AgentState.IDLE)
    clock.now += 50
    queue.observe("%1", AgentState.WORKING)
    queue.observe("%1", AgentState.IDLE)
    clock.now += 50
    assert not queue.tick()
    clock.now += 10
    assert queue.tick().joined


def test_reason_change_keeps_place_in_line() -> None:
    queue, clock = make()
    queue.observe("%1", AgentState.QUESTION)
    clock.now += 5
    queue.observe("%2", AgentState.QUESTION)
    clock.now += 5
    change = queue.observe("%1", AgentState.PERMISSION)
    assert not change.joined and not change.left
    assert change.updated[0].reason == "permission prompt"
    assert [e.pane_id for e in queue.entries()] == ["%1", "%2"]
    assert queue.entries()[0].since == 1000.0


def test_sync_forgets_missing_panes() -> None:
    queue, _ = make()
    queue.sync({"%1": AgentState.ERROR, "%2": AgentState.QUESTION}, labels={"%1": "s:1.0"})
    assert queue.entries()[0].label == "s:1.0"
    change = queue.sync({"%2": AgentState.QUESTION})
    assert change.left == ("%1",)
    assert "%1" not in queue and "%2" in queue
    assert queue.forget("%2").left == ("%2",)
    assert not queue.forget("%2")


def test_idle_since_from_the_caller_counts_the_quiet_time_already_spent() -> None:
    queue, clock = make(threshold=60)
    assert not queue.observe("%1", AgentState.IDLE, since=clock.now - 50)
    clock.now += 10
    (entry,) = queue.tick().joined
    assert entry.since == 950.0 and entry.joined == 1010.0
    assert not queue.sync({"%1": AgentState.IDLE, "%2": AgentState.IDLE}, since={"%2": clock.now + 5}).joined
