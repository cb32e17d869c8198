"""The sidecar lease over ssh: ``--headless --host`` keeps the lease in the far host's tmux
server (the fleet's runner carries the compare-and-set), publishes there, and releases it."""

from __future__ import annotations

from pathlib import Path

from nbs_tui.core.lease import Lease, parse_lease
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session
from tests.remote.test_ssh_headless import _headless, _stop
from tests.tmux.fleet_helpers import wait_for


def test_headless_over_ssh_holds_the_lease_in_the_far_server(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "far")
    proc, events = _headless(ssh_lab, tmp_path, "--host", "hosta")
    try:
        wait_for(lambda: any(e["event"] == "lease" and e["acting"] for e in events), 30)
        value = parse_lease(a.tmux("display-message", "-p", "#{@nbs_sidecar}").rstrip("\n"))
        assert isinstance(value, Lease) and value.pid == proc.pid
        assert not [e for e in events if e["event"] == "error" and e.get("source") == "sidecar lease"], events
    finally:
        _stop(proc)
    assert a.tmux("display-message", "-p", "#{@nbs_sidecar}").strip() == ""  # released
