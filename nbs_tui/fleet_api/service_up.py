"""Every fleet API command is served by the server's leased service: when nobody holds the
lease, start ``nbs-tui service`` as a dashboard does (`nbs_tui.runtime.service_starter`), and
give it a moment to publish its agents' states."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from nbs_tui.config import Settings
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, STATE_OPTION, parse_lease
from nbs_tui.runtime.service_starter import sidecar_flags
from nbs_tui.tmux.commands import TmuxServerCommands

PUBLISH_WAIT = 5.0
"""Seconds a command waits, after starting the service, for its first published state."""


def ensure_service(settings: Settings, commands: TmuxServerCommands) -> str | None:
    """Start the server's service when no sidecar holds its lease (and the settings allow:
    ``service = "auto"``). None when a sidecar acts (or was left off on purpose); else why not,
    in one line for a warning: the command goes on with what tmux holds."""
    if parse_lease(commands.display("", f"#{{{LEASE_OPTION}}}")) is not None or settings.service != "auto":
        return None
    argv = [sys.executable, "-m", "nbs_tui", *settings.server.tmux_args(), *sidecar_flags(settings), "service", "start"]
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"nbs-tui service did not start ({error})"
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        return f"nbs-tui service did not start ({why})"
    deadline = time.monotonic() + PUBLISH_WAIT
    while time.monotonic() < deadline:  # a server with no agent at all waits the whole time
        if any(commands.run("list-panes", "-a", "-F", f"#{{{STATE_OPTION}}}").lines):
            break
        time.sleep(0.2)
    return None
