"""Snapshots of the review screen (``v``) over a real git worktree, on the deterministic snapshot
fleet (tests/app/test_snapshots.py): 160x48 (side by side) and a phone's 50x30 (files above a
unified diff). The selected agent's folder is the worktree of `tests.gitrepo.reviewed_repo`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp
from nbs_tui.widgets.review_screen import ReviewScreen
from tests.app.helpers import wait_for, widget_text
from tests.app.snapfleet import mirror_in_reviewed_worktree
from tests.app.test_snapshots import FROZEN_WALL, SIZE, _settled, frozen_app

PHONE = (50, 30)


@pytest.fixture
def review_app(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[NbsApp]:
    mirror_in_reviewed_worktree(monkeypatch, tmp_path)
    yield from frozen_app(server, monkeypatch, FROZEN_WALL)


async def open_review(pilot: Pilot[object], *, mirror: bool = True) -> ReviewScreen:
    app = pilot.app
    await _settled(pilot, mirror=mirror)
    await pilot.press("v")
    await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review screen")
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    await wait_for(pilot, lambda: "only the rows" in widget_text(screen.diff_view), what="NOTES.md's diff (the first file)")
    await pilot.press("right_square_bracket")
    await wait_for(pilot, lambda: "self.dirty" in widget_text(screen.diff_view), what="mirror.py's diff")
    await pilot.pause(0.3)
    return screen


def test_review(review_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        screen = await open_review(pilot)
        assert screen.diff_view.split  # wide enough: side by side
        await pilot.press("c", *"Keep dirty a set?", "enter")
        await pilot.pause(0.3)

    assert snap_compare(review_app, terminal_size=SIZE, run_before=run_before)


def test_phone_review(review_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        screen = await open_review(pilot, mirror=False)
        assert screen.has_class("-narrow") and not screen.diff_view.split
        await pilot.pause(0.3)

    assert snap_compare(review_app, terminal_size=PHONE, run_before=run_before)


def test_phone_review_merge_is_asked_first(review_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        from nbs_tui.widgets.confirm_screen import ConfirmScreen

        await open_review(pilot, mirror=False)
        await pilot.press("M")
        await wait_for(pilot, lambda: isinstance(review_app.screen, ConfirmScreen), what="the confirmation")
        await pilot.pause(0.3)

    assert snap_compare(review_app, terminal_size=PHONE, run_before=run_before)
