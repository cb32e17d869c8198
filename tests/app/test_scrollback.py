"""The scrollback view on real tmux: PgUp reads the selected pane's history from tmux and shows
it in place of the mirror; ``/`` searches it (smart case) with highlights, ``n``/``N`` move
between matches and wrap; those keys are the view's while it has focus (not the filter's nor
needs-you's); Esc goes back to the live mirror and drops the history; a pane in the alternate
screen says it has no scrollback; the wheel over the mirror opens it too. It follows the pane:
new output shows at the bottom, scrolled up the rows stay and the border counts the new lines,
End follows again; past tmux's history limit and after a clear-history it still holds what tmux
holds."""

from __future__ import annotations

import shlex
from pathlib import Path

import libtmux
import pytest
from rich.color import Color

import nbs_tui.dashboard.history
from nbs_tui.app import create_app
from nbs_tui.widgets.scrollback import CURRENT_STYLE, MATCH_STYLE, HistoryLines
from tests.app.helpers import wait_for, widget_text
from tests.app.test_actions import SIZE, select, settings
from tests.app.textual_probes import wheel_up

LOG = (
    "for i in $(seq 1 200); do "
    "if [ $((i % 50)) -eq 0 ]; then printf '\\033[31mERROR at step %03d\\033[0m\\n' $i; "
    "else printf 'step %03d ok\\n' $i; fi; done; exec sleep 100000"
)
ALT = "import sys, time; sys.stdout.write('\\x1b[?1049h\\x1b[HFULL SCREEN APP'); sys.stdout.flush(); time.sleep(600)"


def _pane(session: libtmux.Session, name: str, command: str) -> str:
    window = session.new_window(window_name=name, window_shell=command, attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    return str(pane.pane_id)


def match_colours(lines: HistoryLines, row: int) -> list[Color | None]:
    """The background of each "ERROR" drawn on history row ``row`` (scrolled into view first)."""
    if not lines.scroll_offset.y <= row <= lines.bottom_row:
        lines.scroll_to(y=row, animate=False, immediate=True)
    strip = lines.render_line(row - int(lines.scroll_offset.y))
    return [seg.style.bgcolor if seg.style is not None else None for seg in strip if seg.text == "ERROR"]


async def test_page_up_search_next_previous_and_back_to_live(session: libtmux.Session, tmp_path: Path) -> None:
    log = _pane(session, "log", f"sh -c {shlex.quote(LOG)}")
    app = create_app(settings(session.server, tmp_path, poll_disabled=True), sidecar=False, control_plane=False, claude=False)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, log)
        await wait_for(pilot, lambda: "step 200" in widget_text(app.dashboard.mirror.rows) or "ERROR at step 200" in widget_text(app.dashboard.mirror.rows), what="the log mirrored")
        await pilot.press("pageup")
        view = app.dashboard.scrollback
        await wait_for(pilot, lambda: view.display and view.lines.texts, what="the history shown")
        assert not app.dashboard.mirror.display
        assert view.lines.has_focus
        assert "history of" in str(view.border_title) and "lines of history" in str(view.border_title)
        assert any("step 001 ok" in line for line in view.lines.plain)  # read back from tmux
        text = widget_text(view.lines)
        assert "step 200" not in text  # one page up from the bottom
        top = view.lines.scroll_offset.y
        await pilot.press("pageup")  # the view's own keys scroll it
        await wait_for(pilot, lambda: view.lines.scroll_offset.y < top, what="a page further back")
        await pilot.press("end")
        await wait_for(pilot, lambda: "step 200" in widget_text(view.lines), what="the bottom")
        await pilot.press("home")
        await wait_for(pilot, lambda: view.lines.scroll_offset.y == 0, what="the top")
        await pilot.press("end")

        await pilot.press("slash")  # the view's search, not the fleet filter
        assert view.search_bar.has_focus and not app.dashboard.filter_bar.display
        await pilot.press(*"error")  # no capital: any case
        await wait_for(pilot, lambda: len(view.lines.matches) == 4, what="four matches")
        await pilot.press("enter")
        assert view.lines.has_focus
        current = view.lines.current
        assert current is not None
        row = view.lines.matches[current].row
        assert "ERROR" in view.lines.plain[row]
        assert "/4" in str(view.border_subtitle)
        # the current match is drawn in its own colours, the others in the match colours
        assert match_colours(view.lines, row) == [CURRENT_STYLE.bgcolor]
        await pilot.press("n")  # the view's next match, not "next agent waiting on you"
        assert view.lines.current == (current + 1) % 4
        await pilot.press("N", "N")
        assert view.lines.current == (current - 1) % 4
        others = [m.row for i, m in enumerate(view.lines.matches) if i != view.lines.current]
        assert len(others) == 3 and MATCH_STYLE.bgcolor != CURRENT_STYLE.bgcolor
        for other in others:
            assert match_colours(view.lines, other) == [MATCH_STYLE.bgcolor], other
        assert match_colours(view.lines, view.lines.matches[view.lines.current].row) == [CURRENT_STYLE.bgcolor]

        await pilot.press("escape")
        await wait_for(pilot, lambda: app.dashboard.mirror.display and not view.display, what="back to live")
        assert view.lines.texts == []  # nothing kept
        assert app.dashboard.fleet_list.has_focus


