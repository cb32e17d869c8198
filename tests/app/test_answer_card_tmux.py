"""The answer card in the dashboard (Pilot) over real tmux panes replaying menus recorded from the
real CLI: answer one agent, the card moves to the next waiting one; a menu that changed under the
card gets nothing, and the card says why."""

from __future__ import annotations

import sys
from pathlib import Path

import libtmux
from textual.widgets import Static

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.operator.action_log import ActionRecord, Outcome
from nbs_tui.widgets.answer_card import AnswerScreen
from tests.app.helpers import static_text, wait_for
from tests.tmux.replay_agent import ReplayPane, corpus_screen, start_replay

SIZE = (160, 48)


def make_app(server: libtmux.Server, tmp_path: Path) -> NbsApp:
    settings = Settings(
        server=ServerAddress(socket_name=server.socket_name),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
        poll_disabled=True,
        plan_policy="off",
        bell=False,
        service="off",
    )
    return create_app(settings, control_plane=False, claude=False)


def keys(replay: ReplayPane) -> list[str]:
    return [line.removeprefix("KEY ") for line in replay.lines() if line.startswith("KEY ")]


def card_text(app: NbsApp, part: str) -> str:
    """The text of one part of the card on screen; "" until that part is mounted (a screen's
    grandchildren join the DOM a moment after the screen itself)."""
    found = app.screen.query(f"#card-{part}").results(Static)
    widget = next(iter(found), None)
    return static_text(widget) if widget is not None else ""


async def test_answer_one_agent_then_the_next_from_the_card(server: libtmux.Server, tmp_path: Path) -> None:
    perm = start_replay(server, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    ask = start_replay(server, tmp_path, "ask", corpus_screen("2.1.197", "question"))
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: perm.pane_id in app.operator.needs_you and ask.pane_id in app.operator.needs_you, timeout=20, what="both wait"
        )
        app.dashboard.select_pane(perm.pane_id)
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen) and bool(app.screen.query("#card-prompt")), what="the card")
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.card.pane_id == perm.pane_id
        assert "ls -la /" in card_text(app, "prompt") and "Yes" in card_text(app, "options")
        await pilot.press("y")
        await wait_for(pilot, lambda: keys(perm) == ["'1'"], what="1 pressed in the permission pane")
        await wait_for(pilot, lambda: screen.card.pane_id == ask.pane_id, what="the next card")
        assert "sent 1. Yes" in card_text(app, "said")
        assert "Which colour" in card_text(app, "prompt")

        # the question changes under the card (someone answered it in tmux): nothing is sent
        server.cmd("send-keys", "-t", ask.pane_id, "1")
        await wait_for(pilot, lambda: keys(ask) == ["'1'"], what="answered behind the card")
        await pilot.press("2")
        await wait_for(pilot, lambda: "not sent" in card_text(app, "said"), what="the refusal")
        assert "question is gone" in card_text(app, "said")
        assert keys(ask) == ["'1'"]
        await pilot.press("q")
        await wait_for(pilot, lambda: not isinstance(app.screen, AnswerScreen), what="closed")
        answers = [r for r in app.operator.action_log.tail() if isinstance(r, ActionRecord) and r.action == "answer"]
        assert [(r.pane_id, r.sent, r.outcome) for r in answers] == [
            (perm.pane_id, "1", Outcome.SENT),
            (ask.pane_id, "2", Outcome.SKIPPED),
        ]


GATED = """#!PYTHON
import os, sys, time
gate = sys.argv[1]
while not os.path.exists(gate):  # a blank screen until the test opens the gate
    time.sleep(0.05)
os.execv(sys.argv[2], sys.argv[2:])
"""


async def test_a_pressed_before_the_menu_is_read_opens_the_card_once_it_is(server: libtmux.Server, tmp_path: Path) -> None:
    """Claude Code's signals can queue an agent before its menu is on the screen the sidecar
    reads: A then waits for the menu and opens the card by itself, no second press."""
    from nbs_tui.claude.watcher import ClaudeFacts
    from nbs_tui.core.detection.fusion import Reading, Source
    from nbs_tui.core.fleet.model import AgentState
    from nbs_tui.dashboard.messages import ClaudeSignalsChanged

    start_replay(server, tmp_path, "warm", corpus_screen("2.1.197", "question"))  # writes the replay agent
    server.cmd("kill-session", "-t", "warm")  # only the agent file was wanted
    gated = tmp_path / "gated-bin" / "claude"  # named claude: discovery counts it as an agent
    gated.parent.mkdir()
    gated.write_text(GATED.replace("#!PYTHON", f"#!{sys.executable}"))
    gated.chmod(0o755)
    gate, log = tmp_path / "gate", tmp_path / "late.log"
    screen = corpus_screen("2.1.332", "permission_bash")
    session = server.new_session(
        session_name="late", x=120, y=40, window_command=f"{gated} {gate} {tmp_path / 'replay-bin' / 'claude'} {screen} {log}"
    )
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    late = ReplayPane(pane.pane_id, log)
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: late.pane_id in app.state.pane_by_id and app.state.pane_by_id[late.pane_id].is_agent, what="listed")
        hook = Reading(Source.HOOK, AgentState.PERMISSION, app.wall() + 30, "Notification permission_prompt")
        app.post_message(ClaudeSignalsChanged(((late.pane_id, ClaudeFacts(late.pane_id, hook=hook)),)))
        await wait_for(pilot, lambda: late.pane_id in app.operator.needs_you, what="queued by the signal")
        app.dashboard.select_pane(late.pane_id)
        assert app.operator.answer_card(late.pane_id) is None, "no menu on the screen yet"
        await pilot.press("A")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, AnswerScreen)
        gate.touch()  # the menu appears
        await wait_for(
            pilot, lambda: isinstance(app.screen, AnswerScreen) and bool(app.screen.query("#card-prompt")), what="the card, without a second A"
        )
        screen_now = app.screen
        assert isinstance(screen_now, AnswerScreen) and screen_now.card.pane_id == late.pane_id
        await wait_for(pilot, lambda: "ls -la /" in card_text(app, "prompt"), what="the card's prompt drawn")  # the screen fills in as it mounts
        await pilot.press("q")
        await wait_for(pilot, lambda: not isinstance(app.screen, AnswerScreen), what="closed")
        assert "READY" in late.lines() and keys(late) == []  # nothing was typed into the agent
