"""An agent started from a script is served (issue 36, item 4), on the real Claude Code CLI.

Three agents started by the real ``nbs-tui new`` with no dashboard open and ``service = "auto"``:
the first ``new`` starts the server's sidecar service (the others find it running: one service),
which types ``/nbs-poll`` into the idle agents and remembers the fleet; the tmux server killed
(the service goes with it), ``nbs-tui restore`` brings the three back and starts a service again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest

from tests.realclaude.harness import NBS_POLL_COMMAND, ClaudeFleet
from tests.realclaude.new_world import REPO, NewAgentWorld, make_world, wait_until
from tests.realclaude.test_fleet_memory_e2e import agents, memory_file
from tests.tmux.fleet_helpers import process_alive

pytestmark = [pytest.mark.realclaude, pytest.mark.slow]

POLL_NEEDLE = "Check your inbox and the registry"
"""Text of the /nbs-poll command the harness installs; the API sees it in the user turn."""


def served(world: NewAgentWorld, socket: str, *argv: str, timeout: float = 200.0) -> subprocess.CompletedProcess[str]:
    """``nbs-tui ARGV`` as a script runs it: no dashboard, ``service = "auto"``, a 3 s poll."""
    env = {**world.env(), "NBS_SERVICE": "auto", "NBS_POLL_INTERVAL": "3"}
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(world.config), "-L", socket, *argv],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def service_pids(socket: str) -> set[int]:
    """The live ``nbs-tui ... -L SOCKET ... service run`` processes."""
    found = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"nbs_tui" in argv and b"service" in argv and b"run" in argv and socket.encode() in argv:
            found.add(int(proc.name))
    return found


@pytest.fixture
def services(server: libtmux.Server) -> Iterator[set[int]]:
    """Every service the test saw, ended after it (the tmux server's end stops them too)."""
    seen: set[int] = set()
    yield seen
    for pid in seen | service_pids(str(server.socket_name)):
        if process_alive(pid):
            os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not any(process_alive(p) for p in seen), 20, "the services stopped")


def screen(server: libtmux.Server, pane: str) -> str:
    return "\n".join(server.cmd("capture-pane", "-p", "-S", "-200", "-t", pane).stdout)


@pytest.mark.timeout(400)
def test_agents_started_with_no_dashboard_are_polled_remembered_and_restored(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path, services: set[int]
) -> None:
    socket = str(server.socket_name)
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "crew", [], trust=True)  # one HOME and API for all
    folders = {"fig": world.workdir, "kiwi": world.workdir.parent / "kiwi", "lime": world.workdir.parent / "lime"}
    for folder in folders.values():
        (folder / ".claude" / "commands").mkdir(parents=True, exist_ok=True)
        (folder / ".claude" / "commands" / "nbs-poll.md").write_text(NBS_POLL_COMMAND)
    started = {}
    for name, folder in folders.items():
        done = served(world, socket, "new", str(folder), "--name", name, "--prompt", f"hello {name}", "--json")
        assert done.returncode == 0, done.stderr
        started[name] = json.loads(done.stdout)["pane_id"]  # stdout stays one JSON document
        services.update(service_pids(socket))
        assert len(service_pids(socket)) == 1, service_pids(socket)  # the first started it; the others found it
    (service,) = service_pids(socket)
    status = served(world, socket, "service", "status")
    assert status.returncode == 0 and f"pid {service}" in status.stdout, status.stdout

    # polled with no dashboard open: /nbs-poll typed into each agent once it is idle
    wait_until(lambda: all("/nbs-poll" in screen(server, p) for p in started.values()), 90, "each agent polled")
    wait_until(lambda: world.api.count_prompts(POLL_NEEDLE) >= 3, 30, "three polls at the API")
    path = memory_file(world, socket)
    wait_until(lambda: set(agents(path)) == set(folders), 40, f"three agents remembered in {path}")

    server.kill()  # the server is lost, with every agent in it; its service goes with it
    wait_until(lambda: not process_alive(service), 30, "the service gone with its server")
    done = served(world, socket, "restore", "--json")
    assert done.returncode == 0, (done.stdout, done.stderr)
    report = json.loads(done.stdout)
    assert sorted(a["name"] for a in report["restored"]) == ["fig", "kiwi", "lime"] and report["not_restored"] == []
    services.update(service_pids(socket))
    assert len(service_pids(socket)) == 1  # the restored fleet is served again
    assert served(world, socket, "service", "status").returncode == 0
