"""Stuck agents on the real Claude Code CLI, through the product's path: TmuxFleet, SidecarRunner
and ClaudeSignals (nbs-tui's hooks installed, status files, transcripts), as ``nbs-tui`` and
``nbs-tui --headless`` wire them.

* an agent that answers and then sits at its prompt, its transcript quiet, is nudged once (the
  nudge reaches the model as one user turn, typed through the runner's handshake), then
  escalated with a ``stuck`` reason;
* an agent that quits is reported ``agent-ended`` (exited) once; one whose tmux session is
  killed is reported ``agent-ended`` (gone).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.claude.hooks import install
from nbs_tui.claude.watcher import ClaudeSignals
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.core.sidecar.stuck_agents import Phase
from nbs_tui.sidecar.events import AgentEnded, Escalation, NudgeStep, StateChange, StatusChange
from tests.realclaude.harness import ClaudeFleet, Text
from tests.tmux.sidecar_helpers import RunningSidecar, sidecars

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]
# claude_binary / claude_fleet come from tests/realclaude/conftest.py

NUDGE = "Please continue with your task."
GRACE = 6.0
"""Short for the test, longer than the nudge's own turn against the local scripted API."""


def _until(predicate: Callable[[], bool], seconds: float) -> bool:
    return retry_until(predicate, seconds=seconds, interval=0.2, raises=False)


class Stack:
    def __init__(self, running: RunningSidecar, signals: ClaudeSignals, hook_settings: dict[str, Any]) -> None:
        self.running = running
        self.signals = signals
        self.hook_settings = hook_settings

    def watch(self, pane_id: str) -> None:
        """What the app's fleet listener does: hand ClaudeSignals the fleet once it shows the pane."""
        fleet = self.running.runner.fleet
        assert _until(lambda: any(p.pane_id == pane_id for p in fleet.panes()), 20)
        self.signals.set_panes(fleet.panes())


@pytest.fixture
def stack(server: libtmux.Server, tmp_path: Path) -> Iterator[Callable[[], Stack]]:
    spool = tmp_path / "nbs-state" / "hooks.jsonl"
    settings_file = tmp_path / "hook-settings.json"
    install(settings_file, spool)
    hook_settings = json.loads(settings_file.read_text())
    settings = Settings(
        server=ServerAddress(socket_name=server.socket_name),
        hook_spool=spool,
        claude_home=tmp_path / "no-claude-home",  # each agent's own HOME is found through /proc
        poll_disabled=True,
        stuck_grace=GRACE,
        stuck_nudge=NUDGE,
        stuck_max_nudges=1,
    )
    signals = ClaudeSignals(settings)
    signals.start()
    with sidecars(server) as start_runner:

        def start() -> Stack:
            running = start_runner(settings, SidecarConfig(poll_enabled=False), seed_timeout=15)
            running.runner.set_signals(signals)  # as the app does when its signals start later
            return Stack(running, signals, hook_settings)

        try:
            yield start
        finally:
            signals.stop()


def test_stuck_agent_is_nudged_once_then_escalated(claude_fleet: ClaudeFleet, stack: Callable[[], Stack]) -> None:
    rig = stack()
    agent = claude_fleet.start([Text("I will wait here."), Text("Still waiting.")], settings=rig.hook_settings)
    rig.watch(agent.pane_id)
    agent.submit("start")
    agent.wait_for("I will wait here.", timeout=60)
    running = rig.running
    assert _until(lambda: bool(running.of(agent.pane_id, Escalation)), 120), (
        [e.as_json() for e in running.events if not isinstance(e, StatusChange)],
        agent.screen(),
    )
    assert agent.api.prompts() == ["start", NUDGE], "the nudge reached the model once, whole"
    steps = [e.result for e in running.of(agent.pane_id, NudgeStep)]
    assert steps == ["queued", "typed", "enter", "submitted"]
    [escalation] = running.of(agent.pane_id, Escalation)
    assert escalation.reason == "stuck" and "after 1 nudge" in escalation.message
    agent.wait_for("Still waiting.", timeout=30)
    verdict = running.runner.monitor.verdict(agent.pane_id)
    assert verdict is not None and verdict.stuck.phase is Phase.ESCALATED
    assert verdict.facts is not None and verdict.facts.transcript_size, "Claude's own signals were used"
    assert running.runner.escalated().keys() == {agent.pane_id}


def test_exit_and_gone_are_reported_once(
    claude_fleet: ClaudeFleet, stack: Callable[[], Stack], server: libtmux.Server
) -> None:
    rig = stack()
    quitting, closing = claude_fleet.start_many([], [], settings=rig.hook_settings)
    rig.watch(quitting.pane_id)
    rig.watch(closing.pane_id)
    running = rig.running
    for agent in (quitting, closing):
        assert _until(lambda a=agent: bool(running.of(a.pane_id, StateChange)), 30)  # type: ignore[misc]
    quitting.exit()
    assert _until(lambda: bool(running.of(quitting.pane_id, AgentEnded)), 30), running.events
    server.cmd("kill-session", "-t", f"claude-{closing.name}")
    rig.signals.set_panes(running.runner.fleet.panes())
    assert _until(lambda: bool(running.of(closing.pane_id, AgentEnded)), 30), running.events
    assert not _until(lambda: len(running.of(quitting.pane_id, AgentEnded)) > 1, 3)
    [quit_event] = running.of(quitting.pane_id, AgentEnded)
    [close_event] = running.of(closing.pane_id, AgentEnded)
    assert quit_event.liveness == "exited", quit_event
    assert close_event.liveness == "gone", close_event
