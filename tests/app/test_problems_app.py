"""Backends that fail for real, seen in the dashboard (Pilot): notified, counted in the status
bar, listed on the problems screen (``E``), and written to the log file.

On a private tmux server: the hook spool is a directory where the file should be (unreadable,
also for root), the Control view's listener raises on the control plane's events, the ``tmux -C``
control client is SIGKILLed, and at last the server itself is killed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libtmux
import pytest
from textual.widgets import Static

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.problems import Problem
from nbs_tui.files.control_plane import ControlEvent
from nbs_tui.housekeeping import logs
from nbs_tui.widgets.help_screen import HelpScreen
from nbs_tui.widgets.problems_screen import ProblemsScreen
from nbs_tui.widgets.status_bar import StatusBar
from tests.app.helpers import static_text, wait_for
from tests.tmux.fleet_helpers import address
from tests.tmux.test_problems_headless import control_client_pids

SIZE = (160, 48)


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    path = logs.install(tmp_path / "state" / "nbs-tui" / "nbs-tui.log")
    yield path
    logs.uninstall()


def find(app: NbsApp, source: str, needle: str) -> list[Problem]:
    return [p for p in app.problems.entries() if p.source == source and needle in p.message]


class Notified:
    """Every notification the app shows (they expire from the screen; this list keeps them)."""

    def __init__(self, app: NbsApp) -> None:
        self.messages: list[str] = []
        self._notify = app.notify
        app.notify = self  # type: ignore[method-assign]

    def __call__(self, message: str, **kwargs: Any) -> None:
        self.messages.append(str(message))
        self._notify(message, **kwargs)

    def __contains__(self, needle: str) -> bool:
        return any(needle in message for message in self.messages)


async def test_every_failing_backend_is_seen_in_the_app_and_the_log(
    session: libtmux.Session, tmp_path: Path, log_file: Path
) -> None:
    spool = tmp_path / "hooks.jsonl"
    spool.mkdir()
    (spool / "x").write_text("a directory where the spool should be")
    project = tmp_path / "project"
    (project / ".nbs").mkdir(parents=True)
    settings = Settings(
        server=address(session.server), projects=(project,), hook_spool=spool,
        claude_home=tmp_path / "claude", action_log=tmp_path / "actions.log", poll_disabled=True,
    )
    app = create_app(settings)

    def raising_listener(event: ControlEvent) -> None:
        raise RuntimeError(f"the Control view choked on {type(event).__name__}")

    app.control_view.plane_listener = raising_listener  # type: ignore[method-assign]
    notified = Notified(app)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.query_one(StatusBar)
        await wait_for(pilot, lambda: find(app, "Claude Code signals", "cannot read"), what="the spool problem")
        await wait_for(pilot, lambda: find(app, "control plane", "choked"), what="the listener problem")
        await wait_for(pilot, lambda: "cannot read" in notified and "choked" in notified, what="notified")
        # one settled output client (a viewer being replaced as the start-up selection settles
        # exits without a problem: it is no longer the session's)
        await wait_for(pilot, lambda: len(control_client_pids(session.server, output=True)) == 1, what="a control client")
        await pilot.pause(0.5)
        await wait_for(pilot, lambda: len(control_client_pids(session.server, output=True)) == 1, what="still one")
        os.kill(control_client_pids(session.server, output=True)[0], signal.SIGKILL)
        await wait_for(pilot, lambda: find(app, "tmux", "control client"), what="the dead client problem")
        await wait_for(pilot, lambda: "control client" in notified, what="the dead client notified")
        assert bar.problems == len(app.problems) >= 3
        assert f"⚠ {bar.problems} problems" in static_text(bar)

        await pilot.press("E")
        screen = app.screen
        assert isinstance(screen, ProblemsScreen)
        listed = screen.text()
        for source, needle in [("Claude Code signals", "directory"), ("control plane", "choked"), ("tmux", "control client")]:
            assert any(line.startswith(f"{source}: ") and needle in line for line in listed.splitlines()), listed
        assert str(log_file) in static_text(screen.query_one("#problems-title", Static))

        # tmux itself goes away: listed (the open screen follows); the banner, not a notification
        # nor the count, says so while it lasts
        session.server.kill()

        def server_lost() -> bool:
            return any(p.source == "tmux" and "control client" not in p.message for p in screen.entries)

        await wait_for(pilot, lambda: app.dashboard.news.connected is False and server_lost(), what="the lost server listed")
        assert bar.problems == 0 and "problem" not in static_text(bar)
        assert "is gone" not in notified

        await pilot.press("c")  # clear (what tmux's absence keeps causing may come again at once)
        assert not isinstance(app.screen, ProblemsScreen)
        assert not find(app, "Claude Code signals", "") and not find(app, "control plane", ""), app.problems.entries()

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert str(log_file) in static_text(app.screen.query_one("#help-log", Static))

    text = log_file.read_text()
    for line in ("Claude Code signals: hook spool: cannot read", "control plane: ", "choked on", "tmux: control client"):
        assert line in text, (line, text)
