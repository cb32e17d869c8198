"""The mirror of a scrolling pane, as a real terminal shows it.

The mirror writes a scroll's rows to the terminal itself when nothing covers it
(`nbs_tui.widgets.direct_paint`). Here the real dashboard runs in a pty whose output is fed to a
terminal emulator; a pane scrolls coloured lines under it, and what the terminal then shows of the
mirror must be cell for cell (character, colours, bold, reverse) what Textual draws when it
repaints the mirror whole.
"""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path

import libtmux

from nbs_tui.housekeeping.logs import log_path
from tests.faults.helpers import PtyProcess, cli_env, dashboard, wait_for

LINES = 120
PRINTER = f"""
import sys, time
for i in range({LINES}):
    colour = 31 + i % 6
    sys.stdout.write(f'\\x1b[{{colour}}mline {{i:04d}}\\x1b[0m plain \\x1b[1mbold\\x1b[0m \\x1b[7mrev\\x1b[0m\\n')
    sys.stdout.flush()
    time.sleep(0.03)
sys.stdout.write('printer done')
sys.stdout.flush()
time.sleep(3600)
"""


Cells = list[list[tuple[str, str, str, bool, bool]]]


def _mirror_rows(app: PtyProcess, last: str, rows: int = 12) -> tuple[tuple[int, int], Cells]:
    """Where ``last`` is on the terminal, and the ``rows`` rows ending there from the column
    before it (the mirror's left border) to the terminal's right edge."""
    text = app.terminal_text()
    found = [(y, line.index(last)) for y, line in enumerate(text) if last in line]
    assert len(found) == 1, f"{last!r} on {len(found)} rows of the terminal:\n" + "\n".join(text)
    y, x = found[0]
    cells = app.terminal_rows()
    return (y, x), [row[x - 1 :] for row in cells[y - rows + 1 : y + 1]]


def _printed_lines(app: PtyProcess, first: int, last: int) -> bool:
    text = "\n".join(app.terminal_text())
    return all(f"line {i:04d}" in text for i in range(first, last + 1))


def test_a_scrolling_mirror_shows_what_textual_would_draw(server: libtmux.Server, tmp_path: Path) -> None:
    script = tmp_path / "printer.py"
    script.write_text(PRINTER)
    go = tmp_path / "go"
    command = (
        f"printf 'printer waits\\n'; while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.05; done; "
        f"exec {shlex.quote(sys.executable)} {shlex.quote(str(script))}"
    )
    server.new_session("a-printer", window_command=command, x=80, y=24)
    server.new_session("b-spare", window_command="sleep 3600", x=80, y=24)
    home = tmp_path / "home"
    last = f"line {LINES - 1:04d}"
    with dashboard(server, home, "--no-poll", terminal=True) as app:
        # The mirror shows the printer's pane (its first line is in no other widget): seeded,
        # and what the pane prints from now on streams to it.
        wait_for(lambda: any("printer waits" in line for line in app.terminal_text()), 30, "the printer's pane mirrored")
        go.touch()
        wait_for(
            lambda: any("printer done" in line for line in app.terminal_text()) and _printed_lines(app, LINES - 12, LINES - 1),
            30, "the printer's last lines shown",
        )
        where, scrolled = _mirror_rows(app, last)

        # Another pane and back: Textual repaints the mirror whole, through its compositor.
        app.type(b"\x1b[B")
        wait_for(lambda: not any(last in line for line in app.terminal_text()), 10, "the other pane shown")
        app.type(b"\x1b[A")
        wait_for(lambda: any(last in line for line in app.terminal_text()), 10, "the printer's pane shown again")

        def repainted_as_drawn() -> bool:  # Textual's repaint may still be on its way
            try:
                return _mirror_rows(app, last) == (where, scrolled)
            except AssertionError:  # the last line on no row, or two, for now
                return False

        with contextlib.suppress(AssertionError):  # then the comparison below says where it differs
            wait_for(repainted_as_drawn, 10, "Textual's repaint to match the rows drawn directly")
        where_repainted, repainted = _mirror_rows(app, last)
        shown = "\n".join(app.terminal_text())
    assert where == where_repainted, f"the last line was at {where}, Textual draws it at {where_repainted}"
    for y, (ours, textuals) in enumerate(zip(scrolled, repainted, strict=True)):
        assert ours == textuals, f"row {y} differs:\n{ours}\n{textuals}"
    assert any(cell[1] != "default" for row in scrolled for cell in row), "no coloured cell was compared\n" + shown
    assert any(cell[3] for row in scrolled for cell in row), "no bold cell was compared\n" + shown
    assert any(cell[4] for row in scrolled for cell in row), "no reverse cell was compared\n" + shown

    said = [line for line in log_path(cli_env(home)).read_text().splitlines() if "mirror:" in line]
    assert said, "the dashboard did not say how it painted the mirror"
    frames = int(said[-1].split("mirror: ")[1].split()[0])
    assert frames >= LINES // 4, f"the scrolls went through Textual, not straight to the terminal: {said[-1]}"
