"""Control clients started and closed in a loop, in a process of its own, for
tests/tmux/test_control_gate.py: ``python -m tests.tmux.gate_cycler SOCKET SESSION CYCLES SEED``.
Prints ``done`` when every cycle ran."""

from __future__ import annotations

import random
import sys
import time

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.control import ControlClient


def main() -> None:
    socket_name, session_id, cycles, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    for _ in range(cycles):
        client = ControlClient(
            ServerAddress(socket_name=socket_name),
            session_id,
            on_output=lambda pane, data: None,
            on_notification=lambda line: None,
            on_exit=lambda why: None,
        )
        client.start()
        time.sleep(rng.uniform(0, 0.01))  # closes land on the other process's identifying starts
        client.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
