"""The review's git actions against real git: a file's diff read into hunks, merge, conflicts, discard."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nbs_tui.core.review.unified_diff import LineKind, parse_file_diff
from nbs_tui.files.git_changes import file_diff, read_agent_changes
from nbs_tui.files.review_git import (
    BACKUP_PREFIX,
    discard_worktree,
    merge_into_base,
    worktree_facts,
)
from tests.gitrepo import IDENTITY, AgentRepo, agent_repo, run_git


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def repo(tmp_path: Path) -> AgentRepo:
    return agent_repo(tmp_path)


def test_a_files_diff_reads_into_numbered_hunks(repo: AgentRepo) -> None:
    wt = repo.worktree
    repo.commit(wt, {"app.py": (wt / "app.py").read_text().replace("line 10\n", "line ten\n")}, "edit")
    (wt / "new.py").write_text("x\ny\n")
    changes = read_agent_changes("agent", str(wt), worktree_facts(wt).fork)
    files = {f.path: f for f in changes.files}
    diff = parse_file_diff("app.py", file_diff(str(wt), changes.base, files["app.py"]).text)
    (hunk,) = diff.hunks
    changed = [(line.kind, line.old, line.new, line.text) for line in hunk.lines if line.kind is not LineKind.CONTEXT]
    assert changed == [(LineKind.REMOVED, 10, None, "line 10"), (LineKind.ADDED, None, 10, "line ten")]
    untracked = parse_file_diff("new.py", file_diff(str(wt), changes.base, files["new.py"]).text)
    assert [(line.new, line.text) for line in untracked.hunks[0].lines] == [(1, "x"), (2, "y")]


def test_merge_puts_the_agents_commit_on_the_base_checked_out_elsewhere(repo: AgentRepo) -> None:
    commit = repo.commit(repo.worktree, {"feature.py": "print('hi')\n"}, "feature")
    result = merge_into_base(worktree_facts(repo.worktree))
    assert result.merged, result.said
    assert "fast-forward" in result.said
    assert run_git(repo.main, "rev-parse", "HEAD") == commit
    assert (repo.main / "feature.py").read_text() == "print('hi')\n"  # the base's checkout follows


def test_merge_makes_a_merge_commit_when_the_base_moved_on(repo: AgentRepo) -> None:
    commit = repo.commit(repo.worktree, {"feature.py": "x\n"}, "feature")
    base_before = repo.commit(repo.main, {"other.py": "y\n"}, "meanwhile on main")
    result = merge_into_base(worktree_facts(repo.worktree))
    assert result.merged and "merge commit" in result.said
    parents = run_git(repo.main, "rev-list", "--parents", "-n", "1", "HEAD").split()[1:]
    assert parents == [base_before, commit]


def test_merge_without_a_checkout_of_the_base_moves_the_ref(repo: AgentRepo) -> None:
    run_git(repo.main, "switch", "--quiet", "--detach")
    commit = repo.commit(repo.worktree, {"feature.py": "x\n"}, "feature")
    assert merge_into_base(worktree_facts(repo.worktree, base="main")).merged
    assert run_git(repo.main, "rev-parse", "refs/heads/main") == commit


def test_a_conflict_is_refused_naming_the_files_with_nothing_changed(repo: AgentRepo) -> None:
    repo.commit(repo.worktree, {"app.py": "agent's\n"}, "agent edits app.py")
    base_tip = repo.commit(repo.main, {"app.py": "operator's\n"}, "main edits app.py")
    refs_before = run_git(repo.main, "for-each-ref")
    status_before = (run_git(repo.main, "status", "--porcelain"), run_git(repo.worktree, "status", "--porcelain"))
    result = merge_into_base(worktree_facts(repo.worktree))
    assert not result.merged
    assert result.conflicts == ("app.py",)
    assert "app.py" in result.said
    assert run_git(repo.main, "rev-parse", "HEAD") == base_tip
    assert run_git(repo.main, "for-each-ref") == refs_before
    assert (run_git(repo.main, "status", "--porcelain"), run_git(repo.worktree, "status", "--porcelain")) == status_before
    assert (repo.main / "app.py").read_text() == "operator's\n"


def test_merge_refuses_uncommitted_work(repo: AgentRepo) -> None:
    repo.commit(repo.worktree, {"feature.py": "x\n"}, "feature")
    (repo.worktree / "half.py").write_text("y\n")
    result = merge_into_base(worktree_facts(repo.worktree))
    assert not result.merged and "half.py" in result.said


def test_discard_keeps_a_backup_ref_with_everything_it_threw_away(repo: AgentRepo) -> None:
    wt = repo.worktree
    fork = run_git(wt, "rev-parse", "HEAD")
    repo.commit(wt, {"feature.py": "committed\n"}, "feature")
    (wt / "app.py").write_text("changed, not committed\n")
    (wt / "scratch.txt").write_text("untracked\n")
    result = discard_worktree(worktree_facts(wt), "20261206-090000")
    assert result.backup_ref == f"{BACKUP_PREFIX}agent/20261206-090000"
    assert result.backup_ref in result.said
    assert run_git(wt, "rev-parse", "HEAD") == fork
    assert run_git(wt, "status", "--porcelain") == ""
    assert not (wt / "scratch.txt").exists()
    backup = result.backup_ref
    assert run_git(wt, "show", f"{backup}:feature.py") == "committed"
    assert run_git(wt, "show", f"{backup}:app.py") == "changed, not committed"
    assert run_git(wt, "show", f"{backup}:scratch.txt") == "untracked"


def test_the_main_checkout_is_not_its_own_worktree(repo: AgentRepo) -> None:
    facts = worktree_facts(repo.main)
    assert not facts.own_worktree
    assert not merge_into_base(facts).merged
    assert os.path.samefile(facts.root, repo.main)
