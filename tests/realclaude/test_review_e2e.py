"""The review screen (``v``) on the real Claude Code CLI (issue 38, item 2): an agent started by
``nbs-tui new --worktree`` writes a file and commits it through Claude Code's own Write and Bash
tools; the dashboard's review then sends the operator's comments to it, merges its branch into the
base, refuses a conflicting merge with nothing changed, and discards its work keeping a backup ref.

* the comments reach the API once, as one user message holding each ``file:line``;
* merge puts the agent's commit on the base (the main checkout's branch, which follows);
* a conflict is refused naming the file, the base's branch and both trees unchanged;
* discard resets the worktree to the base and leaves the backup ref, which holds the work.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp, create_app
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.files.review_git import BACKUP_PREFIX
from nbs_tui.operator.action_log import ActionRecord, Outcome
from nbs_tui.widgets.review_screen import ReviewScreen
from tests.app.helpers import wait_for, widget_text
from tests.realclaude.harness import Bash, ClaudeFleet, Text, ToolUse
from tests.realclaude.new_world import REPO, NewAgentWorld, looks_idle, make_world, wait_until

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]

SIZE = (160, 48)


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout.strip()


def repository(folder: Path) -> str:
    """``folder`` made a repository on ``main`` with one commit (its identity in the repository's
    config, so the agent's own commits have one too); the commit."""
    git(folder, "init", "-q", "-b", "main")
    git(folder, "config", "user.email", "t@example.com")
    git(folder, "config", "user.name", "t")
    (folder / "app.py").write_text("def main():\n    return 1\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-qm", "base")
    return git(folder, "rev-parse", "HEAD")


def start_in_worktree(world: NewAgentWorld, server: libtmux.Server, name: str) -> tuple[str, Path]:
    """``nbs-tui new --worktree NAME``; its pane, and the worktree Claude Code's -w makes. The
    scripted replies' Bash (a git commit) asks first: the test answers Yes as the operator would."""
    socket = str(server.socket_name)
    tree = world.workdir / ".claude" / "worktrees" / name
    started = world.run(
        socket, str(world.workdir), "--name", name, "--worktree", name, "--permission-mode", "acceptEdits",
        "--prompt", "do the work", "--json",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    pane = json.loads(started.stdout)["pane_id"]

    def screen() -> str:
        return "\n".join(server.cmd("capture-pane", "-p", "-t", pane).stdout)

    wait_until(lambda: "Do you want to proceed?" in screen(), 60, "the commit's permission prompt")
    # An Enter that lands while Claude Code still draws the menu is lost (a fresh clone's run and
    # a rerun both saw the menu stay, its Yes selected): press again only while it is still shown.
    for _ in range(5):
        server.cmd("send-keys", "-t", pane, "Enter")
        with contextlib.suppress(AssertionError):
            wait_until(lambda: "Do you want to proceed?" not in screen(), 5, "the menu answered")
            break
    try:
        wait_until(lambda: "committed." in screen() and looks_idle(screen()), 120, "the agent done and idle")
    except AssertionError as error:
        raise AssertionError(f"{error}; its screen:\n{screen()}\nthe API was asked: {world.api.prompts()}") from None
    return pane, tree


def records(app: NbsApp, action: str) -> list[ActionRecord]:
    return [r for r in app.operator.action_log.tail() if isinstance(r, ActionRecord) and r.action == action]


async def open_review(pilot: Pilot[Any], app: NbsApp, pane: str, first_text: str) -> ReviewScreen:
    await wait_for(pilot, lambda: app.state.agent_states().get(pane) is AgentState.IDLE, timeout=45, what="the agent idle")
    app.dashboard.select_pane(pane)
    await pilot.press("v")
    await wait_for(pilot, lambda: isinstance(app.screen, ReviewScreen), what="the review")
    screen = app.screen
    assert isinstance(screen, ReviewScreen)
    await wait_for(pilot, lambda: first_text in widget_text(screen.diff_view), timeout=30, what=f"{first_text!r} in the diff")
    return screen


async def confirm(pilot: Pilot[Any], key: str) -> None:
    from nbs_tui.widgets.confirm_screen import ConfirmScreen

    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen), what="the confirmation")
    await pilot.press("y")


