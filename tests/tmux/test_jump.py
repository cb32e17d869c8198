"""Jumping into a pane: switch-client from inside the watched server, attach from outside it.

A real tmux client needs a terminal, so each test starts a second private "outer" server whose
pane runs the client of the server under test (``server``, from libtmux's plugin), exactly as an
operator's terminal would.
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Iterator

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.address import socket_path_of
from nbs_tui.tmux.jump import Jumper, inside_server, plan_jump


@pytest.fixture
def outer() -> Iterator[libtmux.Server]:
    server = libtmux.Server(socket_name=f"nbs_outer_{uuid.uuid4().hex[:8]}")
    yield server
    if server.is_alive():
        server.kill()


def clients(server: libtmux.Server) -> list[tuple[str, str]]:
    """(session, active pane) of each client attached to ``server``."""
    out = server.cmd("list-clients", "-F", "#{client_control_mode}\t#{client_session}\t#{pane_id}").stdout
    return [tuple(line.split("\t")[1:]) for line in out if line and not line.startswith("1")]  # type: ignore[misc]


def socket_of(server: libtmux.Server) -> str:
    return str(socket_path_of(ServerAddress(socket_name=server.socket_name)))


def fleet_layout(server: libtmux.Server) -> tuple[str, str, str]:
    """A dashboard session and an agents session with two windows; returns (home, agent, other) pane ids."""
    dash = server.new_session("dash", x=100, y=30)
    agents = server.new_session("agents", x=100, y=30)
    agents.new_window(window_name="second", attach=False)
    second = agents.windows[-1]
    split = second.split()
    home = dash.active_pane
    other = agents.windows[0].active_pane
    assert home is not None and other is not None
    second.select_pane(str(second.panes[0].pane_id))  # the target is not the window's active pane
    return str(home.pane_id), str(split.pane_id), str(other.pane_id)


def attach_client(outer: libtmux.Server, server: libtmux.Server, session: str) -> libtmux.Pane:
    command = f"env -u TMUX tmux -L {shlex.quote(str(server.socket_name))} attach-session -t ={session}"
    window_session = outer.new_session("term", x=100, y=30, window_command=command)
    pane = window_session.active_pane
    assert pane is not None
    retry_until(lambda: len(clients(server)) == 1)
    return pane


def test_plan_chooses_switch_only_inside_the_watched_server() -> None:
    address = ServerAddress(socket_name="nbs-plan-test")
    socket = str(socket_path_of(address))
    inside = {"TMUX": f"{socket},123,0", "TMUX_PANE": "%7", "HOME": "/h"}
    assert inside_server(address, inside)
    plan = plan_jump(address, "%3", inside)
    assert plan.mode == "switch" and plan.argv == ["tmux", "-L", "nbs-plan-test", "switch-client", "-t", "%3"]

    other = {"TMUX": "/tmp/elsewhere/default,1,0", "TMUX_PANE": "%1"}
    plan = plan_jump(address, "%3", other)
    assert plan.mode == "attach" and plan.why == "inside tmux on another server"
    assert "TMUX" not in plan.env and "TMUX_PANE" not in plan.env
    assert plan.argv == ["tmux", "-L", "nbs-plan-test", "attach-session", "-t", "%3"]

    plan = plan_jump(ServerAddress(socket_path="/x/y"), "%3", {})
    assert plan.mode == "attach" and plan.why == "outside tmux"
    assert plan.argv[:3] == ["tmux", "-S", "/x/y"]
    assert plan_jump(address, "%3", inside, force_attach=True).mode == "attach"


def test_switch_inside_tmux_and_back_with_one_key(server: libtmux.Server, outer: libtmux.Server) -> None:
    home, agent, _ = fleet_layout(server)
    terminal = attach_client(outer, server, "dash")
    assert clients(server) == [("dash", home)]
    env = {"TMUX": f"{socket_of(server)},1,0", "TMUX_PANE": home, "PATH": "/usr/bin:/bin"}
    jumper = Jumper(ServerAddress(socket_name=server.socket_name), env)
    assert jumper.plan(agent).mode == "switch"

    result = jumper.switch(agent)
    assert result.ok, result.message
    assert "prefix B" in result.message
    retry_until(lambda: clients(server) == [("agents", agent)])

    terminal.send_keys("C-b", enter=False)
    terminal.send_keys("B", enter=False)
    retry_until(lambda: clients(server) == [("dash", home)])

    assert jumper.switch(agent).ok
    retry_until(lambda: clients(server) == [("agents", agent)])
    assert jumper.back().ok
    retry_until(lambda: clients(server) == [("dash", home)])


def test_switch_keeps_an_operator_binding(server: libtmux.Server, outer: libtmux.Server) -> None:
    home, agent, _ = fleet_layout(server)
    attach_client(outer, server, "dash")
    server.cmd("bind-key", "-T", "prefix", "B", "display-message", "mine")
    env = {"TMUX": f"{socket_of(server)},1,0", "TMUX_PANE": home, "PATH": "/usr/bin:/bin"}
    result = Jumper(ServerAddress(socket_name=server.socket_name), env).switch(agent)
    assert result.ok and "prefix L" in result.message
    assert "display-message mine" in "\n".join(server.cmd("list-keys", "-T", "prefix", "B").stdout)


def test_attach_from_outside_selects_the_pane_and_returns_on_detach(
    server: libtmux.Server, outer: libtmux.Server
) -> None:
    _, agent, _ = fleet_layout(server)
    jumper = Jumper(ServerAddress(socket_name=server.socket_name), {"PATH": "/usr/bin:/bin"})
    plan = jumper.attach_plan(agent)
    assert plan.mode == "attach"
    command = f"env -u TMUX {shlex.join(plan.argv)}; echo detached-$?; exec sleep 600"
    term = outer.new_session("term", x=100, y=30, window_command=f"sh -c {shlex.quote(command)}")
    retry_until(lambda: clients(server) == [("agents", agent)])
    server.cmd("detach-client", "-s", "agents")
    pane = term.active_pane
    assert pane is not None
    retry_until(lambda: "detached-0" in "\n".join(pane.capture_pane()))
