"""The phone-size layout (the browser view on a phone held upright): 50x30 on the deterministic
snapshot fleet (tests/app/test_snapshots.py), an agent waiting on a permission prompt. Needs-you
comes first, the list under it; the answer card's choices are buttons."""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot

from nbs_tui.app import NbsApp
from nbs_tui.widgets.answer_card import AnswerScreen
from tests.app.helpers import wait_for
from tests.app.test_snapshots import _settled, snapshot_app

__all__ = ["snapshot_app"]  # the fixture, shared

PHONE = (50, 30)


def test_phone_dashboard(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot, mirror=False)
        assert snapshot_app.screen.has_class("-narrow")
        await pilot.pause(0.3)

    assert snap_compare(snapshot_app, terminal_size=PHONE, run_before=run_before)


def test_phone_answer_card(snapshot_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot, mirror=False)
        await pilot.press("A")
        await wait_for(pilot, lambda: isinstance(snapshot_app.screen, AnswerScreen), what="the answer card")
        assert snapshot_app.screen.has_class("-narrow")
        await pilot.pause(0.3)

    assert snap_compare(snapshot_app, terminal_size=PHONE, run_before=run_before)