async def test_comments_reach_the_agent_once_and_merge_puts_its_commit_on_the_base(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "alpha", [], trust=True)
    base = repository(world.workdir)
    tree = world.workdir / ".claude" / "worktrees" / "alpha"
    world.api.add(
        ToolUse("Write", {"file_path": str(tree / "feature.py"), "content": "def feature():\n    return 42\n"}),
        Bash("git add feature.py && git commit -q -m 'add the feature'", "Commit the feature"),
        Text("Feature committed."),
        Text("I will address the review comments."),
    )
    pane, tree = start_in_worktree(world, server, "alpha")
    commit = git(tree, "rev-parse", "HEAD")
    assert commit != base and git(tree, "show", "--format=%s", "-s", commit) == "add the feature"
    app = create_app(world.dashboard_settings(server, poll=False), control_plane=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, app, pane, "return 42")
        assert [f.path for f in screen.files] == ["feature.py"]
        assert screen.own_worktree
        await pilot.press("c", *"name it for what it does", "enter")
        await pilot.press("j", "c", *"return a named constant", "enter")
        assert [c.place for c in screen.comments] == ["feature.py:1", "feature.py:2"]
        await pilot.press("s")
        await wait_for(pilot, lambda: "sent" in str(screen.said.render()), timeout=60, what="the holder's answer")
        assert str(screen.said.render()) == "sent"
        assert not screen.comments  # sent: cleared
        await wait_for(pilot, lambda: world.api.count_prompts("Review comments") >= 1, timeout=45, what="the prompt at the API")

        def answered() -> bool:
            return "I will address the review comments." in "\n".join(server.cmd("capture-pane", "-p", "-t", pane).stdout)

        await wait_for(pilot, answered, timeout=45, what="the agent's answer on its screen")
        await pilot.pause(2.0)  # a second typing would come a little later: count after it
        sent = [p for p in world.api.prompts() if "Review comments" in p]
        assert len(sent) == 1, world.api.prompts()
        assert "[1] feature.py:1: name it for what it does [2] feature.py:2: return a named constant" in sent[0]
        assert [r.outcome for r in records(app, "review-comments")] == [Outcome.SENT]

        await wait_for(pilot, lambda: app.state.agent_states().get(pane) is AgentState.IDLE, timeout=45, what="idle again")
        await confirm(pilot, "M")
        await wait_for(pilot, lambda: "merged" in str(screen.said.render()), timeout=30, what="merged")
        assert git(world.workdir, "rev-parse", "main") == commit  # a fast-forward: the agent's commit on the base
        assert (world.workdir / "feature.py").read_text() == "def feature():\n    return 42\n"  # the checkout followed
        assert [(r.outcome, r.sent) for r in records(app, "merge")] == [(Outcome.SENT, "merge worktree-alpha into main")]


