"""The review's pure core: git's -z output read, and an agent's changes attributed (issue 38).
The bytes here are what git 2.39 printed for the repository built in
tests/files/test_git_changes.py (which checks the same readers against the real git)."""

from __future__ import annotations

import pytest

from nbs_tui.core.review.agent_base import AgentBase, parse_base
from nbs_tui.core.review.agent_changes import (
    FileChange,
    FolderChanges,
    attribute,
    combine,
    not_in_git,
    relative_to_root,
)
from nbs_tui.core.review.git_output import (
    DiffEntry,
    GitOutputError,
    parse_binary_diff,
    parse_diff,
    parse_status,
)
from nbs_tui.core.review.written_files import WrittenFiles, written_path

STATUS = (
    b"# branch.oid c95ee21502bb2f709d73a43325d547755460144c\0# branch.head main\0"
    b"# branch.upstream origin/main\0# branch.ab +1 -0\0"
    b"1 .M N... 100644 100644 100644 de98 de98 f.txt\0"
    b"1 A. N... 000000 100644 100644 0000 ab12 new file.txt\0"
    b"2 R. N... 100644 100644 100644 96cc 96cc R100 moved.txt\0big.txt\0"
    b"u UU N... 100644 100644 100644 100644 aa bb cc both.txt\0"
    b"? sub/s.txt\0? untracked.txt\0! ignored.log\0"
)

DIFF = (
    b":000000 100644 0000000 bdc955b A\0bin.dat\0"
    b":100644 100644 de98044 0000000 M\0f.txt\0"
    b":100644 000000 587be6b 0000000 D\0gone.txt\0"
    b":100644 100644 96cc558 96cc558 R100\0big.txt\0moved.txt\0"
    b"-\t-\tbin.dat\0"
    b"2\t0\tf.txt\0"
    b"0\t1\tgone.txt\0"
    b"0\t0\t\0big.txt\0moved.txt\0"
)


def test_status_reads_branch_staged_unstaged_untracked_and_conflicts() -> None:
    report = parse_status(STATUS)
    assert report.head == "c95ee21502bb2f709d73a43325d547755460144c"
    assert report.branch == "main"
    assert report.upstream == "origin/main"
    assert report.untracked == ("sub/s.txt", "untracked.txt")
    assert report.conflicted == ("both.txt",)
    assert report.staged == {"new file.txt", "moved.txt"}
    assert report.unstaged == {"f.txt"}


def test_status_before_the_first_commit_and_detached() -> None:
    report = parse_status(b"# branch.oid (initial)\0# branch.head (detached)\0? a\0")
    assert (report.head, report.branch, report.untracked) == (None, None, ("a",))


def test_status_refuses_what_it_does_not_know() -> None:
    with pytest.raises(GitOutputError):
        parse_status(b"Z what\0")


def test_diff_joins_raw_status_to_numstat_counts() -> None:
    assert parse_diff(DIFF) == (
        DiffEntry("bin.dat", "added", None, None),
        DiffEntry("f.txt", "modified", 2, 0),
        DiffEntry("gone.txt", "deleted", 0, 1),
        DiffEntry("moved.txt", "renamed", 0, 0, old_path="big.txt"),
    )
    assert parse_diff(b"") == ()


def test_diff_paths_keep_tabs_spaces_and_non_utf8_bytes() -> None:
    name = "tab\there é".encode() + b"\xff"
    entries = parse_diff(b":100644 100644 a b M\0" + name + b"\0" + b"3\t4\t" + name + b"\0")
    assert entries[0].path.encode("utf-8", "surrogateescape") == name
    assert (entries[0].added, entries[0].removed) == (3, 4)


def test_diff_out_of_step_is_an_error_not_a_guess() -> None:
    with pytest.raises(GitOutputError):
        parse_diff(b":100644 100644 a b M\0a\0" + b"1\t1\tb\0")
    with pytest.raises(GitOutputError):
        parse_diff(b":100644 100644 a b M\0a\0")


def test_binary_diff_is_told_from_a_text_diff() -> None:
    assert parse_binary_diff(
        "diff --git a/x b/x\nindex 1..2 100644\nBinary files a/x and b/x differ\n"
    )
    assert not parse_diff(b"") and not parse_binary_diff(
        "diff --git a/x b/x\n+Binary files a and b differ\n"
    )


def folder() -> FolderChanges:
    status = parse_status(STATUS)
    return combine(
        "/repo", status, parse_diff(DIFF), {"sub/s.txt": 1, "untracked.txt": None}, "base0"
    )


def test_combine_lists_every_change_with_untracked_lines_all_added() -> None:
    changes = folder()
    assert [(c.path, c.status, c.added, c.removed) for c in changes.files] == [
        ("bin.dat", "added", None, None),
        ("f.txt", "modified", 2, 0),
        ("gone.txt", "deleted", 0, 1),
        ("moved.txt", "renamed", 0, 0),
        ("sub/s.txt", "untracked", 1, 0),
        ("untracked.txt", "untracked", None, None),
    ]
    by_path = {c.path: c for c in changes.files}
    assert by_path["moved.txt"].staged and by_path["moved.txt"].old_path == "big.txt"
    assert by_path["f.txt"].unstaged and not by_path["f.txt"].staged
    assert (changes.branch, changes.base) == ("main", "base0")


