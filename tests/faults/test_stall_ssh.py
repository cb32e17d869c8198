"""A stalled ssh connection never blocks a remote agent.

The dashboard's fleet watches hosta through ssh; its ControlMaster and the control client's own
ssh are stopped (SIGSTOP), so nothing reads the remote ``tmux -C`` any more: once ssh's and the
kernel's buffers are full the remote client's write buffer in tmux fills, which would keep
tmux from reading the panes. The fleet's ``no-output`` guard client, attached on hosta through
the same master, keeps them read.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tests.faults.helpers import GAPWRITER, MAX_PAUSE, stopped, wait_for
from tests.remote.conftest import SshLab
from tests.remote.helpers import new_session, remote_fleet

STALL = float(os.environ.get("NBS_FAULT_STALL", "10"))
PANES = 4
RATE = 100_000
"""Bytes a second per pane: enough to fill ssh's and the socket's buffers within the stall."""


def _worst(reports: list[Path]) -> tuple[float, float]:
    rows = [[float(x) for x in r.read_text().split()[:2]] for r in reports]
    return max(r[0] for r in rows), max(r[1] for r in rows)


def _lines(reports: list[Path]) -> list[int]:
    return [int(r.read_text().split()[2]) for r in reports]


def test_a_stalled_ssh_connection_blocks_no_remote_pane(ssh_lab: SshLab, tmp_path: Path) -> None:
    a = ssh_lab.hosts["hosta"]
    reports = [tmp_path / f"writer-{i}.report" for i in range(PANES)]
    for i, report in enumerate(reports):
        command = f"{sys.executable} {GAPWRITER} {report} {RATE}"
        if i == 0:
            new_session(a, "flood", command, x=120, y=40)
        else:
            a.tmux("new-window", "-d", "-t", "flood", command)
    wait_for(lambda: all(r.exists() for r in reports), 20, "the writers")
    with remote_fleet(ssh_lab, "hosta") as (fleet, rec):
        assert fleet.wait_seeded(20)
        flags = a.tmux("list-clients", "-F", "#{client_flags}")
        assert "no-output" in flags, flags  # the guard is attached on hosta
        master = fleet.runner.master_pid()  # type: ignore[attr-defined]
        assert master
        time.sleep(1.0)  # the mirror is live
        for report in reports:
            report.unlink()
        wait_for(lambda: all(r.exists() for r in reports), 10, "the writers after the reset")
        with stopped(master, *fleet.client_pids()):
            time.sleep(STALL)
            during = _worst(reports)
        before = _lines(reports)
        wait_for(lambda: all(n > b + 20 for n, b in zip(_lines(reports), before, strict=True)), 20, "the writers writing")
        after = _worst(reports)
        wait_for(lambda: rec.connections[-1][0] is True, 40, "the fleet connected again (after a long stall)")
    print(f"ssh stalled {STALL:.0f}s ({PANES} panes x {RATE // 1000} KB/s): longest blocked write "
          f"{after[0]:.3f}s, longest gap {after[1]:.3f}s")
    assert during[0] < MAX_PAUSE and after[0] < MAX_PAUSE, (during, after)
