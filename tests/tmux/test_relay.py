"""The holder's actions reach every viewer through tmux (nbs_tui/core/sidecar/relay.py): a real
``nbs-tui service`` process polls an idle agent and answers a plan menu; a separate dashboard
runtime, only a viewer of the same server, hears each of those actions once, marked as the
service's, and a gap in the numbers is said."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet.pane_state import HistoryEntry
from nbs_tui.core.sidecar.lease_rules import Lease
from nbs_tui.core.sidecar.relay import ACTIONS_OPTION, encode_ring, parse_ring
from nbs_tui.runtime.contract import LeaseMode, RuntimeOptions
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.events import PaneLeft, PlanSelect, PollStep, RelayGap, SidecarEvent
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.tmux.test_lease_headless import agent, submits
from tests.tmux.test_service import LeaseRecorder, cli, service_env, service_pid
from tests.unit.test_relay import ring_of
from tests.unit.test_runtime import settings

E = TypeVar("E", bound=SidecarEvent)


def relayed(recorder: LeaseRecorder, pane_id: str, kind: type[E]) -> list[E]:
    return [e for e in list(recorder.sidecar) if e.pane_id == pane_id and isinstance(e, kind) and e.by]


def test_a_viewer_sees_each_action_of_the_service_once(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    idle, idle_log = agent(session, tmp_path, "idle")
    plan, plan_log = agent(session, tmp_path, "plan", mode="plan")
    env = service_env(tmp_path)
    started = cli(server, env, "start")
    assert started.returncode == 0, started.stderr
    pid = service_pid(started.stdout)
    address = ServerAddress(socket_name=str(server.socket_name))
    recorder = LeaseRecorder()
    viewer = Runtime(
        replace(settings(tmp_path), server=address, poll_interval=600.0), recorder,
        RuntimeOptions(lease=LeaseMode.WATCH, claude=False, control_plane=False),
    )
    try:
        viewer.start()
        assert retry_until(
            lambda: any(isinstance(h, Lease) and h.pid == pid for h, _ in recorder.leases), 30, raises=False
        ), recorder.leases
        assert retry_until(lambda: len(submits(idle_log)) >= 1, 40, raises=False), idle_log.read_text()
        assert retry_until(
            lambda: any(e.result == "submitted" for e in relayed(recorder, idle, PollStep)), 15,
            raises=False,
        ), recorder.sidecar
        assert retry_until(lambda: "CHOICE" in plan_log.read_text(), 20, raises=False)
        assert retry_until(lambda: bool(relayed(recorder, plan, PlanSelect)), 15, raises=False)
    finally:
        viewer.stop()
        assert cli(server, env, "stop").returncode == 0
    polls = relayed(recorder, idle, PollStep)
    results = [e.result for e in polls]
    assert results[:3] == ["typed", "enter", "submitted"], results
    assert len(results) == len(set((e.at, e.result) for e in polls))  # none twice
    assert all(e.by.endswith(f"pid {pid}") for e in polls)
    assert polls[0].text == "/nbs-poll"
    pressed = [e for e in relayed(recorder, plan, PlanSelect) if e.result == "pressed"]
    assert len(pressed) == 1 and pressed[0].number == 1
    # the viewer itself typed nothing: every poll or plan event it has is the service's
    mine = [e for e in recorder.sidecar if isinstance(e, PollStep | PlanSelect) and not e.by]
    assert mine == []
    entry = HistoryEntry.from_sidecar_event(polls[0])
    assert entry is not None and entry.text.startswith("poll typed /nbs-poll (by sidecar ")


def test_a_gap_in_the_numbers_is_reported_and_a_garbled_value_ignored(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    idle, _ = agent(session, tmp_path, "idle")
    address = ServerAddress(socket_name=str(server.socket_name))
    commands = TmuxServerCommands.for_server(address)
    commands.run("set-option", "-p", "-t", idle, ACTIONS_OPTION, encode_ring(ring_of(1, 2)))
    recorder = LeaseRecorder()
    viewer = Runtime(
        replace(settings(tmp_path), server=address, poll_interval=600.0), recorder,
        RuntimeOptions(lease=LeaseMode.WATCH, claude=False, control_plane=False),
    )
    try:
        viewer.start()
        assert retry_until(lambda: viewer.sidecar is not None and viewer.sidecar.ticks >= 2, 20, raises=False)
        assert relayed(recorder, idle, PollStep) == []  # what was there before the viewer started
        commands.run("set-option", "-p", "-t", idle, ACTIONS_OPTION, "{garbled")
        commands.run("set-option", "-p", "-t", idle, ACTIONS_OPTION, encode_ring(ring_of(*range(9, 15))))
        assert retry_until(lambda: len(relayed(recorder, idle, PollStep)) == 6, 10, raises=False), recorder.sidecar
        gaps = [e for e in recorder.sidecar if isinstance(e, RelayGap) and e.pane_id == idle]
        assert len(gaps) == 1 and gaps[0].message.startswith("6 actions of the sidecar not seen"), gaps
        assert [a.seq for a in parse_ring(commands.run("show-options", "-pqv", "-t", idle, ACTIONS_OPTION).text)] == list(range(9, 15))
    finally:
        viewer.stop()


def test_the_holder_numbers_on_from_what_it_wrote_when_a_read_failed(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))
    heartbeat = LeaseHeartbeat(commands)
    heartbeat.tick()
    lease = SidecarLease(commands, heartbeat)
    assert lease.acting()

    def act(result: str) -> None:
        lease.record(PollStep(pane.pane_id or "", 1.0, result=result))
        lease.flush_actions()

    def seqs() -> list[int]:
        raw = commands.run("show-options", "-pqv", "-t", pane.pane_id or "", ACTIONS_OPTION).text
        return [a.seq for a in parse_ring(raw)]

    assert lease.sync()
    act("typed")
    assert lease.sync()
    stale = lease.panes  # the ring holding seq 1
    act("enter")
    lease.panes = stale  # this tick's read failed: the ring read is a tick old
    act("submitted")
    assert seqs() == [1, 2, 3]
    lease.record(PaneLeft(pane.pane_id, 1.0))  # not a holder's action
    lease.flush_actions()
    assert seqs() == [1, 2, 3]
    heartbeat.stop(release=True)
