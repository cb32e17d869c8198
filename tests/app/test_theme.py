"""The theme: applied from the settings at start, and the one picked in the command palette
saved to the config file for the next start (one line changed, the user's comments kept)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings, load_settings
from nbs_tui.tmux.port import FleetListener
from tests.app.fakes import FakeFleet, pane_info
from tests.app.helpers import wait_for

USER_FILE = '# my settings\nbell = false  # quiet\n\n[keymap]\n"app.help" = "f2"\n'


def problems(app: NbsApp) -> list[tuple[str, str]]:
    """What the problems screen lists (source, message)."""
    return [(problem.source, problem.message) for problem in app.problems.entries()]


def factory(listener: FleetListener) -> FakeFleet:
    return FakeFleet(listener, [pane_info("%1", 0)])


async def test_the_theme_picked_in_the_palette_is_saved_and_used_next_time(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(USER_FILE, encoding="utf-8")
    settings = load_settings(config, environ={})
    app = create_app(settings, factory, control_plane=False, sidecar=False, claude=False)
    async with app.run_test(size=(160, 48)) as pilot:
        assert app.theme == "textual-dark"
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"theme", "enter")  # the palette's "Theme" command lists the themes
        await pilot.pause()
        await pilot.press(*"nord", "enter")
        await wait_for(pilot, lambda: app.theme == "nord", what="the nord theme")
    text = config.read_text(encoding="utf-8")
    assert text == '# my settings\nbell = false  # quiet\ntheme = "nord"\n\n[keymap]\n"app.help" = "f2"\n'

    again = create_app(load_settings(config, environ={}), factory, control_plane=False, sidecar=False, claude=False)
    async with again.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert again.theme == "nord"
    assert config.read_text(encoding="utf-8") == text  # starting with it saves nothing


async def test_an_unknown_theme_is_reported_and_the_default_kept(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('theme = "no-such-theme"\n', encoding="utf-8")
    settings = load_settings(config, environ={})
    app = create_app(settings, factory, control_plane=False, sidecar=False, claude=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: problems(app), what="a problem")
        assert app.theme == "textual-dark"
    assert problems(app) == [("settings", f"unknown theme 'no-such-theme' in {config}; using textual-dark")]
    assert config.read_text(encoding="utf-8") == 'theme = "no-such-theme"\n'  # left for the user to fix


async def test_a_theme_that_cannot_be_saved_is_reported_and_still_shown(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("", encoding="utf-8")
    settings = replace(Settings(), config_file=blocker / "config.toml")  # its folder cannot exist
    app = create_app(settings, factory, control_plane=False, sidecar=False, claude=False)
    async with app.run_test(size=(160, 48)) as pilot:
        app.theme = "gruvbox"
        await wait_for(pilot, lambda: problems(app), what="a problem")
        assert app.theme == "gruvbox"
    [(source, message)] = problems(app)
    assert source == "settings"
    assert message.startswith(f"config file {blocker / 'config.toml'}: ")
