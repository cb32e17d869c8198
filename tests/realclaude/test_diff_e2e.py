"""``nbs-tui diff`` on the real Claude Code CLI (issue 38): agents started by ``nbs-tui new``
(``--worktree`` too) whose scripted replies write and edit files through Claude Code's own Write
and Edit tools, with nbs-tui's hooks installed. What the diff lists is checked against git itself
(``git diff --numstat`` against the base ``new`` remembered) and against what each agent wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.claude.hooks import install
from nbs_tui.core.review.agent_base import BASE_OPTION, parse_base
from tests.files.test_git_changes import git, numstat
from tests.realclaude.harness import ClaudeFleet, Text, ToolUse
from tests.realclaude.new_world import REPO, NewAgentWorld, looks_idle, make_world, wait_until


def api(world: NewAgentWorld, socket: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """The fleet API as a script runs it (the service allowed, no polls typed)."""
    env = {**world.env(), "NBS_SERVICE": "auto", "NBS_POLL_DISABLE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, *argv],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def repository(folder: Path) -> str:
    """``folder`` made a repository with one commit (what the agent starts from); its sha."""
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.email", "t@example.com")
    git(folder, "config", "user.name", "t")
    (folder / "README.md").write_text("hello\n")
    (folder / "app.py").write_text("def main():\n    return 1\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "base")
    return git(folder, "rev-parse", "HEAD").strip()


def writes(folder: Path, new_file: str, edited: str, old: str = "hello", new: str = "hello\nand more") -> list[Any]:
    """Replies that create ``new_file`` (Write, three lines) and edit ``edited`` (Read, then Edit
    ``old`` to ``new``), in ``folder``."""
    return [
        ToolUse("Write", {"file_path": str(folder / new_file), "content": "one\ntwo\nthree\n"}),
        ToolUse("Read", {"file_path": str(folder / edited)}),
        ToolUse("Edit", {"file_path": str(folder / edited), "old_string": old, "new_string": new}),
        Text("Files written."),
    ]


def diff_json(world: NewAgentWorld, socket: str, target: str) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def listed() -> bool:
        done = api(world, socket, "diff", target, "--json")
        if done.returncode == 0:
            found.update(json.loads(done.stdout))
        return done.returncode == 0

    wait_until(listed, 60, f"nbs-tui diff {target}")
    return found


def idle(server: libtmux.Server, pane: str) -> bool:
    return looks_idle("\n".join(server.cmd("capture-pane", "-p", "-t", pane).stdout))


@pytest.mark.service_auto
def test_a_worktree_agents_files_and_counts_are_gits_against_the_base_new_remembered(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "alpha", [], trust=True, hooks=True)
    base = repository(world.workdir)
    tree = world.workdir / ".claude" / "worktrees" / "feat"  # where Claude Code's -w puts it
    world.api.add(*writes(tree, "src/new.py", "README.md"))
    started = world.run(
        socket, str(world.workdir), "--name", "alpha", "--worktree", "feat", "--permission-mode", "acceptEdits",
        "--prompt", "write the files", "--json",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    pane = json.loads(started.stdout)["pane_id"]
    remembered = parse_base(server.cmd("show-options", "-pqv", "-t", pane, BASE_OPTION).stdout[0])
    assert remembered is not None and (remembered.commit, remembered.branch) == (base, "main")
    try:
        wait_until(lambda: (tree / "src" / "new.py").exists() and "and more" in (tree / "README.md").read_text(), 60, "the files")
        wait_until(lambda: idle(server, pane), 30, "alpha idle")
        document = diff_json(world, socket, "alpha")
        target = document["target"]
        assert document["repository"] == str(tree) and document["base"] == base
        assert document["branch"] and document["branch"] != "main"  # Claude Code's worktree branch
        files = {f["path"]: f for f in document["files"]}
        assert set(files) == {"src/new.py", "README.md"}
        assert files["src/new.py"]["status"] == "untracked" and files["src/new.py"]["added"] == 3
        tracked = {p: (f["added"], f["removed"]) for p, f in files.items() if f["status"] != "untracked"}
        assert tracked == numstat(tree, base) == {"README.md": (1, 0)}
        assert {f["by"] for f in files.values()} == {target}  # both written through its hooks
        git(tree, "add", "-A")
        assert numstat(tree, base) == {"README.md": (1, 0), "src/new.py": (3, 0)}  # the untracked count is git's
    finally:
        api(world, socket, "service", "stop")


@pytest.mark.service_auto
def test_two_agents_sharing_a_folder_each_see_the_files_their_claude_code_wrote(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    alpha = make_world(claude_fleet, tmp_path, "alpha", [], trust=True, hooks=True)
    shared = alpha.workdir
    base = repository(shared)
    beta = make_world(claude_fleet, tmp_path, "beta", writes(shared, "beta_notes.md", "app.py", "return 1", "return 2"))
    install(beta.home / ".claude" / "settings.json", alpha.config.parent / "hooks.jsonl")  # one spool for both
    alpha.api.add(*writes(shared, "alpha_notes.md", "README.md"))
    panes = {}
    for name, world in (("alpha", alpha), ("beta", beta)):
        started = world.run(
            socket, str(shared), "--name", name, "--permission-mode", "acceptEdits", "--prompt", "write", "--json"
        )
        assert started.returncode == 0, started.stderr
        panes[name] = json.loads(started.stdout)["pane_id"]
    try:
        wait_until(lambda: (shared / "alpha_notes.md").exists() and (shared / "beta_notes.md").exists(), 60, "the files")
        wait_until(lambda: all(idle(server, pane) for pane in panes.values()), 60, "both idle")
        mine, theirs = diff_json(alpha, socket, "alpha"), diff_json(alpha, socket, "beta")
        assert mine["repository"] == theirs["repository"] == str(shared) and mine["base"] == base
        assert [(f["path"], f["status"], f["added"]) for f in mine["files"]] == [
            ("README.md", "modified", 1),
            ("alpha_notes.md", "untracked", 3),
        ]
        assert {f["by"] for f in mine["files"]} == {mine["target"]}
        assert [(f["path"], f["added"], f["removed"]) for f in theirs["files"]] == [("app.py", 1, 1), ("beta_notes.md", 3, 0)]
        assert {f["by"] for f in theirs["files"]} == {theirs["target"]} != {mine["target"]}
        everything = {**numstat(shared, base)}
        assert everything == {"README.md": (1, 0), "app.py": (1, 1)}  # git's counts, split between the two
    finally:
        api(alpha, socket, "service", "stop")


@pytest.mark.service_auto
def test_diff_json_of_an_agent_outside_git_says_so_and_lists_nothing(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "plain", writes(tmp_path / "plain" / "work", "notes.md", "notes.md", "one", "uno"), trust=True, hooks=True)
    started = world.run(socket, str(world.workdir), "--name", "plain", "--permission-mode", "acceptEdits", "--prompt", "write", "--json")
    assert started.returncode == 0, started.stderr
    pane = json.loads(started.stdout)["pane_id"]
    assert server.cmd("show-options", "-pqv", "-t", pane, BASE_OPTION).stdout == []  # no base outside git
    try:
        wait_until(lambda: "uno" in ((world.workdir / "notes.md").read_text() if (world.workdir / "notes.md").exists() else ""), 60, "the file")
        document = diff_json(world, socket, "plain")
        assert document["repository"] is False and document["files"] == []
        assert document["folder"] == str(world.workdir) and "not in a git repository" in document["message"]
    finally:
        api(world, socket, "service", "stop")
