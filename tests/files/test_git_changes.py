"""nbs_tui.files.git_changes against the real git (issue 38): an agent's changes equal what
``git diff --numstat`` says against the base, untracked files count all their lines as added,
binaries and large files are handled, and a folder outside git says so."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from nbs_tui.core.review.agent_base import AgentBase
from nbs_tui.core.review.agent_changes import FileChange
from nbs_tui.files.git_changes import (
    UntrackedCounter,
    commits_since,
    fallback_base,
    file_diff,
    read_agent_changes,
    read_folder_changes,
    start_base,
    worktree_root,
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def make_repo(path: Path) -> str:
    """A repository with one commit; its sha."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "f.txt").write_text("a\nb\nc\n")
    (path / "gone.txt").write_text("x\n")
    (path / "big.txt").write_text("".join(f"{n}\n" for n in range(50)))
    git(path, "add", ".")
    git(path, "commit", "-qm", "base")
    return git(path, "rev-parse", "HEAD").strip()


def numstat(repo: Path, base: str) -> dict[str, tuple[int | None, int | None]]:
    """What git itself counts against the base (renames as git -M shows them: the new path)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "diff", "--numstat", "-z", "-M", base],
        check=True,
        capture_output=True,
    ).stdout.decode()
    counts: dict[str, tuple[int | None, int | None]] = {}
    fields = iter(out.rstrip("\0").split("\0"))
    for record in fields:
        added, removed, path = record.split("\t", 2)
        if path == "":
            next(fields)
            path = next(fields)
        counts[path] = (
            None if added == "-" else int(added),
            None if removed == "-" else int(removed),
        )
    return counts


def changed_everywhere(repo: Path) -> None:
    """Committed, staged, unstaged and untracked changes, a rename, a deletion, a binary."""
    git(repo, "mv", "big.txt", "moved.txt")
    with (repo / "f.txt").open("a") as fh:
        fh.write("d\n")
    git(repo, "rm", "-q", "gone.txt")
    (repo / "bin.dat").write_bytes(b"\0\1\2")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent's commit")
    with (repo / "f.txt").open("a") as fh:
        fh.write("e\n")  # unstaged
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    (repo / "untracked.txt").write_text("one\ntwo\nthree")  # no newline at the end: still 3 lines
    (repo / "sub").mkdir()
    (repo / "sub" / "deep.txt").write_text("x\n" * 7)
    (repo / "blob.bin").write_bytes(b"PK\0\0" + b"z" * 100)


def test_changes_equal_gits_numstat_against_the_base(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    changed_everywhere(repo)
    changes = read_folder_changes(str(repo), base)
    tracked = {c.path: (c.added, c.removed) for c in changes.files if c.status != "untracked"}
    assert tracked == numstat(repo, base)
    untracked = {c.path: (c.added, c.removed) for c in changes.files if c.status == "untracked"}
    assert untracked == {"untracked.txt": (3, 0), "sub/deep.txt": (7, 0), "blob.bin": (None, None)}
    status = {c.path: c.status for c in changes.files}
    assert status == {
        "bin.dat": "added",
        "f.txt": "modified",
        "gone.txt": "deleted",
        "moved.txt": "renamed",
        "staged.txt": "added",
        "untracked.txt": "untracked",
        "sub/deep.txt": "untracked",
        "blob.bin": "untracked",
    }
    by_path = {c.path: c for c in changes.files}
    assert (
        by_path["staged.txt"].staged and by_path["f.txt"].unstaged and not by_path["bin.dat"].staged
    )
    assert changes.branch == "main" and changes.base == base and changes.root == str(repo)
    assert [c.subject for c in commits_since(str(repo), base)] == ["agent's commit"]


def test_untracked_counts_equal_gits_once_the_file_is_added(tmp_path: Path) -> None:
    """The one count nbs-tui makes itself, checked against git's own count of the same files."""
    repo = tmp_path / "repo"
    base = make_repo(repo)
    changed_everywhere(repo)
    (repo / "empty.txt").write_text("")
    (repo / "crlf.txt").write_bytes(b"a\r\nb\r\n")
    ours = {
        c.path: (c.added, c.removed)
        for c in read_folder_changes(str(repo), base).files
        if c.status == "untracked"
    }
    git(repo, "add", "-A")
    theirs = numstat(repo, base)
    assert ours == {path: theirs[path] for path in ours}


