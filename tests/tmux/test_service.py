"""``nbs-tui service``: a detached sidecar that outlives every dashboard, stops on request, and
leaves with its tmux server."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.lease_rules import Lease, LeaseValue
from nbs_tui.runtime.contract import LeaseMode
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.runtime.service import EXIT_NOT_RUNNING, SERVICE_NICE, ServerWatch, _is_service
from nbs_tui.runtime.service_starter import ServiceStarter
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.tmux.test_lease_headless import agent, submits
from tests.unit.test_runtime import Recorder, settings

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


def test_the_services_server_watch_starts_no_process_while_the_server_runs(
    session: libtmux.Session, server: libtmux.Server
) -> None:
    """The watch asks the server's pid once, then waits on it: many intervals, one process;
    the server killed, the stop event is set."""
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))
    watch = ServerWatch(commands, interval=0.05)
    stop = threading.Event()
    thread = threading.Thread(target=watch.run, args=(stop,), daemon=True)
    thread.start()
    try:
        assert retry_until(lambda: watch.checks >= 10, 20, raises=False)
        assert commands.process_runs == 1, "tmux is asked the pid once, not every interval"
        assert not stop.is_set()
        server.kill()
        assert stop.wait(20), "the server's exit stops the service"
        assert commands.process_runs == 2  # the one look after the exit: no new server there
    finally:
        stop.set()
        thread.join(5)


class LeaseRecorder(Recorder):
    def __init__(self) -> None:
        super().__init__()
        self.leases: list[tuple[LeaseValue, bool]] = []

    def lease_changed(self, holder: LeaseValue, acting: bool) -> None:
        self.leases.append((holder, acting))


@pytest.mark.service_auto
def test_a_dashboard_runtime_finding_no_holder_starts_the_service_which_outlives_it(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = service_env(tmp_path)
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "NBS_POLL_INTERVAL"):
        monkeypatch.setenv(key, env[key])  # the service it starts keeps its files there
    _, log = agent(session, tmp_path, "idle")
    address = ServerAddress(socket_name=str(server.socket_name))
    recorder = LeaseRecorder()
    dashboard = Runtime(replace(settings(tmp_path), server=address, poll_interval=2.0), recorder)
    assert dashboard.lease_mode() is LeaseMode.SERVICE
    dashboard.start()
    try:
        holder = lambda: [h for h, _ in recorder.leases if isinstance(h, Lease)]  # noqa: E731
        assert retry_until(lambda: bool(holder()), 30, raises=False), (recorder.leases, recorder.problems)
        service = holder()[-1].pid
        assert service != os.getpid() and _is_service(service)
        assert not any(acting for _, acting in recorder.leases)  # the dashboard only watches
        assert retry_until(lambda: len(submits(log)) >= 1, 40, raises=False)
    finally:
        dashboard.stop()
    try:
        before = len(submits(log))  # the dashboard is gone: polls go on
        assert retry_until(lambda: len(submits(log)) > before, 40, raises=False)
    finally:
        assert cli(server, env, "stop").returncode == 0
    assert not _is_service(service)


def test_the_service_is_not_started_before_the_dashboard_is_ready(tmp_path: Path) -> None:
    """``ready()`` holds the start back (the dashboard's first frame first); once it says yes,
    the start runs (here it fails at once: no such server, so ``give_up`` hears why)."""
    ready = False
    gave_up: list[str] = []
    starter = ServiceStarter(
        ServerAddress(socket_name=f"nbs-none-{os.getpid()}"), 2.0, lambda _m: None, gave_up.append,
        ready=lambda: ready,
    )
    starter.vacant()
    assert not any(t.name == "nbs-service-start" for t in threading.enumerate())
    ready = True
    starter.vacant()
    assert retry_until(lambda: bool(gave_up), 30, raises=False)
    assert "did not start" in gave_up[0]


def test_the_service_runs_below_the_dashboards_priority(
    server: libtmux.Server, session: libtmux.Session, tmp_path: Path
) -> None:
    env = service_env(tmp_path)
    started = cli(server, env, "start")
    assert started.returncode == 0, started.stderr
    pid = service_pid(started.stdout)
    try:
        assert os.getpriority(os.PRIO_PROCESS, pid) >= os.getpriority(os.PRIO_PROCESS, 0) + SERVICE_NICE
    finally:
        assert cli(server, env, "stop").returncode == 0


def test_service_start_hands_the_sidecar_flags_to_the_service(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """A service started with --poll-interval 2 polls on 2 s, not on the 30 s default (it used to
    drop every flag given to 'service start', and so did a dashboard starting it)."""
    _, log = agent(session, tmp_path, "idle")
    env = service_env(tmp_path)
    del env["NBS_POLL_INTERVAL"]
    started = subprocess.run(
        [sys.executable, "-m", "nbs_tui", "-L", str(server.socket_name), "--poll-interval", "2",
         "--plan-policy", "off", "service", "start"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=60, check=False,
    )
    assert started.returncode == 0, started.stderr
    pid = service_pid(started.stdout)
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"--poll-interval" in argv and argv[argv.index(b"--poll-interval") + 1] == b"2"
        assert argv[argv.index(b"--plan-policy") + 1] == b"off"
        assert retry_until(lambda: len(submits(log)) >= 1, 15, raises=False), log.read_text()
    finally:
        assert cli(server, env, "stop").returncode == 0



def test_starts_at_once_start_one_service(
    server: libtmux.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three ``service start`` at the same moment (three ``nbs-tui new`` from a script): one
    service runs. Threads, so the three looks at the pid file truly overlap (three processes
    start ~100 ms apart and missed the race without the lock)."""
    from nbs_tui.runtime import service

    server.new_session(session_name="work")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    config = replace(
        settings(tmp_path), server=ServerAddress(socket_name=server.socket_name), poll_disabled=True,
        config_file=tmp_path / "none.toml",
    )  # fmt: skip
    barrier = threading.Barrier(3)

    def start() -> None:
        barrier.wait()
        service.start(config)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    said = capsys.readouterr().out
    pids = {service_pid(line) for line in said.splitlines() if line.startswith("service ")}
    try:
        assert len(pids) == 1 and said.count("service started") == 1, said
    finally:
        for pid in pids:
            if _is_service(pid):
                os.kill(pid, 15)
        assert retry_until(lambda: not any(_is_service(pid) for pid in pids), 15, raises=False)
