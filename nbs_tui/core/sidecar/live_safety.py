"""The live-safety rules: what the screen read straight from tmux must show, right before the
sidecar types or presses anything, for a decided action to go ahead.

A `PaneSidecar` decides on the screen it was ticked with, which may be a moment old. The
sidecar room re-captures the pane just before acting and asks `live_refusal` whether that
live screen still allows the action: the poll (and a nudge) only onto an empty idle prompt
without context pressure, Enter only while the box holds exactly the typed text (so never a
bare Enter, never onto half-typed input), a plan option only while the same plan menu shows,
the resume only into a limited agent's free box that Claude Code will not continue by itself,
a caller's text (``send``) as the poll but under context pressure too (it may be ``/compact``).
Pure: the tests hold every rule without tmux (tests/unit/test_live_safety.py).
"""

from __future__ import annotations

from nbs_tui.core.detection.detect import FLAG_CONTEXT_PRESSURE
from nbs_tui.core.fleet.model import AgentState, Detection
from nbs_tui.core.sidecar.delivery_rules import SEND_PURPOSE, box_holds
from nbs_tui.core.sidecar.pane_sidecar import Action, InjectPoll, SelectPlanOption, SubmitPoll


def live_refusal(live: Detection, action: Action) -> str | None:
    """Why the live screen forbids ``action`` now (None: go ahead)."""
    if isinstance(action, InjectPoll) and action.purpose == "resume":
        if live.state is not AgentState.LIMITED:
            return f"live screen is no longer limited ({live.state.value}: {live.reason})"
        if live.limit is not None and live.limit.auto_resume:
            return "Claude Code continues by itself (live screen)"
        if live.input_text != "":
            return f"the live input box is not free ({live.input_text!r})"
        return None
    if isinstance(action, InjectPoll):
        if not live.safe_to_inject or live.state is not AgentState.IDLE:
            return f"live screen is not an empty idle prompt ({live.state.value}: {live.reason})"
        if FLAG_CONTEXT_PRESSURE in live.flags and action.purpose != SEND_PURPOSE:
            return "context pressure on the live screen"
        return None
    if isinstance(action, SubmitPoll):
        holds = box_holds(action.text, live.input_text) if action.purpose == SEND_PURPOSE else live.input_text == action.text
        if not holds:
            return f"the input box holds {live.input_text!r}, not {action.text!r}"
        if live.state not in (AgentState.IDLE, AgentState.WORKING, AgentState.LIMITED):
            return f"a {live.state.value} screen is showing"
        return None
    if isinstance(action, SelectPlanOption):
        if live.state is not AgentState.PLAN:
            return f"the plan menu is gone ({live.state.value})"
        if action.options and tuple(o.label for o in live.options) != tuple(
            o.label for o in action.options
        ):
            return "the plan menu changed"
        return None
    return None