async def test_alternate_screen_says_so_and_the_wheel_opens_it(session: libtmux.Session, tmp_path: Path) -> None:
    full = _pane(session, "full", f"python3 -c {shlex.quote(ALT)}")
    app = create_app(settings(session.server, tmp_path, poll_disabled=True), sidecar=False, control_plane=False, claude=False)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, full)
        await wait_for(pilot, lambda: "FULL SCREEN APP" in widget_text(app.dashboard.mirror.rows), what="the program mirrored")
        mirror = app.dashboard.mirror
        await wheel_up(pilot, mirror, (5, 5))  # the wheel, up
        view = app.dashboard.scrollback
        await wait_for(pilot, lambda: view.display and view.lines.texts, what="the screen shown")
        assert "alternate screen" in str(view.border_title) and "no scrollback" in str(view.border_title)
        assert any("FULL SCREEN APP" in line for line in view.lines.plain)
        assert len(view.lines.plain) == app.state.pane_by_id[full].height


FOLLOWED = "for i in $(seq 1 200); do printf 'step %03d ok\\n' $i; done; exec tail -n 0 -f {feed}"


async def test_the_view_follows_new_output_at_the_bottom_and_holds_still_above_it(
    session: libtmux.Session, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nbs_tui.dashboard.history, "TAIL_ROWS", 20)  # re-reads of the last rows, spliced on
    feed = tmp_path / "feed.log"
    feed.write_text("")

    def emit(*lines: str) -> None:  # the pane's `tail -f` prints them
        with feed.open("a") as out:
            out.write("".join(f"{line}\n" for line in lines))

    log = _pane(session, "follow", f"sh -c {shlex.quote(FOLLOWED.format(feed=shlex.quote(str(feed))))}")
    app = create_app(settings(session.server, tmp_path, poll_disabled=True), sidecar=False, control_plane=False, claude=False)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, log)
        await wait_for(pilot, lambda: "step 200" in widget_text(app.dashboard.mirror.rows), what="the log mirrored")
        await pilot.press("pageup")
        view, lines = app.dashboard.scrollback, app.dashboard.scrollback.lines
        await wait_for(pilot, lambda: view.display and lines.texts, what="the history shown")
        await pilot.press("end")
        await wait_for(pilot, lambda: lines.at_bottom and "step 200" in widget_text(lines), what="the bottom")

        # at the bottom: new output shows and the view stays at the bottom
        emit(*(f"fresh {i:03d}" for i in range(1, 6)))
        await wait_for(pilot, lambda: "fresh 005" in widget_text(lines), timeout=10, what="new lines followed")
        assert lines.at_bottom and view.unseen == 0 and "new line" not in str(view.border_subtitle)

        # scrolled up (a search took it to an old line): the rows on show stay put, the border counts
        await pilot.press("slash", *"step 150", "enter")
        await wait_for(pilot, lambda: lines.current is not None, what="the match")
        assert not lines.at_bottom
        top, shown = lines.scroll_offset.y, widget_text(lines)
        current = lines.matches[lines.current or 0]
        emit(*(f"later {i:03d}" for i in range(1, 30)), "later: step 150 again")
        await wait_for(pilot, lambda: view.unseen == 30, timeout=10, what="thirty new lines counted")
        assert "later: step 150 again" in lines.plain  # read, not shown
        assert lines.scroll_offset.y == top and widget_text(lines) == shown
        assert "+30 new lines" in str(view.border_subtitle) and "End to follow" in str(view.border_subtitle)
        assert len(lines.matches) == 2 and lines.current is not None  # the highlights cover the new text
        assert lines.matches[lines.current] == current  # the current match is the same one
        assert "1/2" in str(view.border_subtitle)

        # End follows again: the newest line on show, the note gone
        await pilot.press("end")
        await wait_for(pilot, lambda: "later: step 150 again" in widget_text(lines), what="the newest line")
        await wait_for(pilot, lambda: view.unseen == 0 and "new line" not in str(view.border_subtitle), what="the note gone")
        emit("after end")
        await wait_for(pilot, lambda: "after end" in widget_text(lines), timeout=10, what="following again")


