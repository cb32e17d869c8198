"""A remote pane's scrollback is read on its own host, as a local one's, over the host's control
connection through ssh."""

from __future__ import annotations

import shlex

from nbs_tui.tmux.port import PaneHistory
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session, remote_fleet
from tests.tmux.fleet_helpers import wait_for

PRINT = "for i in $(seq 1 150); do printf '\\033[35mremote %03d\\033[0m\\n' $i; done; exec sleep 100000"


def _check(history: PaneHistory) -> None:
    assert not history.alternate and history.history_size >= 120
    first = next(i for i, line in enumerate(history.lines) if "remote 001" in line)
    assert "\x1b[35mremote 001" in history.lines[first]
    assert "remote 150" in history.lines[first + 149]


def test_a_remote_panes_history_with_colours(ssh_lab: SshLab) -> None:
    a = ssh_lab.hosts["hosta"]
    pane = new_session(a, "hist", f"sh -c {shlex.quote(PRINT)}", 80, 24)
    wait_for(lambda: "remote 150" in a.tmux("capture-pane", "-p", "-t", pane))
    with remote_fleet(ssh_lab, "hosta") as (fleet, _):
        assert fleet.wait_seeded(20)
        _check(fleet.capture_history(pane, 1000))
