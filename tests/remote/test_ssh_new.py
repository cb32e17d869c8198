"""``nbs-tui new --host`` through the ssh lab, with the real Claude Code CLI (issue 29, item 1):
the folder and Claude Code are checked on the host, the window is made on the host's own tmux
server, its trust dialog answered and its prompt submitted once, all through the host's ssh
connection. A host that cannot be reached, or a folder missing there, exits 4 and makes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.realclaude.conftest import claude_binary, claude_fleet  # noqa: F401  (fixtures)
from tests.realclaude.harness import ClaudeFleet, Text
from tests.realclaude.new_world import REPO, NewAgentWorld, make_world, wait_until
from tests.remote.conftest import SshLab


def new_on(lab: SshLab, world: NewAgentWorld, *args: str) -> subprocess.CompletedProcess[str]:
    config = world.config.with_name("hosts.toml")
    config.write_text(
        world.config.read_text()
        + "".join(
            f'\n[[hosts]]\nname = "{alias}"\nssh = "{alias}"\nssh_options = ["-F", "{lab.config}"]\n'
            for alias in ("hosta", "hostrefused")
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
    env.update(XDG_STATE_HOME=str(world.state), XDG_CONFIG_HOME=str(world.state / "config"), NBS_SERVICE="off")
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "--config", str(config), "new", *args],
        capture_output=True, text=True, timeout=150, env=env, cwd=REPO, check=False,
    )  # fmt: skip


def test_new_on_a_host_starts_there_trusts_the_folder_and_submits_once(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    world = make_world(claude_fleet, tmp_path, "far", [Text("Done there.")])
    done = new_on(ssh_lab, world, str(world.workdir), "--host", "hosta", "--name", "far", "--prompt", "build it there", "--json")
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["name"] == "far" and line["target"].startswith("agents:")
    assert line["session_id"] is None  # the status file is on the host: not read from here
    wait_until(lambda: world.api.prompts() == ["build it there"], 30, "the prompt once")
    assert a.tmux("list-windows", "-a", "-F", "#{window_name} #{pane_current_path}").split("\n")[0] == f"far {world.workdir}"


def test_an_unreachable_host_or_a_folder_missing_there_makes_nothing(
    ssh_lab: SshLab, claude_fleet: ClaudeFleet, tmp_path: Path  # noqa: F811
) -> None:
    a = ssh_lab.hosts["hosta"]
    world = make_world(claude_fleet, tmp_path, "far", [])
    refused = new_on(ssh_lab, world, str(world.workdir), "--host", "hostrefused", "--prompt", "x")
    assert refused.returncode == 4 and "--host hostrefused: " in refused.stderr and "connection refused" in refused.stderr
    missing = new_on(ssh_lab, world, str(tmp_path / "nowhere"), "--host", "hosta", "--prompt", "x")
    assert missing.returncode == 4, missing.stderr
    assert f"DIR {tmp_path / 'nowhere'} does not exist on hosta" in missing.stderr
    assert a.tmux("list-windows", "-a", check=False) == ""
