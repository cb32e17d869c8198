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
import fcntl
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import ServerAddress, server_key
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, ForeignLease, Lease, Vacancy, parse_lease
from nbs_tui.housekeeping.logs import state_dir
from nbs_tui.runtime.service_starter import sidecar_flags
from nbs_tui.server_options import add_server_options
from nbs_tui.sidecar.lease_check import clear_vacant, look_at_lease
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError, TmuxUnavailable

log = logging.getLogger(__name__)

STARTUP_WAIT = 5.0
"""How long ``start`` waits to see the new service hold the lease before it reports."""
STOP_WAIT = 15.0
SERVER_CHECK = 2.0
"""Seconds between the running service's checks that its tmux server still exists (a wait on
the server's pidfd: no process; tmux is asked only where the server's pid is not ours to see)."""

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
    # no --host: a service runs on the machine of the tmux server it serves
    add_server_options(service, inherit=True, host_help=None)


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


def _ask(server: ServerAddress, fmt: str) -> str:
    """A server-wide format of ``server``, asked by a ``tmux`` process (raises `TmuxError`)."""
    return TmuxServerCommands.for_server(server).display("", fmt)


def _lease_line(server: ServerAddress, service_pid: int | None) -> str:
    try:
        value = parse_lease(_ask(server, f"#{{{LEASE_OPTION}}}"))
    except TmuxError as error:
        return f"lease: cannot ask tmux ({error})"
    if value is None:
        return "lease: free (no sidecar acts)"
    if isinstance(value, ForeignLease):
        return f"lease: {value.describe()} ({value.why})"
    assert isinstance(value, Lease)
    since = time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(value.since))
    who = " (this service)" if service_pid is not None and value.pid == service_pid else ""
    return f"lease: held by {value.host} pid {value.pid} since {since}{who}"


def _holder_pid(server: ServerAddress) -> int | None:
    try:
        value = parse_lease(_ask(server, f"#{{{LEASE_OPTION}}}"))
    except TmuxError:
        return None
    return value.pid if isinstance(value, Lease) else None


# -- start, stop, status ----------------------------------------------------------------------


def start(settings: Settings) -> int:
    server = settings.server
    try:
        _ask(server, "#{pid}")
    except TmuxError as error:
        print(f"nbs-tui service: cannot reach {server.describe()}: {error}", file=sys.stderr)
        return 1
    state_dir().mkdir(parents=True, exist_ok=True)
    # two starts at once (a script's ``nbs-tui new`` in parallel, a dashboard's) start one service:
    # the pid file is looked at and written under the server's start lock
    with open(state_dir() / f"service-{server_key(server)}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cleared = _clear_dead_lease(server)
        pid = running_pid(server)
        if pid is not None:
            print(f"service already running for {server.describe()}: pid {pid}")
            print(cleared or _lease_line(server, pid))
            return 0
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
    if cleared:
        print(cleared)
    return 0


def _clear_dead_lease(server: ServerAddress) -> str:
    """A lease left by a holder that is gone (its pid, on this host) or that stopped renewing
    (`look_at_lease`) is cleared, by compare-and-set on that exact value: a service starting
    now takes the free lease at once, and a running one at its next look, instead of a whole
    ttl after it first saw the value. The line to print when one was cleared, else ""."""
    commands = TmuxServerCommands.for_server(server)
    try:
        look = look_at_lease(commands, server)
        if look.vacancy in (Vacancy.DEAD, Vacancy.EXPIRED) and clear_vacant(commands, look):
            return f"{look.describe()}: cleared"
    except TmuxError as error:
        log.info("lease not looked at: %s", error)
    return ""


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


# -- the detached process -------------------------------------------------------------------


class ServerWatch:
    """Sets the service's stop event once its tmux server is gone.

    The server's pid is asked once (one ``tmux`` process); then the watch waits on that
    process's pidfd, which starts nothing and wakes the moment the server exits (asking tmux
    every 2 s started ~43,000 processes a day per service). When it exits, tmux is asked again:
    a new server on the same socket is watched in turn, none stops the service. Where the pid
    cannot be opened (another pid namespace, an old kernel) tmux is asked every ``interval``.
    """

    def __init__(self, commands: TmuxServerCommands, interval: float = SERVER_CHECK) -> None:
        self.commands = commands
        self.interval = interval
        self.checks = 0
        """Intervals watched (for tests)."""

    def run(self, stop: threading.Event) -> None:
        server = self.commands.describe()
        pidfd: int | None = None
        try:
            while not stop.is_set():
                if pidfd is None:
                    try:
                        pid = int(self.commands.display("", "#{pid}"))
                    except TmuxUnavailable as error:
                        log.warning("%s is gone (%s): the service stops", server, error)
                        stop.set()
                        return
                    except (TmuxError, ValueError) as error:  # slow, or out of processes: asked again
                        log.warning("cannot ask %s whether it runs: %s", server, error)
                        stop.wait(self.interval)
                        continue
                    try:
                        pidfd = os.pidfd_open(pid)
                    except OSError:  # not ours to see: ask tmux each interval instead
                        pidfd = None
                        self.checks += 1
                        stop.wait(self.interval)
                        continue
                exited, _, _ = select.select([pidfd], [], [], self.interval)
                self.checks += 1
                if exited:
                    os.close(pidfd)
                    pidfd = None
        finally:
            if pidfd is not None:
                os.close(pidfd)


def run(settings: Settings) -> int:
    """The service itself: ``--headless`` until SIGTERM or until the tmux server is gone."""
    from nbs_tui.runtime.headless import run_headless  # here: ``nbs-tui --help`` skips the runtime

    server = settings.server
    stop_event = threading.Event()
    with contextlib.suppress(OSError):
        os.nice(SERVICE_NICE)

    watch = ServerWatch(TmuxServerCommands.for_server(server))
    threading.Thread(target=watch.run, args=(stop_event,), name="nbs-service-server", daemon=True).start()
    try:
        return run_headless(settings, stop=stop_event)
    finally:
        stop_event.set()
        with contextlib.suppress(OSError, ValueError):
            if int(pid_path(server).read_text().split()[0]) == os.getpid():
                pid_path(server).unlink()
