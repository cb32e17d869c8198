"""The change column in the dashboard (issue 38, item 5): an agent's counts reach the fleet list
from its worktree's watch, with no key pressed and no timer, on real tmux and real git."""

from __future__ import annotations

from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.app import create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase
from nbs_tui.widgets.fleet_list import FleetList
from tests.app.helpers import wait_for
from tests.files.test_git_changes import git, make_repo
from tests.tmux.test_sidecar_runner import write_fake_claude


async def test_an_agents_change_count_follows_its_worktree(session: libtmux.Session, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    log = tmp_path / "agent.log"
    window = session.new_window(window_name="agent", start_directory=str(repo), window_shell=f"{fake} idle {log}", attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    assert retry_until(lambda: log.exists() and "READY" in log.read_text(), 10, raises=False)
    session.server.cmd("set-option", "-p", "-t", pane.pane_id, BASE_OPTION, AgentBase(base, "main").render())
    settings = Settings(server=ServerAddress(socket_name=session.server.socket_name), hook_spool=tmp_path / "hooks.jsonl")
    app = create_app(settings)
    async with app.run_test(size=(160, 48)) as pilot:
        fleet = app.query_one(FleetList)
        pane_id = pane.pane_id

        def shown() -> str:
            return fleet.get_cell(pane_id, "changes").plain if pane_id in fleet.row_keys else "?"

        await wait_for(pilot, lambda: shown() == "", what="the agent listed, no change yet")
        (repo / "f.txt").write_text("a\nb\nc\nd\n")
        await wait_for(pilot, lambda: shown() == "1 +1 -0", timeout=15, what="the edit counted")
        git(repo, "commit", "-qam", "the agent's commit")  # a commit changes nothing against the base
        (repo / "notes.md").write_text("1\n2\n")
        await wait_for(pilot, lambda: shown() == "2 +3 -0", timeout=15, what="the new file counted")
