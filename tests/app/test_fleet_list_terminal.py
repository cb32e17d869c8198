"""The fleet list's clock, as a real terminal shows it.

Each second the Quiet and Poll-in cells of every row move; the list writes those rows to the
terminal itself when nothing covers it (`nbs_tui.widgets.direct_paint`), inside its border and
beside its scrollbar. Here the real dashboard runs in a pty whose output is fed to a terminal
emulator, with more panes than the list has rows; after some ticks, what the terminal shows of
the list must be cell for cell what Textual draws when it repaints the screen whole (the help
screen opened and closed), but for the clock cells' digits, which may have moved on in between.
"""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
import time
from pathlib import Path

import libtmux

from nbs_tui.housekeeping.logs import log_path
from tests.faults.helpers import PtyProcess, cli_env, dashboard, wait_for
from tests.tmux.test_sidecar_runner import write_fake_claude

AGENTS = 4
PANES = 60
DURATION = re.compile(r"^(—|\d+[smhd](\d+[smh])?)?$")


def _list_rows(app: PtyProcess) -> tuple[int, int, int, list[list[tuple[str, str, str, bool, bool]]]]:
    """The header row's position, the clock columns' span, and the list's rows (header to the
    row before the list's bottom border), from the terminal's left edge to the mirror."""
    text = app.terminal_text()
    header = next(y for y, line in enumerate(text) if "Quiet" in line and "Poll in" in line)
    quiet, project = text[header].index("Quiet"), text[header].index("Project")
    right = text[header].index("│", project)  # the list's right border
    bottom = next(y for y in range(header, len(text)) if text[y][0] == "╰")
    cells = app.terminal_rows()
    return header, quiet, project, [row[: right + 1] for row in cells[header:bottom]]


def _repainted_by_textual(
    app: PtyProcess,
    drawn: list[list[tuple[str, str, str, bool, bool]]],
    quiet: int,
    project: int,
) -> tuple[int, list[list[tuple[str, str, str, bool, bool]]]]:
    """The header row and the list's rows after Textual drew the screen whole (the help screen
    opened and closed): once they match ``drawn`` (clock digits aside), or after 30 s (Textual's
    repaint may still be on its way when the help screen is gone, longer on a loaded machine; the
    caller then says where they differ)."""
    app.type(b"?")
    wait_for(lambda: any("List every key" in line for line in app.terminal_text()), 10, "the help screen")
    app.type(b"\x1b")
    wait_for(lambda: not any("List every key" in line for line in app.terminal_text()), 10, "the dashboard again")

    def matches() -> bool:
        try:
            _, _, _, rows = _list_rows(app)
        except (StopIteration, ValueError):
            return False
        return len(rows) == len(drawn) and all(
            _same(mine, theirs, moving=quiet <= x < project and y > 0)
            for y, (ours, textuals) in enumerate(zip(drawn, rows, strict=True))
            for x, (mine, theirs) in enumerate(zip(ours, textuals, strict=True))
        )

    with contextlib.suppress(AssertionError):
        wait_for(matches, 30, "Textual's repaint to match the list as drawn")
    header, _, _, rows = _list_rows(app)
    return header, rows


def _same(mine: tuple[str, str, str, bool, bool], theirs: tuple[str, str, str, bool, bool], moving: bool) -> bool:
    """One cell as drawn against Textual's: the same, or for a cell that may have ``moving``
    (a clock's digits) the same look. A clock that moved on may be longer or shorter ("9s",
    "10s"): where one has a digit and the other the padding beside it, the look differs too."""
    if not moving:
        return mine == theirs
    return mine[0].isspace() != theirs[0].isspace() or mine[1:] == theirs[1:]


def _text(rows: list[list[tuple[str, str, str, bool, bool]]]) -> str:
    return "\n".join("".join(cell[0] for cell in row) for row in rows)


def _quiet_clocks(app: PtyProcess, rows: range) -> list[str]:
    """What the terminal shows now in the Quiet cells of these list rows (1: the first pane's),
    "" for a row it does not show (the list not drawn yet, or in the middle of a repaint)."""
    try:
        _, quiet, project, cells = _list_rows(app)
    except (StopIteration, ValueError):
        return ["" for _ in rows]
    shown = []
    for y in rows:
        words = "".join(cell[0] for cell in cells[y][quiet:project]).split() if y < len(cells) else []
        shown.append(words[0] if words else "")
    return shown


def _wait_for_ticks(app: PtyProcess, rows: range, ticks: int, timeout: float = 30) -> None:
    """Until the terminal has shown each row's Quiet cell move ``ticks`` times (a clock tick,
    as the terminal got it: straight from the list or through Textual) and it shows at least
    ``ticks`` seconds (an agent still drawing its first screen starts its quiet time again)."""
    seen: list[list[str]] = [[] for _ in rows]

    def moved() -> bool:
        for values, now in zip(seen, _quiet_clocks(app, rows), strict=True):
            if now and (not values or values[-1] != now):
                values.append(now)
        return all(
            len(values) > ticks and re.fullmatch(r"\d+s", values[-1]) and int(values[-1][:-1]) >= ticks
            for values in seen
        )

    try:
        wait_for(moved, timeout, f"{ticks} clock ticks shown in rows {list(rows)}")
    except AssertionError as error:
        raise AssertionError(f"{error}; the Quiet cells shown: {seen}") from None


