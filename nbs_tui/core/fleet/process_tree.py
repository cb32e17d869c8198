"""The walk of a process tree: a process and every process below it, nearest first.

Pure: where a process's children come from is the caller's (`nbs_tui.files.proc` reads them
from ``/proc``; `children_map` makes them from a table of processes already read). Used for
"is Claude Code running in this pane?" (`nbs_tui.tmux.discovery`) and "which of the pane's
processes is Claude Code, and where are its files?" (`nbs_tui.claude.status`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol


def walk(root: int, children: Callable[[int], Iterable[int]], limit: int | None = None) -> Iterator[int]:
    """``root``, then the processes below it, breadth first (parents before children), each
    once, at most ``limit`` of them. Lazy: ``children(pid)`` is asked only when the walk goes
    past ``pid``, so a caller that stops at what it looks for reads no more of the tree."""
    queue = deque([root])
    seen: set[int] = set()
    while queue and (limit is None or len(seen) < limit):
        pid = queue.popleft()
        if pid in seen:  # a pid reused while we walk could otherwise loop
            continue
        seen.add(pid)
        yield pid
        queue.extend(children(pid))


class HasParent(Protocol):
    @property
    def pid(self) -> int: ...

    @property
    def ppid(self) -> int: ...


def children_map(table: Mapping[int, HasParent]) -> dict[int, list[int]]:
    """Parent pid -> child pids, from a table of processes read once."""
    children: dict[int, list[int]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    return children


def descendants(
    root: int, table: Mapping[int, HasParent], children: Mapping[int, list[int]] | None = None
) -> list[int]:
    """``root`` and every process of ``table`` below it, parents before children."""
    below = children_map(table) if children is None else children
    return [pid for pid in walk(root, lambda pid: sorted(below.get(pid, ()))) if pid in table]
