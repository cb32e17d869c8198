"""Every fleet API command is served by the server's leased service: when no sidecar holds the
lease, the service is started through the lifecycle's one way (`Lifecycle.serve`, as ``new``
and ``restore`` do), and the command gives it a moment to publish its agents' states."""

from __future__ import annotations

import time
from collections.abc import Callable

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, STATE_OPTION, parse_lease
from nbs_tui.runtime.service_starter import sidecar_flags
from nbs_tui.tmux.commands import TmuxServerCommands

PUBLISH_WAIT = 5.0
"""Seconds a command waits, after starting the service, for its first published state."""


def ensure_service(settings: Settings, commands: TmuxServerCommands, say: Callable[[str], None]) -> None:
    """Start this machine's server's service when no sidecar holds its lease (and the settings
    allow: ``service = "auto"``); ``say`` hears it started, or why not (the command then goes on
    with what tmux holds). A held lease costs one tmux round trip and no process."""
    if settings.service != "auto" or parse_lease(commands.display("", f"#{{{LEASE_OPTION}}}")) is not None:
        return
    from nbs_tui.lifecycle.operations import Lifecycle

    lifecycle = Lifecycle.here(settings)
    try:
        lifecycle.serve(sidecar_flags(settings), say)
    finally:
        lifecycle.close()
    deadline = time.monotonic() + PUBLISH_WAIT
    while time.monotonic() < deadline:  # a server with no agent at all waits the whole time
        if any(commands.run("list-panes", "-a", "-F", f"#{{{STATE_OPTION}}}").lines):
            return
        time.sleep(0.2)


def wait_published(commands: TmuxServerCommands, pane_id: PaneId, timeout: float = PUBLISH_WAIT) -> bool:
    """Wait up to ``timeout`` seconds for the lease holder to publish a state for the pane (an
    agent just started), so that a fleet API command naming it next finds it. False at once when
    no sidecar holds the lease (nothing would publish it), or when the time ran out."""
    if parse_lease(commands.display("", f"#{{{LEASE_OPTION}}}")) is None:
        return False
    deadline = time.monotonic() + timeout
    while not commands.display(pane_id, f"#{{{STATE_OPTION}}}"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True
