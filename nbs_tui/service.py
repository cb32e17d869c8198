"""``nbs-tui service start|stop|status [-L NAME|-S PATH]``: the sidecar as a detached process.

One service per tmux server runs the same runtime as ``--headless`` and contends for the
server's sidecar lease (docs/lease.md), so polls and plan answers go on after the last dashboard
quits. It exits when it is stopped (SIGTERM, releasing the lease at once) or when its tmux
server goes away. Its pid file and its event log (``--headless``'s JSON lines) live in the XDG
state directory, named after the server; ``status`` reads who holds the lease from tmux itself,
so it also names a holder on another host.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.core.lease import LEASE_OPTION, ForeignLease, Lease, parse_lease
from nbs_tui.core.model import ServerAddress
from nbs_tui.logs import state_dir

log = logging.getLogger(__name__)

STARTUP_WAIT = 5.0
"""How long ``start`` waits to see the new service hold the lease before it reports."""
STOP_WAIT = 15.0
SERVER_CHECK = 2.0
"""Seconds between the running service's checks that its tmux server still exists."""

SERVICE_NICE = 5
"""The service runs below a dashboard's priority: on a small machine its start (a second Python,
a fleet seeded by captures) would otherwise compete with the dashboard's first frame."""

EXIT_NOT_RUNNING = 3
"""``status`` when no service runs for the server (as LSB init scripts do)."""


def add_parser(commands: argparse._SubParsersAction[Any]) -> None:
    service = commands.add_parser(
        "service", help="run the sidecar as a background service for a tmux server (start, stop, status)"
    )
    service.add_argument("action", choices=("start", "stop", "status", "run"), help="'run' is what 'start' detaches")
    picked = service.add_mutually_exclusive_group()
    # SUPPRESS: given before the subcommand (nbs-tui -L x service start), they are kept
    picked.add_argument("-L", dest="socket_name", metavar="NAME", default=argparse.SUPPRESS, help="tmux socket name")
    picked.add_argument("-S", dest="socket_path", metavar="PATH", default=argparse.SUPPRESS, help="tmux socket path")


def sidecar_flags(settings: Settings, *, local: bool = True) -> list[str]:
    """The flags that give a service process the sidecar settings this process runs with.

    A dashboard started with ``--no-poll`` or ``--poll-interval 5`` that starts the service must
    not get a service that polls on the defaults; ``service start`` hands them on to ``run``.
    Paths (the config file, projects) are this machine's: only ``local`` services get them.
    """
    flags = ["--poll-interval", f"{settings.poll_interval:g}", "--plan-policy", settings.plan_policy]
    if settings.poll_disabled:
        flags.append("--no-poll")
    if local:
        if settings.config_file.is_file():  # the default path may be absent; a named one may not
            flags += ["--config", str(settings.config_file)]
        for project in settings.projects:
            flags += ["--project", str(project)]
    return flags


def server_key(server: ServerAddress) -> str:
    if server.socket_path:
        raw = "S-" + server.socket_path
    elif server.socket_name:
        raw = "L-" + server.socket_name
    else:
        raw = "default"
    return re.sub(r"[^A-Za-z0-9._-]", "_", raw)


def pid_path(server: ServerAddress) -> Path:
    return state_dir() / f"service-{server_key(server)}.pid"


def events_path(server: ServerAddress) -> Path:
    return state_dir() / f"service-{server_key(server)}.log"


def service_command(action: str, settings: Settings) -> int:
    if action == "start":
        return start(settings)
    if action == "stop":
        return stop(settings)
    if action == "status":
        return status(settings)
    return run(settings)


# -- the pid file ---------------------------------------------------------------------------


