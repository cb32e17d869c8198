"""The one builder of the agent starter (`Lifecycle.starter`) hands the settings' ``claude_home``
to every start, stop, restart and restore, the dashboard's as the CLI's: the dashboard's stops
and restores built their starter without it. A stop reads the agent's process from its status
file; here that file is only in ``claude_home`` (its process's environment names no config
folder and its HOME has none), as for a Claude Code whose config folder only the settings know."""

from __future__ import annotations

import time
from pathlib import Path

import libtmux

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.lifecycle.host import LocalHost
from nbs_tui.lifecycle.operations import Lifecycle
from nbs_tui.tmux.commands import TmuxServerCommands

# Like Claude Code: its process titled "claude", a status file that names its session; Ctrl-C ends it.
STAND_IN = """
process.title = "claude";
const fs = require("fs");
const dir = process.env.NBS_TEST_STATUS_DIR + "/sessions";
fs.mkdirSync(dir, {recursive: true});
const stat = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
fs.writeFileSync(dir + "/" + process.pid + ".json",
  JSON.stringify({pid: process.pid, sessionId: "s-home", procStart: stat[19]}));
process.on("SIGINT", () => process.exit(0));
setInterval(() => {}, 1000);
"""


def test_a_stop_finds_an_agent_whose_status_file_only_claude_home_holds(server: libtmux.Server, tmp_path: Path) -> None:
    script = tmp_path / "stand-in.js"
    script.write_text(STAND_IN)
    config, home = tmp_path / "config", tmp_path / "home"
    home.mkdir()
    command = f"env -u CLAUDE_CONFIG_DIR HOME={home} NBS_TEST_STATUS_DIR={config} node {script}"
    server.new_session(session_name="keep")  # the server outlives the agent's pane
    session = server.new_session(session_name="agents", window_command=command, start_directory=str(tmp_path))
    pane = session.active_pane
    assert pane is not None
    deadline = time.monotonic() + 20
    while not any((config / "sessions").glob("*.json")):
        assert time.monotonic() < deadline, "the stand-in's status file"
        time.sleep(0.05)

    settings = Settings(server=ServerAddress(socket_name=server.socket_name), claude_home=config, action_log=tmp_path / "actions.log")
    lifecycle = Lifecycle(settings, LocalHost(TmuxServerCommands.for_server(settings.server)))
    assert lifecycle.starter().config_dirs == (str(config),)
    stopped = lifecycle.stop(str(pane.pane_id))

    assert stopped.how in ("Ctrl-C", "kill-pane"), stopped
