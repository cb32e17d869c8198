"""The sidecar's typed events: their JSON lines are the ones ``--headless`` has always printed
(docs/reference.md; other tools read them, key order included), a relayed action becomes the
same event its holder saw, and each writes its own history line."""

from __future__ import annotations

import json

from nbs_tui.core.fleet.model import AgentState, Detection, MenuOption
from nbs_tui.core.fleet.pane_state import HistoryEntry
from nbs_tui.core.sidecar.relay import RelayedAction, append_action, encode_ring, parse_ring
from nbs_tui.sidecar.events import (
    AgentEnded,
    AgentStopped,
    CommandSeen,
    Escalation,
    LimitStep,
    MetersNews,
    NudgeStep,
    PaneLeft,
    PlanSelect,
    PollStep,
    ResumeStep,
    SidecarEvent,
    StateChange,
    relayed_event,
)


def line(event: SidecarEvent) -> str:
    return json.dumps(event.as_json(), ensure_ascii=False)


def test_each_event_prints_the_line_headless_always_printed() -> None:
    menu = Detection(AgentState.PERMISSION, (MenuOption(1, "Yes", True),), None, False, None, reason="menu")
    assert line(StateChange("%3", 1.2345, "menu", detection=menu, question="Proceed?")) == (
        '{"event": "state", "pane": "%3", "time": 1.234, "state": "permission", "options": [{"number": 1, '
        '"label": "Yes", "selected": true}], "input": null, "safe_to_inject": false, "plan_choice": null, '
        '"flags": [], "reason": "menu", "message": "menu"}'
    )  # the question is for pushes only
    assert line(PaneLeft("%3", 1.0, "pane gone or no longer an agent")) == (
        '{"event": "state", "pane": "%3", "time": 1.0, "state": "gone", "message": "pane gone or no longer an agent"}'
    )
    assert line(PollStep("%3", 1.0, result="typed", text="/nbs-poll", attempt=1)) == (
        '{"event": "poll", "pane": "%3", "time": 1.0, "result": "typed", "text": "/nbs-poll", "attempt": 1}'
    )
    assert line(PollStep("%3", 1.0, "/nbs-poll submitted", result="submitted")) == (
        '{"event": "poll", "pane": "%3", "time": 1.0, "result": "submitted", "message": "/nbs-poll submitted"}'
    )
    assert line(NudgeStep("%6", 1.0, "stuck: nudge 1 of 2 queued", result="queued", text="Go on", nudge=1)) == (
        '{"event": "nudge", "pane": "%6", "time": 1.0, "result": "queued", "text": "Go on", "nudge": 1, '
        '"message": "stuck: nudge 1 of 2 queued"}'
    )
    assert line(PlanSelect("%4", 1.0, result="pressed", number=1, label="Yes, auto")) == (
        '{"event": "plan-select", "pane": "%4", "time": 1.0, "result": "pressed", "number": 1, "label": "Yes, auto"}'
    )
    assert line(CommandSeen("%5", 1.0, line="\\nbs-register-chat x", project="/p")) == (
        '{"event": "command", "pane": "%5", "time": 1.0, "line": "\\\\nbs-register-chat x", "project": "/p"}'
    )
    assert line(Escalation("%6", 1.0, "still idle")) == (
        '{"event": "escalate", "pane": "%6", "time": 1.0, "reason": "stuck", "message": "still idle"}'
    )
    assert line(AgentEnded("%7", 1.0, "its tmux pane is gone", liveness="gone")) == (
        '{"event": "agent-ended", "pane": "%7", "time": 1.0, "liveness": "gone", "message": "its tmux pane is gone"}'
    )
    assert line(LimitStep("%8", 1.0, "weekly limit", result="limited", reset_at=None)) == (
        '{"event": "limit", "pane": "%8", "time": 1.0, "result": "limited", "reset_at": null, "message": "weekly limit"}'
    )
    assert line(ResumeStep("%8", 1.0, "held", result="held", text="continue")) == (
        '{"event": "resume", "pane": "%8", "time": 1.0, "result": "held", "text": "continue", "message": "held"}'
    )