def _is_service(pid: int) -> bool:
    """``pid`` is alive and is an nbs-tui service (a recycled pid is not)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True  # no /proc: trust the pid file
    return b"service" in cmdline and b"run" in cmdline and any(b"nbs_tui" in a or b"nbs-tui" in a for a in cmdline)


def running_pid(server: ServerAddress) -> int | None:
    try:
        pid = int(pid_path(server).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return pid if _is_service(pid) else None


def _tmux(server: ServerAddress, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    return subprocess.run(
        ["tmux", *server.tmux_args(), *args], capture_output=True, text=True, timeout=10, env=env, check=False
    )


def _lease_line(server: ServerAddress, service_pid: int | None) -> str:
    done = _tmux(server, "display-message", "-p", f"#{{{LEASE_OPTION}}}")
    if done.returncode != 0:
        return f"lease: cannot ask tmux ({done.stderr.strip() or 'no answer'})"
    value = parse_lease(done.stdout.rstrip("\n"))
    if value is None:
        return "lease: free (no sidecar acts)"
    if isinstance(value, ForeignLease):
        return f"lease: {value.describe()} ({value.why})"
    assert isinstance(value, Lease)
    since = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(value.since))
    who = " (this service)" if service_pid is not None and value.pid == service_pid else ""
    return f"lease: held by {value.host} pid {value.pid} since {since}{who}"


def _holder_pid(server: ServerAddress) -> int | None:
    done = _tmux(server, "display-message", "-p", f"#{{{LEASE_OPTION}}}")
    value = parse_lease(done.stdout.rstrip("\n")) if done.returncode == 0 else None
    return value.pid if isinstance(value, Lease) else None


# -- start, stop, status ----------------------------------------------------------------------


def start(settings: Settings) -> int:
    server = settings.server
    probe = _tmux(server, "display-message", "-p", "#{pid}")
    if probe.returncode != 0:
        print(f"nbs-tui service: cannot reach {server.describe()}: {probe.stderr.strip()}", file=sys.stderr)
        return 1
    pid = running_pid(server)
    if pid is not None:
        print(f"service already running for {server.describe()}: pid {pid}")
        print(_lease_line(server, pid))
        return 0
    state_dir().mkdir(parents=True, exist_ok=True)
    log = events_path(server)
    argv = [sys.executable, "-m", "nbs_tui", *server.tmux_args(), *sidecar_flags(settings), "service", "run"]
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    with open(log, "a", encoding="utf-8") as out:
        child = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
            start_new_session=True, close_fds=True,
        )
    pid_path(server).write_text(f"{child.pid}\n")
    deadline = time.monotonic() + STARTUP_WAIT
    while time.monotonic() < deadline:
        if child.poll() is not None:
            print(f"nbs-tui service: exited at once (status {child.returncode}); see {log}", file=sys.stderr)
            with contextlib.suppress(OSError):
                pid_path(server).unlink()
            return 1
        if _holder_pid(server) == child.pid:
            break
        time.sleep(0.1)
    print(f"service started for {server.describe()}: pid {child.pid}, log {log}")
    print(_lease_line(server, child.pid))
    return 0


def stop(settings: Settings) -> int:
    server = settings.server
    pid = running_pid(server)
    if pid is None:
        print(f"no service running for {server.describe()}")
        with contextlib.suppress(OSError):
            pid_path(server).unlink()
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT
    while _is_service(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _is_service(pid):
        print(f"nbs-tui service: pid {pid} did not stop within {STOP_WAIT:g} s", file=sys.stderr)
        return 1
    with contextlib.suppress(OSError):
        pid_path(server).unlink()
    print(f"service stopped for {server.describe()} (pid {pid})")
    return 0


def status(settings: Settings) -> int:
    server = settings.server
    pid = running_pid(server)
    state = f"running, pid {pid}" if pid is not None else "not running"
    print(f"service for {server.describe()}: {state}")
    print(_lease_line(server, pid))
    print(f"log: {events_path(server)}")
    return 0 if pid is not None else EXIT_NOT_RUNNING


# -- started by a dashboard --------------------------------------------------------------------


class ServiceStarter:
    """A dashboard's ``on_vacant``: nobody holds the lease, so start the service (in a thread,
    at most once per two ttl); if it cannot start, or starts and still nobody holds the lease
    after three ttl, call ``give_up(why)`` (the dashboard then contends itself).

    ``ready()`` holds the start back until the dashboard has drawn its fleet: starting two
    Python processes and a second fleet seed at the same moment as the dashboard's own start
    delayed its first frame 1.3 s -> 4.2 s on two cores (bench/bench_app.py, 50 panes)."""

    def __init__(
        self,
        server: ServerAddress,
        ttl: float,
        problem: Callable[[str], None],
        give_up: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        ready: Callable[[], bool] = lambda: True,
        argv: Sequence[str] | None = None,
    ) -> None:
        self.server = server
        self.ready = ready
        self.argv = list(argv) if argv is not None else [
            sys.executable, "-m", "nbs_tui", *server.tmux_args(), "service", "start"
        ]
        """``nbs-tui service start`` for the server: here, or ``ssh HOST nbs-tui service start``."""
        self.ttl = ttl
        self.problem = problem
        self.give_up = give_up
        self.clock = clock
        self._first_try: float | None = None
        self._last_try = float("-inf")
        self._lock = threading.Lock()
        self._done = False

    def vacant(self) -> None:
        if not self.ready():
            return  # asked again at the lease's next look (ttl/4)
        now = self.clock()
        with self._lock:
            if self._done or now - self._last_try < 2 * self.ttl:
                if not self._done and self._first_try is not None and now - self._first_try >= 3 * self.ttl:
                    self._done = True
                    self.give_up("nbs-tui service started but no sidecar holds the lease")
                return
            self._last_try = now
            if self._first_try is None:
                self._first_try = now
        threading.Thread(target=self._start, name="nbs-service-start", daemon=True).start()

    def _start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        try:
            done = subprocess.run(
                self.argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            why = str(error)
        else:
            if done.returncode == 0:
                log.info("started the sidecar service: %s", done.stdout.strip().replace("\n", "; "))
                return
            why = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[-1]
        with self._lock:
            self._done = True
        self.give_up(f"nbs-tui service did not start ({why})")


# -- the detached process -------------------------------------------------------------------


def run(settings: Settings) -> int:
    """The service itself: ``--headless`` until SIGTERM or until the tmux server is gone."""
    from nbs_tui.headless import run_headless

    server = settings.server
    stop_event = threading.Event()
    with contextlib.suppress(OSError):
        os.nice(SERVICE_NICE)

    def watch_server() -> None:
        while not stop_event.wait(SERVER_CHECK):
            done = _tmux(server, "display-message", "-p", "#{pid}")
            if done.returncode != 0:
                log.warning("%s is gone: the service stops", server.describe())
                stop_event.set()

    threading.Thread(target=watch_server, name="nbs-service-server", daemon=True).start()
    try:
        return run_headless(settings, stop=stop_event)
    finally:
        stop_event.set()
        with contextlib.suppress(OSError, ValueError):
            if int(pid_path(server).read_text().split()[0]) == os.getpid():
                pid_path(server).unlink()
