"""Stuck agents through the SidecarRunner with a fake fleet: nudge through the poll's typing
handshake (once, never over the operator's typing, never paused), escalation, ended agents."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.stuck_agents import Liveness, Phase
from nbs_tui.sidecar.events import AgentEnded, Escalation, NudgeStep, SidecarEvent
from nbs_tui.sidecar.sidecar_runner import SidecarRunner
from nbs_tui.tmux.commands import Guard
from tests.unit.test_sidecar_runner import Clock, FakeAgentFleet, idle_rows, make, run

NUDGE = "Please go on."


def settings(grace: float = 3.0, nudges: int = 1) -> Settings:
    return Settings(poll_interval=300.0, stuck_grace=grace, stuck_nudge=NUDGE, stuck_max_nudges=nudges)


def stuck_events(events: list[SidecarEvent]) -> list[tuple[str, str]]:
    """(kind, result or message) of the stuck cycle's events, in order."""
    out: list[tuple[str, str]] = []
    for e in events:
        match e:
            case NudgeStep(result=result):
                out.append(("nudge", result))
            case Escalation():
                out.append(("escalate", ""))
            case AgentEnded(liveness=liveness):
                out.append(("agent-ended", liveness))
    return out


def start(
    grace: float = 3.0, nudges: int = 1, **kw: object
) -> tuple[FakeAgentFleet, SidecarRunner, list[SidecarEvent], Clock]:
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows())
    runner, events, clock = make(fleet, interval=300.0, settings=settings(grace, nudges), **kw)
    return fleet, runner, events, clock


def test_stuck_agent_is_nudged_once_through_the_handshake_then_escalated() -> None:
    fleet, runner, events, clock = start()
    run(runner, clock, 6)  # idle 3 s: nudge queued, typed, Enter
    assert fleet.sent == [("%1", NUDGE), ("%1", "Enter")]
    assert fleet.submitted == [("%1", NUDGE)]
    fleet.set("%1", idle_rows())  # the agent answered the nudge and is idle again
    run(runner, clock, 10)
    assert fleet.submitted == [("%1", NUDGE)], "the nudge arrives exactly once"
    assert stuck_events(events) == [
        ("nudge", "queued"),
        ("nudge", "typed"),
        ("nudge", "enter"),
        ("nudge", "submitted"),
        ("escalate", ""),
    ]
    [escalation] = [e for e in events if isinstance(e, Escalation)]
    assert "after 1 nudge" in escalation.message
    assert escalation.as_json()["event"] == "escalate" and escalation.as_json()["pane"] == "%1"
    assert runner.escalated() == {"%1": "stuck (1 nudge)"}
    status = runner.stuck("%1")
    assert status is not None and status.phase is Phase.ESCALATED
    run(runner, clock, 20)
    assert len([e for e in events if isinstance(e, Escalation)]) == 1, "escalated once"
    fleet.set("%1", ["✢ Sautéing… (1s)", "─" * 60, "❯ ", "─" * 60, "  esc to interrupt"])
    run(runner, clock, 1)
    assert runner.escalated() == {}, "work after an escalation clears it"


def test_no_nudges_allowed_escalates_directly() -> None:
    fleet, runner, events, clock = start(nudges=0)
    run(runner, clock, 6)
    assert fleet.sent == []
    assert stuck_events(events) == [("escalate", "")]


def test_operator_typing_on_the_live_screen_refuses_the_nudge_and_it_does_not_count() -> None:
    fleet, runner, events, clock = start()
    fleet.live_override["%1"] = idle_rows("someone typing")  # tmux shows more than the mirror
    run(runner, clock, 5)
    assert fleet.sent == []
    assert ("nudge", "refused") in stuck_events(events)
    assert not any(isinstance(e, Escalation) for e in events)
    del fleet.live_override["%1"]
    run(runner, clock, 8)
    assert fleet.submitted == [("%1", NUDGE)]
    queued = [e for e in events if isinstance(e, NudgeStep) and e.result == "queued"]
    assert [e.nudge for e in queued] == [1], "the refused nudge was not counted"


