"""``nbs-tui agents`` and ``nbs-tui read`` on the real Claude Code CLI and its scripted API: an
agent started by ``nbs-tui new`` with no dashboard open is listed by the service the command
starts, with the session id, version and model Claude Code's own files give, and read back."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import libtmux
import pytest

from tests.realclaude.harness import ClaudeFleet, Text
from tests.realclaude.new_world import (
    REPO,
    NewAgentWorld,
    local_tmux,
    make_world,
    prompted_once,
    wait_until,
)


def api(world: NewAgentWorld, socket: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """The fleet API as a script runs it: the service allowed (``new`` itself runs with it off),
    no polls typed (the scripted API then sees only the prompt)."""
    env = {**world.env(), "NBS_SERVICE": "auto", "NBS_POLL_DISABLE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, *argv],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.service_auto
def test_agents_lists_a_real_agent_with_its_claude_code_facts_and_read_shows_its_reply(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "alpha", [Text("Parser built.")], trust=True)
    started = world.run(socket, str(world.workdir), "--name", "alpha", "--prompt", "build the parser", "--json")
    assert started.returncode == 0, started.stderr
    line = json.loads(started.stdout)
    pane = line["pane_id"]
    prompted_once(world, local_tmux(socket), pane, lambda p: p == "build the parser")
    try:
        listed: dict[str, object] = {}

        def settled() -> bool:
            done = api(world, socket, "agents", "--json")
            assert done.returncode == 0, done.stderr
            agents = json.loads(done.stdout)["agents"]
            listed.update(agents[0] if agents else {})
            return listed.get("state") == "idle" and bool(listed.get("model"))

        wait_until(settled, 60, "alpha listed idle, with its model")
        assert listed["pane_id"] == pane and listed["window_name"] == "alpha"
        assert listed["target"] == f"local/L-{socket}/{pane}" and listed["folder"] == str(world.workdir)
        assert listed["session_id"] == line["session_id"]  # from Claude Code's status file
        statuses = [json.loads(p.read_text()) for p in (world.home / ".claude" / "sessions").glob("*.json")]
        assert listed["version"] in [s["version"] for s in statuses]
        read = api(world, socket, "read", "alpha", "--json")
        assert read.returncode == 0, read.stderr
        out = json.loads(read.stdout)
        assert out["state"] == "idle" and "Parser built." in out["text"] and out["agent"]["pane_id"] == pane
        assert world.api.count_prompts("build the parser") == 1  # nothing typed by the commands
    finally:
        api(world, socket, "service", "stop")
