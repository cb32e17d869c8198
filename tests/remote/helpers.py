"""Helpers for fleets on the ssh lab's hosts: a running remote fleet, captures on a host."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.tmux.fleet import TmuxFleet
from nbs_tui.tmux.ssh import SshHost, SshTmuxRunner
from tests.remote.conftest import Host, SshLab
from tests.tmux.fleet_helpers import QUICK_SHELL, Recorder

REPO = Path(__file__).resolve().parents[2]
NBS_TUI = Path(sys.executable).with_name("nbs-tui")
"""This checkout's nbs-tui, which the lab's hosts (this machine) run as their own."""


class ProblemRecorder(Recorder):
    """A Recorder that also takes the fleet's problems (`FleetListener.problem`)."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[tuple[str, str]] = []

    def problem(self, source: str, message: str) -> None:
        with self.lock:
            self.problems.append((source, message))


def new_session(host: Host, name: str, command: str = QUICK_SHELL, x: int = 80, y: int = 24) -> str:
    """A detached session on ``host``; returns its first pane's id."""
    pane_id = host.tmux(
        "new-session", "-d", "-P", "-F", "#{pane_id}", "-s", name, "-x", str(x), "-y", str(y), command
    ).strip()
    host.tmux("set-option", "-g", "default-command", QUICK_SHELL)
    return pane_id


def runner_for(lab: SshLab, alias: str, **host_fields: object) -> SshTmuxRunner:
    return SshTmuxRunner(SshHost(alias, alias, lab.ssh_options, **host_fields))  # type: ignore[arg-type]


@contextmanager
def remote_fleet(lab: SshLab, alias: str, **kwargs: object) -> Iterator[tuple[TmuxFleet, ProblemRecorder]]:
    runner = runner_for(lab, alias)
    recorder = ProblemRecorder()
    fleet = TmuxFleet(runner.server, (), recorder, runner=runner, **kwargs)  # type: ignore[arg-type]
    fleet.start()
    try:
        yield fleet, recorder
    finally:
        fleet.stop()


def capture_screen(host: Host, pane_id: str) -> PaneScreen:
    """A PaneScreen painted from the host's own ``capture-pane -p -e -N`` and cursor."""
    raw = subprocess.run(
        ["tmux", "capture-pane", "-p", "-e", "-N", "-t", pane_id], env=host.env(), capture_output=True, check=True
    ).stdout
    fmt = "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag} #{alternate_on}"
    w, h, x, y, flag, alt = (int(v) for v in host.tmux("display-message", "-p", "-t", pane_id, fmt).split())
    screen = PaneScreen(w, h)
    screen.seed(raw, x, y, alternate=bool(alt), cursor_visible=bool(flag))
    return screen


def capture_plain(host: Host, pane_id: str) -> list[str]:
    return [line.rstrip(" ") for line in host.tmux("capture-pane", "-p", "-t", pane_id).split("\n")[:-1]]


def mirror_text(fleet: TmuxFleet, pane_id: str) -> list[str]:
    screen = fleet.screen(pane_id)
    return screen.text_lines() if screen is not None else []


@dataclass
class FarNbsTui:
    """A host's own nbs-tui, named in a ``[[hosts]]`` entry of this machine's config, and this
    machine's nbs-tui (``python -m nbs_tui --config CONFIG ... --host HOST``) that reaches it."""

    lab: SshLab
    host: str
    far: str
    """The host's ``nbs_tui`` line: this checkout's nbs-tui with a state folder of its own and
    no polls (plus what the test adds)."""
    far_state: Path
    config: Path
    env: dict[str, str]
    """This machine's side: its own state folder, no service of its own."""

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "nbs_tui", "--config", str(self.config), *argv, "--host", self.host],
            capture_output=True, text=True, timeout=timeout, env=self.env, cwd=REPO, check=False,
        )  # fmt: skip

    def stop_service(self) -> None:
        """The service the host's nbs-tui started there."""
        self.lab.ssh(self.host, f"{self.far} service stop")


def far_nbs_tui(lab: SshLab, tmp_path: Path, host: str = "hosta", far_env: str = "") -> FarNbsTui:
    """``host``'s own nbs-tui (``far_env``: more ``NAME=value`` words for it) and a config here
    naming it, for fleet API commands run with ``--host``."""
    far_state = tmp_path / "far-state"
    words = f"XDG_STATE_HOME={shlex.quote(str(far_state))} NBS_POLL_DISABLE=1 {far_env}".strip()
    far = f"{words} {shlex.quote(str(NBS_TUI))}"
    config = tmp_path / "hosts.toml"
    config.write_text(
        f'[[hosts]]\nname = "{host}"\nssh = "{host}"\nssh_options = ["-F", "{lab.config}"]\nnbs_tui = {json.dumps(far)}\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env.update(XDG_STATE_HOME=str(tmp_path / "here-state"), NBS_SERVICE="off")
    return FarNbsTui(lab, host, far, far_state, config, env)


def far_agent_at_a_prompt(host: Host, tmp_path: Path) -> str:
    """A fake Claude Code at a permission prompt on ``host`` (``tests/tmux/test_sidecar_runner``'s),
    under a ``CLAUDE_CONFIG_DIR`` only it names, with a status file there (session ``s-far``,
    version ``9.9.9``): facts only the host's own nbs-tui can read. Returns its pane id."""
    from tests.tmux.test_sidecar_runner import write_fake_claude

    fake = write_fake_claude(tmp_path / "bin" / "claude")
    claude_dir = tmp_path / "far-claude"
    pane = new_session(
        host, "agents",
        f"exec env CLAUDE_CONFIG_DIR={shlex.quote(str(claude_dir))} {fake} permission {tmp_path / 'agent.log'}", 120, 40,
    )  # fmt: skip
    pid = int(host.tmux("display-message", "-p", "-t", pane, "#{pane_pid}").strip())
    (claude_dir / "sessions").mkdir(parents=True)
    status = {"pid": pid, "sessionId": "s-far", "cwd": str(tmp_path), "status": "waiting", "version": "9.9.9"}
    (claude_dir / "sessions" / f"{pid}.json").write_text(json.dumps(status))
    return pane
