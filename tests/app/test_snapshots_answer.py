"""Snapshot of the answer card (`A`) on the deterministic snapshot fleet (tests/app/test_snapshots.py)."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot

from nbs_tui.app import NbsApp
from nbs_tui.widgets.answer_card import AnswerScreen
from tests.app.helpers import wait_for
from tests.app.test_snapshots import SIZE, _settled, snapshot_app

__all__ = ["snapshot_app"]  # the fixture, shared


def test_answer_card(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot)
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(snapshot_app.screen, AnswerScreen), what="the answer card")
        await pilot.pause(0.3)

    assert snap_compare(snapshot_app, terminal_size=SIZE, run_before=run_before)
