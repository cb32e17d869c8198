"""`nbs_tui.core.fleet.process_tree`: the one walk of a process tree, without /proc (children given)."""

from __future__ import annotations

from dataclasses import dataclass

from nbs_tui.core.fleet.process_tree import children_map, descendants, walk

TREE = {1: [2, 3], 2: [4, 5], 3: [6], 4: [], 5: [7], 6: [], 7: []}


def test_the_walk_is_nearest_first_parents_before_children() -> None:
    assert list(walk(1, lambda pid: TREE.get(pid, []))) == [1, 2, 3, 4, 5, 6, 7]
    assert list(walk(5, lambda pid: TREE.get(pid, []))) == [5, 7]
    assert list(walk(99, lambda pid: TREE.get(pid, []))) == [99], "a pid with no children is the whole walk"


def test_the_walk_stops_at_its_limit_and_visits_each_pid_once() -> None:
    assert list(walk(1, lambda pid: TREE.get(pid, []), limit=3)) == [1, 2, 3]
    looped = {1: [2], 2: [1, 3], 3: [2]}  # a pid reused during the walk can point back up
    assert list(walk(1, lambda pid: looped[pid])) == [1, 2, 3]


def test_the_walk_reads_no_further_than_it_is_taken() -> None:
    asked: list[int] = []

    def children(pid: int) -> list[int]:
        asked.append(pid)
        return TREE.get(pid, [])

    found = next(pid for pid in walk(1, children) if pid == 3)
    assert found == 3
    assert asked == [1, 2], "the children of 3 and below were never read"


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int


def test_descendants_of_a_table_read_once() -> None:
    table = {p.pid: p for p in [Proc(10, 1), Proc(12, 10), Proc(11, 10), Proc(13, 12), Proc(20, 1)]}
    assert children_map(table) == {1: [10, 20], 10: [12, 11], 12: [13]}
    assert descendants(10, table) == [10, 11, 12, 13], "children in pid order, parents first"
    assert descendants(12, table) == [12, 13]
    assert descendants(1, table) == [10, 20, 11, 12, 13], "the root itself only if it is in the table"
