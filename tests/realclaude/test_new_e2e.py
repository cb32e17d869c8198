"""``nbs-tui new`` end to end on the real Claude Code CLI and its scripted API (issue 29, item 1).

Each test runs the real ``nbs-tui new`` command line (a process, as an operator types it) on the
test's private tmux server; the configured ``claude_command`` is a small wrapper that gives
Claude Code the test's HOME and scripted API (`NewAgentWorld`). What is checked is what the
operator relies on: the window named NAME in SESSION and DIR, a fresh folder's trust dialog
answered (the folder was named), the prompt reaching the API once and whole (and still once
after the agent's answer: `prompted_once`), ``--json``'s line,
a server that was not running started, and a worker's ``worker-spawned`` on the NBS bus.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import libtmux
import pytest

from tests.headless_proc import Headless
from tests.realclaude.harness import ClaudeBinary, ClaudeFleet, Text
from tests.realclaude.new_world import (
    local_tmux,
    make_world,
    prompted_once,
    trusted,
    wait_until,
    windows,
)
from tests.realclaude.test_fleet_memory_e2e import agents, memory_file


@pytest.fixture
def socket_name(server: libtmux.Server) -> str:
    assert server.socket_name
    return server.socket_name


def test_new_starts_trusts_the_folder_named_and_submits_the_prompt_once(
    claude_fleet: ClaudeFleet, server: libtmux.Server, socket_name: str, tmp_path: Path
) -> None:
    server.new_session(session_name="work")  # the server runs; the session "agents" does not exist yet
    world = make_world(claude_fleet, tmp_path, "alpha", [Text("Parser built."), Text("Next, the tests.")])
    assert not trusted(world)
    done = world.run(socket_name, str(world.workdir), "--name", "alpha", "--prompt", "build the parser", "--json")
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.strip())
    assert line["name"] == "alpha" and line["pane_id"].startswith("%") and line["target"].startswith("agents:")
    assert line["session_id"] and uuid.UUID(line["session_id"])
    assert f"agents:alpha:{world.workdir}" in windows(server)
    assert trusted(world)  # the trust dialog, answered for the folder named
    pane = line["pane_id"]
    claim = server.cmd("show-options", "-pqv", "-t", pane, "@nbs_starting").stdout
    remain = server.cmd("show-options", "-pqv", "-t", pane, "remain-on-exit").stdout
    assert claim == [] and remain in ([], ["off"])  # nothing of the start left on the pane
    prompted_once(world, local_tmux(socket_name), pane, lambda p: p == "build the parser")


def test_new_starts_a_server_that_is_not_running_and_pastes_a_multiline_prompt_whole(
    claude_fleet: ClaudeFleet, tmp_path: Path, claude_binary: ClaudeBinary
) -> None:
    socket = f"nbs-new-{uuid.uuid4().hex[:8]}"
    world = make_world(claude_fleet, tmp_path, "beta", [Text("Done."), Text("Nothing.")], trust=True)
    prompt_file = tmp_path / "task.md"
    task = "# Task\n\nRead the notes; then:\n- write the parser\n- test it with `$HOME` and #{x} ; left alone"
    prompt_file.write_text(task + "\n\n")
    try:
        done = world.run(socket, str(world.workdir), "--prompt-file", str(prompt_file), "--session", "crew")
        assert done.returncode == 0, done.stderr
        assert "work: started in crew:" in done.stdout  # the folder's name is the default NAME
        # Claude Code sends a multi-line paste wrapped in its own <pasted_content> tags: whole, once
        (pane,) = local_tmux(socket)("list-panes", "-a", "-F", "#{pane_id}").split()
        prompted_once(world, local_tmux(socket), pane, lambda p: task in p)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def test_a_worker_gets_its_task_file_and_is_announced_on_the_bus(
    claude_fleet: ClaudeFleet, server: libtmux.Server, socket_name: str, tmp_path: Path
) -> None:
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "gamma", [Text("On it."), Text("Counting.")], trust=True)
    nbs = world.workdir / ".nbs"
    (nbs / "workers").mkdir(parents=True)
    (nbs / "events").mkdir()
    task = "Worker task: count the files.\nReport in the chat."
    (nbs / "workers" / "counter.md").write_text(task + "\n")
    done = world.run(socket_name, str(world.workdir), "--worker", "counter", "--json")
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["name"] == "counter"
    prompted_once(world, local_tmux(socket_name), line["pane_id"], lambda p: task in p)
    (event,) = (nbs / "events").glob("*.event")
    text = event.read_text()
    assert "type: worker-spawned" in text and "source: counter" in text and line["pane_id"] in text
    # the lease holder (here --headless) announces the worker's end when its pane closes
    path = memory_file(world, socket_name)
    with Headless(["--config", str(world.config), "-L", socket_name, "--no-poll"], env=world.env()):
        wait_until(lambda: "counter" in agents(path), 30, "the worker remembered")
        server.cmd("kill-pane", "-t", line["pane_id"])
        wait_until(lambda: len(list((nbs / "events").glob("*.event"))) == 2, 30, "worker-died")
    died = next(p for p in (nbs / "events").glob("*.event") if p != event).read_text()
    assert "type: worker-died" in died and "source: counter" in died and "its tmux pane closed" in died
