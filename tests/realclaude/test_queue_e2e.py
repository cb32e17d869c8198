"""The work queue on the real Claude Code CLI against the scripted API (docs/queue.md): tasks
added with ``nbs-tui queue add`` and no dashboard open are handed out by the service the command
starts; each prompt reaches the API once, in order; an agent holds one task at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.core.queue.records import record_from_json
from nbs_tui.core.queue.task_states import QueueState
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


def service_world(tmp_path: Path, limits: dict[str, int]) -> tuple[dict[str, str], Path]:
    """The environment and config file of commands and a service with ``max_concurrent``."""
    state = tmp_path / "state"
    config = tmp_path / "config.toml"
    config.write_text("[max_concurrent]\n" + "".join(f"{json.dumps(k)} = {v}\n" for k, v in limits.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
    env.update(XDG_STATE_HOME=str(state), XDG_CONFIG_HOME=str(state / "config"), NBS_SERVICE="auto", NBS_POLL_DISABLE="1")
    return env, config


def run(env: dict[str, str], config: Path, socket: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(config), "-L", socket, *argv],
        capture_output=True, text=True, timeout=120, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def replay(lines: list[dict[str, Any]]) -> tuple[int, int]:
    """Fold the records one by one: the most tasks out at once, and the most tasks one pane held."""
    queue = QueueState()
    most_out = most_held = 0
    for line in lines:
        queue.apply(record_from_json(line))
        out = [task for task in queue if task.state.out]
        most_out = max(most_out, len(out))
        panes = [task.pane for task in out if task.pane]
        most_held = max([most_held, *(panes.count(p) for p in panes)])
    return most_out, most_held


@pytest.mark.service_auto
def test_ten_tasks_three_agents_max_concurrent_two_each_prompt_once_in_order(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    agents = claude_fleet.start_many(*([Text("Done, next.", delay=0.5)] * 10 for _ in range(3)))
    folder = str(claude_fleet.base.resolve())
    env, config = service_world(tmp_path, {folder: 2})
    texts = [f"queue task number {n:02d}" for n in range(1, 11)]
    try:
        for text in texts:
            added = run(env, config, socket, "queue", "add", text, "--folder", folder)
            assert added.returncode == 0, added.stderr

        def listing() -> list[dict[str, Any]]:
            done = run(env, config, socket, "queue", "ls", "--json")
            assert done.returncode == 0, done.stderr
            return sorted(json.loads(done.stdout)["tasks"], key=lambda task: int(task["id"]))

        wait_until(lambda: all(t["state"] == "done" for t in listing()), 60, "all ten tasks done")
        prompts = [(r.at, str(r.last_user_text())) for a in agents for r in a.api.main_requests() if r.last_user_text() in texts]
        assert sorted(p for _at, p in prompts) == texts, "each prompt exactly once"
        assert [p for _at, p in sorted(prompts)] == texts, "in order"
        lines = [json.loads(x) for x in (tmp_path / "state" / "nbs-tui" / f"queue-L-{socket}.jsonl").read_text().splitlines()]
        most_out, most_held = replay(lines)
        assert most_out == 2, f"at most max_concurrent out at once (saw {most_out})"
        assert most_held == 1, "no agent held two tasks"
        assert all(t["message"] == "Done, next." for t in listing())
        assert {t["pane"] for t in listing()} <= {a.pane_id for a in agents}, "no agent started: three were there"
    finally:
        run(env, config, socket, "service", "stop")
