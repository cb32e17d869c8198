"""The answer card in the dashboard (Pilot) over real tmux panes replaying menus recorded from the
real CLI: answer one agent, the card moves to the next waiting one; a menu that changed under the
card gets nothing, and the card says why."""

from __future__ import annotations

from pathlib import Path

import libtmux
from textual.widgets import Static

from nbs_tui.action_log import ActionRecord, Outcome
from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.model import ServerAddress
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
    return static_text(app.screen.query_one(f"#card-{part}", Static))


async def test_answer_one_agent_then_the_next_from_the_card(server: libtmux.Server, tmp_path: Path) -> None:
    perm = start_replay(server, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    ask = start_replay(server, tmp_path, "ask", corpus_screen("2.1.197", "question"))
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(
            pilot, lambda: perm.pane_id in app.operator.needs_you and ask.pane_id in app.operator.needs_you, timeout=20, what="both wait"
        )
        app.select_pane(perm.pane_id)
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen), what="the card")
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
