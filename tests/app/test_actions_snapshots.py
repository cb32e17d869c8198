"""Snapshots of the operator's actions at 160x48 on the deterministic snapshot fleet.

They double as the screenshots of the keys: the footer, the help screen, the send bar, the key
picker, the broadcast confirmation naming its panes, pass-through's indicator, the needs-you
panel and a filtered list. Same frozen clocks as tests/app/test_snapshots.py; update with
``pytest tests/app/test_actions_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from tests.app.snapfleet import StableFleet, start_snapshot_fleet
from tests.app.test_snapshots import FROZEN_WALL, SIZE, _settled


@pytest.fixture
def operator_app(
    server: libtmux.Server, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[NbsApp]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    start_snapshot_fleet(server)
    address = ServerAddress(socket_name=server.socket_name)
    state = tmp_path_factory.mktemp("state")
    settings = Settings(
        server=address, poll_disabled=True, plan_policy="off", bell=False, action_log=state / "actions.log"
    )
    app = create_app(
        settings,
        lambda listener: StableFleet(address, listener),
        control_plane=False,
        claude=False,
        clock=lambda: 1000.0,
        wall=lambda: FROZEN_WALL,
    )
    app.notify = lambda *args, **kwargs: None  # type: ignore[method-assign]  # toasts come and go on their own clock
    yield app
    monkeypatch.undo()
    time.tzset()


def _then(*keys: str, text: str | None = None) -> Callable[[Pilot[object]], Awaitable[None]]:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot)
        app = pilot.app
        assert isinstance(app, NbsApp)
        app.dashboard.send_bar.text.cursor_blink = False  # a blinking cursor is a coin toss in a snapshot
        app.dashboard.filter_bar.cursor_blink = False
        for key in keys:
            if key == "<text>":
                app.dashboard.send_bar.text.load_text(text or "")
                continue
            await pilot.press(key)
        await pilot.pause(0.4)
        await pilot.wait_for_scheduled_animations()
        await pilot.pause(0.4)

    return run_before


def test_needs_you_panel_and_footer(operator_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(operator_app, terminal_size=SIZE, run_before=_then())


def test_help_lists_operator_keys(operator_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(operator_app, terminal_size=SIZE, run_before=_then("question_mark"))


def test_send_bar(operator_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    keys = ("j", "i", "<text>", "ctrl+t")
    run = _then(*keys, text="Yes, go ahead; keep $HOME and 'quotes' as they are")
    assert snap_compare(operator_app, terminal_size=SIZE, run_before=run)


def test_key_picker(operator_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(operator_app, terminal_size=SIZE, run_before=_then("j", "K"))


def test_broadcast_confirmation_names_the_panes(operator_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    keys = ("m", "j", "j", "j", "m", "b", "<text>", "ctrl+t", "enter")
    assert snap_compare(operator_app, terminal_size=SIZE, run_before=_then(*keys, text="/compact"))


def test_pass_through_indicator(operator_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(operator_app, terminal_size=SIZE, run_before=_then("j", "p"))


def test_filter_state_needs(operator_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    keys = ("slash", *"state:needs", "enter")
    assert snap_compare(operator_app, terminal_size=SIZE, run_before=_then(*keys))