def test_the_clock_ticks_show_what_textual_would_draw(server: libtmux.Server, tmp_path: Path) -> None:
    for n in range(AGENTS):  # idle demo agents (seen as claude): their Quiet cells tick
        folder = tmp_path / f"a{n}"
        (folder / ".nbs").mkdir(parents=True)
        argv = [sys.executable, "-m", "nbs_tui.demo.agent", "--proc-name", "claude", "--script", "idle", "--name", f"a{n}"]
        server.new_session(f"a{n}", window_command=shlex.join(argv), start_directory=str(folder), x=80, y=24)
    for n in range(PANES - AGENTS):  # shells to fill the list past its height
        server.new_session(f"s{n:02d}", window_command="sleep 3600", x=80, y=24)
    home = tmp_path / "home"
    with dashboard(server, home, "--no-poll", terminal=True) as app:
        wait_for(lambda: any("s00" in line for line in app.terminal_text()), 30, "the panes listed")
        app.type(b"\x1b[B" * AGENTS)  # a shell selected: every agent's row ticks (the mirrored one's would not)
        _wait_for_ticks(app, range(1, AGENTS + 1), 3)  # (the log says below how they were written)
        header, quiet, project, drawn = _list_rows(app)
        captured = time.monotonic()
        assert len(drawn) < PANES, "the list should scroll (a scrollbar beside the rows) for this test"
        header_again, repainted = _repainted_by_textual(app, drawn, quiet, project)
        between = time.monotonic() - captured
    assert header == header_again
    compared = ticking = 0
    assert len(drawn) == len(repainted), f"{len(drawn)} rows drawn, Textual draws {len(repainted)}\n{_text(drawn)}\n{_text(repainted)}"
    for y, (ours, textuals) in enumerate(zip(drawn, repainted, strict=True)):
        for x, (mine, theirs) in enumerate(zip(ours, textuals, strict=True)):
            clock = quiet <= x < project and y > 0  # its digits may have moved on
            assert _same(mine, theirs, moving=clock), (
                f"row {y} column {x}: {mine} drawn, Textual draws {theirs}\n{_text(drawn)}\n{_text(repainted)}"
            )
            compared += not clock
        if y == 0:
            continue
        clocks = "".join(cell[0] for cell in ours[quiet:project]).split()
        clocks_then = "".join(cell[0] for cell in textuals[quiet:project]).split()
        assert clocks and all(DURATION.match(c) for c in clocks), f"row {y}: clock cells {clocks}"
        if y <= AGENTS:  # an agent's row (a0..a3 sort first): quiet seconds, current when captured
            assert clocks[0].endswith("s") and clocks[0] != "0s", f"row {y}: clock cells {clocks}"
            lag = int(clocks_then[0][:-1]) - int(clocks[0][:-1])
            assert 0 <= lag <= between + 1.5, f"row {y}: quiet {clocks[0]} shown, {clocks_then[0]} {between:.1f}s later"
            ticking += 1
    assert compared > 1000
    assert ticking == AGENTS, f"{ticking} rows with a quiet clock"

    log = log_path(cli_env(home)).read_text()
    said = [line for line in log.splitlines() if "fleet list:" in line]
    assert said, f"the dashboard did not say how it painted the list (exit status {app.proc.returncode}):\n{log[-2000:]}"
    ticks = int(said[-1].split("fleet list: ")[1].split()[0])
    assert ticks >= 2, f"the ticks went through Textual, not straight to the terminal: {said[-1]}"


def test_one_agents_state_change_shows_what_textual_would_draw(server: libtmux.Server, tmp_path: Path) -> None:
    """A status event for one pane (here an idle agent set working) writes that row's cells
    straight to the terminal too; the clock would not draw the state cell again.

    The agents are the tests' fake Claude Code, which never sets its pane's title: a title
    that changed (the demo agent's spinner glyph) made the fleet report the panes again, and
    the list then drew every row through Textual, the working one included, whether or not
    the status event had drawn it."""
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    for n in range(2):
        log = tmp_path / f"a{n}.log"
        server.new_session(f"a{n}", window_command=f"{fake} idle {log}", start_directory=str(tmp_path), x=80, y=24)
    for n in range(3):
        server.new_session(f"s{n}", window_command="sleep 3600", x=80, y=24)
    home = tmp_path / "home"
    with dashboard(server, home, "--no-poll", terminal=True) as app:
        wait_for(lambda: any("s0" in line for line in app.terminal_text()), 30, "the panes listed")
        app.type(b"\x1b[B" * 2)  # a shell selected: the agents' rows are not the cursor's
        wait_for(lambda: sum(" idle " in line and ":0.0" in line for line in app.terminal_text()) == 2, 30, "both agents idle")
        _wait_for_ticks(app, range(1, 3), 1)  # the clock ticks: the list's rows are drawn by now
        session = server.sessions.get(session_name="a1")
        agent = session.active_window.active_pane if session is not None else None
        assert agent is not None
        agent.send_keys("stay busy", enter=True)  # a turn that works until interrupted
        wait_for(lambda: "esc to interrupt" in "\n".join(agent.capture_pane()), 20, "a1 working")

        def a1_shown_working() -> bool:  # the sidecar's next tick saw it, the list drew its row
            return any(line.lstrip("│ ").startswith("a1:") and " working " in line for line in app.terminal_text())

        wait_for(a1_shown_working, 30, "a1's row shown working")
        header, quiet, project, drawn = _list_rows(app)
        states = ["".join(cell[0] for cell in row[:quiet]) for row in drawn[1:]]
        header_again, repainted = _repainted_by_textual(app, drawn, quiet, project)
    assert header == header_again
    assert " working " in states[1] and " idle " in states[0], f"the agents' rows as drawn: {states[:2]}"
    for y, (ours, textuals) in enumerate(zip(drawn, repainted, strict=True)):
        for x, (mine, theirs) in enumerate(zip(ours, textuals, strict=True)):
            clock = quiet <= x < project and y > 0  # its digits may have moved on
            assert _same(mine, theirs, moving=clock), (
                f"row {y} column {x}: {mine} drawn, Textual draws {theirs}\n{_text(drawn)}\n{_text(repainted)}"
            )
