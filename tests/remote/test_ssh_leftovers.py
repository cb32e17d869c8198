"""Nothing is left behind on either side when a dashboard watching a host through ssh ends.

Found by hand (issue 28): a dashboard whose ssh connections were killed once and came back, then
whose terminal closed (SIGHUP), left its ssh ControlMaster running with no parent, and two
``tmux -C attach-session`` clients attached on the host, which tmux never let go (a client whose
session closes while output is queued for it is kept by tmux 3.3a-3.5a), so the host's server
answered "server exited unexpectedly" to every command after a ``kill-server``. Now the master is
a child of the dashboard tied to it, and a control client on the host dies with its ssh session
(`nbs_tui.tmux.host_scripts.TIED_CLIENT`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import libtmux
import pytest

from nbs_tui.tmux.control import ControlClient
from tests.remote.conftest import MARK, Host, SshLab, _comm, marked_processes
from tests.remote.helpers import new_session, runner_for
from tests.tmux.fleet_helpers import process_alive, wait_for

REPO = Path(__file__).resolve().parents[2]
FLOOD = "sh -c 'while :; do seq 1 3000; done'"
"""A pane whose output tmux always has queued for a streaming client."""


def _control_clients(host: Host) -> list[int]:
    out = host.tmux("list-clients", "-F", "#{client_pid} #{client_control_mode}", check=False)
    return [int(f[0]) for f in (line.split() for line in out.splitlines()) if len(f) == 2 and f[1] == "1"]


def _ssh_processes(lab: SshLab) -> list[int]:
    """Every ssh client this lab's processes started (the dashboard's master and its sessions)."""
    return [pid for pid in marked_processes(lab.mark, lab.root) if _comm(pid) == "ssh" and process_alive(pid)]


def _server_gone(host: Host, pid: int) -> bool:
    done = subprocess.run(["tmux", "list-sessions"], env=host.env(), capture_output=True, text=True, check=False)
    return not process_alive(pid) and "no server running" in done.stderr


def test_a_control_client_whose_ssh_dies_mid_flood_leaves_the_host(ssh_lab: SshLab) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "flood", FLOOD)
    runner = runner_for(ssh_lab, "hosta")
    runner.prepare()
    client = ControlClient(
        runner.server, "flood", on_output=lambda _pane, _data: None, on_notification=lambda _line: None,
        on_exit=lambda _why: None, runner=runner,
    )  # fmt: skip
    try:
        client.start()
        wait_for(lambda: client.bytes_read > 100_000)  # streaming: tmux has output queued for it
        (remote,) = _control_clients(a)
        assert client.pid is not None
        os.kill(client.pid, signal.SIGKILL)  # its ssh session ends; the connection stays
        wait_for(lambda: not process_alive(remote), 10)
        assert _control_clients(a) == []
    finally:
        client.close()
        runner.close()


def _dashboard_in_a_terminal(lab: SshLab, server: libtmux.Server, home: Path) -> int:
    """The dashboard on hosta, in a pane of a local tmux server (its terminal); returns its pid."""
    home.mkdir()
    config = home / "nbs-tui.toml"
    options = json.dumps(list(lab.ssh_options))  # a TOML array of strings, as JSON writes it
    config.write_text(f'service = "off"\n\n[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = {options}\n')
    env = {
        "HOME": str(home), "XDG_STATE_HOME": str(home / "state"), "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_RUNTIME_DIR": str(lab.root), MARK: lab.mark, "TERM": "xterm-256color", "LANG": "C.UTF-8",
    }  # fmt: skip
    argv = [sys.executable, "-m", "nbs_tui", "--no-poll", "--config", str(config), "--host", "hosta"]
    command = f"cd {shlex.quote(str(REPO))} && exec env -u TMUX -u TMUX_PANE " + shlex.join(
        [*(f"{k}={v}" for k, v in env.items()), *argv]
    )
    session = server.new_session("dash", window_command=command, x=160, y=48)
    return int(session.active_pane.pane_pid)  # type: ignore[union-attr, arg-type]


@pytest.mark.parametrize("ending", ["hangup", "terminate", "kill", "quit"])
def test_a_dashboard_ended_after_a_reconnect_leaves_nothing_behind(
    ssh_lab: SshLab, server: libtmux.Server, tmp_path: Path, ending: str
) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "work", FLOOD)
    a.tmux("new-window", "-d", "-t", "work")
    server_pid = int(a.tmux("display-message", "-p", "#{pid}"))
    dashboard = _dashboard_in_a_terminal(ssh_lab, server, tmp_path / "home")
    wait_for(lambda: len(_control_clients(a)) == 2, 30)  # the streaming client and the guard
    first = set(_control_clients(a))
    killed = _ssh_processes(ssh_lab)
    for pid in killed:  # the connections die once...
        with contextlib.suppress(ProcessLookupError):  # a session ends with its master
            os.kill(pid, signal.SIGKILL)
    # ...and come back: two new clients (the old ones ended, or were reaped as orphans)
    wait_for(lambda: len(_control_clients(a)) == 2 and not first & set(_control_clients(a)), 30)
    assert not set(killed) & set(_ssh_processes(ssh_lab))
    if ending == "hangup":
        server.cmd("kill-session", "-t", "dash")  # its terminal closes: SIGHUP
    elif ending in ("terminate", "kill"):
        os.kill(dashboard, signal.SIGTERM if ending == "terminate" else signal.SIGKILL)
    else:
        server.cmd("send-keys", "-t", "dash", "q")
    wait_for(lambda: not process_alive(dashboard), 20)
    wait_for(lambda: not _ssh_processes(ssh_lab), 10)  # no master, no session left here
    wait_for(lambda: not _control_clients(a) and not a.sshd_sessions(), 10)  # nor there
    a.tmux("kill-server")
    wait_for(lambda: _server_gone(a, server_pid), 10)
