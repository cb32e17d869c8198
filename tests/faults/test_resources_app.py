"""The dashboard on a full disk: the operator's action goes ahead, the action log's and the log
file's failures are in the problems screen, and both are written again once there is room.
(A real tmpfs filled to its last page; skipped where mounting is not allowed.)"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from textual.widgets import TextArea

from nbs_tui.housekeeping import logs
from nbs_tui.operator.action_log import ActionRecord
from nbs_tui.widgets.problems_screen import ProblemsScreen
from tests.app.helpers import wait_for
from tests.app.test_actions import CAT, SIZE, finished, make_app, pane_running, select
from tests.faults.test_resources import fill, mounted


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "state"
    with mounted(folder, "-o", "size=1m"):
        yield folder
        logs.uninstall()


async def test_a_full_disk_under_the_dashboard(session: libtmux.Session, tmp_path: Path, state: Path) -> None:
    log_file = logs.install(state / "nbs-tui" / "nbs-tui.log")
    out = tmp_path / "out.txt"
    pane = pane_running(session, CAT, out, "cat")
    app = make_app(session.server, tmp_path)  # its action log: tmp_path/state/actions.log
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, pane)
        with log_file.open("a") as fh:  # the log's last page full: its next line needs a new one
            fh.write("\n" * (-log_file.stat().st_size % 4096))
        filler = fill(state)
        await pilot.press("i")
        app.dashboard.send_bar.query_one(TextArea).load_text("while full")
        await pilot.press("enter")

        def problem(source: str) -> bool:
            return any(p.source == source and "No space left on device" in p.message for p in app.problems.entries())

        await wait_for(pilot, lambda: problem("action log"), what="the action log's problem")
        await wait_for(pilot, lambda: problem("log file"), what="the log file's problem")
        await pilot.press("escape")
        await pilot.press("E")
        screen = app.screen
        assert isinstance(screen, ProblemsScreen)
        listed = screen.text()
        assert "action log: cannot write" in listed and "actions go ahead unlogged" in listed, listed
        assert "log file: cannot write" in listed, listed
        await pilot.press("escape")
        filler.unlink()  # room again: the next action is logged
        await pilot.press("i")
        app.dashboard.send_bar.query_one(TextArea).load_text(" and after")
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(isinstance(r, ActionRecord) and r.sent == " and after"
                                          for r in app.operator.action_log.tail()), what="logged again")
        read = finished(session.server, pane, out)
        await wait_for(pilot, lambda: read() is not None, what="cat finished")
        assert read() == b"while full and after"  # the action itself went ahead while the disk was full
