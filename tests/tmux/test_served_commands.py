"""Every fleet API command makes sure the server is served (issue 36, item 4), judging the
lease as docs/lease.md says: a value left by a SIGKILLed holder of this host is dead at once, a
value that stands still for its ttl is expired, and a live holder is left alone at the price of
one tmux round trip (no ``service start``, no process). Real tmux, real ``nbs-tui`` processes,
fake ``claude`` agents that log every key (tests/tmux/test_lease_headless.py); no dashboard."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.fleet_api.exit_codes import ExitCode
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, Lease, parse_lease
from nbs_tui.runtime.service import _is_service
from tests.tmux.test_lease_headless import agent, submits
from tests.tmux.test_send import View, environment, published

REPO = Path(__file__).resolve().parents[2]


def nbs(server: libtmux.Server, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``nbs-tui ARGV -L SERVER`` as a script runs it, ``service = "auto"`` (the default)."""
    return subprocess.run(
        [sys.executable, "-m", "nbs_tui", *argv, "-L", str(server.socket_name)],
        capture_output=True, text=True, cwd=REPO, env=environment(home, service="auto"), timeout=60, check=False,
    )  # fmt: skip


def lease(server: libtmux.Server) -> Lease | None:
    out = server.cmd("display-message", "-p", f"#{{{LEASE_OPTION}}}").stdout
    value = parse_lease(out[0] if out else "")
    return value if isinstance(value, Lease) else None


def service_holds(server: libtmux.Server) -> int | None:
    """The pid of the live service that holds the lease, else None."""
    holder = lease(server)
    return holder.pid if holder is not None and _is_service(holder.pid) else None


def pid_file(home: Path, server: libtmux.Server) -> Path:
    from nbs_tui.core.fleet.model import server_key

    return home / ".state" / "nbs-tui" / f"service-{server_key(ServerAddress(socket_name=str(server.socket_name)))}.pid"


def stop_service(server: libtmux.Server, home: Path) -> None:
    nbs(server, home, "service", "stop")


def start_service(server: libtmux.Server, home: Path, agent: str) -> int:
    """``nbs-tui service start`` holding the lease and publishing ``agent`` idle; its pid."""
    started = nbs(server, home, "service", "start")
    assert started.returncode == 0, started.stderr
    assert retry_until(lambda: service_holds(server) is not None, 15, raises=False), started.stdout
    pid = service_holds(server)
    assert pid is not None
    assert retry_until(lambda: published(server, agent) == "idle", 15, raises=False)
    return pid


def test_a_sigkilled_service_is_replaced_by_the_next_send_which_is_typed_once(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """The service is SIGKILLed (no release: its value stays in ``@nbs_sidecar``). With no
    dashboard open, ``nbs-tui send`` finds the value's pid gone, starts a new service, which
    holds at once, and the text is typed once; ``nbs-tui agents`` after a second SIGKILL does
    the same. (Before: any value counted as held, nobody started a service, and the send waited
    10 s and was refused ``not-holder``.)"""
    home = tmp_path / "script"
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    try:
        first = start_service(server, home, alpha)
        for round_ in range(2):
            killed = first
            os.kill(killed, signal.SIGKILL)
            assert retry_until(lambda: not _is_service(killed), 5, raises=False)  # noqa: B023 (waited for here)
            assert (lease(server) or Lease("", 0, "", 0, 0, 0)).pid == killed  # the dead holder's value stays
            if round_ == 0:
                done = nbs(server, home, "send", "alpha", "write the report")
                assert done.returncode == ExitCode.DONE, (done.stdout, done.stderr)
            else:
                done = nbs(server, home, "agents", "--json")
                assert done.returncode == ExitCode.DONE, done.stderr
            assert "service started" in done.stderr, done.stderr
            second = service_holds(server)
            assert second is not None and second != killed, done.stderr
            first = second
        assert submits(log) == ["SUBMIT write the report"]
    finally:
        stop_service(server, home)


def test_a_live_holder_is_left_alone_and_no_service_is_started(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """A live holder (a ``--headless`` view, as a dashboard with ``service = "off"``) renews the
    lease: ``agents`` and ``send`` start no service (``service start`` would have started one:
    none runs for the server, so no pid file is written)."""
    home = tmp_path / "script"
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    with View(server, tmp_path / "holder") as view:
        assert retry_until(view.acting, 30, raises=False), view.events
        assert retry_until(lambda: published(server, alpha) == "idle", 15, raises=False)
        listed = nbs(server, home, "agents", "--json")
        assert listed.returncode == ExitCode.DONE, listed.stderr
        sent = nbs(server, home, "send", "alpha", "hello")
        assert sent.returncode == ExitCode.DONE, sent.stderr
        assert "service" not in listed.stderr + sent.stderr
        assert not pid_file(home, server).exists()
        holder = lease(server)
        assert holder is not None and holder.pid == view.proc.pid
        assert submits(log) == ["SUBMIT hello"]
    assert view.returncode == 0, view.stderr


def test_a_value_that_stands_still_for_its_ttl_is_expired_by_the_next_command(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """A lease from another host (its pid cannot be asked here) that nobody renews: the first
    ``agents`` remembers it and leaves it (it may be live); one a ttl later finds it unchanged,
    clears it and starts the service, which holds."""
    home = tmp_path / "script"
    agent(session, tmp_path, "alpha", "idle")
    stale = Lease("elsewhere", 4242, "0123456789abcdef", 7, 2.0, int(time.time())).render()
    server.cmd("set-option", "-s", LEASE_OPTION, stale)
    try:
        first = nbs(server, home, "agents")
        assert first.returncode == ExitCode.DONE and "service" not in first.stderr, first.stderr
        assert not pid_file(home, server).exists()
        time.sleep(2.2)
        second = nbs(server, home, "agents")
        assert second.returncode == ExitCode.DONE, second.stderr
        assert "service started" in second.stderr, second.stderr
        assert retry_until(lambda: service_holds(server) is not None, 10, raises=False)
    finally:
        stop_service(server, home)


def test_a_holder_that_dies_while_a_send_waits_is_replaced_and_the_text_typed_once(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    """The service is stopped (SIGSTOP: alive, so the send's first look finds it holding) and
    the send posts its request; then the service is SIGKILLed. The waiting send judges the
    lease again (every 10 s, as ``wait`` does), finds its holder dead, starts a new service,
    which takes the pending request: typed once, exit 0 (before: 124 after a minute)."""
    home = tmp_path / "script"
    alpha, log = agent(session, tmp_path, "alpha", "idle")
    try:
        stalled = start_service(server, home, alpha)
        os.kill(stalled, signal.SIGSTOP)
        caller = subprocess.Popen(
            [sys.executable, "-m", "nbs_tui", "send", "alpha", "write the report", "-L", str(server.socket_name)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=environment(home, service="auto"),
        )  # fmt: skip

        def pending() -> bool:
            return bool("".join(server.cmd("display-message", "-p", "-t", alpha, "#{@nbs_send_req}").stdout))

        assert retry_until(pending, 15, raises=False)
        os.kill(stalled, signal.SIGKILL)
        out, err = caller.communicate(timeout=45)
        assert caller.returncode == ExitCode.DONE, (out, err)
        assert "service started" in err, err
        assert submits(log) == ["SUBMIT write the report"]
    finally:
        stop_service(server, home)
