"""Keys are rebindable by binding id from the settings' keymap, and the help screen follows."""

from __future__ import annotations

from dataclasses import replace

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.tmux.port import FleetListener
from nbs_tui.widgets.help_screen import HelpScreen
from tests.app.fakes import FakeFleet, pane_info
from tests.app.helpers import wait_for


async def test_a_rebound_key_opens_help_and_the_old_one_does_not() -> None:
    settings = replace(Settings(), keymap={"app.help": "f2"})

    def factory(listener: FleetListener) -> FakeFleet:
        return FakeFleet(listener, [pane_info("%1", 0)])

    app = create_app(settings, factory, control_plane=False, sidecar=False, claude=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen), "the old key still opens help"
        await pilot.press("f2")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help on the rebound key")
