"""`nbs_tui.files.proc`: the process tree below a real process, read from /proc, checked against
``ps`` (another reader of the same kernel); a process that ended; and a process short of file
descriptors, which must say "could not look" rather than "nothing there"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbs_tui.claude.status import subtree_table
from nbs_tui.files.proc import children, has_children_files, tree

REPO = Path(__file__).resolve().parents[2]

# a shell with a sleep and a second shell below it, which has two sleeps of its own
TREE_SCRIPT = "sleep 300 & sh -c 'sleep 300 & sleep 300 & wait' & wait"


def ps_children() -> dict[int, list[int]]:
    """Parent -> children as ``ps`` lists every process."""
    out = subprocess.run(["ps", "-e", "-o", "pid=,ppid="], capture_output=True, text=True, check=True).stdout
    below: dict[int, list[int]] = {}
    for line in out.splitlines():
        pid, ppid = (int(field) for field in line.split())
        below.setdefault(ppid, []).append(pid)
    return below


def ps_tree(root: int) -> set[int]:
    below = ps_children()
    found, todo = {root}, [root]
    while todo:
        for kid in below.get(todo.pop(), []):
            if kid not in found:
                found.add(kid)
                todo.append(kid)
    return found


@pytest.fixture
def shell_tree() -> Iterator[int]:
    """The root pid of a five-process tree, once all five run."""
    proc = subprocess.Popen(["sh", "-c", TREE_SCRIPT], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(ps_tree(proc.pid)) < 5:
            assert time.monotonic() < deadline, f"the tree did not grow: {ps_tree(proc.pid)}"
            time.sleep(0.02)
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_the_tree_of_a_real_process_is_what_ps_sees(shell_tree: int) -> None:
    assert has_children_files(), "this kernel has /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)"
    walked = list(tree(shell_tree))
    assert set(walked) == ps_tree(shell_tree) and len(walked) == 5, (walked, ps_tree(shell_tree))
    assert walked[0] == shell_tree
    parent_of = {kid: parent for parent, kids in ps_children().items() for kid in kids}
    for index, pid in enumerate(walked[1:], 1):
        assert parent_of[pid] in walked[:index], f"{pid} came before its parent {parent_of[pid]}: {walked}"
    assert sorted(children(shell_tree)) == sorted(ps_children()[shell_tree])
    assert list(tree(shell_tree, limit=2)) == walked[:2]
    # the Claude signals' table of a pane's processes is the same walk
    table = subtree_table(shell_tree)
    assert table is not None and set(table) == set(walked)
    assert {info.comm for info in table.values()} == {"sh", "sleep"}


def test_a_process_that_ended_has_no_children() -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    assert children(proc.pid) == []
    assert list(tree(proc.pid)) == [proc.pid]
    assert subtree_table(proc.pid) == {}, "empty when the root is gone"


SHORT_OF_FDS = textwrap.dedent(
    """
    import os, resource, sys
    from nbs_tui.files.proc import ProcShortage, children
    from nbs_tui.tmux.discovery import agent_in_process_tree
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    held = []
    try:
        while True:
            held.append(os.open("/dev/null", os.O_RDONLY))
    except OSError:
        pass
    for ask in (lambda: children(os.getppid()), lambda: agent_in_process_tree(os.getppid())):
        try:
            print("answered", ask())
        except ProcShortage as error:
            print("short", error)
    """
)


def test_a_process_short_of_file_descriptors_cannot_look_and_says_so() -> None:
    done = subprocess.run([sys.executable, "-c", SHORT_OF_FDS], capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("short ") for line in lines), lines
    assert all("Too many open files" in line for line in lines), lines
