"""Operator actions against the real Claude Code CLI, driven from the dashboard (Pilot).

* A permission prompt puts the agent in the "needs you" queue; ``n`` selects it, ``K`` then
  ``1`` answers "Yes" from the dashboard, the tool runs, and the agent leaves the queue.
* The same prompt answered from the answer card (``A``, then ``y``): the live re-check passes on
  the real CLI's screen, ``1`` is pressed once, the tool runs.
* Text typed in the send bar arrives in Claude Code exactly, multi-line text included (the
  bracketed paste keeps its newlines in the input box until the operator's Enter).
"""

from __future__ import annotations

from pathlib import Path

import libtmux
import pytest

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.operator.action_log import ActionRecord, Outcome
from nbs_tui.widgets.answer_card import AnswerScreen
from nbs_tui.widgets.send_bar import KeyPicker
from tests.app.helpers import wait_for
from tests.realclaude.harness import Bash, ClaudeFleet, Text

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]

SIZE = (160, 48)


def make_app(server: libtmux.Server, tmp_path: Path) -> NbsApp:
    settings = Settings(
        server=ServerAddress(socket_name=server.socket_name),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
        poll_disabled=True,  # only the operator types in these tests
        bell=False,
    )
    return create_app(settings, control_plane=False)


def records(app: NbsApp) -> list[ActionRecord]:
    return [r for r in app.operator.action_log.tail() if isinstance(r, ActionRecord)]


async def test_answer_a_permission_prompt_from_the_dashboard(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    agent = claude_fleet.start(
        [Bash("touch answered-from-dashboard", description="Create a marker file"), Text("Created it.")]
    )
    agent.submit("create the marker file")
    agent.wait_for("Do you want to proceed?", timeout=45)
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: agent.pane_id in app.operator.needs_you, timeout=45, what="the agent needs you")
        assert app.operator.needs_you.entries()[0].state is AgentState.PERMISSION
        await pilot.press("n")
        assert app.dashboard.selected_id == agent.pane_id
        await pilot.press("K")
        await wait_for(pilot, lambda: isinstance(app.screen, KeyPicker), what="key picker")
        await pilot.press("1")
        await wait_for(
            pilot, lambda: (agent.workdir / "answered-from-dashboard").exists(), timeout=45, what="the tool ran"
        )
        await wait_for(pilot, lambda: agent.pane_id not in app.operator.needs_you, timeout=45, what="queue cleared")
        key = [r for r in records(app) if r.action == "key"]
        assert [(r.pane_id, r.sent, r.outcome) for r in key] == [(agent.pane_id, "1", Outcome.SENT)]
    agent.wait_for("Created it.", timeout=45)


async def test_answer_a_permission_prompt_from_the_card(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    agent = claude_fleet.start([Bash("touch answered-from-card", description="Create a marker file"), Text("Made it.")])
    agent.submit("create the marker file")
    agent.wait_for("Do you want to proceed?", timeout=45)
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: agent.pane_id in app.operator.needs_you, timeout=45, what="the agent needs you")
        # Claude Code's own signals can queue the agent before the sidecar has read its menu;
        # "A" opens a card only for a menu read from the screen, so wait for that first.
        await wait_for(
            pilot, lambda: app.operator.answer_card(agent.pane_id) is not None, timeout=45, what="the menu read"
        )
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen), what="the answer card")
        assert isinstance(app.screen, AnswerScreen) and "touch answered-from-card" in app.screen.card.prompt
        await pilot.press("y")
        await wait_for(pilot, lambda: (agent.workdir / "answered-from-card").exists(), timeout=45, what="the tool ran")
        answers = [r for r in records(app) if r.action == "answer"]
        assert [(r.sent, r.outcome, r.reason) for r in answers] == [("1", Outcome.SENT, "1. Yes")]
    agent.wait_for("Made it.", timeout=45)


TRICKY = "say 'ok'; echo $HOME \"quoted\" -dash é 🙂\nsecond line: `x` \\ ;"


async def test_send_bar_text_reaches_claude_exactly(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    agent = claude_fleet.start([Text("Got it.")])
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: agent.pane_id in app.state.pane_by_id, timeout=30, what="agent listed")
        app.dashboard.select_pane(agent.pane_id)
        await wait_for(pilot, lambda: app.dashboard.selected_id == agent.pane_id, what="agent selected")
        await pilot.press("i")
        app.dashboard.send_bar.text.load_text(TRICKY)
        await pilot.press("ctrl+t", "enter")
        await wait_for(pilot, lambda: len(agent.api.prompts()) == 1, timeout=45, what="the prompt reached the API")
        assert agent.api.prompts()[0] == TRICKY
        (record,) = records(app)
        assert record.action == "paste" and record.outcome is Outcome.SENT
    agent.wait_for("Got it.", timeout=45)
