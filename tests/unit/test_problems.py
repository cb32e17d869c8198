"""The problem record: de-duplicated by source and message, bounded, newest first."""

from __future__ import annotations

import pytest

from nbs_tui.core.fleet.problems import Problem, Problems


def test_a_repeated_problem_is_one_entry_with_count_and_times() -> None:
    problems = Problems()
    first = problems.record("tmux", "control client exited", 10.0)
    assert first == Problem("tmux", "control client exited", 10.0, 10.0, 1)
    problems.record("sidecar", "%1 poll: pane gone", 11.0)
    again = problems.record("tmux", "control client exited", 12.5)
    assert again == Problem("tmux", "control client exited", 10.0, 12.5, 2)
    assert [p.source for p in problems.entries()] == ["tmux", "sidecar"], "newest report first"
    assert len(problems) == 2 and problems.reports == 3


def test_same_message_from_two_sources_is_two_problems() -> None:
    problems = Problems()
    problems.record("sidecar", "boom", 1.0)
    problems.record("control plane", "boom", 1.0)
    assert len(problems) == 2


def test_bounded_drops_the_one_seen_longest_ago() -> None:
    problems = Problems(limit=3)
    for n in range(3):
        problems.record("s", f"m{n}", float(n))
    problems.record("s", "m0", 5.0)  # seen again: now the newest
    problems.record("s", "m3", 6.0)
    assert [p.message for p in problems.entries()] == ["m3", "m0", "m2"]
    assert problems.dropped == 1


def test_blank_parts_are_named_and_clear_empties() -> None:
    problems = Problems()
    entry = problems.record("  ", "\n", 1.0)
    assert (entry.source, entry.message) == ("nbs-tui", "(no message)")
    problems.clear()
    assert len(problems) == 0 and problems.entries() == []
    with pytest.raises(ValueError):
        Problems(limit=0)
