"""The fleet list's clock, as a real terminal shows it.

Each second the Quiet and Poll-in cells of every row move; the list writes those rows to the
terminal itself when nothing covers it (`nbs_tui.widgets.direct_paint`), inside its border and
beside its scrollbar. Here the real dashboard runs in a pty whose output is fed to a terminal
emulator, with more panes than the list has rows; after some ticks, what the terminal shows of
the list must be cell for cell what Textual draws when it repaints the screen whole (the help
screen opened and closed), but for the clock cells' digits, which may have moved on in between.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from pathlib import Path

import libtmux

from nbs_tui.logs import log_path
from tests.faults.helpers import PtyProcess, cli_env, dashboard, wait_for

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


def _repainted_by_textual(app: PtyProcess) -> tuple[int, list[list[tuple[str, str, str, bool, bool]]]]:
    """The header row and the list's rows after Textual drew the screen whole (the help screen
    opened and closed)."""
    app.type(b"?")
    wait_for(lambda: any("List every key" in line for line in app.terminal_text()), 10, "the help screen")
    app.type(b"\x1b")
    wait_for(lambda: not any("List every key" in line for line in app.terminal_text()), 10, "the dashboard again")
    time.sleep(0.2)
    header, _, _, rows = _list_rows(app)
    return header, rows


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
        time.sleep(8)  # ticks written straight to the terminal
        header, quiet, project, ticked = _list_rows(app)
        captured = time.monotonic()
        assert len(ticked) < PANES, "the list should scroll (a scrollbar beside the rows) for this test"
        header_again, repainted = _repainted_by_textual(app)
        between = time.monotonic() - captured
    assert header == header_again
    compared = ticking = 0
    for y, (ours, textuals) in enumerate(zip(ticked, repainted, strict=True)):
        for x, (mine, theirs) in enumerate(zip(ours, textuals, strict=True)):
            if quiet <= x < project and y > 0:  # a clock cell: its digits may have moved on
                assert mine[1:] == theirs[1:], f"row {y} column {x}: {mine} drawn, Textual draws {theirs}"
                continue
            assert mine == theirs, f"row {y} column {x}: {mine} drawn, Textual draws {theirs}"
            compared += 1
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

    said = [line for line in log_path(cli_env(home)).read_text().splitlines() if "fleet list:" in line]
    assert said, "the dashboard did not say how it painted the list"
    ticks = int(said[-1].split("fleet list: ")[1].split()[0])
    assert ticks >= 2, f"the ticks went through Textual, not straight to the terminal: {said[-1]}"


def test_one_agents_state_change_shows_what_textual_would_draw(server: libtmux.Server, tmp_path: Path) -> None:
    """A status event for one pane (here an idle agent set working) writes that row's cells
    straight to the terminal too; the clock would not draw the state cell again."""
    for n in range(2):
        folder = tmp_path / f"a{n}"
        (folder / ".nbs").mkdir(parents=True)
        argv = [sys.executable, "-m", "nbs_tui.demo.agent", "--proc-name", "claude", "--script", "idle", "--name", f"a{n}"]
        server.new_session(f"a{n}", window_command=shlex.join(argv), start_directory=str(folder), x=80, y=24)
    for n in range(3):
        server.new_session(f"s{n}", window_command="sleep 3600", x=80, y=24)
    home = tmp_path / "home"
    with dashboard(server, home, "--no-poll", terminal=True) as app:
        wait_for(lambda: any("s0" in line for line in app.terminal_text()), 30, "the panes listed")
        app.type(b"\x1b[B" * 2)  # a shell selected: the agents' rows are not the cursor's
        wait_for(lambda: sum(" idle " in line and ":0.0" in line for line in app.terminal_text()) == 2, 30, "both agents idle")
        time.sleep(2)
        session = server.sessions.get(session_name="a1")
        agent = session.active_window.active_pane if session is not None else None
        assert agent is not None
        agent.send_keys("stay busy", enter=True)  # a turn that works until interrupted
        wait_for(lambda: "esc to interrupt" in "\n".join(agent.capture_pane()), 20, "a1 working")
        time.sleep(3)  # the sidecar's next tick saw it, the app drew it
        header, quiet, project, drawn = _list_rows(app)
        states = ["".join(cell[0] for cell in row[:quiet]) for row in drawn[1:]]
        header_again, repainted = _repainted_by_textual(app)
    assert header == header_again
    assert " working " in states[1] and " idle " in states[0], f"the agents' rows as drawn: {states[:2]}"
    for y, (ours, textuals) in enumerate(zip(drawn, repainted, strict=True)):
        for x, (mine, theirs) in enumerate(zip(ours, textuals, strict=True)):
            if quiet <= x < project and y > 0:  # a clock cell: its digits may have moved on
                assert mine[1:] == theirs[1:], f"row {y} column {x}: {mine} drawn, Textual draws {theirs}"
            else:
                assert mine == theirs, f"row {y} column {x}: {mine} drawn, Textual draws {theirs}"