def test_a_relayed_action_is_the_holders_event_marked_by_it() -> None:
    own = [
        PollStep("%3", 1.0, result="typed", text="/nbs-poll", attempt=1),
        NudgeStep("%3", 2.0, "queued", result="queued", text="Go on", nudge=1),
        PlanSelect("%3", 3.0, result="pressed", number=2, label="No"),
        Escalation("%3", 4.0, "still idle"),
        ResumeStep("%3", 5.0, result="enter", text="continue", attempt=2),
    ]
    ring: tuple[RelayedAction, ...] = ()
    for event in own:
        ring = append_action(ring, event.at, event.KIND, "gpu pid 42", event.message, event.details())
    heard = [relayed_event(action, "%3") for action in parse_ring(encode_ring(ring))]
    assert [line(e) for e in heard if e is not None] == [
        line(e).replace(', "message"', ', "by": "gpu pid 42", "message"', 1) if e.message
        else line(e)[:-1] + ', "by": "gpu pid 42"}'
        for e in own
    ]
    assert relayed_event(RelayedAction(1, 1.0, "a-kind-from-a-later-version", "x"), "%3") is None


def test_a_stop_by_another_process_reads_from_the_ring_with_the_panes_own_id() -> None:
    action = RelayedAction(1, 1.0, "stop", "box pid 7", "Ctrl-C", (("result", "sent"), ("text", "/exit"), ("pane", "%4"), ("target", "s:0.1")))
    event = relayed_event(action, "%4")
    assert isinstance(event, AgentStopped) and event.target == "s:0.1"
    assert line(event) == (
        '{"event": "stop", "pane": "%4", "time": 1.0, "result": "sent", "text": "/exit", "target": "s:0.1", '
        '"by": "box pid 7", "message": "Ctrl-C"}'
    )


def test_each_event_words_its_history_line() -> None:
    def said(event: SidecarEvent) -> str | None:
        entry = HistoryEntry.from_sidecar_event(event)
        return entry.text if entry is not None else None

    assert said(StateChange("%1", 1.0, "at the prompt", detection=Detection(AgentState.IDLE))) == "state → idle (at the prompt)"
    assert said(PaneLeft("%1", 1.0, "pane gone")) == "state → gone (pane gone)"
    assert said(PollStep("%1", 1.0, result="typed", text="/nbs-poll", by="gpu pid 4")) == "poll typed /nbs-poll (by sidecar gpu pid 4)"
    assert said(PlanSelect("%1", 1.0, "menu gone", result="landed")) == "plan-select landed: menu gone"
    assert said(PlanSelect("%1", 1.0, result="pressed", number=2)) == "plan-select pressed 2"
    assert said(CommandSeen("%1", 1.0, line="\\nbs-x", project="/p")) == "command \\nbs-x"
    assert said(NudgeStep("%1", 1.0, "queued", result="queued")) == "nudge: queued"
    assert said(MetersNews("%1", 1.0, meters=None)) is None


def test_the_toasts_a_sidecar_event_makes() -> None:
    from nbs_tui.notify.toasts import Toast, toast_for

    assert toast_for(AgentEnded("%7", 1.0, "its tmux pane is gone", liveness="gone")) == Toast(
        "Agent ended", "%7: its tmux pane is gone", "warning"
    )
    stopped = AgentStopped("%4", 1.0, "/exit", by="box pid 7", result="sent")
    assert toast_for(stopped) == Toast("Agent stop", "%4 (%4): /exit\nby box pid 7", "information")
    assert toast_for(AgentStopped("%4", 1.0, "/exit", result="sent")) is None  # this process's own
    assert toast_for(PollStep("%4", 1.0, result="typed")) is None
