"""A pane's history read on demand through the fleet (`FleetPort.capture_history`): oldest
first with colours, the visible screen last; a pane in the alternate screen says so; over the
control connection and, without one, through the runner."""

from __future__ import annotations

import shlex

import libtmux
import pytest

from nbs_tui.tmux.port import PaneGone

from .fleet_helpers import capture_plain, new_session, running_fleet, tmux, wait_for

PRINT = "for i in $(seq 1 300); do printf '\\033[31mline %03d\\033[0m\\n' $i; done"


def test_history_with_colours_then_alternate_screen(server: libtmux.Server) -> None:
    session = new_session(server, "hist", x=80, y=24)
    pane = session.active_pane
    assert pane is not None and pane.pane_id is not None
    pane_id = pane.pane_id
    pane.send_keys(PRINT, enter=True)
    wait_for(lambda: any("line 300" in line for line in capture_plain(server, pane_id)))
    with running_fleet(server) as (fleet, _recorder):
        wait_for(lambda: any(p.pane_id == pane_id for p in fleet.panes()))
        history = fleet.capture_history(pane_id, 1000)
        assert not history.alternate
        assert history.history_size >= 270
        first = next(i for i, line in enumerate(history.lines) if "line 001" in line)
        assert "\x1b[31mline 001" in history.lines[first]  # coloured (capture-pane -e)
        assert "line 300" in history.lines[first + 299]
        assert len(history.lines) == history.history_size + 24  # history, then the screen
        assert len(fleet.capture_history(pane_id, 50).lines) == 50 + 24  # only as far back as asked

        pane.send_keys(f"exec python3 -c {shlex.quote(ALT)}", enter=True)
        wait_for(lambda: tmux(server, "display-message", "-p", "-t", pane_id, "#{alternate_on}").strip() == "1")
        alt = fleet.capture_history(pane_id, 1000)
        assert alt.alternate and alt.history_size == 0
        assert len(alt.lines) == 24 and any("FULL SCREEN" in line for line in alt.lines)
        with pytest.raises(PaneGone):
            fleet.capture_history("%999", 10)


ALT = "import sys, time; sys.stdout.write('\\x1b[?1049h\\x1b[HFULL SCREEN'); sys.stdout.flush(); time.sleep(600)"
