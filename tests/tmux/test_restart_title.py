"""Restart where Claude Code has set its process title (node builds, 2.1.1xx): ``/proc/PID/cmdline``
reads just ``claude``, so the agent's name and model come from the pane's start command, and the
restart keeps them (it dropped ``-n`` and ``--model``)."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from pathlib import Path

import libtmux

from nbs_tui.core.fleet.agent_spec import ClaudeFlags
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.lifecycle.agent_start import AgentStarter
from nbs_tui.lifecycle.agent_stop import AgentControl
from nbs_tui.lifecycle.host import LocalHost
from nbs_tui.tmux.commands import TmuxServerCommands

# A stand-in that, like Claude Code on node, renames its process "claude" and keeps a status file.
STAND_IN = """
process.title = "claude";
const fs = require("fs");
const dir = process.env.CLAUDE_CONFIG_DIR + "/sessions";
fs.mkdirSync(dir, {recursive: true});
const stat = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
fs.writeFileSync(dir + "/" + process.pid + ".json",
  JSON.stringify({pid: process.pid, sessionId: "s-title", procStart: stat[19]}));
process.on("SIGINT", () => process.exit(0));
setInterval(() => {}, 1000);
"""


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_restart_keeps_the_name_and_model_of_a_process_that_renamed_itself(server: libtmux.Server, tmp_path: Path) -> None:
    script = tmp_path / "stand-in.js"
    script.write_text(STAND_IN)
    config = tmp_path / "config"
    command = f"env CLAUDE_CONFIG_DIR={config} node {script} -n api --model opus"
    session = server.new_session(session_name="agents", window_command=command, start_directory=str(tmp_path))
    pane = session.active_pane
    assert pane is not None
    pane_id = str(pane.pane_id)
    wait_until(lambda: any((config / "sessions").glob("*.json")), 20, "the stand-in's status file")
    (status,) = [json.loads(p.read_text()) for p in (config / "sessions").glob("*.json")]
    assert Path(f"/proc/{status['pid']}/cmdline").read_bytes().rstrip(b"\0") == b"claude"  # the title, alone

    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=server.socket_name))
    starter = AgentStarter(LocalHost(commands), f"env CLAUDE_CONFIG_DIR={config} node {script}", flags=ClaudeFlags(), start_timeout=1)
    restarted = AgentControl(starter, exit_wait=10).restart(pane_id)

    assert (restarted.pane_id, restarted.session_id) == (pane_id, "s-title")
    started = shlex.split(server.cmd("display-message", "-p", "-t", pane_id, "#{pane_start_command}").stdout[0])
    if len(started) == 1:
        started = shlex.split(started[0])
    options = started[started.index(str(script)) + 1 :]
    assert sorted(zip(options[::2], options[1::2], strict=True)) == [("--model", "opus"), ("--resume", "s-title"), ("-n", "api")], started
