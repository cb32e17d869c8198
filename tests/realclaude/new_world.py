"""Agents started by the real ``nbs-tui new`` for tests: a HOME, a work folder and a scripted API
per agent, and the config whose ``claude_command`` wraps the real Claude Code with them."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import libtmux

from nbs_tui.claude.hooks import install
from nbs_tui.claude.spool import parse_line
from nbs_tui.config import Settings
from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.fleet.model import ServerAddress
from tests.realclaude.harness import (
    _SCRUB_PREFIXES,
    OFFLINE_ENV,
    ClaudeFleet,
    FakeAPI,
    Scenario,
    looks_idle,
)

REPO = Path(__file__).resolve().parents[2]


@dataclass
class NewAgentWorld:
    """A HOME, a work folder and a scripted API for one agent ``nbs-tui new`` will start."""

    home: Path
    workdir: Path
    api: FakeAPI
    wrapper: Path
    config: Path
    state: Path

    def env(self) -> dict[str, str]:
        """nbs-tui's environment in this world: its state and config folders, no service, none of
        the caller's ``TMUX*``, ``CLAUDE*`` or ``NBS_*`` variables."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "CLAUDE", "NBS_"))}
        env.update(XDG_STATE_HOME=str(self.state), XDG_CONFIG_HOME=str(self.state / "config"), NBS_SERVICE="off")
        return env

    def nbs_tui(self, server: str, *argv: str, timeout: float = 150.0) -> subprocess.CompletedProcess[str]:
        """``nbs-tui --config CONFIG -L SERVER ARGV``, as a process with no stdin (so ``stop`` and
        ``restart`` without ``--yes`` cannot ask)."""
        return subprocess.run(
            [sys.executable, "-m", "nbs_tui", "--config", str(self.config), "-L", server, *argv],
            capture_output=True, text=True, timeout=timeout, env=self.env(), cwd=REPO, check=False,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def run(self, server: str, *args: str, timeout: float = 150.0) -> subprocess.CompletedProcess[str]:
        """``nbs-tui --config CONFIG -L SERVER new ARGS``, as a process."""
        return self.nbs_tui(server, "new", *args, timeout=timeout)

    @property
    def action_log(self) -> Path:
        """The action log of `dashboard_settings`' dashboard."""
        return self.config.parent / "actions.log"

    def dashboard_settings(self, server: libtmux.Server, *, poll: bool = True) -> Settings:
        """A dashboard of ``server`` whose ``c``/``S``/``X`` and restore start this world's Claude
        Code: its command and config folder, the log `action_log`, no service; ``poll`` False: no
        ``/nbs-poll`` typed into its agents."""
        return Settings(
            server=ServerAddress(socket_name=server.socket_name), claude_command=str(self.wrapper),
            claude_home=self.home / ".claude", action_log=self.action_log, hook_spool=self.config.parent / "hooks.jsonl",
            service="off", poll_disabled=not poll,
        )  # fmt: skip


def make_world(
    fleet: ClaudeFleet, tmp: Path, name: str, scenario: Scenario, *, trust: bool = False, hooks: bool = False
) -> NewAgentWorld:
    """``hooks``: nbs-tui's Claude Code hooks installed in the agent's settings, their spool named
    in the config (the watcher then hears SessionStart: 2.1.100 does not rewrite its status file
    after ``/clear``)."""
    api = FakeAPI(scenario, name=name).start()
    fleet._apis.append(api)  # stopped with the fleet
    root = tmp / name
    home, workdir = root / "home", root / "work"
    home.mkdir(parents=True)
    workdir.mkdir(parents=True)
    home, workdir = home.resolve(), workdir.resolve()
    key = f"sk-ant-api03-nbs-tui-test-{name}-" + "x" * 24
    fleet._write_config(home, workdir, key, trust, True, True, {"permissions": {"defaultMode": "default"}}, None)
    env = {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": key,
        "TERM": "tmux-256color",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        **OFFLINE_ENV,
    }
    lines = [
        "#!/bin/bash",
        "# the test's claude_command: its HOME and scripted API, then the real Claude Code",
        "for v in $(compgen -e); do",
        "  case $v in " + "|".join(p + "*" for p in _SCRUB_PREFIXES) + ") unset \"$v\";; esac",
        "done",
        *(f"export {k}={shlex.quote(v)}" for k, v in env.items()),
        f'exec {shlex.quote(str(home / "bin" / "claude"))} "$@"',
    ]
    wrapper = root / "claude-here"
    wrapper.write_text("\n".join(lines) + "\n")
    wrapper.chmod(0o755)
    config = root / "config.toml"
    config.write_text(f"claude_command = {json.dumps(str(wrapper))}\nclaude_home = {json.dumps(str(home / '.claude'))}\n")
    if hooks:
        spool = root / "hooks.jsonl"
        install(home / ".claude" / "settings.json", spool)
        config.write_text(config.read_text() + f"hook_spool = {json.dumps(str(spool))}\n")
    return NewAgentWorld(home, workdir, api, wrapper, config, root / "state")


def windows(server: libtmux.Server) -> list[str]:
    out = server.cmd("list-windows", "-a", "-F", "#{session_name}:#{window_name}:#{pane_current_path}")
    return list(out.stdout)


def trusted(world: NewAgentWorld) -> bool:
    projects = json.loads((world.home / ".claude.json").read_text()).get("projects", {})
    return bool(projects.get(str(world.workdir), {}).get("hasTrustDialogAccepted"))




def started_sessions(world: NewAgentWorld) -> list[str]:
    """The session ids of the SessionStart hook events in the world's spool, in order (``hooks``)."""
    spool = world.config.parent / "hooks.jsonl"
    found = []
    for raw in spool.read_bytes().splitlines() if spool.exists() else []:
        try:
            event = parse_line(raw, time.time())
        except ValueError:
            continue
        if event.event == "SessionStart" and event.session_id:
            found.append(event.session_id)
    return found


def wait_until(done: Callable[[], object], timeout: float = 30.0, what: str = "") -> None:
    """A bounded poll: ``done()`` true within ``timeout`` seconds, else the test fails. Looks
    every 0.1 s at first, then less often, up to every 0.5 s: many checks run an nbs-tui command
    or tmux, and a suite's long waits looking ten times a second kept two cores busy."""
    deadline = time.monotonic() + timeout
    pause = 0.1
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout:.0f}s for {what or done}"
        time.sleep(pause)
        pause = min(pause * 1.25, 0.5)


