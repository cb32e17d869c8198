"""A work queue on another host: ``nbs-tui queue add --host`` is run by the host's own nbs-tui
(its queue file, its service, started there by the command), whose feeder types the task into a
real Claude Code agent running there; ``queue ls --host`` follows it to done."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import libtmux
import pytest

from tests.realclaude.harness import ClaudeBinary, ClaudeFleet, Text
from tests.remote.conftest import SshLab, ssh_lab  # noqa: F401  (the lab fixture, used below)
from tests.remote.helpers import far_nbs_tui, new_session
from tests.tmux.fleet_helpers import wait_for

pytestmark = [pytest.mark.realclaude, pytest.mark.service_auto]


def test_a_queue_on_an_ssh_host_feeds_its_agent(
    claude_binary: ClaudeBinary, ssh_lab: SshLab, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "keep")  # hosta's tmux server, on its own socket
    socket = a.tmux("display-message", "-p", "#{socket_path}").strip()
    fleet = ClaudeFleet(libtmux.Server(socket_path=socket), tmp_path / "agents", claude_binary)
    there = far_nbs_tui(ssh_lab, tmp_path)

    def nbs(*argv: str) -> subprocess.CompletedProcess[str]:
        return there.run(*argv)

    try:
        agent = fleet.start([Text("Reviewed: all good.")], name="reviewer")
        added = nbs("queue", "add", "--folder", str(agent.workdir), "--json", "-- review the diff, please")
        assert added.returncode == 0, added.stderr
        task = json.loads(added.stdout)["task"]
        assert (task["id"], task["text"], task["folder"]) == ("1", "-- review the diff, please", str(agent.workdir))
        listed: dict[str, object] = {}

        def done() -> bool:
            out = nbs("queue", "ls", "--json")
            assert out.returncode == 0, out.stderr
            listed.update(json.loads(out.stdout)["tasks"][0])
            return listed["state"] == "done"

        wait_for(done, 60)
        assert listed["message"] == "Reviewed: all good." and listed["pane"] == agent.pane_id
        assert agent.api.prompts() == ["-- review the diff, please"], "typed once, by hosta's service"
        assert (there.far_state / "nbs-tui" / "queue-default.jsonl").is_file(), "the queue is hosta's"
        assert not (tmp_path / "here-state" / "nbs-tui" / "queue-default.jsonl").exists()
        unknown = nbs("queue", "cancel", "7")
        assert unknown.returncode == 4 and "no task 7" in unknown.stderr
    finally:
        there.stop_service()
        fleet.close()
