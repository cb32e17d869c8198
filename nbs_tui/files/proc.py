"""The process tree as Linux's ``/proc`` shows it: a process's children, read from each of its
tasks' ``children`` file (a few reads for a pane's tree, not a pass over every process of the
machine). The walk itself is `nbs_tui.core.fleet.process_tree.walk`; `tree` is that walk over here.

A process that ended meanwhile simply has no children. A read that failed for want of
resources (file descriptors, memory) says nothing about the process, only about us: it raises
`ProcShortage`, so a caller can tell "no agent here" from "could not look".
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from nbs_tui.core.fleet.process_tree import walk

PROC = Path("/proc")

_T = TypeVar("_T")

SHORT_OF = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN})
"""Errors that say nothing about the process, only about us (a gone process: ENOENT, ESRCH)."""


class ProcShortage(Exception):
    """/proc could not be read for want of resources: an answer from it would be a guess."""


def read_or_none(read: Callable[[], _T]) -> _T | None:
    """``read()``; None when the process is gone or hidden; `ProcShortage` when we are short of
    resources."""
    try:
        return read()
    except OSError as error:
        if error.errno in SHORT_OF:
            raise ProcShortage(str(error)) from error
        return None


def cmdline(pid: int, proc: Path = PROC) -> tuple[str, ...]:
    """A process's arguments (``/proc/PID/cmdline``); () when it is gone or unreadable."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ()
    return tuple(word.decode("utf-8", "replace") for word in raw.split(b"\0") if word)


def children(pid: int, proc: Path = PROC) -> list[int]:
    """The processes whose parent is ``pid`` ([] when it ended); raises `ProcShortage`.

    Paths as strings and plain reads, not `Path`: a rescan reads this for every pane (1,000
    panes: 1,000 a rescan), and pathlib's objects were most of its cost (py-spy, issue 35)."""
    kids: list[int] = []
    base = f"{proc}/{pid}/task/"
    for tid in read_or_none(lambda: os.listdir(base)) or ():
        data = read_or_none(lambda tid=tid: _read_bytes(f"{base}{tid}/children"))  # type: ignore[misc]
        if data:
            kids.extend(int(kid) for kid in data.split())
    return kids


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def children_named(pid: int, proc: Path = PROC) -> tuple[tuple[int, str], ...]:
    """``pid``'s children, each with its name (``comm``), sorted: it changes when a child
    starts or ends and when a child execs another program (same pid, new name), which is how
    a wrapper without job control starts Claude Code (`nbs_tui.tmux.discovery` keys its agent
    verdicts on it). A child gone meanwhile is left out; raises `ProcShortage`."""
    named: list[tuple[int, str]] = []
    for kid in children(pid, proc):
        raw = read_or_none(lambda kid=kid: _read_bytes(f"{proc}/{kid}/comm"))  # type: ignore[misc]
        if raw is not None:
            named.append((kid, raw.decode("utf-8", "replace").strip()))
    return tuple(sorted(named))


def tree(root: int, proc: Path = PROC, limit: int | None = None) -> Iterator[int]:
    """``root`` and the processes below it, nearest first, at most ``limit`` (lazy: stop when
    you have what you look for). A read short of resources is skipped (that process's children
    are not walked); a caller that must know uses `walk` with `children` itself."""

    def tolerant(pid: int) -> list[int]:
        try:
            return children(pid, proc)
        except ProcShortage:
            return []

    return walk(root, tolerant, limit)


_HAS_CHILDREN: dict[Path, bool] = {}


def has_children_files(proc: Path = PROC) -> bool:
    """Whether ``<proc>/<pid>/task/<tid>/children`` exists (Linux's CONFIG_PROC_CHILDREN), asked
    once of a process that is surely there: this one. Without them, read every process's parent
    (`nbs_tui.claude.status.process_table`) and walk that."""
    known = _HAS_CHILDREN.get(proc)
    if known is None:
        me = str(os.getpid())
        known = _HAS_CHILDREN[proc] = (proc / me / "task" / me / "children").exists()
    return known


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs here (one of another user's too). A zombie does not: a
    SIGKILLed holder stays one until its parent reaps it, which in a container may be never."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]
