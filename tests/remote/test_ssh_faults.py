"""Faults injected for real on a host watched through ssh: sshd killed and started again, a
network partition (the connection's sshd stopped: only ServerAlive notices), the remote tmux
server killed and started again. Each time the host is marked disconnected with one line, comes
back on its own, and its panes are live again (a writer in a pane never frozen for a second)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from nbs_tui.tmux.fleet import TmuxFleet
from nbs_tui.tmux.ssh import SshHost, SshTmuxRunner
from tests.remote.conftest import SshLab
from tests.remote.helpers import ProblemRecorder, mirror_text, new_session, remote_fleet
from tests.remote.test_ssh_fleet import WRITER, _report, _ticks
from tests.tmux.fleet_helpers import wait_for


def _writer(lab: SshLab, tmp_path: Path, name: str) -> tuple[str, Path]:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    report = tmp_path / "pauses"
    return new_session(lab.hosts["hosta"], name, f"{sys.executable} {script} {report}"), report


def _downs(rec: ProblemRecorder) -> list[str]:
    with rec.lock:
        return [msg for up, msg in rec.connections if not up]


def _live_again(fleet: TmuxFleet, rec: ProblemRecorder, pane: str, report: Path) -> None:
    wait_for(lambda: rec.connections[-1][0] is True, 30)
    after = _report(report)[0]
    wait_for(lambda: _ticks(fleet, pane) > after + 20)  # reseeded, fed live again


def test_sshd_killed_then_started_again(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    pane, report = _writer(ssh_lab, tmp_path, "busy")
    with remote_fleet(ssh_lab, "hosta", reconnect_interval=0.2) as (fleet, rec):
        assert fleet.wait_seeded(20)
        wait_for(lambda: _ticks(fleet, pane) > 20)
        a.kill_sshd()
        wait_for(lambda: bool(_downs(rec)))
        assert _downs(rec)[0] == "hosta: connection to hosta lost", _downs(rec)
        # while sshd is away, each try says why (the connection is announced lost once)
        wait_for(lambda: fleet.last_error == "hosta: connection refused: no ssh server listening at hosta")
        wait_for(lambda: ("ssh", "hosta: connection refused: no ssh server listening at hosta") in rec.problems)
        assert all(m.startswith("hosta: ") for m in _downs(rec)), _downs(rec)
        a.launch_sshd()
        _live_again(fleet, rec, pane, report)
    worst_since = _report(report)
    assert worst_since[1] < 1.0, worst_since  # tmux never held the pane: no orphan froze it


class _SlowToHearTheExit(SshTmuxRunner):
    """Its control clients' exits are judged a second late, as on a loaded machine: the
    supervisor's next scan then tries a new connection (refused) before the loss lands."""

    def lost_connection(self, returncode: int | None) -> bool:
        time.sleep(1.0)
        return super().lost_connection(returncode)


def test_a_lost_connection_is_announced_as_lost_even_when_a_retry_is_refused_first(ssh_lab: SshLab) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "calm")
    runner = _SlowToHearTheExit(SshHost("hosta", "hosta", ssh_lab.ssh_options))
    rec = ProblemRecorder()
    fleet = TmuxFleet(runner.server, (), rec, runner=runner, reconnect_interval=0.2, rescan_interval=0.1)
    fleet.start()
    try:
        assert fleet.wait_seeded(20)
        a.kill_sshd()
        refused = "hosta: connection refused: no ssh server listening at hosta"
        wait_for(lambda: ("ssh", refused) in rec.problems)
        assert _downs(rec) == ["hosta: connection to hosta lost"], (_downs(rec), rec.problems)
        a.launch_sshd()
        wait_for(lambda: rec.connections[-1][0] is True, 30)
    finally:
        fleet.stop()


def test_network_partition_is_seen_by_server_alive_and_survived(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    pane, report = _writer(ssh_lab, tmp_path, "busy")
    host = SshHost("hosta", "hosta", (*ssh_lab.ssh_options, "-o", "ServerAliveInterval=1", "-o", "ServerAliveCountMax=2"))
    runner = SshTmuxRunner(host)
    rec = ProblemRecorder()
    fleet = TmuxFleet(runner.server, (), rec, runner=runner, reconnect_interval=0.2)
    fleet.start()
    stopped: list[int] = []
    try:
        assert fleet.wait_seeded(20)
        wait_for(lambda: _ticks(fleet, pane) > 20)
        stopped = a.sshd_sessions()
        assert stopped
        for pid in stopped:  # the connection goes silent: no FIN, no RST, nothing
            os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        wait_for(lambda: bool(_downs(rec)), 30)
        noticed = time.monotonic() - started
        assert 1.0 < noticed < 10.0, noticed  # ServerAlive 1 s x 2, not TCP's minutes
        assert _downs(rec)[0].startswith("hosta: "), _downs(rec)
        _live_again(fleet, rec, pane, report)
    finally:
        fleet.stop()
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_remote_tmux_server_killed_then_started_again(ssh_lab: SshLab) -> None:
    a = ssh_lab.hosts["hosta"]
    new_session(a, "first")
    with remote_fleet(ssh_lab, "hosta", reconnect_interval=0.2) as (fleet, rec):
        assert fleet.wait_seeded(20)
        a.tmux("kill-server")
        wait_for(lambda: bool(_downs(rec)))
        assert _downs(rec)[0].startswith("hosta: "), _downs(rec)
        pane = new_session(a, "second")
        a.tmux("send-keys", "-t", pane, "echo after-restart", "Enter")
        wait_for(lambda: rec.connections[-1][0] is True)
        wait_for(lambda: [p.session_name for p in fleet.panes()] == ["second"])
        wait_for(lambda: any(r.strip() == "after-restart" for r in mirror_text(fleet, pane)))
        # "no server" is tmux answering: polled at the normal interval, not backed off
        assert fleet._supervisor.retry_delay(0) == 0.2