def test_an_agent_alone_sees_every_change_the_unexplained_ones_as_the_folders() -> None:
    written = {"f.txt": "local/s/%1", "big.txt": "local/s/%1", "sub/s.txt": "local/s/%2"}
    mine = attribute(
        folder(), target="local/s/%1", agent_folder="/repo/sub", written=written, shared=False
    )
    assert {c.path: c.by for c in mine.files} == {
        "bin.dat": None,
        "f.txt": "local/s/%1",
        "gone.txt": None,
        "moved.txt": "local/s/%1",  # renamed from a file it wrote
        "sub/s.txt": "local/s/%2",
        "untracked.txt": None,
    }
    assert mine.folder == "/repo/sub" and mine.repository == "/repo"


def test_agents_sharing_a_folder_each_see_only_their_own_files() -> None:
    written = {"f.txt": "local/s/%1", "sub/s.txt": "local/s/%2"}
    one = attribute(
        folder(), target="local/s/%1", agent_folder="/repo", written=written, shared=True
    )
    two = attribute(
        folder(), target="local/s/%2", agent_folder="/repo", written=written, shared=True
    )
    assert [c.path for c in one.files] == ["f.txt"]
    assert [c.path for c in two.files] == ["sub/s.txt"]
    assert (one.added, one.removed, two.added) == (2, 0, 1)


def test_the_json_document_has_exactly_the_issues_fields() -> None:
    mine = attribute(
        folder(), target="t", agent_folder="/repo", written={"f.txt": "t"}, shared=True
    )
    assert mine.as_json() == {
        "target": "t",
        "folder": "/repo",
        "repository": "/repo",
        "branch": "main",
        "base": "base0",
        "files": [{"path": "f.txt", "status": "modified", "added": 2, "removed": 0, "by": "t"}],
    }
    outside = not_in_git("t", "/tmp/x").as_json()
    assert (
        outside["repository"] is False
        and outside["files"] == []
        and "not in a git repository" in outside["message"]
    )


def test_a_hooks_file_path_is_named_as_git_names_it() -> None:
    assert relative_to_root("/repo/src/a.py", "/repo") == "src/a.py"
    assert relative_to_root("/repo/src/../b.py", "/repo/") == "b.py"
    assert relative_to_root("src/a.py", "/repo") == "src/a.py"
    assert relative_to_root("/repository/a.py", "/repo") is None
    assert relative_to_root("/repo", "/repo") is None


def test_file_change_binary() -> None:
    assert FileChange("a", "added", None, None).binary
    assert not FileChange("a", "added", 0, 0).binary


def test_the_base_option_round_trips_and_refuses_what_is_not_a_commit() -> None:
    both = AgentBase("a" * 40, "feature/x")
    assert parse_base(both.render()) == both
    assert parse_base(AgentBase("b" * 40).render()) == AgentBase("b" * 40)
    assert parse_base("") is None and parse_base("main") is None and parse_base("zz" * 20) is None


def test_a_write_is_a_post_tool_use_of_a_tool_that_names_its_file() -> None:
    edit = {"tool_name": "Edit", "tool_input": {"file_path": "/repo/a.py", "old_string": "x"}, "cwd": "/repo"}
    assert written_path("PostToolUse", edit) == "/repo/a.py"
    assert written_path("PreToolUse", edit) is None  # asked, not done
    notebook = {"tool_name": "NotebookEdit", "tool_input": {"notebook_path": "n.ipynb"}, "cwd": "/repo/sub"}
    assert written_path("PostToolUse", notebook) == "/repo/sub/n.ipynb"
    assert written_path("PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "touch x"}}) is None
    assert written_path("PostToolUse", {"tool_name": "Write", "tool_input": "?"}) is None
    assert written_path("PostToolUse", {"tool_name": "Write", "tool_input": {"file_path": "rel"}}) is None  # no cwd


def test_the_last_writer_of_a_file_under_a_worktree_is_its_writer() -> None:
    ledger = WrittenFiles()
    assert ledger.add("%1", "/repo/a.py", 10.0)
    assert not ledger.add("%1", "/repo/a.py", 9.0)  # an older write is no news
    assert ledger.add("%2", "/repo/a.py", 11.0)
    assert ledger.add("%2", "/repo/.claude/worktrees/w/b.py", 12.0)
    assert ledger.add("%3", "/elsewhere/c.py", 13.0)
    assert ledger.writers_under("/repo") == {"a.py": "%2", ".claude/worktrees/w/b.py": "%2"}
    assert ledger.writers_under("/repo/.claude/worktrees/w") == {"b.py": "%2"}
    ledger.forget("%2")
    assert ledger.writers_under("/repo") == {"a.py": "%1"} and ledger.panes() == {"%1", "%3"}
