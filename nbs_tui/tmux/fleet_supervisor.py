"""The fleet's supervisor: the ``nbs-fleet-supervisor`` thread of a `TmuxFleet`.

It lists the panes (``list-panes -a`` through the server's commands: in-band once a control
client is ready, else a process) on every structural notification and every
``rescan_interval`` seconds, brings the pane table and the sessions' control clients to what it
found (one client per watched session, the guard, the viewers), calls ``listener.fleet_changed``
and ``listener.connection_changed``, and polls for the server every ``reconnect_interval``
seconds while it is away (an unreachable host backs off). A new session gets its client only
once sessions have stopped being made or killed for `STRUCTURE_QUIET`. Over ssh, the control
clients of a lost connection that linger on the host are reaped once it is back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.discovery import AgentKey, DiscoveredPane, discover, filter_sessions
from nbs_tui.tmux.errors import HostUnreachable, TmuxError, TmuxTimeout
from nbs_tui.tmux.fleet_clients import Episode, Report, SessionClients
from nbs_tui.tmux.fleet_panes import PaneTable
from nbs_tui.tmux.port import FleetListener

log = logging.getLogger(__name__)

STRUCTURE_QUIET = 0.3
"""Seconds without a structural notification (a session or window made, closed, switched)
before a client is started for a new session. tmux 3.2-3.6b crash when such a notification,
which goes to every control client, reaches one still identifying itself
(`nbs_tui.tmux.control.StartGate`): a script making or killing sessions in a row, while the
service starts a client for each new one, did that within two bursts of 15 sessions
(`tests/tmux/test_control_gate.py`). Starting once the burst is over keeps our clients'
identify out of it; it cannot close the window for a lone notification that lands there."""

SUSPECT_FOR = 60.0
"""Seconds a control client of a lost connection is watched for, to reap it if orphaned."""


class Supervisor:
    """The supervisor thread's work (module docstring). ``connected`` and ``last_error`` may be
    read from any thread."""

    def __init__(
        self,
        table: PaneTable,
        clients: SessionClients,
        commands: TmuxServerCommands,
        *,
        sessions: Sequence[str],
        listener: FleetListener | None,
        request_seeds: Callable[[float], None],
        rescan: threading.Event,
        stop: threading.Event,
        report: Report,
        rescan_interval: float,
        reconnect_interval: float,
    ) -> None:
        self.table = table
        self.clients = clients
        self.commands = commands
        self.runner = commands.runner
        self.sessions = tuple(sessions)
        """Only these sessions (names or ids) are watched; empty: all."""
        self.listener = listener
        self.request_seeds = request_seeds
        self.rescan = rescan
        self.stop = stop
        self.report = report
        self.reconcile_failing = Episode(report)
        self.listener_failing = Episode(report)
        self.reap_failing = Episode(report, "ssh")
        self.rescan_interval = rescan_interval
        self.reconnect_interval = reconnect_interval
        self.connected = False
        self.last_error = ""
        self.discoveries_in_band = 0
        """Discoveries answered on a control connection rather than by a process (for tests)."""
        self._announced: bool | None = None
        self._server_pid = 0
        self._agent_cache: dict[AgentKey, bool] = {}
        self._listings = 0
        """Listings so far: which turn of /proc reads the next one takes (`WALK_BUDGET`)."""
        self._emitted_fleet = False
        self._start_deferred = False
        self._suspects: dict[int, float] = {}
        """Remote: client pids of a lost connection, still to be seen gone (or reaped)."""

    def run(self) -> None:
        """The thread: discover and reconcile, until the fleet stops."""
        failures = 0
        while not self.stop.is_set():
            if self.clients.lost:
                lost, self.clients.lost = self.clients.lost, ""
                self._disconnected(lost)
            try:
                if not self.connected:
                    for note in self.runner.prepare():  # remote: connect, check tmux, reap
                        self.report("ssh", note)
                found = self._discover()
            except TmuxError as exc:
                # A host that does not answer in time is unreachable too; a local tmux is
                # polled as usual, as is "no server".
                unreachable = isinstance(exc, HostUnreachable) or (self.runner.remote and isinstance(exc, TmuxTimeout))
                self._disconnected(str(exc), unreachable=unreachable)
                # Back off only while the host cannot be reached; "no server" is polled as usual.
                failures = failures + 1 if unreachable else 0
                self.rescan.wait(self.retry_delay(failures))
                self.rescan.clear()
                continue
            except Exception as exc:
                log.exception("discovery failed")
                self._disconnected(f"discovery failed: {exc}")
                self.stop.wait(self.reconnect_interval)
                continue
            failures = 0
            try:
                self._reconcile(found)
            except Exception as error:  # the next rescan tries again
                log.exception("reconcile failed")
                self.reconcile_failing.failed(f"bringing the fleet up to date failed: {error!r}")
            else:
                self.reconcile_failing.ok()
            if self._suspects:
                self._reap_suspects()
            wait = self.rescan_interval
            if self._start_deferred:  # come back once the structure has been quiet long enough
                self._start_deferred = False
                wait = min(wait, max(0.0, self.clients.structure_at + STRUCTURE_QUIET - time.monotonic()) + 0.01)
            self.rescan.wait(wait)
            if self.stop.is_set():
                break
            self.rescan.clear()
            self.stop.wait(0.03)  # let a burst of notifications settle into one rescan

    def retry_delay(self, failures: int) -> float:
        """Locally a fixed interval; an unreachable host backs off (1, 2, 4 ... up to its cap)."""
        cap = self.runner.max_backoff
        if cap is None or failures <= 0:
            return self.reconnect_interval
        return min(cap, self.reconnect_interval * 2 ** min(failures - 1, 16))

    def _discover(self) -> list[DiscoveredPane]:
        """List every pane: in-band on an attached control connection (~1 ms instead of a
        ``tmux`` process, or an ssh exec when tmux is remote), else one ``tmux list-panes``
        process (before the first connection, and while none is ready)."""
        found = discover(self.commands, self._agent_cache, turn=self._listings)
        self._listings += 1
        if found.in_band:
            self.discoveries_in_band += 1
        return found.panes

    def _disconnected(self, message: str, unreachable: bool = False) -> None:
        changed = message != self.last_error
        # A host that was up and now cannot be reached lost its connection: that is the news,
        # even when a command tried a new one (refused) before the dying client's exit landed.
        lost = self.runner.lost_message() if unreachable and self._announced is True else ""
        self.last_error = message
        self.table.discovered = True
        now = time.monotonic()
        for pid in self.clients.remote_pids.values():
            self._suspects[pid] = now
        self.clients.remote_pids.clear()
        with self.table.lock:
            closing = self.clients.drop_all()
            self.table.invalidate_all()
        for client in closing:
            client.close()
        # The guard stays while its own connection lives: over ssh, a connection that stalled
        # and came back still carries it, and the output clients we just closed may linger on
        # the host with a full buffer until the reconnect reaps them; with the guard still
        # attached they block nothing meanwhile. A guard whose connection died is replaced.
        self.connected = False
        if self._announced is not False:
            self._announced = False
            self._notify_connection(False, lost or message)
            if lost and lost != message:
                self.report("ssh", message)  # why it cannot be made again, once
        elif changed and self.runner.remote:
            # Still away, for another reason now (lost -> refused -> timed out): say so once.
            self.report("ssh", message)

    def _reconcile(self, found: list[DiscoveredPane]) -> None:
        table, clients = self.table, self.clients
        server_pid = found[0].server_pid if found else self._server_pid
        new_server = bool(found) and self._server_pid not in (0, server_pid)
        if found:
            self._server_pid = server_pid
        if new_server:
            log.info("tmux server restarted (pid %s)", server_pid)
            with table.lock:
                closing = clients.drop_all()
            for client in closing:
                client.close()
        self.connected = True
        self.last_error = ""
        if self._announced is not True:
            self._announced = True
            self._notify_connection(True, f"connected to {self.runner.describe()}")

        wanted = filter_sessions(found, self.sessions)
        sessions = {p.session_id for p in wanted}
        with table.lock:
            # control clients: one per watched session
            clients.drop_gone(sessions)
            settling = time.monotonic() - clients.structure_at < STRUCTURE_QUIET
            for sid in sessions:
                if sid not in clients.clients:
                    if settling:  # a burst of sessions being made or killed: not now
                        self._start_deferred = True
                        continue
                    error = clients.start_client(sid)
                    if error:
                        self.last_error = error
            clients.keep_guard(sessions, new_server)
            fleet_changed = table.update(wanted, new_server)
            order = list(table.order)
            detached = clients.sync_viewers(sessions)
            clients.pause_unwatched_everywhere()  # new panes of a viewed session
            # seeds for panes whose session's client is attached
            self.request_seeds(time.monotonic())
        for viewer in detached:
            viewer.close()
        if not self._emitted_fleet:
            self._emitted_fleet = fleet_changed = True
        table.discovered = True
        if fleet_changed and self.listener is not None:
            try:
                self.listener.fleet_changed(order)
            except Exception as error:
                log.exception("listener.fleet_changed failed")
                self.listener_failing.failed(f"showing the changed fleet failed: {error!r}")
            else:
                self.listener_failing.ok()
        table.check_first_seed(clients.ready)

    def _reap_suspects(self) -> None:
        """A client of a lost connection still attached after reconnecting may be orphaned
        (sshd can notice the loss after we are back): reap until it is gone (for a minute)."""
        now = time.monotonic()
        self._suspects = {pid: t for pid, t in self._suspects.items() if now - t < SUSPECT_FOR}
        if not self._suspects:
            return
        try:
            listed = {int(pid) for pid in self.commands.run("list-clients", "-F", "#{client_pid}").lines if pid}
        except (TmuxError, ValueError):
            return
        self._suspects = {pid: t for pid, t in self._suspects.items() if pid in listed}
        if not self._suspects:
            return
        try:
            reaped = self.runner.reap()
        except TmuxError as exc:  # tried again at the next rescan, for a minute
            self.reap_failing.failed(f"{self.runner.describe()}: stopping orphaned tmux control clients failed: {exc}")
            return
        self.reap_failing.ok()
        for pid in reaped:
            self._suspects.pop(pid, None)
        if reaped:
            self.report(
                "ssh",
                f"{self.runner.describe()}: stopped {len(reaped)} orphaned tmux control client(s) "
                "of the lost connection (they froze the host's panes)",
            )

    def _notify_connection(self, connected: bool, message: str) -> None:
        if self.listener is None:
            return
        try:
            self.listener.connection_changed(connected, message)
        except Exception as error:
            log.exception("listener.connection_changed failed")
            self.report("tmux", f"showing the connection change failed: {error!r}")
