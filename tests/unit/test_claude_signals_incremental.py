"""ClaudeSignals' cheap paths on real processes and files: a pane's process tree read without a
walk of all of /proc, exits seen through pidfds, status files read again only when they changed
(even when a rewrite keeps the size), and the watcher's own thread seeing all of it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from nbs_tui.claude import watcher
from nbs_tui.claude.status import ExitWatch, descendants, proc_info, process_table, subtree_table
from nbs_tui.claude.watcher import RACY, ClaudeFacts, ClaudeSignals
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, PaneInfo
from nbs_tui.core.sidecar.stuck_agents import Liveness

SID = "fec664d9-dbab-4a3a-84db-35b023e9b68c"


@pytest.fixture
def tree() -> Iterator[tuple[int, int]]:
    """A shell (the "pane") running a child (the "claude" process): (shell pid, child pid)."""
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE, text=True)
    assert shell.stdout is not None
    child = int(shell.stdout.readline())
    # The child is forked before it execs sleep: wait, or a read of it can race the exec.
    wait_for(lambda: Path(f"/proc/{child}/comm").read_text().strip() == "sleep")
    yield shell.pid, child
    shell.kill()
    subprocess.run(["kill", str(child)], check=False, capture_output=True)
    shell.wait()


def wait_for(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def test_a_pane_s_subtree_is_what_the_whole_table_says(tree: tuple[int, int]) -> None:
    shell, child = tree
    sub = subtree_table(shell)
    assert sub is not None and set(sub) == {shell, child}
    assert sub[child] == proc_info(child)
    assert descendants(shell, sub) == descendants(shell, process_table())
    assert subtree_table(999_999_999) == {}


def test_exit_watch_sees_an_exit_and_a_reused_pid(tree: tuple[int, int]) -> None:
    _shell, child = tree
    info = proc_info(child)
    assert info is not None
    watch = ExitWatch()
    watch.refresh()
    assert watch.alive(child, info.start) and not watch.alive(child, "1")
    watch.refresh()
    assert watch.alive(child, info.start)
    os.kill(child, 15)
    deadline = time.monotonic() + 10
    while True:
        watch.refresh()
        if not watch.alive(child, info.start):
            break
        assert time.monotonic() < deadline, "the exit was never seen"
        time.sleep(0.02)
    watch.close()


def _status_json(pid: int, start: str, status: str, t: float) -> str:
    return json.dumps(
        {"pid": pid, "sessionId": SID, "cwd": "/w", "version": "2.1.332", "status": status,
         "statusUpdatedAt": int(t * 1000), "procStart": start}
    )  # fmt: skip


class _Listener:
    def __init__(self) -> None:
        self.calls: list[dict[str, ClaudeFacts]] = []

    def claude_facts_changed(self, facts: Mapping[str, ClaudeFacts]) -> None:
        self.calls.append(dict(facts))


def test_the_thread_reads_a_rewritten_status_file_and_sees_the_exit(tree: tuple[int, int], tmp_path: Path) -> None:
    shell, child = tree
    info = proc_info(child)
    assert info is not None
    config = tmp_path / "claude"
    (config / "sessions").mkdir(parents=True)
    status_file = config / "sessions" / f"{child}.json"
    old = time.time() - 10 * RACY
    status_file.write_text(_status_json(child, info.start, "busy", old))
    os.utime(status_file, (old, old))
    listener = _Listener()
    signals = ClaudeSignals(
        Settings(hook_spool=tmp_path / "hooks.jsonl", claude_home=config), listener,
        tmux_socket="/tmp/nbs-test-socket", interval=0.02, refresh=0.05, rescan=0.1,
    )  # fmt: skip
    signals.set_panes([PaneInfo("%5", "s", 0, "w", 0, "", "claude", "/w", shell, 120, 40)])
    signals.start()
    try:

        def state() -> AgentState | None:
            facts = signals.facts("%5")
            return facts.status.state if facts is not None and facts.status is not None else None

        wait_for(lambda: state() is AgentState.WORKING)
        # the same size, an mtime long past (not in the racy window): only the stat tells
        status_file.write_text(_status_json(child, info.start, "idle", old + 1))
        os.utime(status_file, (old + 1, old + 1))
        wait_for(lambda: state() is AgentState.IDLE)
        # modified as we read it (an mtime not before the read: here one ahead of it, so that a
        # slow refresh cannot make it old): a same-size rewrite keeping that mtime is still seen
        now = time.time() + 60
        status_file.write_text(_status_json(child, info.start, "busy", old + 2))
        os.utime(status_file, (now, now))
        wait_for(lambda: state() is AgentState.WORKING)
        status_file.write_text(_status_json(child, info.start, "idle", old + 3))
        os.utime(status_file, (now, now))
        wait_for(lambda: state() is AgentState.IDLE)
        calls = len(listener.calls)
        time.sleep(0.3)  # several cycles with nothing new: nothing reported
        assert len(listener.calls) == calls
        os.kill(child, 15)
        wait_for(lambda: (f := signals.facts("%5")) is not None and f.liveness is Liveness.EXITED)
    finally:
        signals.stop()


def test_past_the_walk_budget_unchanged_panes_are_walked_in_turns(
    tree: tuple[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `WALK_BUDGET` panes without a Claude Code process, a rescan walks the unchanged ones
    in turns (here a budget of 1 and three panes): a status file that appears below one of them
    is found on its turn, not before."""
    monkeypatch.setattr(watcher, "WALK_BUDGET", 1)
    shell, child = tree
    info = proc_info(child)
    assert info is not None
    config = tmp_path / "claude"
    (config / "sessions").mkdir(parents=True)
    idle = [subprocess.Popen(["sleep", "60"]) for _ in range(2)]
    try:
        signals = ClaudeSignals(
            Settings(hook_spool=tmp_path / "hooks.jsonl", claude_home=config), _Listener(),
            tmux_socket="/tmp/nbs-test-socket", refresh=0.0, rescan=0.0,
        )  # fmt: skip
        panes = [PaneInfo(f"%{n}", "s", n, "w", 0, "", "sh", "/w", pid, 120, 40)
                 for n, pid in enumerate([idle[0].pid, idle[1].pid, shell])]  # fmt: skip
        signals.set_panes(panes)

        def found() -> bool:
            signals._cycle(force=False)
            facts = signals.facts("%2")
            return facts is not None and facts.status is not None and facts.status.state is AgentState.WORKING

        assert not found()  # every pane new: all walked, no status file yet
        (config / "sessions" / f"{child}.json").write_text(_status_json(child, info.start, "busy", time.time() - 1))
        assert not found()  # turn 1: the second pane's walk
        assert found()  # turn 2: the third's, which finds it
    finally:
        for process in idle:
            process.kill()
            process.wait()
