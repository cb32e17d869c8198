"""Whether a finished turn's push links to the agent's review (issue 38, item 4): the runtime's
question, on real tmux and real git. The base is the one ``nbs-tui new`` leaves on the pane
(``@nbs_base``): a committed change since it counts, a folder back at it or outside git does not."""

from __future__ import annotations

from pathlib import Path

import libtmux

from nbs_tui.core.fleet.model import PaneInfo, ServerAddress
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase
from nbs_tui.runtime.runtime import worktree_has_changes
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.files.test_git_changes import git, make_repo


def test_a_pane_whose_folder_changed_since_its_base(server: libtmux.Server, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    session = server.new_session(session_name="s", start_directory=str(repo))
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))
    info = PaneInfo(pane.pane_id, "s", 0, "w", 0, "", "claude", str(repo), 1, 80, 24, is_agent=True)
    server.cmd("set-option", "-p", "-t", pane.pane_id, BASE_OPTION, AgentBase(base, "main").render())
    assert not worktree_has_changes(info, commands)  # at its base
    (repo / "f.txt").write_text("a\nB\nc\n")
    git(repo, "commit", "-qam", "the agent's turn")
    assert worktree_has_changes(info, commands)  # committed since the base: still its change
    server.cmd("set-option", "-p", "-t", pane.pane_id, BASE_OPTION, AgentBase(git(repo, "rev-parse", "HEAD").strip(), "main").render())
    assert not worktree_has_changes(info, commands)  # the base moved up to it
    outside = tmp_path / "plain"
    outside.mkdir()
    assert not worktree_has_changes(PaneInfo(pane.pane_id, "s", 0, "w", 0, "", "claude", str(outside), 1, 80, 24), commands)
