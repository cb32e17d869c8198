"""The lifecycle on the real Claude Code CLI (issue 29).

The startup tests run `AgentStarter.start`, the path of ``nbs-tui new``, and check the keys it
pressed (`PressRecorder`). The session test stands in for the wiring: it reads the session id's
sources (nbs-tui's hook spool, the status file, the transcripts) and asks `current_session`; it builds the restore plan and types the planned command into the
pane's shell. What is checked is what the product will rely on: the trust dialog of a fresh
folder answered for the folder named and for no other, bypass mode confirmed only when asked,
the newest session id after ``/clear``, and that resuming it brings that conversation back.
"""

from __future__ import annotations

import json
import shlex
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import libtmux
import pytest

from nbs_tui.claude.hooks import install
from nbs_tui.claude.spool import parse_line
from nbs_tui.claude.status import read_status_file
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.detection.startup import (
    PressKey,
    Ready,
    StartupExpectation,
    StartupGuide,
    StartupStep,
    Stop,
)
from nbs_tui.core.fleet.agent_spec import BYPASS, NewAgent, shell_command
from nbs_tui.core.fleet.fleet_memory import (
    RememberedAgent,
    RememberedPane,
    RememberedWindow,
    SessionSighting,
    SessionSource,
    current_session,
)
from nbs_tui.core.fleet.model import PaneId, ServerAddress
from nbs_tui.core.fleet.restore import HostChecks, LiveServer, plan_restore
from nbs_tui.files.agent_input import prepare_local
from nbs_tui.lifecycle.agent_start import AgentStarter, Started, StartStopped
from nbs_tui.lifecycle.host import LocalHost
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.tmux_runner import TmuxRunner
from tests.realclaude.harness import ClaudeAgent, ClaudeFleet
from tests.realclaude.new_world import NewAgentWorld, make_world, trusted, wait_until


def walk(agent: ClaudeAgent, expect: StartupExpectation, timeout: float = 30.0) -> tuple[StartupStep, list[str]]:
    """Show the guide each new screen (and the same one again every 0.2 s) until it is done;
    press what it says. Returns its last step and the keys pressed."""
    guide = StartupGuide(expect, time.time(), timeout=timeout)
    keys: list[str] = []
    while True:
        text = agent.screen()
        step = guide.step(text.split("\n"), detect_text(text), time.time())
        if isinstance(step, PressKey):
            agent.server.cmd("send-keys", "-t", agent.pane_id, step.key)
            keys.append(step.key)
        elif isinstance(step, (Ready, Stop)):
            return step, keys
        time.sleep(0.2)


