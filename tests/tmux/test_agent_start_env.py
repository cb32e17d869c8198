"""An agent ``nbs-tui new`` starts from inside a Claude Code session (whose shell has
``CLAUDECODE``, ``CLAUDE_CODE_CHILD_SESSION`` ...) must not read as nested: neither the agent
nor a later pane of the tmux server it started inherits Claude Code's session variables."""

from __future__ import annotations

from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.agent_spec import CLAUDE_SESSION_ENV, agent_command
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.lifecycle.agent_start import AgentStarter
from nbs_tui.lifecycle.host import LocalHost
from nbs_tui.tmux.commands import TmuxServerCommands


def _env_of(path: Path) -> dict[str, str]:
    assert retry_until(lambda: path.exists() and path.read_text().endswith("END\n"), 10, raises=False)
    pairs = (line.partition("=") for line in path.read_text().splitlines() if "=" in line)
    return {name: value for name, _, value in pairs}


def test_a_server_and_agent_started_from_inside_claude_code_inherit_none_of_its_session(
    server: libtmux.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in CLAUDE_SESSION_ENV:  # as Claude Code's Bash tool hands them to nbs-tui new
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("NBS_TEST_KEPT", "kept")  # anything else is passed on
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))
    starter = AgentStarter(LocalHost(commands), "claude")
    agent_env, later_env = tmp_path / "agent.env", tmp_path / "later.env"
    command = agent_command(["sh", "-c", f"env > {agent_env}; echo END >> {agent_env}; exec sleep 600"])
    pane_id, _ = starter._make_window("work", "agent", str(tmp_path), command, True, starter.new_claim(), None)
    assert pane_id.startswith("%")
    seen = _env_of(agent_env)
    assert seen.get("NBS_TEST_KEPT") == "kept"
    assert not set(CLAUDE_SESSION_ENV) & seen.keys(), sorted(set(CLAUDE_SESSION_ENV) & seen.keys())
    # a pane opened later in the server nbs-tui started: the server's environment is clean too
    commands.run("new-window", "-d", "-t", "=work:", f"sh -c 'env > {later_env}; echo END >> {later_env}; exec sleep 600'")
    later = _env_of(later_env)
    assert later.get("NBS_TEST_KEPT") == "kept"
    assert not set(CLAUDE_SESSION_ENV) & later.keys(), sorted(set(CLAUDE_SESSION_ENV) & later.keys())