def test_operator_keys_hold_the_nudge_back() -> None:
    fleet, runner, events, clock = start()
    for _ in range(10):
        runner.note_operator_input("%1")
        run(runner, clock, 1)
    assert fleet.sent == []
    assert not any(isinstance(e, NudgeStep | Escalation) for e in events)


def test_paused_project_is_neither_nudged_nor_escalated(tmp_path: Path) -> None:
    (tmp_path / ".nbs").mkdir()
    (tmp_path / ".nbs" / "control-pause").write_text("")
    fleet = FakeAgentFleet()
    fleet.add("%1", idle_rows(), path=str(tmp_path))
    runner, events, clock = make(fleet, interval=300.0, settings=settings())
    run(runner, clock, 15)
    assert fleet.sent == [] and stuck_events(events) == []


def test_a_nudge_the_box_will_not_take_is_not_counted() -> None:
    fleet, runner, events, clock = start()

    def ignore(pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:  # never shows in the box
        fleet.sent.append((pane_id, text))
        return True

    fleet.send_text = ignore  # type: ignore[method-assign]
    run(runner, clock, 20)
    results = [e.result for e in events if isinstance(e, NudgeStep)]
    assert results[:4] == ["queued", "typed", "typed", "failed"]
    queued = [e for e in events if isinstance(e, NudgeStep) and e.result == "queued"]
    assert len(queued) >= 2, "tried again after the grace period"
    assert {e.nudge for e in queued} == {1}, "an undelivered nudge does not count"
    assert not any(isinstance(e, Escalation) for e in events)
    assert fleet.submitted == [], "never a bare Enter"


class Facts:
    """A fake ClaudeSignals: the test sets each pane's facts."""

    def __init__(self) -> None:
        self.by_pane: dict[PaneId, ClaudeFacts] = {}

    def facts(self, pane_id: PaneId) -> ClaudeFacts | None:
        return self.by_pane.get(pane_id)


def test_a_growing_transcript_is_not_stuck() -> None:
    facts = Facts()
    fleet, runner, events, clock = start(signals=facts)
    for size in range(20):
        facts.by_pane["%1"] = ClaudeFacts("%1", Liveness.RUNNING, transcript_size=size * 100)
        run(runner, clock, 1)
    assert fleet.sent == [] and stuck_events(events) == []
    run(runner, clock, 5)
    assert ("nudge", "queued") in stuck_events(events)


def test_signals_set_later_report_an_exit_once() -> None:
    facts = Facts()
    fleet, runner, events, clock = start(grace=60.0)
    runner.set_signals(facts)
    facts.by_pane["%1"] = ClaudeFacts("%1", Liveness.RUNNING)
    run(runner, clock, 2)
    facts.by_pane["%1"] = ClaudeFacts("%1", Liveness.EXITED, "Claude Code (pid 7) exited")
    run(runner, clock, 3)
    fleet.infos["%1"] = replace(fleet.infos["%1"], is_agent=False)  # the shell is back
    run(runner, clock, 2)
    ended = [e for e in events if isinstance(e, AgentEnded)]
    assert [(e.message, e.liveness) for e in ended] == [
        ("its Claude Code process exited", "exited")
    ]


def test_gone_and_exited_panes_are_reported() -> None:
    fleet, runner, events, clock = start(grace=60.0)
    fleet.add("%2", idle_rows(), pid=200)
    fleet.add("%3", idle_rows(), pid=300)
    run(runner, clock, 2)
    del fleet.infos["%1"]
    fleet.infos["%2"] = replace(fleet.infos["%2"], dead=True)
    fleet.infos["%3"] = replace(fleet.infos["%3"], pid=301)
    run(runner, clock, 2)
    ended = {e.pane_id: (e.liveness, e.message) for e in events if isinstance(e, AgentEnded)}
    assert ended == {
        "%1": ("gone", "its tmux pane is gone"),
        "%2": ("exited", "the pane's process exited"),
        "%3": ("exited", "the pane's process was replaced (pid 300 -> 301)"),
    }
    assert runner.stuck("%1") is None and runner.stuck("%2") is None
