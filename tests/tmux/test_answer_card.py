"""Answering from the card on real tmux: panes replaying menus recorded from the real CLI.

The operator's key goes to the pane only when a fresh capture still shows the menu the card was
read from, in the same process; otherwise nothing is sent and the result says why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.detection.answer import AnswerCard, card_for
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.model import PaneInfo, ServerAddress
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.operator.pane_actions import Operator
from nbs_tui.tmux.fleet import TmuxFleet
from tests.tmux.replay_agent import ReplayPane, corpus_screen, start_replay


@pytest.fixture
def fleet(server: libtmux.Server) -> Iterator[TmuxFleet]:
    watched = TmuxFleet(ServerAddress(socket_name=server.socket_name))
    watched.start()
    try:
        yield watched
    finally:
        watched.stop()


def _pane(fleet: TmuxFleet, pane_id: str) -> PaneInfo:
    assert retry_until(lambda: any(p.pane_id == pane_id and p.is_agent for p in fleet.panes()), 10, raises=False)
    return next(p for p in fleet.panes() if p.pane_id == pane_id)


def _card(fleet: TmuxFleet, pane: PaneInfo) -> AnswerCard:
    made = card_for(pane.pane_id, pane.pid, detect_text(fleet.capture_text(pane.pane_id)))
    assert made is not None
    return made


def _operator(fleet: TmuxFleet, server: libtmux.Server, tmp_path: Path) -> tuple[Operator, ActionLog]:
    log = ActionLog(tmp_path / "actions.log")
    return Operator(fleet, log, server=ServerAddress(socket_name=server.socket_name)), log


def _keys(replay: ReplayPane) -> list[str]:
    return [line.removeprefix("KEY ") for line in replay.lines() if line.startswith("KEY ")]


def test_an_answer_reaches_the_menu_it_was_read_from_once(
    server: libtmux.Server, fleet: TmuxFleet, tmp_path: Path
) -> None:
    replay = start_replay(server, tmp_path, "perm", corpus_screen("2.1.332", "permission_bash"))
    assert fleet.wait_seeded(10)
    pane = _pane(fleet, replay.pane_id)
    card = _card(fleet, pane)
    op, log = _operator(fleet, server, tmp_path)

    result = op.answer(pane, card, "y")
    assert result.ok and result.sent == "1" and result.reason == "1. Yes"
    assert retry_until(lambda: _keys(replay) == ["'1'"], 5, raises=False), replay.lines()

    # the same card again: the prompt has gone (the replayed agent went on), nothing is sent
    assert retry_until(lambda: "Do you want" not in fleet.capture_text(pane.pane_id), 5, raises=False)
    again = op.answer(pane, card, "y")
    assert again.outcome is Outcome.SKIPPED and "permission prompt is gone" in again.reason
    assert len(replay.raw()) == 1
    recorded = [r for r in log.tail() if isinstance(r, ActionRecord)]
    assert [(r.action, r.sent, r.outcome) for r in recorded] == [
        ("answer", "1", Outcome.SENT),
        ("answer", "1", Outcome.SKIPPED),
    ]


def test_a_different_menu_or_a_replaced_process_gets_nothing(
    server: libtmux.Server, fleet: TmuxFleet, tmp_path: Path
) -> None:
    bash = start_replay(server, tmp_path, "bash", corpus_screen("2.1.197", "permission_bash"))
    write = start_replay(server, tmp_path, "write", corpus_screen("2.1.197", "permission_write"))
    assert fleet.wait_seeded(10)
    bash_pane, write_pane = _pane(fleet, bash.pane_id), _pane(fleet, write.pane_id)
    op, _ = _operator(fleet, server, tmp_path)

    # the card of one prompt is not an answer to another one in its place
    wrong = _card(fleet, write_pane)
    moved = op.answer(bash_pane, AnswerCard(bash_pane.pane_id, bash_pane.pid, wrong.state, wrong.prompt, wrong.options), "1")
    assert moved.outcome is Outcome.SKIPPED and "options are not the ones shown" in moved.reason

    # the agent in the pane was replaced (same pane id, new process): the old card is void
    card = _card(fleet, write_pane)
    server.cmd("respawn-pane", "-k", "-t", write_pane.pane_id)
    assert retry_until(lambda: _pane(fleet, write_pane.pane_id).pid != write_pane.pid, 10, raises=False)
    replaced = op.answer(write_pane, card, "1")
    assert replaced.outcome is Outcome.SKIPPED and "was replaced" in replaced.reason

    # a key that names no option is refused before tmux is asked anything
    assert "no option 7" in op.answer(bash_pane, _card(fleet, bash_pane), "7").reason
    assert bash.raw() == [] and write.raw() == []
