"""On a phone (the browser view at 50x30): a dashboard started with ``--open-card`` opens that
agent's answer card by itself, a tap on a choice (a click, to Textual) answers the real pane,
and Close goes back; a target that names no pane is one problem line and nothing else. The
panes replay menus recorded from the real Claude Code CLI (tests/tmux/replay_agent.py). Each
"once" is checked again later: the pane's keys after the next card and after a needs-you tick
past Close (the card does not open again), the problem line after the fleet changed again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import libtmux
from textual.widgets import Button

from nbs_tui.app import NbsApp
from nbs_tui.core.fleet.card_target import format_card_target
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet.needs_you import NeedsYouEntry
from nbs_tui.widgets.answer_card import AnswerScreen
from tests.app.helpers import wait_for
from tests.app.test_answer_card_tmux import card_text, keys, make_app
from tests.tmux.replay_agent import corpus_screen, start_replay

PHONE = (50, 30)


def needs_you_ticks(app: NbsApp) -> Callable[[], int]:
    """How many needs-you ticks the app has run from now on (each ends by asking the answer
    flow whether a card is due: `AnswerFlow.when_read`)."""
    count = 0
    tick = app.operator.needs_you_tick

    def counted() -> list[NeedsYouEntry]:
        nonlocal count
        count += 1
        return tick()

    app.operator.needs_you_tick = counted  # type: ignore[method-assign]
    return lambda: count


def button(app: object, name: str) -> Button:
    screen = app.screen  # type: ignore[attr-defined]
    return next(b for b in screen.query(Button) if b.name == name)


async def test_open_card_then_a_tap_answers_the_agent_and_close_goes_back(server: libtmux.Server, tmp_path: Path) -> None:
    other = start_replay(server, tmp_path, "other", corpus_screen("2.1.197", "question"))
    perm = start_replay(server, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    app = make_app(server, tmp_path)
    target = format_card_target("local", ServerAddress(socket_name=server.socket_name), perm.pane_id)
    app.settings = replace(app.settings, open_card=target)
    app.dashboard.answering.open_at_start(target)  # as create_app does with --open-card
    async with app.run_test(size=PHONE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, AnswerScreen), timeout=30, what="the card, opened by itself")
        screen = app.screen
        assert isinstance(screen, AnswerScreen) and screen.card.pane_id == perm.pane_id  # not the older one
        assert app.dashboard.selected_id == perm.pane_id
        await wait_for(pilot, lambda: screen.has_class("-narrow"), what="the phone layout")
        await wait_for(pilot, lambda: "ls -la /" in card_text(app, "prompt"), what="the prompt drawn")
        assert [b.name for b in screen.query(Button)] == ["1", "2", "3", "escape", "skip", "close"]
        assert str(button(app, "1").label).endswith("Yes")
        await wait_for(pilot, lambda: other.pane_id in app.operator.needs_you, timeout=20, what="the other agent waits too")
        assert await pilot.click(button(app, "1"))
        await wait_for(pilot, lambda: keys(perm) == ["'1'"], what="1 pressed in the permission pane")
        await wait_for(pilot, lambda: screen.card.pane_id == other.pane_id, what="the next card")
        # every key the pane read (a second "1" would be typed text, not a KEY line)
        assert perm.raw() == ["RAW b'1'"] and other.raw() == []
        ticks = needs_you_ticks(app)
        assert await pilot.click(button(app, "close"))
        await wait_for(pilot, lambda: not isinstance(app.screen, AnswerScreen), what="back to the list")
        await wait_for(pilot, lambda: ticks() >= 2, what="a needs-you tick after the close")
        assert not isinstance(app.screen, AnswerScreen)  # opened by itself once, not again
        assert other.pane_id in app.operator.needs_you  # though another agent still waits
        assert perm.raw() == ["RAW b'1'"] and other.raw() == []


async def test_an_unknown_target_is_one_problem_line_and_nothing_else(server: libtmux.Server, tmp_path: Path) -> None:
    perm = start_replay(server, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    app = make_app(server, tmp_path)
    app.dashboard.answering.open_at_start(f"local/L-{server.socket_name}/%999")
    async with app.run_test(size=PHONE) as pilot:
        await wait_for(pilot, lambda: perm.pane_id in app.operator.needs_you, timeout=30, what="the agent waits")
        await wait_for(pilot, lambda: len(app.problems.entries()) > 0, what="the problem line")
        [problem] = app.problems.entries()
        assert problem.source == "open card" and "%999: no such pane" in problem.message
        # the fleet listed again (a new pane): the target is not looked for, nor said, again
        later = start_replay(server, tmp_path, "later", corpus_screen("2.1.332", "idle_empty"))
        await wait_for(pilot, lambda: later.pane_id in app.state.pane_by_id, timeout=30, what="the fleet listed again")
        assert app.problems.entries() == [problem]
        assert not isinstance(app.screen, AnswerScreen) and perm.raw() == []
