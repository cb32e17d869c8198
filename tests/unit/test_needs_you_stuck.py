"""The needs-you queue and the stuck watch: an escalated agent joins with the stuck reason."""

from __future__ import annotations

from nbs_tui.core.fleet.model import AgentState
from tests.unit.test_needs_you import make

IDLE = AgentState.IDLE


def test_an_escalated_agent_joins_as_stuck_and_leaves_when_it_works() -> None:
    queue, clock = make(threshold=300.0)
    assert not queue.sync({"%1": IDLE, "%2": IDLE})
    clock.now += 120
    change = queue.sync({"%1": IDLE, "%2": IDLE}, stuck={"%1": "stuck (1 nudge)"})
    [entry] = change.joined
    assert (entry.pane_id, entry.state, entry.reason) == ("%1", IDLE, "stuck (1 nudge)")
    assert entry.since == 1000.0, "the wait began with the idle spell"
    assert not queue.sync({"%1": IDLE, "%2": IDLE}, stuck={"%1": "stuck (1 nudge)"}), "one bell"
    clock.now += 200  # past the idle threshold: still shown as stuck, not churned to "idle"
    change = queue.sync({"%1": IDLE, "%2": IDLE}, stuck={"%1": "stuck (1 nudge)"})
    assert [e.pane_id for e in change.joined] == ["%2"] and not change.updated
    assert queue.entries()[0].reason == "stuck (1 nudge)"
    change = queue.sync({"%1": AgentState.WORKING, "%2": IDLE})
    assert change.left == ("%1",)


def test_a_person_state_outranks_stuck() -> None:
    queue, _ = make()
    queue.sync({"%1": IDLE}, stuck={"%1": "stuck"})
    change = queue.sync({"%1": AgentState.PERMISSION}, stuck={"%1": "stuck"})
    [entry] = change.updated  # still waiting on a person, for a new reason: same place in line
    assert entry.reason == "permission prompt" and entry.state is AgentState.PERMISSION