class PressRecorder(TmuxServerCommands):
    """The server's commands as ``nbs-tui new`` runs them, noting each key `press` sent (a guard
    that refused is no key pressed)."""

    def __init__(self, server: libtmux.Server) -> None:
        super().__init__(TmuxRunner(ServerAddress(socket_name=server.socket_name)))
        self.pressed: list[str] = []

    def press(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        done = super().press(pane_id, *keys, guard=guard)
        if done:
            self.pressed.extend(keys)
        return done


def start_as_new(
    server: libtmux.Server, world: NewAgentWorld, folder: Path, claude_command: Path, **spec: Any
) -> tuple[Started | StartStopped, list[str]]:
    """``AgentStarter.start``, the path of ``nbs-tui new``, for an agent named "ag" in ``folder``
    on ``server``: what it returned (or raised) and the keys it pressed, in order."""
    commands = PressRecorder(server)
    starter = AgentStarter(LocalHost(commands), str(claude_command), claude_home=world.home / ".claude", home=str(world.home))
    agent = prepare_local(NewAgent(str(folder), name="ag", **spec))
    try:
        return starter.start(agent), commands.pressed
    except StartStopped as stop:
        return stop, commands.pressed


def wrapped(world: NewAgentWorld, name: str, *lines: str) -> Path:
    """A ``claude_command`` that runs ``lines`` then the world's Claude Code with its arguments."""
    script = world.wrapper.with_name(name)
    script.write_text("#!/bin/bash\n" + "".join(line + "\n" for line in lines))
    script.chmod(0o755)
    return script


def screen(server: libtmux.Server, pane_id: str) -> str:
    return "\n".join(server.cmd("capture-pane", "-p", "-t", pane_id).stdout)


def command_in(server: libtmux.Server, pane_id: str) -> str:
    return "".join(server.cmd("display-message", "-p", "-t", pane_id, "#{pane_current_command}").stdout)


def test_a_fresh_folder_is_trusted_when_named_and_the_prompt_reaches_the_api_once(
    claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path
) -> None:
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "fresh", ["Started."])
    assert not trusted(world)
    started, keys = start_as_new(server, world, world.workdir, world.wrapper, prompt="build the parser")
    assert isinstance(started, Started) and started.prompt_submitted, started
    # the trust dialog (Down first on 2.1.265+, then Enter), then the prompt's one Enter
    assert keys[-2:] == ["Enter", "Enter"] and keys.count("Enter") == 2 and set(keys) <= {"Down", "Enter"}, keys
    assert trusted(world)
    wait_until(lambda: "Started." in screen(server, started.pane_id), 30, "the answer")
    assert world.api.prompts() == ["build the parser"]


def test_a_folder_not_named_is_never_trusted(claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path) -> None:
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "elsewhere", [])
    # a claude_command that changes folder: Claude Code asks about one the start did not name
    moving = wrapped(world, "claude-moves", f"cd {shlex.quote(str(world.workdir))}", f'exec {shlex.quote(str(world.wrapper))} "$@"')
    stopped, keys = start_as_new(server, world, world.workdir.parent, moving)
    assert isinstance(stopped, StartStopped), stopped
    assert f"asks to trust {world.workdir}, not {world.workdir.parent}" in stopped.line
    assert keys == []
    assert stopped.started is not None
    time.sleep(1.0)  # (not an assertion: time for a wrongly sent key to have shown)
    assert not trusted(world) and "trust this folder" in screen(server, stopped.started.pane_id)
    assert command_in(server, stopped.started.pane_id) == "claude"


def test_bypass_is_confirmed_only_when_asked(claude_fleet: ClaudeFleet, server: libtmux.Server, tmp_path: Path) -> None:
    server.new_session(session_name="work")
    world = make_world(claude_fleet, tmp_path, "bypass", [])
    sandboxed = wrapped(world, "claude-sandboxed", "export IS_SANDBOX=1", f'exec {shlex.quote(str(world.wrapper))} "$@"')
    started, keys = start_as_new(server, world, world.workdir, sandboxed, permission_mode=BYPASS)
    assert isinstance(started, Started), started
    assert keys.count("Enter") == 2  # the trust dialog, then the confirmation
    assert "bypass permissions on" in screen(server, started.pane_id).lower()

    server.cmd("kill-window", "-t", started.pane_id)
    other = make_world(claude_fleet, tmp_path, "unasked", [], trust=True)  # (accepted once, not shown again)
    always = wrapped(
        other, "claude-always-bypass", "export IS_SANDBOX=1",
        f'exec {shlex.quote(str(other.wrapper))} --permission-mode {BYPASS} "$@"',
    )  # fmt: skip
    stopped, keys = start_as_new(server, other, other.workdir, always)  # bypass not asked
    assert isinstance(stopped, StartStopped) and "bypass-permissions mode, which was not asked" in stopped.line, stopped
    assert stopped.started is not None
    assert keys == [] and command_in(server, stopped.started.pane_id) == "claude"


# -- the newest session id, and resuming it -----------------------------------------------------


