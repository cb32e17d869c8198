"""`PaneState`: the dashboard's per-pane tables, fed by hand."""

from __future__ import annotations

from dataclasses import dataclass

from nbs_tui.core.detection.fusion import Reading, Source
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.fleet.pane_state import HistoryEntry, PaneState, PaneStatus


def pane(pane_id: str, index: int, *, agent: bool = True) -> PaneInfo:
    return PaneInfo(
        pane_id=pane_id, session_name="s", window_index=index, window_name=f"w{index}", pane_index=0,
        title="", current_command="claude" if agent else "bash", current_path=f"/p{index}", pid=index,
        width=80, height=24, is_agent=agent,
    )


@dataclass(frozen=True)
class Raw:
    """Claude Code's facts as the watcher reports them (the fields fusion reads)."""

    pane_id: PaneId
    readings: tuple[Reading, ...] = ()
    session_id: str | None = "s-1"
    model: str | None = "opus"
    last_assistant_message: str | None = "done"


PANES = [pane("%1", 0), pane("%2", 1), pane("%3", 2, agent=False)]
NOW, WALL = 100.0, 10_000.0


def filled() -> PaneState:
    state = PaneState(history_length=3)
    state.set_fleet(PANES)
    state.screens_changed(["%1", "%2"], NOW - 5)
    state.set_sidecar_statuses(
        [PaneStatus("%1", AgentState.IDLE, idle_since=NOW - 5), PaneStatus("%2", AgentState.WORKING)], NOW, WALL
    )
    state.set_claude([("%2", Raw("%2", (Reading(Source.HOOK, AgentState.WORKING, WALL - 1, "hook"),)))], NOW, WALL)
    state.add_history("%1", HistoryEntry(WALL, "state → idle"))
    return state


def test_a_pane_that_leaves_the_fleet_leaves_every_table() -> None:
    state = filled()
    assert set(state.statuses) == {"%1", "%2"} and "%2" in state.fused and "%2" in state.facts
    state.set_fleet([PANES[0], PANES[2]])
    assert state.pane_by_id.keys() == {"%1", "%3"}
    for table in (state.statuses, state.sidecar_statuses, state.facts, state.raw_claude, state.fused,
                  state.history, state.last_change):
        assert "%2" not in table
    assert "%1" in state.statuses and "%1" in state.history and "%1" in state.last_change


def test_a_new_server_forgets_every_story_but_not_the_fleet() -> None:
    state = filled()
    state.forget_states()
    assert not (state.statuses or state.sidecar_statuses or state.facts or state.raw_claude or state.fused or state.history)
    assert [p.pane_id for p in state.panes] == ["%1", "%2", "%3"] and state.last_change


def test_only_changed_shown_statuses_are_reported() -> None:
    state = PaneState()
    state.set_fleet(PANES)
    idle = PaneStatus("%1", AgentState.IDLE)
    assert state.set_sidecar_statuses([idle], NOW, WALL) == ["%1"]
    assert state.set_sidecar_statuses([idle], NOW, WALL) == []
    assert state.set_sidecar_statuses([PaneStatus("%9", AgentState.IDLE)], NOW, WALL) == [], "not in the fleet"
    assert "%9" not in state.sidecar_statuses


def test_claude_signals_are_fused_into_the_shown_state() -> None:
    state = PaneState()
    state.set_fleet(PANES)
    state.set_sidecar_statuses([PaneStatus("%1", AgentState.UNKNOWN, reason="blank")], NOW, WALL)
    hook = Reading(Source.HOOK, AgentState.WORKING, WALL - 1, "UserPromptSubmit")
    assert state.set_claude([("%1", Raw("%1", (hook,)))], NOW, WALL) == ["%1"]
    shown = state.statuses["%1"]
    assert shown.state is AgentState.WORKING and state.sidecar_statuses["%1"].state is AgentState.UNKNOWN
    facts = state.facts["%1"]
    assert facts.model == "opus" and facts.state is AgentState.WORKING and facts.source.startswith("hook")
    assert state.refuse(["%1"], NOW, WALL) == [], "nothing new: nothing to repaint"


def test_history_is_bounded_and_only_for_known_panes() -> None:
    state = PaneState(history_length=2)
    state.set_fleet(PANES)
    for n in range(3):
        assert state.add_history("%1", HistoryEntry(WALL + n, f"line {n}"))
    assert [h.text for h in state.history["%1"]] == ["line 1", "line 2"]
    assert not state.add_history("%9", HistoryEntry(WALL, "x")) and "%9" not in state.history


def test_counts_and_agent_states_ignore_non_agents() -> None:
    state = filled()
    state.set_sidecar_statuses([PaneStatus("%3", AgentState.IDLE)], NOW, WALL)
    panes, agents, states = state.counts()
    assert (panes, agents) == (3, 2) and sorted(states) == sorted([AgentState.IDLE, AgentState.WORKING])
    assert state.agent_states() == {"%1": AgentState.IDLE, "%2": AgentState.WORKING}
