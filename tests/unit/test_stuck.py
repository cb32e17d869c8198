"""The stuck-agent state machine: grace timer, nudges, escalation, exits (oj's timelines)."""

from __future__ import annotations

from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.sidecar.stuck_agents import Ended, Escalate, Liveness, Nudge, Phase, StuckWatch

S = AgentState


def watch() -> StuckWatch:
    return StuckWatch("%1", grace=60.0, nudge_text="Please continue", max_nudges=1)


def test_genuinely_stuck_is_nudged_then_escalated() -> None:
    w = watch()
    assert w.observe(0.0, S.IDLE, 100) == []
    assert w.observe(59.0, S.IDLE, 100) == []
    assert w.status.phase == Phase.IDLE
    assert w.observe(60.0, S.IDLE, 100) == [Nudge("%1", "Please continue", 1)]
    assert w.status.phase == Phase.NUDGED
    # Our nudge makes a short turn: working, the transcript grows, idle again.
    assert w.observe(61.0, S.WORKING, 120) == []
    assert w.observe(62.0, S.IDLE, 140) == []
    assert w.observe(121.0, S.IDLE, 140) == []
    [action] = w.observe(122.0, S.IDLE, 140)
    assert isinstance(action, Escalate) and "1 nudge" in action.why
    assert w.status.phase == Phase.ESCALATED
    assert w.observe(500.0, S.IDLE, 140) == []  # escalated once


def test_transcript_growth_restarts_the_timer() -> None:
    w = watch()
    w.observe(0.0, S.IDLE, 100)
    assert w.observe(50.0, S.IDLE, 150) == []  # something was written: not stuck
    assert w.observe(100.0, S.IDLE, 150) == []
    assert w.observe(110.0, S.IDLE, 150) == [Nudge("%1", "Please continue", 1)]


def test_working_cancels_the_timer() -> None:
    w = watch()
    w.observe(0.0, S.IDLE, 1)
    w.observe(30.0, S.WORKING, 1)
    assert w.observe(70.0, S.IDLE, 1) == []
    assert w.observe(129.0, S.IDLE, 1) == []
    assert len(w.observe(130.0, S.IDLE, 1)) == 1


def test_never_again_within_the_grace_period_after_our_nudge() -> None:
    w = StuckWatch("%1", grace=60.0, nudge_text="go", max_nudges=3)
    w.observe(0.0, S.IDLE, None)
    assert w.observe(60.0, S.IDLE, None) == [Nudge("%1", "go", 1)]
    assert w.observe(61.0, S.WORKING, None) == []
    w.observe(62.0, S.IDLE, None)  # the timer starts again from here
    assert w.observe(119.0, S.IDLE, None) == []  # 59 s since our nudge
    assert w.observe(122.0, S.IDLE, None) == [Nudge("%1", "go", 2)]


def test_real_work_after_the_grace_period_clears_the_count() -> None:
    w = watch()
    w.observe(0.0, S.IDLE, 1)
    w.observe(60.0, S.IDLE, 1)  # nudge 1
    w.observe(200.0, S.WORKING, 5)  # long, genuine work
    assert w.status.nudges == 0
    w.observe(300.0, S.IDLE, 9)
    assert w.observe(360.0, S.IDLE, 9) == [Nudge("%1", "Please continue", 1)]


def test_work_after_an_escalation_clears_it() -> None:
    w = StuckWatch("%1", grace=10.0, nudge_text="go", max_nudges=0)
    w.observe(0.0, S.IDLE, 1)
    [action] = w.observe(10.0, S.IDLE, 1)
    assert isinstance(action, Escalate) and "idle 10s" in action.why
    w.observe(11.0, S.WORKING, 2)
    assert w.status.phase == Phase.ACTIVE


def test_no_nudge_while_typing_is_unsafe_and_menus_are_not_idle() -> None:
    w = watch()
    w.observe(0.0, S.IDLE, 1)
    assert w.observe(70.0, S.IDLE, 1, safe_to_nudge=False) == []
    assert w.observe(71.0, S.IDLE, 1) == [Nudge("%1", "Please continue", 1)]
    p = watch()
    p.observe(0.0, S.PERMISSION, 1)
    assert p.observe(500.0, S.PERMISSION, 1) == []


def test_exit_and_gone_are_reported_once() -> None:
    w = watch()
    w.observe(0.0, S.IDLE, 1)
    [ended] = w.observe(1.0, S.UNKNOWN, 1, liveness=Liveness.EXITED)
    assert ended == Ended("%1", Liveness.EXITED, "its Claude Code process exited")
    assert w.observe(2.0, S.UNKNOWN, 1, liveness=Liveness.EXITED) == []
    assert w.status.phase == Phase.ENDED
    [gone] = w.observe(3.0, S.UNKNOWN, 1, liveness=Liveness.GONE)
    assert isinstance(gone, Ended) and gone.liveness == Liveness.GONE and "tmux session is gone" in gone.why
    # Back alive (Claude started again in the pane): the cycle starts over.
    assert w.observe(4.0, S.IDLE, 1, liveness=Liveness.RUNNING) == []
    assert w.status.phase == Phase.IDLE


def test_an_undelivered_nudge_does_not_count() -> None:
    w = watch()
    w.observe(0.0, S.IDLE, 1)
    assert w.observe(60.0, S.IDLE, 1) == [Nudge("%1", "Please continue", 1)]
    w.undo_nudge()
    assert w.status.nudges == 0
    assert w.observe(61.0, S.IDLE, 1) == []  # the timer restarted at the attempt
    assert w.observe(120.0, S.IDLE, 1) == [Nudge("%1", "Please continue", 1)]


def test_nothing_is_decided_while_our_own_text_is_being_typed() -> None:
    w = watch()
    w.observe(0.0, S.IDLE, 1)
    assert w.observe(60.0, S.IDLE, 1) == [Nudge("%1", "Please continue", 1)]
    # the nudge is still on its way in (the typing handshake) when the grace period ends
    assert w.observe(125.0, S.IDLE, 1, busy=True) == []
    assert w.status.phase == Phase.NUDGED
    w.undo_nudge()  # ... and it never went in: a fresh nudge, not an escalation
    assert w.observe(126.0, S.IDLE, 1) == [Nudge("%1", "Please continue", 1)]
    assert w.observe(200.0, S.IDLE, 1, busy=True) == []
    [action] = w.observe(201.0, S.IDLE, 1)
    assert isinstance(action, Escalate)
