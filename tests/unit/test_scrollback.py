"""Search in the scrollback, and lining a new read of the history up with the one on show (pure)."""

from __future__ import annotations

from nbs_tui.core.screen.scrollback_search import (
    ALIGN_TRIES,
    Grown,
    Match,
    align,
    carry_match,
    find_matches,
    nearest_above,
    splice_tail,
    step,
)

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


def _lines(first: int, last: int) -> list[str]:
    return [f"line {i}" for i in range(first, last + 1)]


def test_a_read_that_only_grew_keeps_every_row() -> None:
    old = [*_lines(1, 10), "", ""]  # 10 rows of history, then a screen with two blank rows
    new = [*_lines(1, 12), "$ "]  # two more lines printed, the prompt on the screen's last row
    grown = align(old, 10, new)
    assert grown == Grown(dropped=0, kept=10, fresh=("line 11", "line 12", "$ "))
    assert align(old, 10, old).unchanged


def test_screen_rows_that_scrolled_off_unchanged_are_kept() -> None:
    old = [*_lines(1, 5), "line 6", "line 7", "working..."]  # 5 history rows, a 3-row screen
    new = [*_lines(1, 7), "line 8", "done", "$ "]
    grown = align(old, 5, new)
    assert grown.dropped == 0 and grown.kept == 7 and grown.fresh == ("line 8", "done", "$ ")


def test_history_limit_drops_the_top() -> None:
    old = [*_lines(1, 100), "screen"]
    new = [*_lines(31, 130), "screen 2"]  # tmux dropped 30 rows, 30 more printed
    grown = align(old, 100, new)
    assert grown.dropped == 30 and not grown.reset
    assert grown.kept == 70  # the old history's rows 31-100
    assert grown.fresh == (*_lines(101, 130), "screen 2")
    rebuilt = old[grown.dropped :][: grown.kept] + list(grown.fresh)
    assert rebuilt == new


def test_cleared_history_or_an_unrelated_read_is_a_reset() -> None:
    old = [*_lines(1, 50), "screen"]
    cleared = ["after clear", "$ "]
    assert align(old, 50, cleared) == Grown(dropped=51, kept=0, fresh=("after clear", "$ "), reset=True)
    assert align(old, 50, []).reset
    assert align(old, 0, ["anything"]) == Grown(0, 0, ("anything",))  # no history: the screen only
    assert align([], 0, ["a"]) == Grown(0, 0, ("a",))


def test_repeated_lines_align_on_the_smallest_drop_and_stop_trying() -> None:
    old = ["same"] * 20 + ["screen"]
    grown = align(old, 20, ["same"] * 25 + ["screen"])
    assert grown == Grown(dropped=0, kept=20, fresh=("same",) * 5 + ("screen",))
    # candidates pass the cheap checks and fail in full until it gives up (a later one would
    # match by accident): a reset
    many = ["x"] * (ALIGN_TRIES + 10)
    old = [*many, "y", *many]
    new = [*many, "z", *many]
    assert align(old, len(old), new).reset


def test_the_current_match_stays_on_its_line() -> None:
    lines = ["error a", "ok", "error b error c", "ok"]
    old = find_matches(lines, "error")[2]  # "error c" on row 2
    grown = ["ok", "error b error c", "ok", "error d"]  # one row dropped, one appended
    matches = find_matches(grown, "error")
    index = carry_match(old, 1, matches)
    assert index is not None and matches[index] == Match(1, 8, 13)
    assert carry_match(Match(0, 0, 5), 1, matches) == 0  # its row dropped: the nearest, first one
    assert carry_match(None, 0, matches) is None
    assert carry_match(old, 0, []) is None


def test_a_tail_read_stands_for_the_whole_when_its_first_rows_repeat_the_old_history() -> None:
    old = [*_lines(1, 100), "screen"]  # tmux held 100 history rows
    tail = [*_lines(91, 105), "screen 2"]  # 5 more scrolled: now 105; the last 15 history rows read
    whole = splice_tail(old, 100, 100, tail, 15, 105, limit=10_000)
    assert whole == [*_lines(1, 105), "screen 2"]
    assert align(old, 100, whole or []) == Grown(0, 100, (*_lines(101, 105), "screen 2"))
    # the view's own limit: as a whole read of the last 102 history rows would
    assert splice_tail(old, 100, 100, tail, 15, 105, limit=102) == [*_lines(4, 105), "screen 2"]
    # nothing scrolled (a spinner on the screen): the tail is all overlap
    assert splice_tail(old, 100, 100, [*_lines(86, 100), "spin"], 15, 100, 10_000) == [*_lines(1, 100), "spin"]


def test_a_tail_read_that_cannot_be_placed_asks_for_a_whole_read() -> None:
    old = [*_lines(1, 100), "screen"]
    assert splice_tail(old, 100, 100, [*_lines(1, 15), "s"], 15, 90, 10_000) is None  # fewer held: dropped or cleared
    assert splice_tail(old, 100, 100, [*_lines(106, 120), "s"], 15, 120, 10_000) is None  # more scrolled than read
    # as many held as the count says, but not the rows expected (tmux dropped, then more scrolled)
    assert splice_tail(old, 100, 100, [*_lines(291, 305), "s"], 15, 105, 10_000) is None
    assert splice_tail([], 0, 0, ["a", "s"], 1, 0, 10_000) is None  # no history on show to line up with