def test_a_file_that_did_not_change_is_not_read_again(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    (repo / "new.txt").write_text("1\n2\n")
    counter = UntrackedCounter()
    assert counter.count(str(repo), ["new.txt"]) == {"new.txt": 2}
    os.chmod(repo / "new.txt", 0)  # unreadable now: a second read would count 0
    try:
        assert counter.count(str(repo), ["new.txt"]) == {"new.txt": 2}
    finally:
        os.chmod(repo / "new.txt", 0o644)
    (repo / "new.txt").write_text("1\n2\n3\n4\n")
    assert counter.count(str(repo), ["new.txt"]) == {"new.txt": 4}


def test_a_subfolder_agent_names_paths_from_the_worktree_root(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "m.py").write_text("x = 1\n")
    mine = read_agent_changes("t", str(repo / "pkg"), base, written={"pkg/m.py": "t"})
    assert mine.repository == str(repo) and mine.folder == str(repo / "pkg")
    assert [(c.path, c.by) for c in mine.files] == [("pkg/m.py", "t")]


def test_a_folder_outside_git_says_so(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.txt").write_text("a\n")
    assert worktree_root(plain) is None
    document = read_agent_changes("t", str(plain), None).as_json()
    assert document["repository"] is False and document["files"] == []
    assert "not in a git repository" in document["message"]
    gone = read_agent_changes("t", str(tmp_path / "nowhere"), None).as_json()
    assert gone["repository"] is False and "not a folder" in gone["message"]


def test_file_diff_is_gits_unified_diff(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    changed_everywhere(repo)
    changes = {c.path: c for c in read_folder_changes(str(repo), base).files}
    modified = file_diff(str(repo), base, changes["f.txt"])
    assert modified.text == git(repo, "diff", base, "--", "f.txt")
    assert "+d\n+e\n" in modified.text and not modified.binary and not modified.truncated
    new = file_diff(str(repo), base, changes["untracked.txt"])
    assert "+one\n+two\n+three\n\\ No newline at end of file" in new.text
    renamed = file_diff(str(repo), base, changes["moved.txt"])
    assert "rename from big.txt" in renamed.text and "rename to moved.txt" in renamed.text
    assert file_diff(str(repo), base, changes["bin.dat"]).binary
    assert file_diff(str(repo), base, changes["blob.bin"]).binary


def test_a_large_diff_is_cut_not_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_repo(repo)
    (repo / "huge.txt").write_text("".join(f"line {n}\n" for n in range(200_000)))
    cut = file_diff(
        str(repo), None, FileChange("huge.txt", "untracked", 200_000, 0), max_bytes=10_000
    )
    assert cut.truncated and len(cut.text) == 10_000 and cut.text.startswith("diff --git")


def test_fallback_base_is_where_the_branch_left_main(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    git(repo, "checkout", "-qb", "feature")
    (repo / "f.txt").write_text("changed\n")
    git(repo, "commit", "-qam", "on feature")
    assert fallback_base(repo) == base
    git(repo, "checkout", "-q", "main")
    assert fallback_base(repo) == base  # main itself: HEAD, only what is not committed


def test_fallback_base_prefers_the_upstream(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    base = make_repo(origin)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "config", "user.email", "t@example.com")
    git(clone, "config", "user.name", "t")
    (clone / "f.txt").write_text("mine\n")
    git(clone, "commit", "-qam", "local work")
    assert fallback_base(clone) == base


def test_a_repository_with_no_commit_counts_every_file_new(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("1\n2\n")
    git(repo, "add", "a.txt")
    (repo / "b.txt").write_text("1\n")
    changes = read_folder_changes(str(repo), fallback_base(repo))
    assert [(c.path, c.status, c.added) for c in changes.files] == [
        ("a.txt", "added", 2),
        ("b.txt", "untracked", 1),
    ]
    assert changes.base is None


@pytest.mark.parametrize("name", ["with space.txt", "tab\tname.txt", "naïve.txt"])
def test_odd_file_names_survive(tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    (repo / name).write_text("1\n")
    git(repo, "add", name)
    changes = read_folder_changes(str(repo), base)
    assert [(c.path, c.added) for c in changes.files] == [(name, 1)]
    assert "+1" in file_diff(str(repo), base, changes.files[0]).text


def test_the_start_base_is_head_and_its_branch(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    base = make_repo(repo)
    (repo / "pkg").mkdir()
    assert start_base(repo / "pkg") == AgentBase(base, "main")
    git(repo, "checkout", "-q", "--detach")
    assert start_base(repo) == AgentBase(base, None)
    assert start_base(tmp_path) is None
