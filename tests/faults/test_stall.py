"""A stalled watcher never blocks an agent.

tmux 3.3a stops reading a pane (``server_client_check_pane_buffer``) only while every attached
client is a control client that has the pane's output queued and 512 bytes or more stuck in its
write buffer. A dashboard that is stopped, starved of CPU or stuck in one frame is such a client;
the fleet's ``no-output`` guard client (and the service's own ``no-output`` clients) count as
always able to take more, so tmux keeps reading the panes. Each pane here runs
``gapwriter.py``, which times its own writes: a write blocked on the terminal is tmux holding it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import libtmux
import pytest

from tests.faults.helpers import (
    MAX_PAUSE,
    Writers,
    cli_env,
    control_clients,
    dashboard,
    descendants,
    starve,
    stopped,
    wait_for,
)

STALL = float(os.environ.get("NBS_FAULT_STALL", "8"))
"""Seconds of each stall (docs/faults.md gives a 60 s run; the result is the same, see
bench/results/2026-11-27-faults.md)."""


def _attached(server: libtmux.Server, app_pid: int, guard: bool = True) -> None:
    """The dashboard's control clients are attached (its session's, and the guard)."""
    def ready() -> bool:
        ours = set(descendants(app_pid))
        flags = [f for pid, f in control_clients(server) if pid in ours]
        return any("no-output" not in f for f in flags) and (not guard or any("no-output" in f for f in flags))

    wait_for(ready, 30, "the dashboard's control clients")


def test_a_stopped_dashboard_alone_blocks_no_pane(server: libtmux.Server, tmp_path: Path) -> None:
    """No service, one session, nothing else attached: the hardest case for tmux."""
    writers = Writers.start(server, tmp_path)
    with dashboard(server, tmp_path / "home", "--no-poll") as app:
        _attached(server, app.pid)
        time.sleep(1.0)  # the mirror is live: its reader has drained the seeds
        writers.reset()
        with stopped(app.pid, *descendants(app.pid)):
            time.sleep(STALL)
            during = writers.worst()
        after = writers.settle()
        assert app.proc.poll() is None, app.output()[-400:]
    print(f"dashboard stopped {STALL:.0f}s: longest blocked write {during[0]:.3f}s, longest gap {after[1]:.3f}s")
    assert during[0] < MAX_PAUSE and after[0] < MAX_PAUSE, (during, after)


def test_a_starved_dashboard_alone_blocks_no_pane(server: libtmux.Server, tmp_path: Path) -> None:
    """Running 5 ms every 0.5 s: a reader that drains a little now and then (the pattern that
    kept panes blocked for seconds in the probe when nothing else was attached)."""
    writers = Writers.start(server, tmp_path, rate=40000)
    with dashboard(server, tmp_path / "home", "--no-poll") as app:
        _attached(server, app.pid)
        time.sleep(1.0)
        writers.reset()
        starve([app.pid, *descendants(app.pid)], STALL)
        after = writers.settle()
        assert app.proc.poll() is None, app.output()[-400:]
    print(f"dashboard starved {STALL:.0f}s: longest blocked write {after[0]:.3f}s, longest gap {after[1]:.3f}s")
    assert after[0] < MAX_PAUSE, after


def _service(server: libtmux.Server, env: dict[str, str], action: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "service", action, "-L", str(server.socket_name)],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )


@pytest.mark.service_auto
def test_the_dashboard_and_the_service_stopped_block_no_pane(server: libtmux.Server, tmp_path: Path) -> None:
    writers = Writers.start(server, tmp_path)
    home = tmp_path / "home"
    env = cli_env(home, NBS_POLL_INTERVAL="2")
    started = _service(server, env, "start")
    assert started.returncode == 0, started.stderr
    service = int(started.stdout.split("pid ", 1)[1].split(",")[0].split()[0])
    try:
        with dashboard(server, home, NBS_SERVICE="auto", NBS_POLL_INTERVAL="2") as app:
            _attached(server, app.pid)
            time.sleep(1.0)
            writers.reset()
            victims = [app.pid, *descendants(app.pid), service, *descendants(service)]
            with stopped(*victims):
                time.sleep(STALL)
                during = writers.worst()
            after = writers.settle()
            assert app.proc.poll() is None, app.output()[-400:]
    finally:
        stopped_service = _service(server, env, "stop")
    assert stopped_service.returncode == 0, stopped_service.stdout + stopped_service.stderr
    print(f"dashboard + service stopped {STALL:.0f}s: longest blocked write {during[0]:.3f}s, gap {after[1]:.3f}s")
    assert during[0] < MAX_PAUSE and after[0] < MAX_PAUSE, (during, after)
