"""No escape sequence from a pane reaches the operator's terminal.

A folder named with ESC sequences (a real one, under a real tmux pane), and a listing whose
session name, title and command carry them (tmux escapes or refuses most, not the folder), are
put through the real discovery parser and shown: every frame the dashboard would write is
rendered to terminal output, which must carry none of the pane's sequences, while its text
is still there in visible form. The headless JSON lines likewise.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until
from rich.console import Console

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.core.screen.text import printable
from nbs_tui.dashboard.messages import BackendProblem, PaneStatus, PaneStatusChanged
from nbs_tui.runtime.headless import _Printer
from nbs_tui.tmux.discovery import FIELDS, SEP, list_panes, parse_panes
from nbs_tui.tmux.port import FleetListener
from tests.app.fakes import FakeFleet
from tests.app.helpers import static_text, wait_for
from tests.app.textual_probes import full_repaint

EVIL = "x\x1b]2;PWNED\x07\x1b[31mRED\x1b[2J\x9b2Jq\x7fz"
SEQUENCES = ("\x1b]2;PWNED", "\x1b[31mRED", "\x1b[2J", "\x9b", "\x7f")


def _frame(app: NbsApp) -> str:
    """What the driver would write for a full repaint of the screen now."""
    update = full_repaint(app.screen)
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=app.size.width, color_system="truecolor").print(update, end="")
    return out.getvalue()


def _listing(path: str) -> str:
    values = {
        "pid": "1", "session_id": "$1", "session_name": "s" + EVIL, "window_id": "@1", "window_index": "0",
        "window_name": "w" + EVIL, "pane_id": "%1", "pane_index": "0", "pane_pid": str(os.getpid()),
        "pane_width": "80", "pane_height": "24", "pane_active": "1", "window_active": "1", "pane_dead": "0",
        "pane_current_command": "c" + EVIL, "pane_current_path": path, "pane_title": "✳ Fix [/api] [bold]x " + EVIL,
    }
    return SEP.join(values[name] for name in FIELDS) + "\n"


def test_a_real_folder_with_escapes_comes_through_discovery_raw(server: libtmux.Server, tmp_path: Path) -> None:
    folder = tmp_path / ("proj" + EVIL.replace("\x9b", ""))  # a file name is bytes: keep it UTF-8-clean
    folder.mkdir()
    server.new_session("evil", start_directory=str(folder))

    def paths() -> list[str]:
        return [p.info.current_path for p in list_panes(ServerAddress(socket_name=server.socket_name))]

    # tmux reads a pane's folder from its process: "" until that runs (seen under load)
    retry_until(lambda: all(paths()), 10, raises=False)
    # tmux hands the folder over as it is: only the display may make it printable
    assert str(folder) in paths(), paths()


async def test_titles_paths_and_names_are_shown_without_their_escape_sequences(tmp_path: Path) -> None:
    info = parse_panes(_listing(f"/work/proj{EVIL}"))[0].info
    assert info.current_path == f"/work/proj{EVIL}"  # kept: the control plane opens it
    holder: dict[str, FakeFleet] = {}

    def factory(listener: FleetListener) -> FakeFleet:
        holder["fleet"] = FakeFleet(listener, [info])
        return holder["fleet"]

    app = create_app(Settings(), factory, control_plane=False, sidecar=False, claude=False)
    async with app.run_test(size=(200, 50)) as pilot:
        app.post_message(PaneStatusChanged("%1", PaneStatus("%1", AgentState.IDLE, reason="reason " + EVIL)))
        await wait_for(pilot, lambda: "PWNED" in static_text(app.dashboard.detail), what="the details of the pane")
        app.dashboard.status_bar.set_lease("sidecar: " + EVIL, False)
        app.post_message(BackendProblem("tmux", f"cannot read /w/[/x]{EVIL}"))
        await pilot.pause()
        # brackets are text, not markup (a title with "[/api]" used to stop the panel)
        assert "Fix [/api] [bold]x" in static_text(app.dashboard.detail)
        await pilot.press("E")
        await pilot.pause()
        assert "cannot read /w/[/x]" in _frame(app)
        await pilot.press("escape")
        await pilot.pause()
        frame = _frame(app)
        for sequence in SEQUENCES:
            assert sequence not in frame, f"{sequence!r} would reach the terminal"
        assert "^[]2;PWNED^G" in frame and "<9B>2J" in frame  # shown, visibly


def test_headless_json_lines_escape_every_control_character() -> None:
    out = io.StringIO()
    _Printer(out)({"event": "state", "pane": "%1", "title": EVIL, "path": f"/p/{EVIL}"})
    line = out.getvalue()
    for sequence in SEQUENCES:
        assert sequence not in line
    assert json.loads(line)["title"] == EVIL  # the same JSON value


def test_printable_leaves_no_control_character() -> None:
    shown = printable(EVIL + "\n\t")
    assert shown.isprintable() and printable("✳ Claude Code · é 中") == "✳ Claude Code · é 中"
    assert printable("a\nb", multiline=True) == "a\nb"
