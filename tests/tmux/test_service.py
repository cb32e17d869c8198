"""``nbs-tui service``: a detached sidecar that outlives every dashboard, stops on request, and
leaves with its tmux server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.service import EXIT_NOT_RUNNING, _is_service
from tests.tmux.test_lease_headless import agent, submits

REPO = Path(__file__).resolve().parents[2]


def cli(server: libtmux.Server, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", "service", *args, "-L", str(server.socket_name)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=60, check=False,
    )


def service_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".state"),
        "NBS_POLL_INTERVAL": "2",
    }


def service_pid(out: str) -> int:
    return int(out.split("pid ", 1)[1].split(",")[0].split()[0])


def test_service_polls_alone_stops_on_request_and_reports_status(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    _, log = agent(session, tmp_path, "idle")
    env = service_env(tmp_path)
    assert cli(server, env, "status").returncode == EXIT_NOT_RUNNING
    started = cli(server, env, "start")
    assert started.returncode == 0, started.stderr
    pid = service_pid(started.stdout)
    try:
        # no dashboard at all: the agent is polled
        assert retry_until(lambda: len(submits(log)) >= 1, 40, raises=False), log.read_text()
        status = cli(server, env, "status")
        assert status.returncode == 0
        assert f"running, pid {pid}" in status.stdout
        assert f"pid {pid} since" in status.stdout and "(this service)" in status.stdout
        assert "log: " in status.stdout and (tmp_path / "home" / ".state" / "nbs-tui").is_dir()
        again = cli(server, env, "start")
        assert "already running" in again.stdout
    finally:
        stopped = cli(server, env, "stop")
    assert stopped.returncode == 0 and f"pid {pid}" in stopped.stdout
    assert not _is_service(pid)
    status = cli(server, env, "status")
    assert status.returncode == EXIT_NOT_RUNNING and "lease: free" in status.stdout
    before = len(submits(log))
    assert not retry_until(lambda: len(submits(log)) > before, 6, raises=False)  # polls stopped


def test_service_exits_with_its_tmux_server(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    env = service_env(tmp_path)
    started = cli(server, env, "start")
    assert started.returncode == 0, started.stderr
    pid = service_pid(started.stdout)
    server.kill()
    assert retry_until(lambda: not _is_service(pid), 20, raises=False), "the service outlived its server"
