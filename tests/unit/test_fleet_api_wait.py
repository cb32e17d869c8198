"""``nbs-tui wait``'s judgement (`nbs_tui.core.fleet_api.wait_rules`): each look at an agent's
published state against the state waited for; the real command runs in tests/realclaude."""

from __future__ import annotations

from nbs_tui.core.fleet_api.wait_rules import (
    UNPUBLISHED_GRACE,
    Holder,
    PaneLook,
    TargetWait,
    Until,
    all_reached,
    hopeless,
)

PID = 4242


def fed(until: Until, *looks: PaneLook | None, every: float = 0.5, holders: list[Holder | None] | None = None) -> TargetWait:
    """A wait fed ``looks``, half a second apart; the lease renewed by one holder at every look
    unless ``holders`` says what each look read of it."""
    wait = TargetWait("%3", 0, until, started=100.0)
    for at, look in enumerate(looks):
        holder = holders[at] if holders is not None else Holder("a1b2c3d4", at)
        wait.look(look, 100.0 + at * every, holder)
    return wait


IDLE = PaneLook(PID, False, "idle")
WORKING = PaneLook(PID, False, "working")
ASKING = PaneLook(PID, False, "permission", "permission")
UNPUBLISHED = PaneLook(PID, False, "")


def test_done_needs_the_agent_seen_working_after_the_wait_began_never_a_stale_idle() -> None:
    assert not fed(Until.DONE, IDLE, IDLE, IDLE).reached  # idle all along: not done
    done = fed(Until.DONE, IDLE, WORKING, WORKING, IDLE)
    assert done.reached and done.seen_working and done.as_json()["after"] == 1.5
    assert fed(Until.DONE, WORKING, IDLE).reached  # working when the wait began counts: seen after it began
    assert not fed(Until.DONE, WORKING, ASKING).reached  # waits on a person: not done yet
    assert fed(Until.DONE, WORKING, ASKING, WORKING, IDLE).reached
    # a holder taking over clears every state, then publishes idle anew: still no work seen
    assert not fed(Until.DONE, IDLE, UNPUBLISHED, IDLE).reached


def test_working_counts_once_the_holder_that_published_it_is_seen_renewing_after_the_look() -> None:
    dead, new = Holder("dead0001", 7), Holder("new00002", 0)
    # a holder SIGKILLed while its agent worked left "working"; the next one publishes idle
    stale = fed(Until.DONE, WORKING, WORKING, UNPUBLISHED, IDLE, holders=[dead, dead, new, new])
    assert not stale.reached and not stale.seen_working
    assert not fed(Until.DONE, WORKING, IDLE, holders=[None, None]).reached  # no holder at all
    # the same holder renewed after the look: the working was live; done once idle
    live = fed(Until.DONE, WORKING, IDLE, IDLE, holders=[dead, dead, Holder("dead0001", 8)])
    assert live.reached and live.seen_working and live.as_json()["after"] == 1.0
    # a turn the holder published working and then idle before its next renewal: done at it
    assert fed(Until.DONE, WORKING, IDLE, holders=[new, Holder("new00002", 1)]).reached


def test_idle_and_needs_are_the_state_now() -> None:
    assert fed(Until.IDLE, IDLE).reached
    assert not fed(Until.IDLE, WORKING, ASKING).reached
    assert fed(Until.NEEDS, WORKING, ASKING).reached
    assert fed(Until.NEEDS, PaneLook(PID, False, "idle", "stuck")).reached  # the holder escalated it
    assert not fed(Until.NEEDS, IDLE, WORKING).reached


def test_gone_is_a_pane_gone_dead_or_replaced_or_a_state_unpublished_past_the_grace() -> None:
    assert fed(Until.GONE, IDLE, None).reached
    assert fed(Until.GONE, IDLE, PaneLook(PID, True, "idle")).reached
    replaced = fed(Until.GONE, IDLE, PaneLook(PID + 1, False, "idle"))
    assert replaced.reached and "another process" in replaced.gone_why
    steps = int(UNPUBLISHED_GRACE / 0.5)
    assert not fed(Until.GONE, IDLE, *[UNPUBLISHED] * steps).reached  # a takeover's gap
    assert fed(Until.GONE, IDLE, *[UNPUBLISHED] * (steps + 1)).reached
    assert not fed(Until.GONE, IDLE, *[UNPUBLISHED] * steps, IDLE, *[UNPUBLISHED] * steps).reached


def test_an_agent_gone_while_waiting_for_another_state_ends_its_wait_unreached() -> None:
    gone = fed(Until.DONE, WORKING, None, IDLE)
    assert gone.ended and not gone.reached and gone.state == "gone" and gone.gone_why == "the pane is gone"
    alive = fed(Until.DONE, WORKING)
    assert hopeless([gone, alive], any_one=False) and not hopeless([gone, alive], any_one=True)
    assert hopeless([gone], any_one=True)


def test_all_targets_must_get_there_or_with_any_one_of_them() -> None:
    there, not_yet = fed(Until.IDLE, IDLE), fed(Until.IDLE, WORKING)
    assert not all_reached([there, not_yet], any_one=False)
    assert all_reached([there, not_yet], any_one=True)
    assert all_reached([there, fed(Until.IDLE, IDLE)], any_one=False)