async def test_following_survives_the_history_limit_and_a_cleared_history(
    server: libtmux.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nbs_tui.dashboard.history, "TAIL_ROWS", 20)  # a tail read must notice the drops and the clear
    feed = tmp_path / "feed.log"
    feed.write_text("")
    session = server.new_session(session_name="limits", x=100, y=20)
    server.cmd("set-option", "-g", "history-limit", "60")  # new panes: tmux drops rows past 60
    log = _pane(session, "follow", f"sh -c {shlex.quote(FOLLOWED.format(feed=shlex.quote(str(feed))))}")

    def same_as_tmux() -> bool:  # the view holds what tmux holds now (blank rows at the end aside)
        held = server.cmd("capture-pane", "-p", "-S", "-100000", "-E", "-", "-t", log).stdout
        return "\n".join(line.rstrip() for line in lines.plain).rstrip() == "\n".join(held).rstrip()

    app = create_app(settings(server, tmp_path, poll_disabled=True), sidecar=False, control_plane=False, claude=False)
    async with app.run_test(size=SIZE) as pilot:
        await select(app, pilot, log)
        await wait_for(pilot, lambda: "step 200" in widget_text(app.dashboard.mirror.rows), what="the log mirrored")
        await wheel_up(pilot, app.dashboard.mirror, (5, 5))  # at the bottom
        view, lines = app.dashboard.scrollback, app.dashboard.scrollback.lines
        await wait_for(pilot, lambda: view.display and lines.texts, what="the history shown")
        first = lines.plain[0]
        with feed.open("a") as out:
            out.write("".join(f"more {i:03d}\n" for i in range(1, 41)))
        await wait_for(pilot, lambda: "more 040" in widget_text(lines), timeout=10, what="followed past the limit")
        await wait_for(pilot, same_as_tmux, what="the same rows as tmux")
        assert lines.plain[0] != first  # the top went with tmux's oldest rows

        await pilot.press("pageup")  # scrolled up: the rows read go with the clear, it starts afresh
        await wait_for(pilot, lambda: not lines.at_bottom, what="scrolled up")
        server.cmd("clear-history", "-t", log)
        with feed.open("a") as out:
            out.write("after the clear\n")
        await wait_for(pilot, lambda: "after the clear" in widget_text(lines), timeout=10, what="the cleared history followed")
        await wait_for(pilot, same_as_tmux, what="the same rows as tmux")
        assert not any("step 001" in line for line in lines.plain)
        assert lines.at_bottom and view.unseen == 0
