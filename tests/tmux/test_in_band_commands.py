"""The lease's and the sidecar's tmux commands on the fleet's control connection (no process):
the same answers, the same errors, the same fence as a ``tmux`` process gives."""

from __future__ import annotations

import libtmux
import pytest

from nbs_tui.sidecar.heartbeat import LeaseClient, LeaseHeartbeat
from nbs_tui.tmux.operate import TmuxCommandError, TmuxCommands
from nbs_tui.tmux.port import TmuxUnavailable
from tests.tmux.fleet_helpers import address, new_session, running_fleet, wait_for


def test_command_lines_run_in_band_with_a_process_s_answers(server: libtmux.Server) -> None:
    session = new_session(server, "inband", 80, 24)
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    pane_id = pane.pane_id
    process = TmuxCommands(address(server))
    with running_fleet(server, stream_output=False, watch_all=False) as (fleet, _recorder):
        wait_for(lambda: fleet.command_line("display-message -p ready") is not None)
        commands = TmuxCommands(address(server), in_band=fleet)
        beat = LeaseHeartbeat(commands)
        beat.tick()  # the version check runs as a process; the compare-and-set in-band
        assert beat.holding and commands.in_band_runs >= 1
        assert LeaseClient(commands).read() == LeaseClient(process).read()
        fence = LeaseClient(commands)
        text = 'a "quoted; $HOME #{x} ~ text;'
        runs = commands.in_band_runs
        assert fence.fenced(beat.token, [("set-option", "-p", "-t", pane_id, "@probe", text)])
        assert not fence.fenced("0" * 16, [("set-option", "-p", "-t", pane_id, "@probe", "x")])
        assert commands.in_band_runs == runs + 2
        assert process.run("display-message", "-p", "-t", pane_id, "#{@probe}") == text + "\n"
        # several commands, and an if-shell whose commands answer in blocks of their own
        assert commands.run_many([("display-message", "-p", "a"), ("display-message", "-p", "b;")]) == "a\nb;\n"
        for ran in (commands, process):
            with pytest.raises(TmuxCommandError, match="can't find pane: %999"):
                ran.run("send-keys", "-t", "%999", "x")
            with pytest.raises(TmuxCommandError, match="no such pane: %999"):
                ran.run_many([("if-shell", "-F", "1", "set-option -p -t %999 @x 1 ; display-message -p ran")])
        # the line after a failed one is answered as usual
        assert commands.run("display-message", "-p", "#{session_name}") == "inband\n"
        # what tmux may finish after the next line (a shell) runs as a process
        runs = commands.in_band_runs
        commands.run("run-shell", "true")
        assert commands.run_many([("if-shell", "true", "display-message -p yes")]) == "yes\n"
        assert commands.in_band_runs == runs
        beat.stop()
        assert LeaseClient(commands).read() == ""


def test_without_a_ready_connection_a_process_runs_it(server: libtmux.Server) -> None:
    new_session(server, "inband", 80, 24)
    with running_fleet(server, stream_output=False, watch_all=False) as (fleet, _recorder):
        commands = TmuxCommands(address(server), in_band=fleet)
    # the fleet is stopped: no connection, the same command as a process
    assert commands.run("display-message", "-p", "x") == "x\n"
    assert commands.in_band_runs == 0
    server.kill()
    with pytest.raises(TmuxUnavailable):
        commands.run("display-message", "-p", "x")


def test_discovery_runs_in_band_once_a_connection_is_ready(server: libtmux.Server) -> None:
    session = new_session(server, "inband", 80, 24)
    with running_fleet(server, stream_output=False, watch_all=False, rescan_interval=0.2) as (fleet, recorder):
        wait_for(lambda: fleet.discoveries_in_band > 0)
        window = session.new_window(window_name="later")
        pane = window.active_pane
        assert pane is not None
        wait_for(lambda: any(p.pane_id == pane.pane_id for p in recorder.last_fleet))
        assert {p.pane_id for p in fleet.panes()} == {
            p.pane_id for w in session.windows for p in w.panes
        }
