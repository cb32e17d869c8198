"""The change column's counter (issue 38, item 5) on real git, real watchfiles and a real tmux
server: counts follow a file written in an agent's worktree and the hooks' writes, from the base
on the pane, with no timed scan; a worktree is read once however many writes a gap holds."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.claude.spool import parse_line
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase
from nbs_tui.core.review.agent_changes import ChangeCount
from nbs_tui.runtime.change_counter import ChangeCounter
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.files.test_git_changes import git, make_repo


def agent_pane(pane_id: str, folder: Path) -> PaneInfo:
    return PaneInfo(pane_id, "s", 0, "w", 0, "", "claude", str(folder), 1, 80, 24, is_agent=True)


def write_hook(pane_id: str, socket: str, path: Path, at: float) -> bytes:
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_input": {"file_path": str(path)}, "cwd": "/"}
    return json.dumps({"nbs_pane": pane_id, "nbs_tmux": socket, "nbs_time": at, "payload": payload}).encode()


class Counted:
    """What the counter reported, gathered from its thread."""

    def __init__(self) -> None:
        self.counts: dict[PaneId, ChangeCount] = {}
        self.reports = 0
        self.lock = threading.Lock()

    def __call__(self, counts: Mapping[PaneId, ChangeCount]) -> None:
        with self.lock:
            self.counts.update(counts)
            self.reports += 1

    def of(self, pane_id: str) -> ChangeCount | None:
        with self.lock:
            return self.counts.get(pane_id)


@pytest.fixture
def counter_parts(server: libtmux.Server, tmp_path: Path) -> Iterator[tuple[ChangeCounter, Counted, list[str], str]]:
    address = ServerAddress(socket_name=str(server.socket_name))
    server.new_session(session_name="s")
    socket = server.cmd("display-message", "-p", "#{socket_path}").stdout[0]
    settings = Settings(server=address, hook_spool=tmp_path / "hooks.jsonl")
    counted, problems = Counted(), []
    counter = ChangeCounter(
        settings, lambda: TmuxServerCommands.for_server(address), socket, counted,
        lambda source, message: problems.append(f"{source}: {message}"), min_gap=0.5,
    )  # fmt: skip
    counter.start()
    yield counter, counted, problems, socket
    counter.stop()


def test_a_file_written_in_the_worktree_moves_the_count_from_the_panes_base(
    server: libtmux.Server, tmp_path: Path, counter_parts: tuple[ChangeCounter, Counted, list[str], str]
) -> None:
    counter, counted, problems, _socket = counter_parts
    repo = tmp_path / "repo"
    base = make_repo(repo)
    (repo / "f.txt").write_text("changed\n")
    git(repo, "commit", "-qam", "the agent's first commit")
    pane = server.cmd("display-message", "-p", "#{pane_id}").stdout[0]
    server.cmd("set-option", "-p", "-t", pane, BASE_OPTION, AgentBase(base, "main").render())
    counter.set_panes([agent_pane(pane, repo)])
    assert retry_until(lambda: counted.of(pane) == ChangeCount(1, 1, 3), 10, raises=False), counted.counts
    reads = counter.reads
    (repo / "new.txt").write_text("1\n2\n")  # no hook, no timer: only the watch can tell
    assert retry_until(lambda: counted.of(pane) == ChangeCount(2, 3, 3), 10, raises=False), counted.counts
    assert counter.reads == reads + 1
    for n in range(10):  # ten writes within one gap: one more read, not ten
        (repo / "new.txt").write_text("1\n2\n" + "x\n" * n)
    assert retry_until(lambda: counted.of(pane) == ChangeCount(2, 12, 3), 10, raises=False), counted.counts
    assert counter.reads <= reads + 3
    assert problems == []


def test_agents_sharing_a_worktree_count_their_own_hooks_writes(
    server: libtmux.Server, tmp_path: Path, counter_parts: tuple[ChangeCounter, Counted, list[str], str]
) -> None:
    counter, counted, problems, socket = counter_parts
    repo = tmp_path / "repo"
    base = make_repo(repo)
    counter.set_panes([agent_pane("%91", repo), agent_pane("%92", repo)])
    assert retry_until(lambda: counted.of("%91") == counted.of("%92") == ChangeCount(0, 0, 0), 10, raises=False)
    (repo / "one.txt").write_text("a\n")
    counter.hook_event(parse_line(write_hook("%91", socket, repo / "one.txt", 10.0), 10.0))
    (repo / "two.txt").write_text("a\nb\n")
    counter.hook_event(parse_line(write_hook("%92", socket, repo / "two.txt", 11.0), 11.0))
    (repo / "bash.txt").write_text("nobody's\n")
    assert retry_until(lambda: (counted.of("%91"), counted.of("%92")) == (ChangeCount(1, 1, 0), ChangeCount(1, 2, 0)), 10, raises=False), counted.counts
    review = counter.read_agent("%91", "local/L-x/%91")  # what the review screen reads: the same files
    assert review is not None and review.repository == str(repo) and review.base == base
    assert [(f.path, f.status, f.added, f.by) for f in review.files] == [("one.txt", "untracked", 1, "local/L-x/%91")]
    assert counter.read_agent("%99") is None  # no such agent read
    assert problems == []


def test_a_folder_outside_git_is_not_watched_and_has_no_count(
    server: libtmux.Server, tmp_path: Path, counter_parts: tuple[ChangeCounter, Counted, list[str], str]
) -> None:
    counter, counted, problems, _socket = counter_parts
    plain = tmp_path / "plain"
    plain.mkdir()
    counter.set_panes([agent_pane("%93", plain)])
    (plain / "a.txt").write_text("a\n")
    assert not retry_until(lambda: counted.reports > 0, 1.5, raises=False)
    assert counter.reads == 0 and problems == []


def test_an_ignored_tree_is_not_watched_and_a_new_folder_is(
    server: libtmux.Server, tmp_path: Path, counter_parts: tuple[ChangeCounter, Counted, list[str], str]
) -> None:
    """Only the folders git tracks (and those changes are in) are watched: writes in an ignored
    build tree cost no read; a folder the agent makes is watched once a read has seen it."""
    counter, counted, problems, _socket = counter_parts
    repo = tmp_path / "repo"
    make_repo(repo)
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore the build")
    (repo / "build" / "deep").mkdir(parents=True)
    counter.set_panes([agent_pane("%94", repo)])
    assert retry_until(lambda: counted.of("%94") == ChangeCount(0, 0, 0), 10, raises=False), counted.counts
    reads = counter.reads
    for n in range(3):
        (repo / "build" / "deep" / f"out{n}.o").write_text("x\n")
    assert not retry_until(lambda: counter.reads > reads, 1.5, raises=False)  # nothing watched there
    (repo / "pkg").mkdir()
    (repo / "pkg" / "a.py").write_text("a = 1\n")
    assert retry_until(lambda: counted.of("%94") == ChangeCount(1, 1, 0), 10, raises=False), counted.counts
    (repo / "pkg" / "b.py").write_text("b = 1\nc = 2\n")  # in the new folder, now watched
    assert retry_until(lambda: counted.of("%94") == ChangeCount(2, 3, 0), 10, raises=False), counted.counts
    assert problems == []


def test_the_end_of_a_turn_reads_the_worktree_again(
    server: libtmux.Server, tmp_path: Path, counter_parts: tuple[ChangeCounter, Counted, list[str], str]
) -> None:
    """A Stop hook re-reads the agent's worktree: what a Bash command changed is counted even
    where no watch saw it (here a folder made two deep at once: only the deeper one, where the
    change was seen, is watched)."""
    counter, counted, problems, socket = counter_parts
    repo = tmp_path / "repo"
    make_repo(repo)
    counter.set_panes([agent_pane("%95", repo)])
    assert retry_until(lambda: counted.of("%95") == ChangeCount(0, 0, 0), 10, raises=False), counted.counts
    (repo / "a" / "b").mkdir(parents=True)
    (repo / "a" / "b" / "c.txt").write_text("c\n")
    assert retry_until(lambda: counted.of("%95") == ChangeCount(1, 1, 0), 10, raises=False), counted.counts
    reads = counter.reads
    assert retry_until(lambda: counter.reads > reads, 10, raises=False)  # the new watch in place, read once more
    (repo / "a" / "d.txt").write_text("d\nd\n")  # in a/, which no watch covers
    assert not retry_until(lambda: counted.of("%95") != ChangeCount(1, 1, 0), 1.5, raises=False)
    stop = {"hook_event_name": "Stop", "session_id": "s"}
    line = json.dumps({"nbs_pane": "%95", "nbs_tmux": socket, "nbs_time": 5.0, "payload": stop}).encode()
    counter.hook_event(parse_line(line, 5.0))
    assert retry_until(lambda: counted.of("%95") == ChangeCount(2, 3, 0), 10, raises=False), counted.counts
    assert problems == []


def test_writes_before_the_dashboard_started_decide_who_counts_what(
    server: libtmux.Server, tmp_path: Path, counter_parts: tuple[ChangeCounter, Counted, list[str], str]
) -> None:
    """The spool's earlier writes are read once, before the first worktree is: two agents sharing
    a worktree each count their own files from the first count on."""
    counter, counted, problems, socket = counter_parts
    repo = tmp_path / "repo"
    make_repo(repo)
    (repo / "one.txt").write_text("a\n")
    (repo / "two.txt").write_text("a\nb\n")
    spool = tmp_path / "hooks.jsonl"
    spool.write_bytes(write_hook("%96", socket, repo / "one.txt", 1.0) + b"\n" + write_hook("%97", socket, repo / "two.txt", 2.0) + b"\n")
    counter.set_panes([agent_pane("%96", repo), agent_pane("%97", repo)])
    assert retry_until(lambda: (counted.of("%96"), counted.of("%97")) == (ChangeCount(1, 1, 0), ChangeCount(1, 2, 0)), 10, raises=False), counted.counts
    assert problems == []
