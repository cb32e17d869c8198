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

import libtmux
import pytest
from textual.widgets import Static

from nbs_tui import logs
from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.problems import Problem
from nbs_tui.files.control_plane import ControlEvent
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


def notified(app: NbsApp, needle: str) -> bool:
    return any(needle in str(n.message) for n in app._notifications)


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
    async with app.run_test(size=SIZE) as pilot:
        bar = app.query_one(StatusBar)
        await wait_for(pilot, lambda: find(app, "Claude Code signals", "cannot read"), what="the spool problem")
        await wait_for(pilot, lambda: find(app, "control plane", "choked"), what="the listener problem")
        await wait_for(pilot, lambda: notified(app, "cannot read") and notified(app, "choked"), what="notified")
        await wait_for(pilot, lambda: bool(control_client_pids(session.server)), what="a control client")
        os.kill(control_client_pids(session.server)[0], signal.SIGKILL)
        await wait_for(pilot, lambda: find(app, "tmux", "control client"), what="the dead client problem")
        await wait_for(pilot, lambda: notified(app, "control client"), what="the dead client notified")
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
        before = len(app.problems)
        session.server.kill()
        await wait_for(pilot, lambda: app.connected is False and len(app.problems) > before, what="the lost server")
        assert bar.problems == 0 and "problem" not in static_text(bar)
        assert any(p.source == "tmux" and "control client" not in p.message for p in screen.entries), screen.text()

        await pilot.press("c")  # clear
        assert not isinstance(app.screen, ProblemsScreen) and len(app.problems) == 0 and bar.problems == 0

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert str(log_file) in static_text(app.screen.query_one("#help-log", Static))

    text = log_file.read_text()
    for line in ("Claude Code signals: hook spool: cannot read", "control plane: ", "choked on", "tmux: control client"):
        assert line in text, (line, text)
