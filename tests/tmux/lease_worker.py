"""A lease contender in its own process, driven over stdin/stdout by tests/tmux/test_lease.py.

``race``: for each ``go`` line, a fresh heartbeat takes one step and prints ``won TOKEN`` or
``lost TOKEN``. ``hold``: runs a heartbeat thread and prints ``holder TOKEN`` when it acquires,
``seen TOKEN`` when it sees another holder; at end of stdin it stops, releases and prints
``released``.
"""

from __future__ import annotations

import sys

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.lease_rules import Lease, LeaseValue
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.tmux.commands import TmuxServerCommands


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> None:
    mode, socket_name, ttl = sys.argv[1], sys.argv[2], float(sys.argv[3])
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=socket_name))
    if mode == "race":
        for line in sys.stdin:
            if line.strip() != "go":
                continue
            beat = LeaseHeartbeat(commands, ttl=ttl)
            beat.tick()
            say(f"{'won' if beat.holding else 'lost'} {beat.token}")
        return

    def changed(value: LeaseValue) -> None:
        if isinstance(value, Lease) and value.token != beat.token:
            say(f"seen {value.token}")

    beat = LeaseHeartbeat(
        commands,
        ttl=ttl,
        on_acquired=lambda lease: say(f"holder {lease.token}"),
        on_holder_changed=changed,
    )
    say(f"token {beat.token}")
    beat.start()
    sys.stdin.read()
    beat.stop(release=True)
    say("released")


if __name__ == "__main__":
    main()
