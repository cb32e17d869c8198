"""``nbs-tui restart`` and ``nbs-tui stop`` on the real Claude Code CLI (issue 29, item 4): an agent
started by ``nbs-tui new`` is restarted in place (same pane, ``claude --resume`` of its
conversation, which the scripted API then sees), then stopped with ``/exit``; each is a line of
the action log. The restart is shown by the process, not by the command's own word: the Claude
Code process before (its status file's pid) is gone, another one runs that session, and the
pane's start command is now the ``--resume``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import libtmux
import pytest

from tests.realclaude.harness import ClaudeFleet
from tests.realclaude.new_world import NewAgentWorld, make_world, wait_until
from tests.realclaude.test_restore_e2e import live_ids, submit
from tests.tmux.fleet_helpers import process_alive


def nbs(world: NewAgentWorld, socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    return world.nbs_tui(socket, *args, timeout=120)


def claude_pids(world: NewAgentWorld, session_id: str) -> set[int]:
    """The live processes whose Claude Code status file names ``session_id``."""
    pids = set()
    for path in (world.home / ".claude" / "sessions").glob("*.json"):
        try:
            named = json.loads(path.read_text()).get("sessionId")
        except (OSError, ValueError):
            continue
        if named == session_id and path.stem.isdigit() and process_alive(int(path.stem)):
            pids.add(int(path.stem))
    return pids


def start_command(server: libtmux.Server, pane_id: str) -> str:
    return "\n".join(server.cmd("display-message", "-p", "-t", pane_id, "#{pane_start_command}").stdout)


@pytest.mark.timeout(240)
def test_restart_in_place_resumes_the_conversation_and_stop_exits(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "quince", [], trust=True)
    started = nbs(world, socket, "new", str(world.workdir), "--name", "q", "--prompt", "remember the word quince", "--json")
    assert started.returncode == 0, started.stderr
    first = json.loads(started.stdout)
    wait_until(lambda: world.api.count_prompts("quince") == 1, 30)
    wait_until(lambda: len(claude_pids(world, first["session_id"])) == 1, 20, "the status file of the first process")
    (before,) = claude_pids(world, first["session_id"])
    assert "--resume" not in start_command(server, first["pane_id"])

    unconfirmed = nbs(world, socket, "restart", "agents:q")
    assert unconfirmed.returncode == 4 and "confirm with --yes" in unconfirmed.stderr
    done = nbs(world, socket, "restart", "agents:q", "--yes", "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    restarted = json.loads(done.stdout)
    assert restarted["pane_id"] == first["pane_id"] and restarted["session_id"] == first["session_id"]
    wait_until(lambda: first["session_id"] in live_ids(world), 20, "the conversation live again")
    # replaced: the first process is gone, another runs the session, started with --resume
    assert not process_alive(before)
    wait_until(lambda: len(claude_pids(world, first["session_id"])) == 1, 20, "the new process's status file")
    assert claude_pids(world, first["session_id"]) != {before}
    assert f"--resume {first['session_id']}" in start_command(server, first["pane_id"])
    submit(server, first["pane_id"], "which word?")
    wait_until(lambda: world.api.count_prompts("which word?") == 1, 30)
    asked = next(r.all_text() for r in world.api.main_requests() if r.last_user_text() == "which word?")
    assert "quince" in asked  # the resumed conversation carries the earlier message

    stopped = nbs(world, socket, "stop", first["pane_id"], "--yes", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["stopped_by"] == "/exit"
    panes = server.cmd("list-panes", "-a", "-F", "#{pane_id}").stdout
    assert first["pane_id"] not in panes  # new's window ran Claude Code itself: it closed with it
    log = [json.loads(line) for line in (world.state / "nbs-tui" / "actions.log").read_text().splitlines()]
    assert [(r["action"], r["outcome"]) for r in log] == [("restart", "sent"), ("stop", "sent")]
    assert log[0]["sent"] == f"claude --resume {first['session_id']}" and log[1]["sent"] == "/exit"
