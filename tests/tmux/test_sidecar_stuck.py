"""Stuck agents on real tmux: a fake Claude-Code-like agent (tests/tmux/test_sidecar_runner.py)
left idle is nudged exactly once through the runner's typing handshake, then escalated; an
agent whose process exits, or whose pane goes, is reported ``agent-ended``."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig
from nbs_tui.sidecar.events import AgentEnded, Escalation, NudgeStep, StateChange, StatusChange
from tests.tmux.sidecar_helpers import RunningSidecar, sidecars
from tests.tmux.test_sidecar_runner import Agent, write_fake_claude

NUDGE = "Please go on with the task."
GRACE = 5.0
"""Short, but longer than the nudge's own short turn (typed, Enter, a second of work)."""


@pytest.fixture
def start_agent(session: libtmux.Session, tmp_path: Path) -> Callable[..., Agent]:
    fake = write_fake_claude(tmp_path / "bin" / "claude")

    def start(name: str, then_shell: bool = False) -> Agent:
        log = tmp_path / f"{name}.log"
        command = f"{fake} idle {log}"
        if then_shell:  # the pane's shell outlives the agent, as when Claude Code is quit
            command = f"sh -c '{command}; exec sleep 600'"
        window = session.new_window(window_name=name, window_shell=command, attach=False)
        pane = window.active_pane
        assert pane is not None and pane.pane_id is not None
        return Agent(name, pane.pane_id, log)

    return start


@pytest.fixture
def stuck_sidecar(server: libtmux.Server) -> Iterator[Callable[[], RunningSidecar]]:
    with sidecars(server) as start_runner:

        def start() -> RunningSidecar:
            settings = Settings(
                server=ServerAddress(socket_name=server.socket_name),
                poll_disabled=True,
                stuck_grace=GRACE,
                stuck_nudge=NUDGE,
                stuck_max_nudges=1,
            )
            return start_runner(settings, SidecarConfig(poll_enabled=False))

        yield start


def _wait(predicate: Callable[[], bool], seconds: float) -> bool:
    return retry_until(predicate, seconds=seconds, interval=0.2, raises=False)


def test_idle_agent_is_nudged_once_then_escalated(
    start_agent: Callable[..., Agent], stuck_sidecar: Callable[[], RunningSidecar]
) -> None:
    agent = start_agent("stuck")
    running = stuck_sidecar()
    assert _wait(lambda: bool(running.of(agent.pane_id, Escalation)), 40), [
        e.as_json() for e in running.events if not isinstance(e, StatusChange)
    ]
    assert agent.lines("SUBMIT") == [NUDGE], "the nudge arrived whole, once, with one Enter"
    steps = [e.result for e in running.of(agent.pane_id, NudgeStep)]
    assert steps == ["queued", "typed", "enter", "submitted"]
    [escalation] = running.of(agent.pane_id, Escalation)
    assert "after 1 nudge" in escalation.message and escalation.reason == "stuck"
    assert running.runner.escalated().keys() == {agent.pane_id}
    # still idle: nothing more is typed, nothing escalated twice
    assert not _wait(lambda: len(running.of(agent.pane_id, Escalation)) > 1, GRACE + 2)
    assert agent.lines("SUBMIT") == [NUDGE]


def test_operator_text_in_the_box_is_never_typed_over(
    start_agent: Callable[..., Agent],
    stuck_sidecar: Callable[[], RunningSidecar],
    server: libtmux.Server,
) -> None:
    agent = start_agent("typed")
    assert _wait(lambda: "❯" in "\n".join(server.cmd("capture-pane", "-p", "-t", agent.pane_id).stdout), 10)
    server.cmd("send-keys", "-t", agent.pane_id, "-l", "half a thought")
    assert _wait(lambda: "half a thought" in "".join(agent.lines("RAW")).replace("'", ""), 5)
    running = stuck_sidecar()
    assert _wait(lambda: bool(running.of(agent.pane_id, StateChange)), 10)
    assert not _wait(lambda: bool(running.of(agent.pane_id, NudgeStep)), 2 * GRACE)
    assert agent.lines("SUBMIT") == []
    capture = "\n".join(server.cmd("capture-pane", "-p", "-t", agent.pane_id).stdout)
    assert "❯ half a thought" in capture


def test_exit_and_gone_are_reported(
    start_agent: Callable[..., Agent],
    stuck_sidecar: Callable[[], RunningSidecar],
    server: libtmux.Server,
) -> None:
    quitting = start_agent("quitting", then_shell=True)
    closing = start_agent("closing")
    running = stuck_sidecar()
    for agent in (quitting, closing):
        assert _wait(lambda a=agent: any(e.detection.state is AgentState.IDLE for e in running.of(a.pane_id, StateChange)), 15)  # type: ignore[misc]
    [pane_pid] = server.cmd("display-message", "-p", "-t", quitting.pane_id, "#{pane_pid}").stdout
    children = Path(f"/proc/{pane_pid}/task/{pane_pid}/children").read_text().split()
    for pid in children:  # the fake agent this test started
        os.kill(int(pid), signal.SIGTERM)
    server.cmd("kill-window", "-t", f"{closing.pane_id}")
    assert _wait(lambda: bool(running.of(quitting.pane_id, AgentEnded)), 15)
    assert _wait(lambda: bool(running.of(closing.pane_id, AgentEnded)), 15)
    [quit_event] = running.of(quitting.pane_id, AgentEnded)
    [close_event] = running.of(closing.pane_id, AgentEnded)
    assert quit_event.liveness == "exited", quit_event
    assert close_event.liveness == "gone", close_event