AGAIN = "and what next?"
"""The question `prompted_once` types one reply after the first prompt."""


def local_tmux(socket: str) -> Callable[..., str]:
    """``tmux -L SOCKET ARGS``: its output (what `tests.remote.conftest.Host.tmux` is for a host)."""

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True).stdout

    return tmux


def prompted_once(world: NewAgentWorld, tmux: Callable[..., str], pane: str, first: Callable[[str], bool]) -> str:
    """The first prompt reached the API once, and is still once a reply later: once the agent has
    answered it and is idle, a question typed into ``pane`` (through ``tmux``) is the API's second
    prompt. A prompt typed twice, or an Enter pressed again, would have come in between: Claude
    Code queues what is submitted while it works and sends it when the turn ends. Returns the
    first prompt."""
    wait_until(lambda: len(world.api.prompts()) >= 1, 30, "the first prompt")
    assert first(world.api.prompts()[0]), world.api.prompts()

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", pane)

    wait_until(lambda: looks_idle(screen()), 30, "the agent idle after its answer")
    tmux("send-keys", "-t", pane, "-l", AGAIN)
    wait_until(lambda: AGAIN in (detect_text(screen()).input_text or ""), 10, "the question in the box")
    tmux("send-keys", "-t", pane, "Enter")
    wait_until(lambda: len(world.api.prompts()) >= 2, 30, f"a second prompt (so far {world.api.prompts()})")
    prompts = world.api.prompts()
    assert len(prompts) == 2 and first(prompts[0]) and prompts[1] == AGAIN, prompts
    return prompts[0]
