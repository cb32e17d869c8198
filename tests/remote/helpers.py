"""Helpers for fleets on the ssh lab's hosts: a running remote fleet, captures on a host."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.tmux.fleet import TmuxFleet
from nbs_tui.tmux.ssh import SshHost, SshTmuxRunner
from tests.remote.conftest import Host, SshLab
from tests.tmux.fleet_helpers import QUICK_SHELL, Recorder


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
