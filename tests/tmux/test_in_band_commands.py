"""The server's one command path (`TmuxServerCommands`) on the fleet's control connection (no
process): the same answers, the same errors, the same fence as a ``tmux`` process gives."""

from __future__ import annotations

import threading
from pathlib import Path

import libtmux
import pytest

from nbs_tui.sidecar.heartbeat import LeaseClient, LeaseHeartbeat
from nbs_tui.tmux.commands import Answer, Answered, TmuxServerCommands, command_line
from nbs_tui.tmux.errors import (
    PaneGone,
    PaneNotFound,
    ServerGone,
    TmuxCommandError,
    TmuxUnavailable,
)
from tests.tmux.fleet_helpers import address, new_session, running_fleet, wait_for


def test_command_lines_run_in_band_with_a_process_s_answers(server: libtmux.Server) -> None:
    session = new_session(server, "inband", 80, 24)
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    pane_id = pane.pane_id
    process = TmuxServerCommands.for_server(address(server))
    with running_fleet(server, stream_output=False, watch_all=False) as (fleet, _recorder):
        commands = fleet.commands.with_own_counts()  # the supervisor's rescans count on the fleet's
        wait_for(lambda: commands.run("display-message", "-p", "ready").in_band)
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
        assert process.display(pane_id, "#{@probe}") == text
        # several commands, and an if-shell whose commands answer in blocks of their own
        assert commands.run_many([("display-message", "-p", "a"), ("display-message", "-p", "b;")]).lines == ("a", "b;")
        for ran in (commands, process):
            with pytest.raises(PaneNotFound, match="can't find pane: %999"):
                ran.run("send-keys", "-t", "%999", "x")
            with pytest.raises(PaneNotFound, match="no such pane: %999"):
                ran.run_many([("if-shell", "-F", "1", "set-option -p -t %999 @x 1 ; display-message -p ran")])
            with pytest.raises(TmuxCommandError, match="unknown command: no-such-command"):
                ran.run("no-such-command")
            assert ran.pane_identity("%999") is None
        # the line after a failed one is answered as usual
        assert commands.run("display-message", "-p", "#{session_name}").lines == ("inband",)
        # what tmux may finish after the next line (a shell, a wait) runs as a process, also
        # inside an if-shell -F; a mere argument that names one does not
        runs, processes = commands.in_band_runs, commands.process_runs
        commands.run("run-shell", "true")
        assert commands.run_many([("if-shell", "true", "display-message -p yes")]).lines == ("yes",)
        assert not commands.run("if-shell", "-F", "1", command_line([("run-shell", "true")])).in_band
        assert commands.in_band_runs == runs and commands.process_runs == processes + 3
        assert process.run("run-shell", "true").lines == ()
        noted = "plan option 1 landed (menu gone); run-shell said"
        assert commands.run("set-option", "-p", "-t", pane_id, "@probe", noted).in_band
        assert commands.run("if-shell", "-F", "1", command_line([("display-message", "-p", "wait-for")])).in_band
        assert process.display(pane_id, "#{@probe}") == noted
        beat.stop()
        assert LeaseClient(commands).read() == ""


def test_send_many_writes_on_the_given_connection_with_the_path_s_quoting_and_errors(server: libtmux.Server) -> None:
    """The fleet's lines that do not wait (captures, seeds, pauses) go through `send_many`: the
    same argv quoting as a command run in-band (text with quotes, ``;``, ``$``, ``#{}``, ``~``
    arrives literally), each answer its raw lines or tmux's error as the command path maps it,
    the rest of one line skipped after a failure, and a closed connection a `TmuxUnavailable`."""
    session = new_session(server, "many", 80, 24)
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    pane_id = pane.pane_id
    text = 'a "quoted; $HOME #{x} ~ text;'
    answers: dict[str, Answer] = {}
    done = threading.Event()

    def keep(name: str) -> Answered:
        def got(answer: Answer) -> None:
            answers[name] = answer
            if len(answers) == 5:
                done.set()

        return got

    with running_fleet(server, stream_output=False, watch_all=False) as (fleet, _recorder):
        wait_for(lambda: bool(fleet._clients.ready_clients()))
        (client,) = fleet._clients.ready_clients()
        fleet.commands.send_many(client, [
            (("set-option", "-p", "-t", pane_id, "@probe", text), keep("set")),
            (("display-message", "-p", "-t", pane_id, "#{@probe}"), keep("shown")),
            (("capture-pane", "-p", "-t", "%999"), keep("gone")),
        ])  # fmt: skip
        fleet.commands.send_many(
            client, [(("no-such-command",), keep("refused")), (("display-message", "-p", "skipped"), keep("skipped"))],
            one_line=True,
        )  # fmt: skip
        assert done.wait(5), answers
        assert answers["set"].ok and answers["shown"].lines == (text.encode(),)
        assert isinstance(answers["gone"].error, PaneNotFound), answers["gone"]
        refused = answers["refused"].error
        assert isinstance(refused, TmuxCommandError) and "unknown command: no-such-command" in str(refused)
        assert answers["skipped"].error is not None and not answers["skipped"].lines
    with pytest.raises(TmuxUnavailable):  # the fleet stopped: its connection is closed
        fleet.commands.send_many(client, [(("display-message", "-p", "late"), None)])


def test_keys_and_text_arrive_byte_exact_by_either_route(server: libtmux.Server, tmp_path: Path) -> None:
    """``type_text`` in-band and as a process types the same bytes: quotes, ``;``, ``$``, a
    leading ``-``, unicode, newlines; ``press`` the same keys."""
    out = tmp_path / "typed"
    session = new_session(server, "keys", 80, 24, window_command=f"sh -c 'stty raw -echo; exec cat > {out}'")
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    pane_id = pane.pane_id
    process = TmuxServerCommands.for_server(address(server))
    text = '-n "q;" $HOME #{x} ~ é\nx;'
    with running_fleet(server, stream_output=False, watch_all=False) as (fleet, _recorder):
        commands = fleet.commands.with_own_counts()  # the supervisor's rescans count on the fleet's
        wait_for(lambda: commands.run("display-message", "-p", "ready").in_band)
        wait_for(lambda: out.exists())
        runs, processes = commands.in_band_runs, commands.process_runs
        assert commands.type_text(pane_id, text) and commands.press(pane_id, "Escape", "Enter")
        assert (commands.in_band_runs, commands.process_runs) == (runs + 2, processes)
        assert process.type_text(pane_id, text) and process.press(pane_id, "Escape", "Enter")
        with pytest.raises(PaneGone):
            commands.type_text("%999", "x")
    expected = (text.encode() + b"\x1b\r") * 2
    wait_for(lambda: out.read_bytes() == expected)


def test_without_a_ready_connection_a_process_runs_it(server: libtmux.Server) -> None:
    new_session(server, "inband", 80, 24)
    with running_fleet(server, stream_output=False, watch_all=False) as (fleet, _recorder):
        commands = fleet.commands
    # the fleet is stopped: no connection, the same command as a process
    in_band, processes = commands.in_band_runs, commands.process_runs
    assert commands.run("display-message", "-p", "x").lines == ("x",)
    assert (commands.in_band_runs, commands.process_runs) == (in_band, processes + 1)
    server.kill()
    with pytest.raises(ServerGone):
        commands.run("display-message", "-p", "x")
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
