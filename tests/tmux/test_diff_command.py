"""``nbs-tui diff`` (issue 38) as a script runs it: real git, a private tmux server, imitation
agents in real folders, and the hook spool as Claude Code's PostToolUse hooks write it (the real
Claude Code's run is tests/realclaude/test_diff_e2e.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import SPOOL_NAME
from nbs_tui.core.fleet_api.exit_codes import ExitCode
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase
from tests.files.test_git_changes import git, make_repo, numstat
from tests.tmux.test_fleet_api import nbs
from tests.tmux.test_sidecar_runner import write_fake_claude


def fake_agent(session: libtmux.Session, tmp_path: Path, name: str, folder: Path) -> str:
    """An imitation Claude Code (idle) in ``folder``: the service publishes it as an agent."""
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    log = tmp_path / f"{name}.log"
    window = session.new_window(window_name=name, start_directory=str(folder), window_shell=f"{fake} idle {log}", attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    assert retry_until(lambda: log.exists() and "READY" in log.read_text(), 10, raises=False)
    return pane.pane_id


def hook_wrote(tmp_path: Path, server: libtmux.Server, pane_id: str, tool: str, path: Path, at: float) -> None:
    """One line as nbs-tui's hook script appends it for a PostToolUse of ``tool``."""
    socket = server.cmd("display-message", "-p", "#{socket_path}").stdout[0]
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    payload = {
        "hook_event_name": "PostToolUse", "session_id": f"s-{pane_id}", "cwd": str(path.parent),
        "tool_name": tool, "tool_input": {key: str(path)}, "tool_response": {},
    }  # fmt: skip
    spool = tmp_path / "home" / ".state" / "nbs-tui" / SPOOL_NAME
    spool.parent.mkdir(parents=True, exist_ok=True)
    with spool.open("a") as fh:
        fh.write(json.dumps({"nbs_pane": pane_id, "nbs_tmux": socket, "nbs_time": at, "payload": payload}) + "\n")


def diff_json(server: libtmux.Server, tmp_path: Path, target: str) -> dict[str, Any]:
    def listed() -> bool:
        return target in nbs(server, tmp_path, "agents").stdout

    assert retry_until(listed, 20, raises=False)
    done = nbs(server, tmp_path, "diff", target, "--json")
    assert done.returncode == ExitCode.DONE, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


@pytest.fixture
def stop_service(server: libtmux.Server, tmp_path: Path) -> Any:
    yield
    nbs(server, tmp_path, "service", "stop")


@pytest.mark.service_auto
def test_two_agents_sharing_a_folder_each_see_their_own_files(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, stop_service: None
) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    alpha = fake_agent(session, tmp_path, "alpha", repo)
    beta = fake_agent(session, tmp_path, "beta", repo)
    (repo / "f.txt").write_text("a\nb\nc\nalpha's line\n")
    hook_wrote(tmp_path, server, alpha, "Edit", repo / "f.txt", 100.0)
    (repo / "notes.ipynb").write_text('{"cells": []}\n')
    hook_wrote(tmp_path, server, alpha, "NotebookEdit", repo / "notes.ipynb", 101.0)
    (repo / "src").mkdir()
    (repo / "src" / "beta.py").write_text("x = 1\ny = 2\n")
    hook_wrote(tmp_path, server, beta, "Write", repo / "src" / "beta.py", 102.0)
    (repo / "made-by-bash.txt").write_text("no hook says who\n")  # the folder's, nobody's
    hook_wrote(tmp_path, server, beta, "Read", repo / "gone.txt", 103.0)  # not a write

    key = f"L-{server.socket_name}"
    mine = diff_json(server, tmp_path, "alpha")
    assert mine == {
        "target": f"local/{key}/{alpha}",
        "folder": str(repo),
        "repository": str(repo),
        "branch": "main",
        "base": base,
        "files": [
            {"path": "f.txt", "status": "modified", "added": 1, "removed": 0, "by": f"local/{key}/{alpha}"},
            {"path": "notes.ipynb", "status": "untracked", "added": 1, "removed": 0, "by": f"local/{key}/{alpha}"},
        ],
    }
    theirs = diff_json(server, tmp_path, "beta")
    assert [(f["path"], f["added"], f["by"]) for f in theirs["files"]] == [("src/beta.py", 2, f"local/{key}/{beta}")]

    stat = nbs(server, tmp_path, "diff", "alpha", "--stat")
    assert stat.returncode == 0, stat.stderr
    assert "f.txt" in stat.stdout and "made-by-bash.txt" not in stat.stdout and "2 files changed, +2 -0" in stat.stdout
    patch = nbs(server, tmp_path, "diff", "beta")
    assert patch.returncode == 0, patch.stderr
    assert "+++ b/src/beta.py" in patch.stdout and "+x = 1" in patch.stdout and "f.txt" not in patch.stdout


@pytest.mark.service_auto
def test_an_agent_alone_counts_from_its_remembered_base_and_bash_changes_are_the_folders(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, stop_service: None
) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    pane = fake_agent(session, tmp_path, "solo", repo)
    server.cmd("set-option", "-p", "-t", pane, BASE_OPTION, AgentBase(base, "main").render())
    (repo / "f.txt").write_text("rewritten\n")
    git(repo, "commit", "-qam", "the agent's commit")
    (repo / "big.txt").write_text("changed\n")  # unstaged, by no hook
    (repo / "new.txt").write_text("1\n2\n3\n")
    hook_wrote(tmp_path, server, pane, "Write", repo / "new.txt", 100.0)
    hook_wrote(tmp_path, server, pane, "MultiEdit", repo / "f.txt", 101.0)

    document = diff_json(server, tmp_path, "solo")
    assert document["base"] == base
    counts = {f["path"]: (f["added"], f["removed"]) for f in document["files"] if f["status"] != "untracked"}
    assert counts == numstat(repo, base)  # the commit since the base, and what is not committed
    by = {f["path"]: f["by"] for f in document["files"]}
    solo = f"local/L-{server.socket_name}/{pane}"
    assert by == {"f.txt": solo, "big.txt": None, "new.txt": solo}


@pytest.mark.service_auto
def test_a_folder_outside_git_says_so_and_lists_nothing(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, stop_service: None
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    fake_agent(session, tmp_path, "plain", plain)
    document = diff_json(server, tmp_path, "plain")
    assert document["repository"] is False and document["files"] == [] and document["branch"] is None
    assert "not in a git repository" in document["message"]
    text = nbs(server, tmp_path, "diff", "plain")
    assert text.returncode == 0 and "not in a git repository" in text.stdout


@pytest.mark.service_auto
def test_an_unknown_target_is_no_such_agent(server: libtmux.Server, session: libtmux.Session, tmp_path: Path, stop_service: None) -> None:
    done = nbs(server, tmp_path, "diff", "nobody", "--json")
    assert done.returncode == ExitCode.NO_SUCH_AGENT and done.stdout == ""

