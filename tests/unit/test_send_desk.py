"""`SidecarRunner.deliver_text`, the holder's one entry for a caller's text, with a fake fleet
(no tmux): typed once and submitted once, or refused with the reason and nothing typed."""

from __future__ import annotations

from concurrent.futures import Future

from nbs_tui.core.sidecar.delivery_rules import Delivery, DeliveryResult, Refusal
from nbs_tui.sidecar.events import SendStep
from nbs_tui.sidecar.sidecar_runner import SidecarRunner
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.errors import TmuxTimeout
from tests.unit.test_sidecar_runner import RULE, Clock, FakeAgentFleet, idle_rows, make, run

WORKING = ["❯ go", "", "✢ Sautéing… (1s)", RULE, "❯ ", RULE, "  esc to interrupt"]


def answered(runner: SidecarRunner, clock: Clock, reply: Future[Delivery], ticks: int = 8) -> Delivery:
    for _ in range(ticks):
        if reply.done():
            break
        run(runner, clock, 1)
    assert reply.done(), "no answer within the ticks"
    return reply.result()


def world(rows: list[str] | None = None) -> tuple[FakeAgentFleet, SidecarRunner, list[object], Clock]:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows() if rows is None else rows)
    runner, events, clock = make(fleet, interval=600.0)
    run(runner, clock, 2)
    return fleet, runner, list(events), clock


def test_a_text_is_typed_once_and_submitted_once() -> None:
    fleet, runner, _, clock = world()
    delivery = answered(runner, clock, runner.deliver_text("%1", "build the parser", origin="test"))
    assert delivery.result is DeliveryResult.SUBMITTED, delivery
    run(runner, clock, 12)  # a handshake that repeats itself does it a little later
    assert fleet.submitted == [("%1", "build the parser")]
    assert [t for _p, t in fleet.sent] == ["build the parser", "Enter"]


def test_the_steps_are_events_of_their_own() -> None:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows())
    runner, events, clock = make(fleet, interval=600.0)
    run(runner, clock, 2)
    answered(runner, clock, runner.deliver_text("%1", "go on"))
    steps = [e.result for e in events if isinstance(e, SendStep)]
    assert steps == ["queued", "typed", "enter", "submitted"]


def refused(rows: list[str], code: Refusal) -> None:
    fleet, runner, _, clock = world(rows)
    delivery = answered(runner, clock, runner.deliver_text("%1", "next task"))
    assert delivery.result is DeliveryResult.REFUSED and delivery.reason == code.value, delivery
    run(runner, clock, 5)
    assert fleet.sent == []


def test_a_working_agent_is_refused_and_nothing_typed() -> None:
    refused(WORKING, Refusal.WORKING)


def test_half_typed_input_is_never_typed_over() -> None:
    refused(idle_rows("fix the te"), Refusal.INPUT)


def test_a_permission_prompt_is_refused() -> None:
    prompt = ["⏺ Bash(touch x)", "", " Bash command", "   touch x", " Do you want to proceed?",
              " ❯ 1. Yes", "   2. No", "", " Esc to cancel"]  # fmt: skip
    refused(prompt, Refusal.PERMISSION)


def test_not_an_agent_and_a_second_send_while_one_is_pending() -> None:
    fleet, runner, _, clock = world()
    assert answered(runner, clock, runner.deliver_text("%9", "x")).reason == Refusal.NOT_AGENT.value
    first = runner.deliver_text("%1", "first")
    second = runner.deliver_text("%1", "second")
    assert answered(runner, clock, second).reason == Refusal.PENDING.value
    assert answered(runner, clock, first).ok
    assert fleet.submitted == [("%1", "first")]


def test_refused_while_a_poll_is_in_flight_and_when_the_operator_just_typed() -> None:
    fleet, runner, _, clock = world()
    ok, _ = runner.force_poll("%1")
    assert ok
    assert answered(runner, clock, runner.deliver_text("%1", "x")).reason == Refusal.POLL_IN_FLIGHT.value
    run(runner, clock, 15)  # the poll submitted; the agent is working, then idle again
    fleet.set("%1", idle_rows())
    run(runner, clock, 1)
    runner.note_operator_input("%1")
    assert answered(runner, clock, runner.deliver_text("%1", "x")).reason == Refusal.OPERATOR_TYPING.value
    assert fleet.submitted == [("%1", "/nbs-poll")]


def test_the_live_screen_is_looked_at_again_before_the_paste() -> None:
    """Accepted on the tick's screen; the operator typed before the next tick pasted."""
    fleet, runner, _, clock = world()
    reply = runner.deliver_text("%1", "next task")
    fleet.live_override["%1"] = idle_rows("mine")
    delivery = answered(runner, clock, reply)
    assert delivery.result is DeliveryResult.REFUSED, delivery
    assert fleet.sent == []


def test_a_pane_gone_before_its_turn_is_answered() -> None:
    fleet, runner, _, clock = world()
    reply = runner.deliver_text("%1", "next task")
    del fleet.infos["%1"]
    delivery = answered(runner, clock, reply)
    assert delivery.result is DeliveryResult.REFUSED and fleet.sent == []


def test_a_paste_whose_answer_was_lost_is_failed_never_refused() -> None:
    """tmux took the paste and its answer never came (a lost in-band reply): it may be in the
    box, so the caller must not hear "nothing typed" (and send again)."""

    class LosingFleet(FakeAgentFleet):
        def send_text(self, pane_id: str, text: str, *, guard: Guard | None = None) -> bool:
            super().send_text(pane_id, text, guard=guard)
            raise TmuxTimeout("tmux send-keys: the answer was lost")

    fleet = LosingFleet()
    fleet.add("%1", idle_rows())
    runner, _events, clock = make(fleet, interval=600.0)
    run(runner, clock, 2)
    delivery = answered(runner, clock, runner.deliver_text("%1", "next task"))
    assert delivery.result is DeliveryResult.FAILED, delivery
    assert "look at the pane" in delivery.message