def sightings(agent: ClaudeAgent, spool: Path) -> list[SessionSighting]:
    """Every source's word on the pane's session, as the wiring will gather it."""
    found: list[SessionSighting] = []
    for line in spool.read_bytes().splitlines():
        event = parse_line(line, time.time())
        if event.pane_id == agent.pane_id and event.session_id:
            found.append(SessionSighting(event.session_id, SessionSource.HOOK, event.time))
    status = agent.session_status()
    if status is not None:
        read = read_status_file(agent.home / ".claude" / "sessions" / f"{status['pid']}.json")
        if read is not None and read.session_id:
            found.append(SessionSighting(read.session_id, SessionSource.STATUS, read.updated_at))
    for transcript in (agent.home / ".claude" / "projects").glob("*/*.jsonl"):
        stamps = []
        for raw in transcript.read_text().splitlines()[:20]:
            stamp = json.loads(raw).get("timestamp")
            if isinstance(stamp, str):
                stamps.append(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())
        if stamps:
            found.append(SessionSighting(transcript.stem, SessionSource.TRANSCRIPT, min(stamps)))
    return found


@pytest.mark.timeout(180)
def test_after_clear_the_newest_session_is_remembered_and_resumes_that_conversation(
    claude_fleet: ClaudeFleet, tmp_path: Path
) -> None:
    spool = tmp_path / "state" / "hooks.jsonl"
    settings_file = tmp_path / "hook-settings.json"
    install(settings_file, spool)
    agent = claude_fleet.start(
        ["First answer.", "Second answer.", "Third answer."], settings=json.loads(settings_file.read_text())
    )
    agent.submit("remember the word apricot")
    agent.wait_for("First answer.")
    agent.wait_idle()
    first = current_session(sightings(agent, spool))
    assert first is not None
    agent.submit("/clear")
    agent.wait_idle()
    agent.submit("remember the word bramble")
    agent.wait_for("Second answer.")
    agent.wait_idle()
    status = agent.session_status()
    assert status is not None
    seen = sightings(agent, spool)
    newest = current_session(seen)
    assert newest is not None and newest.session_id != first.session_id
    last_hook = max((s for s in seen if s.source is SessionSource.HOOK), key=lambda s: s.at)
    assert newest.session_id == last_hook.session_id
    assert {SessionSource.HOOK, SessionSource.TRANSCRIPT} <= {s.source for s in seen if s.session_id == newest.session_id}
    # 2.1.150+ rewrite the status file with the new id; 2.1.100 leaves the old id there, with
    # its old time: the newest-wins rule reads past it
    stale = [s for s in seen if s.source is SessionSource.STATUS and s.session_id != newest.session_id]
    assert all(s.at < newest.at for s in stale)
    assert status["sessionId"] == newest.session_id or agent.version == "2.1.100"

    # the agent is gone (as after a reboot); the plan resumes the newest conversation
    agent.exit()
    window = RememberedWindow(
        f"claude-{agent.name}", 0, agent.name, "",
        (RememberedPane(0, str(agent.workdir), agent.pane_id, RememberedAgent(agent.name, newest.session_id, config_dir=str(agent.home / ".claude"))),),
    )  # fmt: skip
    plan = plan_restore([window], LiveServer(running=False), {}, HostChecks())
    (pane,) = plan.agents
    assert pane.argv is not None and pane.argv[:3] == ("claude", "--resume", newest.session_id)
    # The pane's shell has the agent's environment; the wiring starts a fresh pane instead, so
    # the old frame and the shell prompt are cleared first (the guide would read them as an exit).
    agent.type("clear; " + shell_command(pane.argv))
    agent.press("Enter")
    agent.wait_for(lambda s: agent.current_command() == "claude" and "$ clear" not in s and "Resume this" not in s)
    step, keys = walk(agent, StartupExpectation(pane.folder))
    assert isinstance(step, Ready) and keys == [], step
    agent.submit("which word?")
    agent.wait_for("Third answer.")
    last = agent.api.main_requests()[-1].all_text()
    assert "bramble" in last and "apricot" not in last
