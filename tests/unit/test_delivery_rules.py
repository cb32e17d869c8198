"""The rules of a caller's text (`nbs_tui.core.sidecar.delivery_rules`): what may be sent, when
a pane takes it and why not, how the box shows a pasted text, and the in-flight mark."""

from __future__ import annotations

from typing import Any

import pytest

from nbs_tui.core.fleet.model import AgentState, Detection
from nbs_tui.core.sidecar.delivery_rules import (
    MARK_CHARS,
    Delivery,
    DeliveryResult,
    PaneFacts,
    Refusal,
    box_holds,
    chip_erase_count,
    clean_text,
    mark_text,
    send_refusal,
    typed_prefix_length,
)
from nbs_tui.core.sidecar.lease_rules import InflightMark, inflight_erase_count

IDLE = Detection(AgentState.IDLE, input_text="", safe_to_inject=True, reason="input box, nothing running")


def facts(detection: Detection | None = IDLE, **kw: Any) -> PaneFacts:
    return PaneFacts(detection, **kw)


def test_an_idle_agent_with_an_empty_box_takes_a_text() -> None:
    assert send_refusal(facts()) is None


@pytest.mark.parametrize(
    ("state", "code"),
    [
        (AgentState.WORKING, Refusal.WORKING),
        (AgentState.PERMISSION, Refusal.PERMISSION),
        (AgentState.QUESTION, Refusal.QUESTION),
        (AgentState.PLAN, Refusal.PLAN),
        (AgentState.DIALOG, Refusal.DIALOG),
        (AgentState.LIMITED, Refusal.LIMITED),
        (AgentState.ERROR, Refusal.ERROR),
        (AgentState.UNKNOWN, Refusal.UNKNOWN),
    ],
)
def test_every_state_but_idle_is_refused_with_its_own_code(state: AgentState, code: Refusal) -> None:
    refusal = send_refusal(facts(Detection(state, input_text=None, reason="why")))
    assert refusal is not None and refusal[0] is code and state.value in refusal[1]


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"acting": False}, Refusal.NOT_HOLDER),
        ({"starting": True}, Refusal.STARTING),
        ({"paused": True}, Refusal.PAUSED),
        ({"injecting": True}, Refusal.POLL_IN_FLIGHT),
        ({"inflight": True}, Refusal.POLL_IN_FLIGHT),
        ({"operator_typing": True}, Refusal.OPERATOR_TYPING),
    ],
)
def test_the_sidecars_rules_refuse_an_idle_agent(kw: dict[str, Any], code: Refusal) -> None:
    refusal = send_refusal(PaneFacts(IDLE, **kw))
    assert refusal is not None and refusal[0] is code


def test_an_agent_the_budget_governor_holds_takes_no_text() -> None:
    refusal = send_refusal(PaneFacts(IDLE, held="account work at its 5-hour cap: 84 % of 80 %"))
    assert refusal == (Refusal.BUDGET, "budget: account work at its 5-hour cap: 84 % of 80 %")


def test_not_an_agent_half_typed_input_and_no_box() -> None:
    assert send_refusal(facts(None)) is not None
    assert send_refusal(facts(None))[0] is Refusal.NOT_AGENT  # type: ignore[index]
    typed = Detection(AgentState.IDLE, input_text="fix the te", reason="input box (text typed)")
    refusal = send_refusal(facts(typed))
    assert refusal is not None and refusal[0] is Refusal.INPUT and "fix the te" in refusal[1]
    no_box = Detection(AgentState.IDLE, input_text=None, reason="no box")
    assert send_refusal(facts(no_box))[0] is Refusal.NO_BOX  # type: ignore[index]


def test_clean_text_keeps_the_text_whole_and_refuses_what_cannot_be_sent() -> None:
    assert clean_text("line one\r\nline two\n\n") == "line one\nline two"
    assert clean_text("  indented\n\ttab") == "  indented\n\ttab"
    for bad in ("", " \n ", "stop\x1b[2J", "a\x03b"):
        with pytest.raises(ValueError):
            clean_text(bad)


@pytest.mark.parametrize(
    ("text", "box", "holds"),
    [
        ("build the parser", "build the parser", True),
        ("build the parser", "build the", False),  # still arriving, or cut
        ("build the parser", "", False),
        ("build the parser", None, False),
        ("x" * 300, "x" * 120 + "\n" + "x" * 120 + "\n" + "x" * 60, True),  # wrapped rows
        ("line one\nline two\n  line three", "line one\nline two\nline three", True),
        ("row\n" * 29 + "row", "[Pasted text #2 +29 lines]", True),  # Claude Code's chip
        ("row\n" * 29 + "row", "[Pasted text #2 +5 lines]", False),  # someone else's paste
        ("w" * 900, "[Pasted text #1]", True),
        ("someone's", "[Pasted text #1] and more", False),
    ],
)
def test_the_box_shows_a_pasted_text(text: str, box: str | None, holds: bool) -> None:
    assert box_holds(text, box) is holds


def test_the_mark_is_one_line_as_long_as_the_text_and_bounded() -> None:
    assert mark_text("one\ntwo") == "one two"
    assert len(mark_text("y" * 5000)) == MARK_CHARS


@pytest.mark.parametrize(
    ("mark", "box", "count"),
    [
        ("/nbs-poll", "/nbs-p", 6),
        ("line one line two", "line one\nline two", 17),  # a pasted newline is one character
        ("x" * 300, "x" * 120 + "\n" + "x" * 120, 240),  # a wrapped row is not a character
        ("fix it", "fix it now", None),
        ("fix it", "", None),
    ],
)
def test_typed_prefix_length(mark: str, box: str, count: int | None) -> None:
    assert typed_prefix_length(mark, box) == count


def test_a_new_holder_erases_a_wrapped_send_it_finds_in_the_box() -> None:
    text = "a" * 150
    box = "a" * 117 + "\n" + "a" * 33
    assert inflight_erase_count(InflightMark("0" * 16, mark_text(text)), "1" * 16, box) == 150


def test_delivery_json() -> None:
    assert Delivery(DeliveryResult.SUBMITTED).ok
    refused = Delivery.refused(Refusal.WORKING, "working: spinner")
    assert not refused.ok
    assert refused.as_json() == {"result": "refused", "reason": "working", "message": "working: spinner"}


def test_a_dead_holders_paste_chip_is_erased_with_one_key_only_when_it_is_that_text() -> None:
    sent = "\n".join(f"row {n}" for n in range(30))
    assert chip_erase_count(sent, "[Pasted text #3 +29 lines]") == 1
    assert chip_erase_count(sent, "[Pasted text #3 +4 lines]") is None  # another paste
    assert chip_erase_count(sent, "[Pasted text #3 +29 lines] and mine") is None  # typed on: the operator's
    assert chip_erase_count(sent, "row 0") is None  # not a chip: the in-flight rule's own count stands
    assert chip_erase_count(sent, None) is None
