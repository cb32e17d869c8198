"""The work queue on the real Claude Code CLI against the scripted API (docs/queue.md): tasks
added with ``nbs-tui queue add`` and no dashboard open are handed out by the service the command
starts; each prompt reaches the API once, in order; an agent holds one task at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import libtmux
import pytest

from tests.realclaude.harness import ClaudeFleet, Text
from tests.realclaude.new_world import REPO, NewAgentWorld, make_world, wait_until


def nbs(world: NewAgentWorld, socket: str, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """nbs-tui as a script runs it: the service allowed, no polls typed (the API then sees only
    the tasks)."""
    environ = {**world.env(), "NBS_SERVICE": "auto", "NBS_POLL_DISABLE": "1", **env}
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, *argv],
        capture_output=True, text=True, timeout=120, env=environ, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def tasks(world: NewAgentWorld, socket: str) -> list[dict[str, Any]]:
    done = nbs(world, socket, "queue", "ls", "--json")
    assert done.returncode == 0, done.stderr
    listed: list[dict[str, Any]] = json.loads(done.stdout)["tasks"]
    return sorted(listed, key=lambda task: int(task["id"]))


def records(world: NewAgentWorld, socket: str) -> list[dict[str, Any]]:
    path = world.state / "nbs-tui" / f"queue-L-{socket}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.service_auto
def test_start_tasks_get_new_agents_whose_prompts_reach_the_api_once_and_end_done(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "q", [], trust=True)
    world.api.add(Text("Parser built."), Text("Tests written."))
    try:
        for text in ("build the parser", "write the tests"):
            added = nbs(world, socket, "queue", "add", text, "--start", "--folder", str(world.workdir))
            assert added.returncode == 0, added.stderr
        wait_until(lambda: [t["state"] for t in tasks(world, socket)] == ["done", "done"], 90, "both tasks done")
        listed = tasks(world, socket)
        assert sorted(t["message"] for t in listed) == ["Parser built.", "Tests written."]
        assert len({t["pane"] for t in listed}) == 2, "each task its own new agent"
        windows = server.cmd("list-windows", "-a", "-F", "#{window_name}").stdout
        assert {"task-1", "task-2"} <= set(windows)
        assert world.api.count_prompts("build the parser") == 1 and world.api.count_prompts("write the tests") == 1
        kinds = [r["kind"] for r in records(world, socket) if r.get("task") == "1"]
        assert kinds == ["added", "handing", "handed", "done"], kinds
    finally:
        nbs(world, socket, "service", "stop")
