"""A work queue on another host: ``nbs-tui queue add --host`` is run by the host's own nbs-tui
(its queue file, its service, started there by the command), whose feeder types the task into a
real Claude Code agent running there; ``queue ls --host`` follows it to done."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import libtmux
import pytest

from tests.realclaude.harness import ClaudeBinary, ClaudeFleet, Text
from tests.remote.conftest import SshLab, ssh_lab  # noqa: F401  (the lab fixture, used below)
from tests.remote.helpers import new_session
from tests.remote.test_ssh_lease import NBS_TUI
from tests.tmux.fleet_helpers import wait_for

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.realclaude, pytest.mark.service_auto]


def test_a_queue_on_an_ssh_host_feeds_its_agent(
    claude_binary: ClaudeBinary, ssh_lab: SshLab, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "keep")  # hosta's tmux server, on its own socket
    socket = a.tmux("display-message", "-p", "#{socket_path}").strip()
    fleet = ClaudeFleet(libtmux.Server(socket_path=socket), tmp_path / "agents", claude_binary)
    far_state = tmp_path / "far-state"
    far = f"XDG_STATE_HOME={shlex.quote(str(far_state))} NBS_POLL_DISABLE=1 {shlex.quote(str(NBS_TUI))}"
    config = tmp_path / "hosts.toml"
    config.write_text(
        f'[[hosts]]\nname = "hosta"\nssh = "hosta"\nssh_options = ["-F", "{ssh_lab.config}"]\nnbs_tui = {json.dumps(far)}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env.update(XDG_STATE_HOME=str(tmp_path / "here-state"), NBS_SERVICE="off")

    def nbs(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nbs_tui", "--config", str(config), *argv, "--host", "hosta"],
            capture_output=True, text=True, timeout=120, env=env, cwd=REPO, check=False,
        )  # fmt: skip

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
        assert (far_state / "nbs-tui" / "queue-default.jsonl").is_file(), "the queue is hosta's"
        assert not (tmp_path / "here-state" / "nbs-tui" / "queue-default.jsonl").exists()
        unknown = nbs("queue", "cancel", "7")
        assert unknown.returncode == 4 and "no task 7" in unknown.stderr
    finally:
        ssh_lab.ssh("hosta", f"{far} service stop")
        fleet.close()
