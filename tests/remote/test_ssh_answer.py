"""The answer card over ssh: a dashboard here answers a menu shown by an agent on hosta, with the
same live re-check as locally (the capture and the key travel over the host's connection): a
menu answered behind the card gets nothing."""

from __future__ import annotations

import sys
from pathlib import Path

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.operator.action_log import ActionRecord, Outcome
from nbs_tui.widgets.answer_card import AnswerScreen
from tests.app.helpers import wait_for
from tests.app.test_answer_card_tmux import SIZE, card_text, keys
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session
from tests.tmux.fleet_helpers import wait_for as fleet_wait
from tests.tmux.replay_agent import REPLAY, ReplayPane, corpus_screen


def replay_on(lab: SshLab, tmp_path: Path, name: str, screen: Path) -> ReplayPane:
    """A pane of hosta replaying a screen of the real CLI (tests/tmux/replay_agent.py)."""
    agent = tmp_path / "replay-bin" / "claude"
    if not agent.exists():
        agent.parent.mkdir(parents=True)
        agent.write_text(REPLAY.replace("#!PYTHON", f"#!{sys.executable}"))
        agent.chmod(0o755)
    log = tmp_path / f"{name}.log"
    host = lab.hosts["hosta"]
    replay = ReplayPane(new_session(host, name, f"{agent} {screen} {log}", 120, 40), log)
    host.tmux("set-option", "-t", name, "window-size", "manual")
    fleet_wait(lambda: log.exists() and "READY" in replay.lines(), 10)
    return replay


async def test_the_answer_card_answers_menus_on_a_remote_host(ssh_lab: SshLab, tmp_path: Path) -> None:
    perm = replay_on(ssh_lab, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    ask = replay_on(ssh_lab, tmp_path, "ask", corpus_screen("2.1.197", "question"))
    settings = Settings(
        hosts=(HostSpec("hosta", "hosta", ssh_lab.ssh_options),),
        action_log=tmp_path / "state" / "actions.log",
        hook_spool=tmp_path / "state" / "hooks.jsonl",
        claude_home=tmp_path / "claude-home",
        poll_disabled=True,
        plan_policy="off",
        bell=False,
        service="off",
    )
    app = create_app(settings, control_plane=False, claude=False)
    async with app.run_test(size=SIZE) as pilot:

        def listed(replay: ReplayPane) -> str | None:  # one host watched: its ids as they are
            found = [p for p in (replay.pane_id, f"hosta:{replay.pane_id}") if p in app.operator.needs_you]
            return found[0] if found else None

        await wait_for(pilot, lambda: bool(listed(perm) and listed(ask)), timeout=30, what="both remote prompts wait")
        perm_id, ask_id = listed(perm), listed(ask)
        assert perm_id is not None and ask_id is not None
        app.dashboard.select_pane(perm_id)
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen), what="the card")
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.card.pane_id == perm_id
        assert "ls -la /" in card_text(app, "prompt") and "Yes" in card_text(app, "options")
        await pilot.press("y")
        await wait_for(pilot, lambda: keys(perm) == ["'1'"], timeout=10, what="1 pressed in hosta's pane")
        await wait_for(pilot, lambda: screen.card.pane_id == ask_id, what="the next card")
        assert "sent 1. Yes" in card_text(app, "said") and "Which colour" in card_text(app, "prompt")

        # answered on hosta behind the card: the live re-check over ssh sends nothing
        ssh_lab.hosts["hosta"].tmux("send-keys", "-t", ask.pane_id, "1")
        await wait_for(pilot, lambda: keys(ask) == ["'1'"], what="answered behind the card")
        await pilot.press("2")
        await wait_for(pilot, lambda: "not sent" in card_text(app, "said"), what="the refusal")
        assert "question is gone" in card_text(app, "said")
        assert keys(ask) == ["'1'"]
        answers = [r for r in app.operator.action_log.tail() if isinstance(r, ActionRecord) and r.action == "answer"]
        assert [(r.pane_id, r.sent, r.outcome) for r in answers] == [
            (perm_id, "1", Outcome.SENT),
            (ask_id, "2", Outcome.SKIPPED),
        ]
