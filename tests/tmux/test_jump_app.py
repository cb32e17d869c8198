"""Jumping from the running dashboard: ``nbs-tui`` runs in a real tmux pane and is driven by keys.

- inside tmux: the app runs in a pane of the server it watches; ``g`` switches the operator's
  client to the agent's pane and ``prefix B`` brings it back;
- outside tmux (and inside tmux on another server): the app runs in a pane of a separate
  "terminal" server; ``g`` suspends it and attaches to the watched server in the same terminal;
  detaching resumes the dashboard.
"""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

WAIT = 60.0  # generous: the machine running the suite may be busy


@pytest.fixture
def outer() -> Iterator[libtmux.Server]:
    server = libtmux.Server(socket_name=f"nbs_term_{uuid.uuid4().hex[:8]}")
    yield server
    if server.is_alive():
        server.kill()


def app_command(watched: libtmux.Server, log: Path, unset_tmux: bool = False) -> str:
    """``python -m nbs_tui -L <socket>``, the real command line, with its state under ``log``'s folder."""
    config = log.parent / "config.toml"
    config.write_text(
        f"action_log = {str(log)!r}\n"
        f"hook_spool = {str(log.parent / 'hooks.jsonl')!r}\n"
        f"claude_home = {str(log.parent / 'claude-home')!r}\n",
        encoding="utf-8",
    )
    argv = [sys.executable, "-m", "nbs_tui", "-L", str(watched.socket_name), "--config", str(config)]
    prefix = "env -u TMUX -u TMUX_PANE " if unset_tmux else ""
    return prefix + " ".join(shlex.quote(a) for a in argv)


def screen(server: libtmux.Server, target: str) -> str:
    return "\n".join(server.cmd("capture-pane", "-p", "-t", target).stdout)


def clients(server: libtmux.Server) -> list[tuple[str, str]]:
    out = server.cmd("list-clients", "-F", "#{client_control_mode}\t#{client_session}\t#{pane_id}").stdout
    return [tuple(line.split("\t")[1:]) for line in out if line and not line.startswith("1")]  # type: ignore[misc]


def jumps(log: Path) -> list[dict[str, str]]:
    if not log.exists():
        return []
    return [r for r in map(json.loads, log.read_text().splitlines()) if r["action"] == "jump"]


def filter_and_jump(server: libtmux.Server, app_pane: str) -> None:
    """Narrow the list to the agents session, then press g, as the operator would.

    Keys typed while the app is still starting can be lost (its terminal queries are in flight),
    so a try whose effect does not show is cleared with Escape and made again.
    """

    def attempt() -> bool:
        server.cmd("send-keys", "-t", app_pane, "/")
        if not retry_until(lambda: "Filter (Enter keeps" in screen(server, app_pane), 3, raises=False):
            return False
        server.cmd("send-keys", "-t", app_pane, "-l", "b-agents")
        if retry_until(lambda: "filter: b-agents" in screen(server, app_pane), 3, raises=False):
            return True
        server.cmd("send-keys", "-t", app_pane, "Escape")  # clears the filter and closes the bar
        return False

    retry_until(attempt, WAIT, interval=0.5)
    server.cmd("send-keys", "-t", app_pane, "Enter")  # keep the filter, back to the list
    # A key typed before the box has taken the Enter would still land in the box: wait for it to fold.
    retry_until(lambda: "Filter (Enter keeps" not in screen(server, app_pane), WAIT)
    server.cmd("send-keys", "-t", app_pane, "g")


@pytest.mark.slow
def test_jump_inside_tmux_switches_the_client_and_prefix_b_returns(
    server: libtmux.Server, outer: libtmux.Server, tmp_path: Path
) -> None:
    log = tmp_path / "actions.log"
    dash = server.new_session("a-dash", x=150, y=40, window_command=app_command(server, log))
    agents = server.new_session("b-agents", x=150, y=40, window_command="sleep 600")
    app_pane = str(dash.active_pane.pane_id)  # type: ignore[union-attr]
    agent_pane = str(agents.active_pane.pane_id)  # type: ignore[union-attr]
    term = outer.new_session(
        "term", x=150, y=40, window_command=f"env -u TMUX tmux -L {server.socket_name} attach-session -t =a-dash"
    )
    retry_until(lambda: clients(server) == [("a-dash", app_pane)], WAIT)
    retry_until(lambda: "b-agents" in screen(server, app_pane), WAIT)

    filter_and_jump(server, app_pane)
    retry_until(lambda: clients(server) == [("b-agents", agent_pane)], WAIT)
    retry_until(lambda: len(jumps(log)) == 1, WAIT)
    record = jumps(log)[0]
    assert record["outcome"] == "sent" and record["pane_id"] == agent_pane and record["sent"] == "switch-client"

    outer_pane = str(term.active_pane.pane_id)  # type: ignore[union-attr]
    outer.cmd("send-keys", "-t", outer_pane, "C-b")
    outer.cmd("send-keys", "-t", outer_pane, "B")
    retry_until(lambda: clients(server) == [("a-dash", app_pane)], WAIT)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["outside-tmux", "tmux-on-another-server"])
def test_jump_from_elsewhere_suspends_attaches_and_resumes(
    where: str, server: libtmux.Server, outer: libtmux.Server, tmp_path: Path
) -> None:
    log = tmp_path / "actions.log"
    agents = server.new_session("b-agents", x=150, y=40, window_command="sleep 600")
    agent_pane = str(agents.active_pane.pane_id)  # type: ignore[union-attr]
    term = outer.new_session(
        "term", x=150, y=40, window_command=app_command(server, log, unset_tmux=where == "outside-tmux")
    )
    app_pane = str(term.active_pane.pane_id)  # type: ignore[union-attr]
    retry_until(lambda: "b-agents" in screen(outer, app_pane), WAIT)

    filter_and_jump(outer, app_pane)
    retry_until(lambda: clients(server) == [("b-agents", agent_pane)], WAIT)
    server.cmd("detach-client", "-s", "b-agents")
    retry_until(lambda: len(jumps(log)) == 1, WAIT)
    record = jumps(log)[0]
    assert record["outcome"] == "sent" and record["sent"] == "attach" and record["pane_id"] == agent_pane
    retry_until(lambda: "Back from the pane" in screen(outer, app_pane), WAIT)
    retry_until(lambda: "filter: b-agents" in screen(outer, app_pane), WAIT)  # back as it was
