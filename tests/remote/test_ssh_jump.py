"""Jumping into a pane on another host: ``ssh -t DEST tmux attach -t PANE``, in a new window of
the operator's own tmux when the dashboard runs inside tmux, in the foreground otherwise."""

from __future__ import annotations

import libtmux

from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.jump import Jumper, plan_jump
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session
from tests.tmux.fleet_helpers import tmux, wait_for


def test_plans_go_through_ssh() -> None:
    host = HostSpec("gpu", "me@gpu", ("-p", "2222"), socket_name="agents")
    outside = plan_jump(ServerAddress(), "%3", {"PATH": "/bin"}, host=host)
    assert outside.mode == "attach"
    assert outside.argv == ["ssh", "-p", "2222", "-t", "me@gpu", "--", "tmux -u -L agents attach-session -t %3"]
    inside = plan_jump(ServerAddress(), "%3", {"TMUX": "/tmp/x,1,0", "TMUX_PANE": "%1"}, host=host)
    assert inside.mode == "switch"
    assert inside.argv[:4] == ["tmux", "new-window", "-n", "gpu:%3"]
    assert inside.argv[4] == "ssh -p 2222 -t me@gpu -- 'tmux -u -L agents attach-session -t %3'"
    # a local host is the usual jump
    assert plan_jump(ServerAddress(), "%3", {}, host=HostSpec("local")).argv[0] == "tmux"


def test_inside_tmux_a_new_window_attaches_to_the_remote_pane(ssh_lab: SshLab, server: libtmux.Server) -> None:
    a = ssh_lab.hosts["hosta"]
    remote_pane = new_session(a, "far", "sh -c 'echo remote-marker; exec cat'")
    dash = server.new_session(session_name="dash", window_command="cat")
    home = str(dash.active_pane.pane_id)  # type: ignore[union-attr]
    socket = tmux(server, "display-message", "-p", "#{socket_path}").strip()
    assert dash.session_id is not None
    environ = {"PATH": "/usr/bin:/bin", "TMUX": f"{socket},1,{dash.session_id.lstrip('$')}", "TMUX_PANE": home}
    jumper = Jumper(ServerAddress(), environ, host=HostSpec("hosta", "hosta", ssh_lab.ssh_options))
    result = jumper.switch(remote_pane)
    assert result.ok, result.message
    window = f"hosta:{remote_pane}"
    wait_for(lambda: window in tmux(server, "list-windows", "-a", "-F", "#{window_name}").split("\n"))
    wait_for(lambda: "remote-marker" in tmux(server, "capture-pane", "-p", "-t", f"dash:{window}"), 20)
    # a person's client (not control mode) is attached on hosta now
    assert "0" in a.tmux("list-clients", "-F", "#{client_control_mode}").split()
    tmux(server, "kill-window", "-t", f"dash:{window}")
    wait_for(lambda: not a.tmux("list-clients", "-F", "#{client_pid}").strip(), 20)
