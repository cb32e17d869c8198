"""The dashboard a one-time link starts (``--open-card TARGET --card-only``, Pilot over real tmux
panes replaying menus recorded from the real CLI): from the first frame a cover hides the fleet;
that agent's card opens by itself and answers it; Tab, ``A``, the palette and the dashboard's
keys open nothing else, though another agent waits too; the card's end quits the dashboard
(which ends the link's grant, `nbs_tui.web.server`). A target naming no pane opens nothing, and no toast shows (one could tell of other agents)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import libtmux
from textual.command import CommandPalette
from textual.widgets import Static

from nbs_tui.app import NbsApp, create_app
from nbs_tui.core.fleet.card_target import format_card_target
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.widgets.answer_card import AnswerScreen
from nbs_tui.widgets.card_cover import CardCover
from tests.app.helpers import static_text, wait_for
from tests.app.test_answer_card_tmux import card_text, keys, make_app
from tests.app.textual_probes import notifications_kept
from tests.tmux.replay_agent import corpus_screen, start_replay

PHONE = (50, 30)


def card_only_app(server: libtmux.Server, tmp_path: Path, pane_id: str) -> NbsApp:
    """The app as ``nbs-tui --open-card TARGET --card-only`` builds it."""
    target = format_card_target("local", ServerAddress(socket_name=server.socket_name), pane_id)
    settings = replace(make_app(server, tmp_path).settings, open_card=target, card_only=True)
    return create_app(settings, control_plane=False, claude=False)  # its screen opens the card (open_at_start)


def cover_text(app: NbsApp) -> str:
    return static_text(app.screen_stack[1].query_one("#cover-text", Static))


async def test_card_only_answers_that_agent_and_nothing_else_then_quits(server: libtmux.Server, tmp_path: Path) -> None:
    other = start_replay(server, tmp_path, "other", corpus_screen("2.1.197", "question"))
    perm = start_replay(server, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    app = card_only_app(server, tmp_path, perm.pane_id)
    async with app.run_test(size=PHONE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen_stack[1], CardCover)  # from the first frame: no fleet shows
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen), timeout=30, what="the card, opened by itself")
        shown = app.screen
        assert isinstance(shown, AnswerScreen)
        screen: AnswerScreen = shown
        assert screen.card.pane_id == perm.pane_id
        assert isinstance(app.screen_stack[-2], CardCover)  # behind the card: the cover, not the fleet
        await wait_for(pilot, lambda: other.pane_id in app.operator.needs_you, timeout=20, what="the other agent waits too")
        await wait_for(pilot, lambda: "ls -la /" in card_text(app, "prompt"), what="the prompt drawn")
        assert "1 waiting" in str(screen.query_one("#card").border_title)  # how many others wait is not shown
        for key in ["tab", "A", "ctrl+p", "g"]:
            await pilot.press(key)
            await pilot.pause(0.2)
            assert app.screen_stack[-1] == screen, key
            assert screen.card.pane_id == perm.pane_id, key
        assert not any(isinstance(s, CommandPalette) for s in app.screen_stack)
        assert "only this agent's card opens here" in card_text(app, "said")
        assert keys(other) == []
        assert await pilot.click(next(b for b in screen.query("Button") if b.name == "1"))
        await wait_for(pilot, lambda: keys(perm) == ["'1'"], what="1 pressed in the permission pane")
        await wait_for(pilot, lambda: isinstance(app.screen, CardCover), what="the card closed: no next card")
        await wait_for(pilot, lambda: "The card is closed." in cover_text(app), what="the cover says so")
        assert "sent" in cover_text(app)
        deadline = time.monotonic() + 15
        while app.is_running and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert not app.is_running  # the dashboard quit with its card: the tab, and the link's grant, end
    assert keys(other) == []


async def test_card_only_with_a_target_naming_no_pane_opens_nothing(server: libtmux.Server, tmp_path: Path) -> None:
    perm = start_replay(server, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    app = card_only_app(server, tmp_path, "%999")
    async with app.run_test(size=PHONE) as pilot:
        await wait_for(pilot, lambda: perm.pane_id in app.operator.needs_you, timeout=30, what="the agent waits")
        await wait_for(pilot, lambda: "not an agent here" in cover_text(app), what="the cover says why")
        for key in ["A", "tab", "1"]:
            await pilot.press(key)
        await pilot.pause(0.3)
        assert isinstance(app.screen, CardCover) and keys(perm) == []
        assert [p.source for p in app.problems.entries()] == ["open card"]  # a problem, that would be a toast,
        assert notifications_kept(app) == 0  # and is none: a toast could tell of other agents
