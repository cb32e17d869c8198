"""Two agents sharing one worktree: each one's review lists the files its own Claude Code wrote
(the hooks' PostToolUse, read by the change column's counter), on real tmux and real git; a
change no hook explains is the folder's, in neither agent's review (issue 38)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import libtmux
from libtmux.test.retry import retry_until
from textual.pilot import Pilot

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase
from nbs_tui.widgets.fleet_list import FleetList
from nbs_tui.widgets.review_screen import ReviewScreen
from tests.app.helpers import wait_for
from tests.files.test_git_changes import make_repo
from tests.tmux.test_change_counter import write_hook
from tests.tmux.test_sidecar_runner import write_fake_claude


def ready(log: Path) -> Callable[[], bool]:
    return lambda: log.exists() and "READY" in log.read_text()


async def test_agents_sharing_a_worktree_each_review_their_own_files(session: libtmux.Session, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    server = session.server
    socket = server.cmd("display-message", "-p", "#{socket_path}").stdout[0]
    panes = []
    for name in ("one", "two"):
        log = tmp_path / f"{name}.log"
        window = session.new_window(window_name=name, start_directory=str(repo), window_shell=f"{fake} idle {log}", attach=False)
        pane = window.active_pane
        assert pane is not None and pane.pane_id is not None
        assert retry_until(ready(log), 10, raises=False)
        server.cmd("set-option", "-p", "-t", pane.pane_id, BASE_OPTION, AgentBase(base, "main").render())
        panes.append(pane.pane_id)
    (repo / "one.txt").write_text("1\n")
    (repo / "two.txt").write_text("2\n2\n")
    (repo / "bash.txt").write_text("nobody's\n")
    spool = tmp_path / "hooks.jsonl"
    spool.write_bytes(
        write_hook(panes[0], socket, repo / "one.txt", 10.0) + b"\n" + write_hook(panes[1], socket, repo / "two.txt", 11.0) + b"\n"
    )
    app = create_app(Settings(server=ServerAddress(socket_name=server.socket_name), hook_spool=spool, poll_disabled=True))
    async with app.run_test(size=(160, 48)) as pilot:
        fleet = app.query_one(FleetList)
        await wait_for(
            pilot, lambda: all(p in fleet.row_keys and fleet.get_cell(p, "changes").plain for p in panes), timeout=20,
            what="both agents counted",
        )  # fmt: skip
        assert [await reviewed(pilot, app, p) for p in panes] == [["one.txt"], ["two.txt"]]


async def reviewed(pilot: Pilot[Any], app: NbsApp, pane_id: str) -> list[str]:
    app.dashboard.select_pane(pane_id)
    await pilot.press("v")
    await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen) and bool(app.screen.files), what="the review")
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    files = [f.path for f in screen.files]
    await pilot.press("q")
    await wait_for(pilot, lambda: not isinstance(app.screen, ReviewScreen), what="closed")
    return files
