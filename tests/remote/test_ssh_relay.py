"""The host's service acts; a dashboard on another machine only watches over ssh and still hears
each action (docs/lease.md, "The holder's actions, relayed"): the ``@nbs_actions`` pane option
travels with the viewer's per-tick option read through the host's ssh connection."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import pytest

from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.pane_state import HistoryEntry
from nbs_tui.core.sidecar.lease_rules import Lease
from nbs_tui.runtime.contract import LeaseMode
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.events import PlanSelect, PollStep, SidecarEvent
from nbs_tui.sidecar.pane_options import SidecarSwitches
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.remote.conftest import SshLab
from tests.remote.helpers import NBS_TUI, new_session
from tests.tmux.fleet_helpers import wait_for
from tests.tmux.test_service import LeaseRecorder
from tests.tmux.test_sidecar_runner import write_fake_claude
from tests.unit.test_runtime import settings

E = TypeVar("E", bound=SidecarEvent)


@pytest.mark.service_auto
def test_a_dashboard_over_ssh_hears_the_remote_services_polls_and_plan_answers(
    ssh_lab: SshLab, tmp_path: Path
) -> None:
    a = ssh_lab.hosts["hosta"]
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    log, plan_log = tmp_path / "agent.log", tmp_path / "plan.log"
    pane = new_session(a, "agents", f"{fake} idle {log}", 120, 40)
    plan = new_session(a, "planner", f"{fake} plan {plan_log}", 120, 40)
    state = tmp_path / "far-state"
    command = f"XDG_STATE_HOME={shlex.quote(str(state))} {shlex.quote(str(NBS_TUI))}"
    host = HostSpec("hosta", "hosta", ssh_lab.ssh_options, nbs_tui=command)
    recorder = LeaseRecorder()
    runtime = Runtime(
        replace(settings(tmp_path), hosts=(host,), service="auto", poll_interval=2.0), recorder
    )
    runtime.build()
    assert runtime.lease_mode() is LeaseMode.SERVICE

    def heard(pane_id: str, kind: type[E]) -> list[E]:
        return [e for e in list(recorder.sidecar) if e.pane_id == pane_id and isinstance(e, kind) and e.by]

    runtime.start()
    try:
        wait_for(lambda: any(isinstance(h, Lease) for h, _ in recorder.leases), 40)
        service = next(h for h, _ in recorder.leases if isinstance(h, Lease))
        assert isinstance(service, Lease)
        wait_for(lambda: any(e.result == "submitted" for e in heard(pane, PollStep)), 45)
        wait_for(lambda: any(e.result == "landed" for e in heard(plan, PlanSelect)), 45)
        # the viewer's per-tick option read goes on the fleet's control connection, not an ssh exec
        lease = runtime.lease
        assert lease is not None
        commands = lease.commands
        in_band, processes = commands.in_band_runs, commands.process_runs
        _, panes = lease.switches.read()
        assert commands.in_band_runs > in_band and commands.process_runs == processes
        # with the same answers as an ssh exec of tmux gives
        by_ssh = SidecarSwitches(TmuxServerCommands(commands.runner))
        assert panes.keys() == by_ssh.read()[1].keys()
        assert lease.heartbeat.client.read() == a.tmux("display-message", "-p", "#{@nbs_sidecar}").rstrip("\n")
    finally:
        runtime.stop()
        ssh_lab.ssh("hosta", f"{command} service stop")
    assert not any(acting for _, acting in recorder.leases)  # the dashboard only watched
    polls = heard(pane, PollStep)
    assert [e.result for e in polls][:3] == ["typed", "enter", "submitted"], polls
    assert all(e.by == f"{service.host} pid {service.pid}" for e in polls)
    pressed = [e for e in heard(plan, PlanSelect) if e.result == "pressed"]
    assert len(pressed) == 1 and pressed[0].number == 1
    entry = HistoryEntry.from_sidecar_event(polls[0])
    assert entry is not None and entry.text.endswith(f"(by sidecar {service.host} pid {service.pid})")
    assert "SUBMIT /nbs-poll" in log.read_text()
