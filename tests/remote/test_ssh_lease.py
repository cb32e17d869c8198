"""The sidecar lease over ssh: ``--headless --host`` keeps the lease in the far host's tmux
server (the fleet's runner carries the compare-and-set), publishes there, and releases it."""

from __future__ import annotations

import os
import shlex
from dataclasses import replace
from pathlib import Path

import pytest

from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.sidecar.lease_rules import Lease, parse_lease
from nbs_tui.runtime.contract import LeaseMode
from nbs_tui.runtime.runtime import Runtime, not_installed
from nbs_tui.runtime.service import _is_service
from tests.remote.conftest import SshLab
from tests.remote.helpers import NBS_TUI, new_session
from tests.remote.test_ssh_headless import _headless
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_service import LeaseRecorder
from tests.unit.test_runtime import settings


def test_headless_over_ssh_holds_the_lease_in_the_far_server(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "far")
    with _headless(ssh_lab, tmp_path, "--host", "hosta") as run:
        wait_for(lambda: run.has("lease", acting=True), 30)
        value = parse_lease(a.tmux("display-message", "-p", "#{@nbs_sidecar}").rstrip("\n"))
        assert isinstance(value, Lease) and value.pid == run.proc.pid
        assert not run.find("error", source="sidecar lease"), run.events
    assert run.returncode == 0, run.stderr
    assert a.tmux("display-message", "-p", "#{@nbs_sidecar}").strip() == ""  # released


def _dashboard(ssh_lab: SshLab, tmp_path: Path, nbs_tui: str | None) -> tuple[Runtime, LeaseRecorder]:
    """A dashboard's runtime (``service = "auto"``) watching hosta over ssh."""
    host = HostSpec("hosta", "hosta", ssh_lab.ssh_options, nbs_tui=nbs_tui)
    recorder = LeaseRecorder()
    runtime = Runtime(replace(settings(tmp_path), hosts=(host,), service="auto"), recorder)
    runtime.build()
    return runtime, recorder


@pytest.mark.service_auto
def test_auto_starts_the_service_on_the_remote_host_with_its_own_nbs_tui(ssh_lab: SshLab, tmp_path: Path) -> None:
    """``service = "auto"`` with ``--host``: the service runs on that host (``ssh hosta nbs-tui
    service start``), never here, and holds the far server's lease after the dashboard quits."""
    a = ssh_lab.hosts["hosta"]
    new_session(a, "far")
    state = tmp_path / "far-state"
    command = f"XDG_STATE_HOME={shlex.quote(str(state))} {shlex.quote(str(NBS_TUI))}"  # a shell command, as configured
    runtime, recorder = _dashboard(ssh_lab, tmp_path, command)
    assert runtime.lease_mode() is LeaseMode.SERVICE
    runtime.start()
    try:
        holders = lambda: [h for h, _ in recorder.leases if isinstance(h, Lease)]  # noqa: E731
        wait_for(lambda: bool(holders()), 40)
        service = holders()[-1].pid
        assert service != os.getpid() and _is_service(service)
        assert not any(acting for _, acting in recorder.leases)  # the dashboard only watches
        assert list(state.glob("nbs-tui/service-*.pid")), "the host's own service files"
    finally:
        runtime.stop()
    value = parse_lease(a.tmux("display-message", "-p", "#{@nbs_sidecar}").rstrip("\n"))
    assert isinstance(value, Lease) and value.pid == service  # it outlives the dashboard
    stopped = ssh_lab.ssh("hosta", f"{command} service stop")
    assert stopped.returncode == 0, stopped.stderr
    assert not _is_service(service)


@pytest.mark.service_auto
def test_auto_on_a_host_without_nbs_tui_acts_itself_and_says_why(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "far")
    runtime, recorder = _dashboard(ssh_lab, tmp_path, None)
    assert runtime.lease_mode() is LeaseMode.CONTEND
    runtime.start()
    try:
        wait_for(lambda: any(acting for _, acting in recorder.leases), 30)
        wait_for(lambda: any(m == not_installed("hosta") for _, m in recorder.problems), 10)
        said = [m for _, m in recorder.problems if "not installed" in m]
        assert len(said) == 1 and "pipx install nbs-tui" in said[0]
    finally:
        runtime.stop()
    assert a.tmux("display-message", "-p", "#{@nbs_sidecar}").strip() == ""  # released


@pytest.mark.service_auto
def test_auto_with_an_nbs_tui_command_missing_on_the_host_acts_itself_and_says_why(
    ssh_lab: SshLab, tmp_path: Path
) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "far")
    runtime, recorder = _dashboard(ssh_lab, tmp_path, "nbs-tui-not-here")
    assert runtime.lease_mode() is LeaseMode.SERVICE
    runtime.start()
    try:
        wait_for(lambda: any(acting for _, acting in recorder.leases), 40)
        assert any(m.startswith(not_installed("hosta")) for _, m in recorder.problems), recorder.problems
    finally:
        runtime.stop()