async def test_a_conflict_is_refused_with_nothing_changed_and_discard_keeps_a_backup_ref(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "beta", [], trust=True)
    base = repository(world.workdir)
    tree = world.workdir / ".claude" / "worktrees" / "beta"
    world.api.add(
        ToolUse("Read", {"file_path": str(tree / "app.py")}),  # Claude Code edits only a file it has read
        ToolUse("Edit", {"file_path": str(tree / "app.py"), "old_string": "return 1", "new_string": "return 2"}),
        Bash("git commit -qam 'return 2'", "Commit the change"),
        Text("Change committed."),
    )
    pane, tree = start_in_worktree(world, server, "beta")
    agents_commit = git(tree, "rev-parse", "HEAD")
    (world.workdir / "app.py").write_text("def main():\n    return 3\n")  # meanwhile, on the base
    git(world.workdir, "commit", "-qam", "return 3")
    base_tip = git(world.workdir, "rev-parse", "main")
    before = (git(world.workdir, "for-each-ref"), git(world.workdir, "status", "--porcelain"), git(tree, "status", "--porcelain"))
    app = create_app(world.dashboard_settings(server, poll=False), control_plane=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_review(pilot, app, pane, "return 2")
        await confirm(pilot, "M")
        await wait_for(pilot, lambda: "conflicts" in str(screen.said.render()), timeout=30, what="the refusal")
        assert "app.py" in str(screen.said.render())
        after = (git(world.workdir, "for-each-ref"), git(world.workdir, "status", "--porcelain"), git(tree, "status", "--porcelain"))
        assert after == before
        assert git(world.workdir, "rev-parse", "main") == base_tip and git(tree, "rev-parse", "HEAD") == agents_commit
        assert (world.workdir / "app.py").read_text() == "def main():\n    return 3\n"
        assert [r.outcome for r in records(app, "merge")] == [Outcome.SKIPPED]

        await confirm(pilot, "X")
        try:
            await wait_for(pilot, lambda: "discard" in str(screen.said.render()) and "…" not in str(screen.said.render()), timeout=60, what="the discard")
        except AssertionError as error:
            raise AssertionError(f"{error}; the review says: {screen.said.render()}") from None
        assert "kept as" in str(screen.said.render()), screen.said.render()
        refs = git(world.workdir, "for-each-ref", "--format=%(refname)", BACKUP_PREFIX).splitlines()
        assert len(refs) == 1 and refs[0] in str(screen.said.render())
        assert git(world.workdir, "show", f"{refs[0]}:app.py") == "def main():\n    return 2"
        assert git(tree, "rev-parse", "HEAD") == base  # back where it left the base
        assert [r.outcome for r in records(app, "discard")] == [Outcome.SENT]


@pytest.mark.service_auto
async def test_a_viewer_dashboards_comments_go_through_the_service_that_holds_the_lease(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    """The usual setup: the service holds the lease and the dashboard only watches. Its review's
    comments are typed by the service (asked through tmux, as ``nbs-tui send`` asks), once."""
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "gamma", [], trust=True)
    repository(world.workdir)
    tree = world.workdir / ".claude" / "worktrees" / "gamma"
    world.api.add(
        ToolUse("Write", {"file_path": str(tree / "notes.md"), "content": "one\ntwo\n"}),
        Bash("git add notes.md && git commit -q -m notes", "Commit the notes"),
        Text("Notes committed."),
        Text("Understood."),
    )
    pane, tree = start_in_worktree(world, server, "gamma")
    socket = str(server.socket_name)
    env = {**world.env(), "NBS_SERVICE": "auto", "NBS_POLL_DISABLE": "1"}

    def nbs(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, *argv],
            capture_output=True, text=True, timeout=120, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    assert nbs("agents", "--json").returncode == 0  # starts the service: it holds the lease
    try:
        settings = replace(world.dashboard_settings(server, poll=False), service="off")
        app = create_app(settings, control_plane=False)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_review(pilot, app, pane, "two")
            assert app.runtime.lease is not None and not app.runtime.lease.acting()  # a viewer
            await pilot.press("c", *"say what the notes are for", "enter", "s")
            await wait_for(pilot, lambda: "sent" in str(screen.said.render()), timeout=90, what="the holder's answer")
            assert str(screen.said.render()) == "sent"
            await wait_for(pilot, lambda: world.api.count_prompts("Review comments") >= 1, timeout=45, what="the prompt")
            await pilot.pause(3.0)
            sent = [p for p in world.api.prompts() if "Review comments" in p]
            assert len(sent) == 1 and "[1] notes.md:1: say what the notes are for" in sent[0]
    finally:
        nbs("service", "stop")
