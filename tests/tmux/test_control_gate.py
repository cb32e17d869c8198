"""Switching control clients, or sessions coming and going in bursts, never crashes tmux
(`nbs_tui.tmux.control.StartGate`, `nbs_tui.tmux.fleet.STRUCTURE_QUIET`).

tmux 3.2-3.6b segfault when a control client that is still identifying itself is sent a
notification every control client gets, such as the ``%client-detached`` of another control
client closing. A dashboard switching the session it watches closes one viewer while the next
one attaches: here that switch is done hundreds of times, the close a few milliseconds after
the start on another thread, as the supervisor and the UI do. Without the gate tmux 3.3a died
within ~30-100 switches in every run.

Two processes of nbs-tui (a dashboard and its service) race the same way; they share a lock
file per server (`nbs_tui.tmux.gate_file`). Without it, two processes starting and closing
clients in a loop crashed tmux 3.3a in every run of 600 cycles each. With it, but while a close
of a client not yet identified let that client's hold go (`StartGate.closing`), in 3 runs of 23:
the other process's close then detached into the identify (tmux's server log).

The same crash comes from tmux's own notifications: a script that makes sessions in a row
(``%sessions-changed`` goes to every control client) while a fleet starts a client for each new
one. A fleet therefore starts a new session's client only once they have been quiet a moment.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time

import libtmux

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.control import ControlClient
from nbs_tui.tmux.fleet import STRUCTURE_QUIET
from tests.tmux.fleet_helpers import process_alive, running_fleet, tmux, wait_for

SWITCHES = 300


def _client(server: libtmux.Server, session_id: str) -> ControlClient:
    client = ControlClient(
        ServerAddress(socket_name=server.socket_name),
        session_id,
        on_output=lambda pane, data: None,
        on_notification=lambda line: None,
        on_exit=lambda why: None,
    )
    client.start()
    return client


def test_a_viewer_closing_while_the_next_attaches_leaves_tmux_up(server: libtmux.Server) -> None:
    for n in range(3):
        server.new_session(f"s{n}", window_command="sleep 3600", x=80, y=24)
    tmux_pid = int(server.cmd("display-message", "-p", "#{pid}").stdout[0])
    sessions = [str(session.session_id) for session in server.sessions]
    assert all(id.startswith("$") for id in sessions)
    rng = random.Random(13)
    current = _client(server, sessions[0])
    time.sleep(0.3)
    try:
        for switch in range(SWITCHES):
            started: list[ControlClient] = []
            target = sessions[(switch + 1) % len(sessions)]
            starter = threading.Thread(target=lambda into=started, session=target: into.append(_client(server, session)))
            closer = threading.Thread(target=current.close)
            starter.start()
            time.sleep(rng.uniform(0, 0.004))  # the close lands while the start is identifying
            closer.start()
            starter.join()
            closer.join()
            current = started[0]
            time.sleep(0.02)
            assert process_alive(tmux_pid), f"tmux crashed at switch {switch + 1}"
        reply = current.command_line("display-message -p '#{session_id}'")
        assert reply.ok and reply.text() == [sessions[SWITCHES % len(sessions)]]
    finally:
        current.close()


def test_two_processes_starting_and_closing_clients_leave_tmux_up(server: libtmux.Server) -> None:
    for name in ("a", "b"):
        server.new_session(name, window_command="sleep 3600", x=80, y=24)
    tmux_pid = int(server.cmd("display-message", "-p", "#{pid}").stdout[0])
    cyclers = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.tmux.gate_cycler", str(server.socket_name), session, "600", str(seed)],
            stdout=subprocess.PIPE, text=True,
        )
        for seed, session in enumerate(("a", "b"))
    ]
    outputs = [cycler.communicate(timeout=120)[0] for cycler in cyclers]
    assert process_alive(tmux_pid), "tmux crashed"
    assert outputs == ["done\n", "done\n"]
    assert [cycler.returncode for cycler in cyclers] == [0, 0]


def test_no_client_starts_while_sessions_keep_changing(server: libtmux.Server) -> None:
    """A new session's client waits until sessions and windows have been quiet for
    `STRUCTURE_QUIET`: its identify must not meet the notifications of a burst of them. (A
    burst itself cannot be made crash-free here: tmux's own notifications are outside our
    reach; a loop of bursts of 15 sessions crashed tmux 3.3a in the first two without the wait,
    and in two runs of six with it: bench/results/2026-11-27-faults.md has the numbers.)"""
    server.new_session("base", window_command="sleep 3600", x=80, y=24)
    with running_fleet(server, watch_all=False, stream_output=False, rescan_interval=0.1) as (fleet, _recorder):
        assert fleet.wait_seeded(20)
        wait_for(lambda: len(fleet.attached_sessions()) == 1)
        made = time.monotonic()
        tmux(server, "new-session", "-d", "-s", "late", "sleep 3600")
        wait_for(lambda: len(fleet.panes()) == 2)  # seen, and its client then started once quiet
        wait_for(lambda: len(fleet.attached_sessions()) == 2)
        assert time.monotonic() - made >= STRUCTURE_QUIET
        fleet._clients.structure_at = time.monotonic() + 3600  # as if sessions kept changing from now on
        tmux(server, "new-session", "-d", "-s", "later", "sleep 3600")
        wait_for(lambda: len(fleet.panes()) == 3)
        time.sleep(1.0)  # ten rescans
        assert len(fleet.attached_sessions()) == 2, "a client started while sessions were changing"
        fleet._clients.structure_at = time.monotonic() - STRUCTURE_QUIET  # quiet now
        wait_for(lambda: len(fleet.attached_sessions()) == 3)
