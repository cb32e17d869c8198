"""``nbs-tui restore`` on the real Claude Code CLI (issue 29, item 3): three agents started by the
real ``nbs-tui new``, remembered by a real ``nbs-tui --headless`` holding the lease, the tmux
server killed, the fleet restored; each resumed conversation carries its earlier messages (the
scripted API sees them), and the agent that ran ``/clear`` comes back in its newest session."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import libtmux
import pytest

from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.review.agent_base import BASE_OPTION
from tests.headless_proc import Headless
from tests.realclaude.harness import ClaudeFleet
from tests.realclaude.new_world import NewAgentWorld, make_world, started_sessions, wait_until
from tests.realclaude.test_diff_e2e import repository
from tests.realclaude.test_fleet_memory_e2e import agents, memory_file
from tests.tmux.fleet_helpers import process_alive


def live_ids(world: NewAgentWorld) -> set[str]:
    ids = set()
    for path in (world.home / ".claude" / "sessions").glob("*.json"):
        try:
            ids.add(str(json.loads(path.read_text()).get("sessionId")))
        except (OSError, ValueError):
            continue
    return ids


def screen(server: libtmux.Server, pane: str) -> str:
    return "\n".join(server.cmd("capture-pane", "-p", "-t", pane).stdout)


def submit(server: libtmux.Server, pane: str, text: str) -> None:
    server.cmd("send-keys", "-t", pane, "-l", text)
    wait_until(lambda: text in (detect_text(screen(server, pane)).input_text or ""), 10, f"{text!r} in the box")
    server.cmd("send-keys", "-t", pane, "Enter")
    wait_until(lambda: text not in (detect_text(screen(server, pane)).input_text or ""), 10, f"{text!r} submitted")


def pane_of(server: libtmux.Server, window: str) -> str:
    rows = server.cmd("list-panes", "-a", "-F", "#{pane_id} #{window_name}").stdout
    return next(row.split()[0] for row in rows if row.endswith(f" {window}"))


def restore(world: NewAgentWorld, socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    return world.nbs_tui(socket, "restore", *args, timeout=200)


@pytest.mark.timeout(400)
def test_three_agents_restored_after_the_server_is_killed_with_their_conversations(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "crew", [], trust=True, hooks=True)  # one HOME and API for all
    folders = {"fig": world.workdir, "kiwi": world.workdir.parent / "kiwi", "lime": world.workdir.parent / "lime"}
    for folder in folders.values():
        folder.mkdir(exist_ok=True)
    base = repository(folders["fig"])  # fig's changes count from here, after the restore too
    words = {"fig": "apricot", "kiwi": "bramble", "lime": "cherry"}
    for name, folder in folders.items():
        done = world.run(socket, str(folder), "--name", name, "--prompt", f"remember the word {words[name]}")
        assert done.returncode == 0, done.stderr
    wait_until(lambda: len(world.api.prompts()) == 3, 30, "three prompts")
    path = memory_file(world, socket)
    with Headless(["--config", str(world.config), "-L", socket, "--no-poll"], env=world.env()):
        wait_until(
            lambda: set(agents(path)) == set(folders)
            and {a["session_id"] for a in agents(path).values()} <= live_ids(world),
            40, "three agents remembered",
        )  # fmt: skip
        before_clear = agents(path)["lime"]["session_id"]
        lime = pane_of(server, "lime")
        submit(server, lime, "/clear")
        wait_until(lambda: agents(path)["lime"]["session_id"] != before_clear, 30, "lime's new session remembered")
        submit(server, lime, "remember the word damson")
        wait_until(lambda: world.api.count_prompts("damson") == 1, 30)
    assert agents(path)["fig"]["base"] == {"commit": base, "branch": "main"}
    assert agents(path)["kiwi"]["base"] is None  # not in git
    newest = agents(path)["lime"]["session_id"]
    assert newest == started_sessions(world)[-1]  # the SessionStart of the /clear

    server.kill()  # the server is lost, with every agent in it
    dry = restore(world, socket, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "restore 3 agents" in dry.stdout and "start the tmux server" in dry.stdout
    assert f"--resume {newest}" in dry.stdout and f"--resume {before_clear}" not in dry.stdout

    done = restore(world, socket, "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert report["not_restored"] == []
    assert sorted(a["name"] for a in report["restored"]) == ["fig", "kiwi", "lime"]
    assert all(a["stopped"] is None for a in report["restored"])
    assert {a["name"]: a["session_id"] for a in report["restored"]}["lime"] == newest
    names = server.cmd("list-windows", "-a", "-F", "#{session_name}:#{window_name}").stdout
    assert sorted(names) == ["agents:fig", "agents:kiwi", "agents:lime"]
    bases = {a["name"]: server.cmd("show-options", "-pqv", "-t", a["pane_id"], BASE_OPTION).stdout for a in report["restored"]}
    assert bases == {"fig": [f"{base} main"], "kiwi": [], "lime": []}

    for agent in report["restored"]:
        submit(server, agent["pane_id"], f"which word, {agent['name']}?")
    wait_until(lambda: all(world.api.count_prompts(f"which word, {n}?") == 1 for n in folders), 60, "three questions")
    asked = {
        n: next(r.all_text() for r in world.api.main_requests() if f"which word, {n}?" in (r.last_user_text() or ""))
        for n in folders
    }
    assert "apricot" in asked["fig"] and "bramble" not in asked["fig"]
    assert "bramble" in asked["kiwi"] and "apricot" not in asked["kiwi"]
    assert "damson" in asked["lime"] and "cherry" not in asked["lime"]  # the conversation after /clear
    # a second restore, run for real, finds the lost fleet forgotten and starts nothing: the same
    # panes, the same Claude Code processes, no window more, no request more to the API
    panes_before = server.cmd("list-panes", "-a", "-F", "#{pane_id} #{pane_pid} #{window_name}").stdout
    running = claude_processes(world)
    requests = len(world.api.requests)
    again = restore(world, socket, "--json")
    assert again.returncode == 0, (again.stdout, again.stderr)
    second = json.loads(again.stdout)
    assert (second["restored"], second["not_restored"]) == ([], []), second
    time.sleep(2.0)  # (not an assertion: time for anything started by mistake to show)
    assert server.cmd("list-panes", "-a", "-F", "#{pane_id} #{pane_pid} #{window_name}").stdout == panes_before
    assert claude_processes(world) == running and len(running) == 3
    assert len(world.api.requests) == requests
    assert os.path.exists(path)


def claude_processes(world: NewAgentWorld) -> set[int]:
    """The live processes with a Claude Code status file in the world's HOME."""
    folder = world.home / ".claude" / "sessions"
    return {int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit() and process_alive(int(p.stem))}
