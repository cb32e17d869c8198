"""Search in the scrollback (pure)."""

from __future__ import annotations

from nbs_tui.core.scrollback import Match, find_matches, nearest_above, step

LINES = ["Error: disk full", "all fine", "error again, ERROR twice", "errorerror"]


def test_smart_case_and_every_occurrence() -> None:
    assert find_matches(LINES, "error") == [
        Match(0, 0, 5), Match(2, 0, 5), Match(2, 13, 18), Match(3, 0, 5), Match(3, 5, 10),
    ]
    assert find_matches(LINES, "ERROR") == [Match(2, 13, 18)]  # a capital: exact case
    assert find_matches(LINES, "") == []
    assert find_matches(LINES, "absent") == []


def test_nearest_above_the_view_then_next_and_previous_wrap() -> None:
    matches = find_matches(LINES, "error")
    assert nearest_above(matches, 2) == 2  # the last match on or above row 2
    assert nearest_above(matches, 1) == 0
    assert nearest_above([Match(5, 0, 1)], 2) == 0  # none above: the first below
    assert nearest_above([], 2) is None
    assert step(matches, 4, forward=True) == 0
    assert step(matches, 0, forward=False) == 4
    assert step(matches, None, forward=False) == 4
    assert step([], 0, forward=True) is None
