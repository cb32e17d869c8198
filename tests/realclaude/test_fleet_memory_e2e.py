"""The acting runtime remembers its fleet (issue 29, item 2), on the real Claude Code CLI.

Agents are started by the real ``nbs-tui new``; a real ``nbs-tui --headless`` (which holds the
sidecar lease, as the service does) keeps ``$XDG_STATE_HOME/nbs-tui/fleet-L-<socket>.json``:
each agent's window, folder, name and Claude Code session id; a ``/clear`` changes the id
remembered; a window closed is forgotten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.core.detection.detect import detect_text
from tests.headless_proc import Headless
from tests.realclaude.harness import ClaudeFleet, Text
from tests.realclaude.new_world import NewAgentWorld, make_world, started_sessions, wait_until


def memory_file(world: NewAgentWorld, socket: str) -> Path:
    return world.state / "nbs-tui" / f"fleet-L-{socket}.json"


def agents(path: Path) -> dict[str, dict[str, Any]]:
    """name -> the remembered agent with its window and folder (nothing when no file yet)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    found = {}
    for window in data["windows"]:
        for pane in window["panes"]:
            if pane["agent"]:
                found[pane["agent"]["name"]] = {**pane["agent"], "window": window["name"], "folder": pane["folder"]}
    return found


def status_session(world: NewAgentWorld) -> str | None:
    for path in (world.home / ".claude" / "sessions").glob("*.json"):
        return str(json.loads(path.read_text()).get("sessionId"))
    return None


@pytest.mark.timeout(240)
def test_the_holder_remembers_each_agent_its_newest_session_and_forgets_a_closed_window(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    alpha = make_world(claude_fleet, tmp_path, "alpha", [Text("A1."), Text("A2.")], trust=True, hooks=True)
    beta = make_world(claude_fleet, tmp_path, "beta", [Text("B1.")], trust=True)
    beta.state = alpha.state  # one operator: one state folder
    for world, name in ((alpha, "alpha"), (beta, "beta")):
        done = world.run(socket, str(world.workdir), "--name", name, "--prompt", f"hello {name}", "--json")
        assert done.returncode == 0, done.stderr
    path = memory_file(alpha, socket)
    with Headless(["--config", str(alpha.config), "-L", socket], env=alpha.env()) as run:
        wait_until(lambda: set(agents(path)) == {"alpha", "beta"}, 30, f"both agents in {path}")
        wait_until(
            lambda: agents(path)["alpha"]["session_id"] == status_session(alpha)
            and agents(path)["beta"]["session_id"] == status_session(beta),
            30, "the status files' session ids remembered",
        )  # fmt: skip
        remembered = agents(path)
        assert remembered["alpha"]["folder"] == str(alpha.workdir) and remembered["alpha"]["window"] == "alpha"
        assert remembered["alpha"]["command"][-2:] == ["-n", "alpha"]
        assert remembered["alpha"]["config_dir"] == str(alpha.home / ".claude")
        first = remembered["alpha"]["session_id"]

        pane = next(line.split()[0] for line in server.cmd("list-panes", "-a", "-F", "#{pane_id} #{window_name}").stdout if line.endswith(" alpha"))
        server.cmd("send-keys", "-t", pane, "-l", "/clear")
        screen = lambda: "\n".join(server.cmd("capture-pane", "-p", "-t", pane).stdout)  # noqa: E731
        wait_until(lambda: "/clear" in (detect_text(screen()).input_text or ""), 10, "/clear in the box")
        server.cmd("send-keys", "-t", pane, "Enter")
        # the newest session is the last SessionStart's (2.1.100 keeps the old id in its status file)
        wait_until(lambda: started_sessions(alpha)[-1:] != [first] and len(started_sessions(alpha)) >= 2, 20, "/clear")
        wait_until(lambda: agents(path)["alpha"]["session_id"] == started_sessions(alpha)[-1], 20, "the new id remembered")

        server.cmd("kill-window", "-t", "=agents:beta")
        wait_until(lambda: set(agents(path)) == {"alpha"}, 20, "beta forgotten")
    assert run.returncode == 0, run.stderr
    assert not [e for e in run.events if e.get("event") == "error" and "fleet memory" in json.dumps(e)]
