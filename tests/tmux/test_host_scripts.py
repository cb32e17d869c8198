"""The host scripts' one process-tree walker (`TREE`) and the two scripts that read it, run by this
machine's ``sh``: the same text another host's login shell runs over ssh (tests/remote run it
there). A real tree: ``sh`` -> ``sh`` -> a program named ``claude`` (a copy of ``sleep``)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from libtmux.test.retry import retry_until

from nbs_tui.files.proc import children
from nbs_tui.lifecycle.host import RunningClaude, parse_found
from nbs_tui.tmux.host_scripts import AGENTS, CLAUDE_BELOW, TREE, parse_agents


def _sh(script: str) -> str:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True, timeout=30).stdout


def _below(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        found += kids
        todo += kids
    return found


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[tuple[int, int]]:
    """(the root sh's pid, the ``claude`` two levels below it)."""
    claude = tmp_path / "claude"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", claude)
    # "; :" keeps each sh from exec'ing its last command: the tree stays three deep
    root = subprocess.Popen(["sh", "-c", f"sh -c {shlex.quote(f'{claude} 300; :')}; :"])
    try:
        assert retry_until(lambda: len(_below(root.pid)) == 2, 10, raises=False), "the tree never stood"
        yield root.pid, _below(root.pid)[-1]
    finally:
        for pid in _below(root.pid):
            subprocess.run(["kill", str(pid)], check=False)
        root.kill()
        root.wait()


def test_the_walk_lists_each_root_and_its_tree_nearest_first_and_says_a_gone_root(tree: tuple[int, int], tmp_path: Path) -> None:
    root, claude = tree
    out = _sh(TREE.format(pids=shlex.quote(f"{root} 999999999")))
    rows = [line.split(" ", 2) for line in out.splitlines()]
    assert [row[:2] for row in rows] == [[str(root), str(root)], [str(root), str(_below(root)[0])], [str(root), str(claude)], ["999999999", "-"]]
    assert rows[2][2].split()[0] == str(tmp_path / "claude")  # ps may cut a long command line: the program comes first


def test_agent_detection_finds_claude_two_levels_down_and_not_in_a_plain_tree(tree: tuple[int, int]) -> None:
    root, _claude = tree
    plain = subprocess.Popen(["sh", "-c", "sleep 300; :"])
    try:
        out = _sh(AGENTS.format(pids=shlex.quote(f"{root} {plain.pid} 999999999")))
    finally:
        plain.kill()
        plain.wait()
    assert parse_agents(out) == {root: True, plain.pid: False}
    assert "999999999 gone" in out.splitlines()


def test_the_status_file_below_a_pane_is_found_only_when_it_is_the_live_process_s(tree: tuple[int, int], tmp_path: Path) -> None:
    root, claude = tree
    config = tmp_path / "config"
    (config / "sessions").mkdir(parents=True)
    start = Path(f"/proc/{claude}/stat").read_text().rsplit(") ", 1)[1].split()[19]
    status = config / "sessions" / f"{claude}.json"

    def found() -> RunningClaude | None:
        return parse_found(_sh(f"set -- {root}\nEXTRA={shlex.quote(shlex.quote(str(config)))}\n{CLAUDE_BELOW}"))

    status.write_text(json.dumps({"sessionId": "s-1", "procStart": start}))
    running = found()
    assert running is not None and (running.pid, running.session_id, running.config) == (claude, "s-1", str(config))
    assert running.args[0].endswith("claude")
    status.write_text(json.dumps({"sessionId": "s-old", "procStart": str(int(start) - 1)}))  # an older process's
    assert found() is None
