"""Every fleet API command is served by the server's leased service: the lease is looked at
(one tmux round trip, no process, while a live holder renews it) and, when it is free, dead or
expired, the service is started through the lifecycle's one way (`Lifecycle.serve`, as ``new``
and ``restore`` do); the command then gives it a moment to publish its agents' states."""

from __future__ import annotations

import time
from collections.abc import Callable

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, STATE_OPTION, Vacancy, parse_lease
from nbs_tui.sidecar.lease_check import look_at_lease
from nbs_tui.tmux.commands import TmuxServerCommands

PUBLISH_WAIT = 5.0
"""Seconds a command waits, after starting the service, for its first published state."""


def ensure_service(settings: Settings, commands: TmuxServerCommands, say: Callable[[str], None]) -> bool:
    """Make sure this machine's server (``commands``) is served (`Lifecycle.serve`: nothing when
    a live sidecar holds its lease, or with ``service = "off"``); ``say`` hears a service started,
    or why not (the command then goes on with what tmux holds). True when one was started."""
    if settings.service != "auto" or look_at_lease(commands, settings.server).vacancy is Vacancy.HELD:
        return False  # served (or not ours to serve): no need to import the lifecycle room
    # Imported here: a command on a served server (nearly every one) starts in half the time.
    from nbs_tui.lifecycle.host import LocalHost
    from nbs_tui.lifecycle.operations import Lifecycle
    from nbs_tui.runtime.service_starter import sidecar_flags

    if not Lifecycle(settings, LocalHost(commands)).serve(sidecar_flags(settings), say):
        return False
    deadline = time.monotonic() + PUBLISH_WAIT
    while time.monotonic() < deadline:  # a server with no agent at all waits the whole time
        if any(commands.run("list-panes", "-a", "-F", f"#{{{STATE_OPTION}}}").lines):
            return True
        time.sleep(0.2)
    return True


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
