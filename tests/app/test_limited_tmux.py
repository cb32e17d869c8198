"""Usage-limited agents in the dashboard (Pilot) over real tmux panes replaying limit screens
recorded from the real CLI: the reset's countdown in the list, the limit in the details, and a
2.1.1xx limit menu in the needs-you queue, answered from the card."""

from __future__ import annotations

from pathlib import Path

import libtmux

from nbs_tui.core.fleet.model import AgentState
from nbs_tui.widgets.answer_card import AnswerScreen
from tests.app.helpers import wait_for, widget_text
from tests.app.test_answer_card_tmux import SIZE, keys, make_app
from tests.tmux.replay_agent import corpus_screen, start_replay


async def test_limited_agents_shown_with_their_reset_and_the_menu_answered(
    server: libtmux.Server, tmp_path: Path
) -> None:
    waiting = start_replay(server, tmp_path, "waiting", corpus_screen("2.1.197", "limited_after_wait"))
    menu = start_replay(server, tmp_path, "menu", corpus_screen("2.1.100", "limited_session"))
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        def limited(pane_id: str) -> bool:
            status = app.state.statuses.get(pane_id)
            return status is not None and status.state is AgentState.LIMITED

        await wait_for(pilot, lambda: limited(waiting.pane_id) and limited(menu.pane_id), timeout=20, what="limited")
        await wait_for(
            pilot,
            lambda: str(app.dashboard.fleet_list.get_cell(waiting.pane_id, "poll")).startswith("⏳"),
            what="the reset countdown in the list",
        )
        app.dashboard.select_pane(waiting.pane_id)
        # The state row says "resets 9:..." first; the limit and resume rows make the panel taller,
        # drawn once the next layout pass has grown it: wait for the last of them.
        await wait_for(
            pilot, lambda: "none planned (limit_resume off" in widget_text(app.dashboard.detail), what="the resume plan in the details"
        )
        details = widget_text(app.dashboard.detail)
        assert "session limit" in details and "resets 9:" in details and "(UTC)" in details
        assert waiting.pane_id not in app.operator.needs_you  # it waits for the clock, not for you

        await wait_for(pilot, lambda: menu.pane_id in app.operator.needs_you, what="the limit menu needs you")
        app.dashboard.select_pane(menu.pane_id)
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen), what="the card")
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.card.pane_id == menu.pane_id
        assert screen.card.title == "usage limit" and "wait for limit" in screen.card.options[0].label
        await pilot.press("1")
        await wait_for(pilot, lambda: keys(menu) == ["'1'"], what="1. Stop and wait, pressed")
        assert waiting.raw() == []
