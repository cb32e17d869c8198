"""The live-safety rules (`nbs_tui.core.sidecar.live_safety`), held without tmux: each action goes
ahead only on the live screen that allows it, and every other screen refuses it with a reason."""

from __future__ import annotations

import pytest

from nbs_tui.core.detection.detect import FLAG_CONTEXT_PRESSURE
from nbs_tui.core.fleet.model import AgentState, Detection, MenuOption, UsageLimit
from nbs_tui.core.sidecar.live_safety import live_refusal
from nbs_tui.core.sidecar.pane_sidecar import (
    InjectPoll,
    ReportCommand,
    SelectPlanOption,
    SubmitPoll,
)

IDLE = Detection(AgentState.IDLE, input_text="", safe_to_inject=True, reason="prompt")
PLAN_OPTIONS = (MenuOption(1, "Yes, and auto-accept"), MenuOption(2, "No, keep planning"))
PLAN = Detection(AgentState.PLAN, options=PLAN_OPTIONS, reason="plan menu")
LIMITED = Detection(AgentState.LIMITED, input_text="", limit=UsageLimit("session", "limit reached"))


def test_poll_goes_ahead_only_onto_an_empty_idle_prompt() -> None:
    poll = InjectPoll("/nbs-poll")
    assert live_refusal(IDLE, poll) is None
    half_typed = Detection(AgentState.IDLE, input_text="fix the", safe_to_inject=False, reason="typed")
    assert live_refusal(half_typed, poll) == "live screen is not an empty idle prompt (idle: typed)"
    working = Detection(AgentState.WORKING, reason="spinner")
    assert live_refusal(working, poll) == "live screen is not an empty idle prompt (working: spinner)"
    pressed = Detection(
        AgentState.IDLE, input_text="", safe_to_inject=True, flags=frozenset({FLAG_CONTEXT_PRESSURE})
    )
    assert live_refusal(pressed, poll) == "context pressure on the live screen"
    # a nudge is typed through the same rule as the poll
    assert live_refusal(working, InjectPoll("Please continue", 1, "nudge")) is not None


def test_enter_only_while_the_box_holds_exactly_the_typed_text() -> None:
    submit = SubmitPoll("/nbs-poll")
    typed = Detection(AgentState.IDLE, input_text="/nbs-poll")
    assert live_refusal(typed, submit) is None
    assert live_refusal(Detection(AgentState.WORKING, input_text="/nbs-poll"), submit) is None
    assert live_refusal(IDLE, submit) == "the input box holds '', not '/nbs-poll'"  # never a bare Enter
    assert live_refusal(Detection(AgentState.IDLE, input_text="/nbs-pollx"), submit) is not None
    assert live_refusal(Detection(AgentState.IDLE), submit) == "the input box holds None, not '/nbs-poll'"
    menu = Detection(AgentState.PERMISSION, input_text="/nbs-poll")
    assert live_refusal(menu, submit) == "a permission screen is showing"


def test_plan_option_only_while_the_same_plan_menu_shows() -> None:
    choose = SelectPlanOption(1, "Yes, and auto-accept", PLAN_OPTIONS)
    assert live_refusal(PLAN, choose) is None
    assert live_refusal(IDLE, choose) == "the plan menu is gone (idle)"
    other = Detection(AgentState.PLAN, options=(MenuOption(1, "Yes"), MenuOption(2, "No")))
    assert live_refusal(other, choose) == "the plan menu changed"
    assert live_refusal(other, SelectPlanOption(1, "Yes")) is None  # no options kept: any plan menu


def test_resume_only_into_a_limited_agents_free_box() -> None:
    resume = InjectPoll("continue", 1, "resume")
    assert live_refusal(LIMITED, resume) is None
    assert live_refusal(IDLE, resume) == "live screen is no longer limited (idle: prompt)"
    auto = Detection(
        AgentState.LIMITED, input_text="", limit=UsageLimit("session", "resets", auto_resume=True)
    )
    assert live_refusal(auto, resume) == "Claude Code continues by itself (live screen)"
    typed = Detection(AgentState.LIMITED, input_text="wait", limit=LIMITED.limit)
    assert live_refusal(typed, resume) == "the live input box is not free ('wait')"


@pytest.mark.parametrize("screen", [IDLE, PLAN, LIMITED, Detection(AgentState.WORKING)])
def test_actions_without_keys_are_never_refused(screen: Detection) -> None:
    assert live_refusal(screen, ReportCommand("\\nbs-pause")) is None

