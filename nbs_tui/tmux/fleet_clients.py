"""The fleet's control clients: one per session, the guard, and the viewers (`TmuxFleet`).

`SessionClients` starts and keeps, for every session the fleet watches:

* the session's own client (``tmux -C attach``: ``ignore-size``, and ``no-output`` unless the
  sessions' own clients stream): it says when it is ready (its first ``%session-changed``),
  reports structural notifications (the supervisor rescans), carries the fleet's commands
  (`nbs_tui.tmux.commands`: `ready_clients`) and the captures of unwatched panes;
* the *guard*, one ``no-output`` client while our clients stream output: it keeps tmux reading
  every pane while ours stall (the fleet's module docstring says why);
* a *viewer* per session holding a watched pane when output follows the watch: it carries the
  seeds and live output of that session's watched panes, and only theirs (every other pane is
  paused on it, `pause_unwatched`).

Everything here runs under the fleet's state lock (`PaneTable.lock`) except the reader
threads' callbacks, which take it briefly and never block on anything else; closing a client
waits for its process, so the methods that drop clients return them, to be closed by the
caller once the lock is released.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from nbs_tui.core.fleet.model import PaneId, ServerAddress
from nbs_tui.tmux.commands import Answer, TmuxServerCommands
from nbs_tui.tmux.control import ControlClient
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.fleet_panes import PaneTable
from nbs_tui.tmux.tmux_runner import TmuxRunner

log = logging.getLogger(__name__)

RESCAN_NOTIFICATIONS = (
    b"%window-add",
    b"%window-close",
    b"%unlinked-window-add",
    b"%unlinked-window-close",
    b"%layout-change",
    b"%window-renamed",
    b"%session-renamed",
    b"%sessions-changed",
    b"%session-window-changed",
    b"%window-pane-changed",
    b"%pane-mode-changed",
)
"""Notifications after which the supervisor lists the panes again."""

PAUSES_PER_LINE = 200
"""``refresh-client -A`` arguments per command line: a line must fit tmux's 16 KiB message."""

Report = Callable[[str, str], None]
"""``(source, message)``: a problem for the operator (`TmuxFleet._report`)."""


class Episode:
    """A failure that may repeat on every pass (a loop's step, a client that will not start):
    reported once when it starts or changes, again only after the step has worked once."""

    def __init__(self, report: Report, source: str = "tmux") -> None:
        self.report = report
        self.source = source
        self.current = ""

    def failed(self, message: str) -> None:
        if message != self.current:
            self.current = message
            self.report(self.source, message)

    def ok(self) -> None:
        self.current = ""


class SessionClients:
    """The control clients of every watched session (module docstring)."""

    def __init__(
        self,
        server: ServerAddress,
        runner: TmuxRunner,
        table: PaneTable,
        commands: TmuxServerCommands,
        *,
        tmux: str,
        own_clients_stream: bool,
        output_follows_watch: bool,
        rescan: threading.Event,
        stop: threading.Event,
        report: Report,
        layout_changed: Callable[[], None] | None = None,
    ) -> None:
        self.server = server
        self.runner = runner
        self.table = table
        self.commands = commands
        """The server's command path: lines sent on a client go through it (`TmuxServerCommands.send_many`)."""
        self.lock = table.lock
        self.tmux = tmux
        self.own_clients_stream = own_clients_stream
        """The sessions' own clients take ``%output`` (no viewers: every session streams)."""
        self.output_follows_watch = output_follows_watch
        self.rescan = rescan
        self.stop = stop
        self.report = report
        self.guard_failing = Episode(report)
        self.viewer_failing = Episode(report)
        self.layout_changed = layout_changed
        """Told of every ``%layout-change`` (a resize changes no pane the supervisor lists)."""
        self.clients: dict[str, ControlClient] = {}
        """Each session's own client."""
        self.ready: set[str] = set()
        """The sessions whose own client said it is attached (``%session-changed``)."""
        self.viewers: dict[str, ControlClient] = {}
        """Output follows the watch: the output client of each session holding a watched pane."""
        self.viewer_ready: set[str] = set()
        self.paused: dict[str, set[PaneId]] = {}
        """The panes each ready viewer was told to pause (its session's unwatched ones)."""
        self.guard: ControlClient | None = None
        """The ``no-output`` client that keeps tmux reading every pane while ours stall."""
        self.start_error = ""
        """Why the last control client could not be started ("" once one could)."""
        self.structure_at = float("-inf")
        """When a notification last said sessions or windows changed (`STRUCTURE_QUIET`)."""
        self.lost = ""
        """Set by a reader thread when a remote runner's connection died (the supervisor acts)."""
        self.remote_pids: dict[str, int] = {}
        """Remote: the tmux client pid of each session's control client (asked in-band)."""

    # -- what the rest of the fleet asks ----------------------------------------------------

    def own_client(self, session_id: str) -> ControlClient | None:
        """The session's own client, once attached and ready; None before that."""
        own = self.clients.get(session_id)
        return own if own is not None and own.alive and session_id in self.ready else None

    def viewer(self, session_id: str) -> ControlClient | None:
        """The session's viewer (output follows the watch), once attached and ready."""
        viewer = self.viewers.get(session_id)
        return viewer if viewer is not None and viewer.alive and session_id in self.viewer_ready else None

    def streaming_client(self, session_id: str) -> ControlClient | None:
        """The ready client that carries this session's ``%output`` (seeds go on it): its viewer
        when output follows the watch, else its own client."""
        return self.viewer(session_id) if self.output_follows_watch else self.own_client(session_id)

    def ready_clients(self) -> list[ControlClient]:
        """The sessions' own clients that are attached and ready (commands go there)."""
        with self.lock:
            return [c for sid, c in self.clients.items() if c.alive and sid in self.ready]

    def attached_sessions(self) -> set[str]:
        with self.lock:
            return {sid for sid, client in self.clients.items() if client.alive and sid in self.ready}

    def client_pids(self) -> list[int]:
        with self.lock:
            return [c.pid for c in [*self.clients.values(), *self.viewers.values()] if c.pid]

    def viewed_sessions(self) -> frozenset[str]:
        with self.lock:
            return frozenset(sid for sid in self.viewers if sid in self.viewer_ready)

    # -- the sessions' own clients -----------------------------------------------------------

    def start_client(self, session_id: str) -> str:
        """Attach the session's own client (state lock held); "" or why it could not start."""
        box: list[ControlClient] = []
        client = ControlClient(
            self.server,
            session_id,
            on_output=self.table.output_handler(session_id),
            wants_output=self.table.output_filter(session_id),
            on_notification=self._notification_handler(session_id),
            on_exit=self._exit_handler(session_id, box),
            tmux=self.tmux,
            runner=self.runner,
            flags="ignore-size" if self.own_clients_stream else "ignore-size,no-output",
        )
        box.append(client)
        try:
            client.start()
        except OSError as exc:
            message = f"cannot start tmux control client: {exc.strerror or exc}; tried again every rescan"
            if message != self.start_error:  # once per episode (too many open files, say), not every rescan
                self.report("tmux", message)
            self.start_error = message
            log.warning(message)
            return message
        self.start_error = ""
        self.clients[session_id] = client
        return ""

    def drop_gone(self, sessions: set[str]) -> None:
        """Close the clients of sessions gone, and dead ones; their panes are seeded or read
        again (state lock held)."""
        for sid in list(self.clients):
            client = self.clients[sid]
            if sid not in sessions or not client.alive:
                del self.clients[sid]
                self.ready.discard(sid)
                client.close()
                self.table.invalidate_session(sid)  # output went unseen: seed again

    def drop_all(self) -> list[ControlClient]:
        """Forget every session's own client and viewer (state lock held); returns them, to
        close outside the lock. The guard stays (`drop_guard`)."""
        clients = list(self.clients.values()) + self.drop_viewers()
        self.clients.clear()
        self.ready.clear()
        return clients

    def _notification_handler(self, session_id: str) -> Callable[[str], None]:
        def handle(line: str) -> None:
            raw = line.encode("utf-8", "replace")
            if raw.startswith(b"%session-changed"):
                parts = line.split(" ")
                if len(parts) >= 2 and parts[1] != session_id:
                    log.info("control client for %s moved to %s; dropping it", session_id, parts[1])
                    with self.lock:
                        self.ready.discard(session_id)
                else:
                    with self.lock:
                        self.ready.add(session_id)
                    if self.runner.remote:
                        self._learn_remote_pid(session_id)
                self.rescan.set()
            elif raw.startswith(RESCAN_NOTIFICATIONS):
                self.structure_at = max(self.structure_at, time.monotonic())
                self.rescan.set()
                if raw.startswith(b"%layout-change") and self.layout_changed is not None:
                    try:
                        self.layout_changed()
                    except Exception:  # the reader thread goes on
                        log.exception("layout_changed failed")

        return handle

    def _learn_remote_pid(self, session_id: str) -> None:
        client = self.clients.get(session_id)
        if client is None:
            return

        def got(reply: Answer) -> None:
            first = reply.lines[0].strip() if reply.lines else b""
            if reply.ok and first.isdigit():
                self.remote_pids[session_id] = int(first)

        with contextlib.suppress(TmuxError):
            self.commands.send_many(client, [(("display-message", "-p", "#{client_pid}"), got)])

    def _exit_handler(self, session_id: str, box: list[ControlClient]) -> Callable[[str], None]:
        def handle(reason: str) -> None:
            log.info("control client for %s exited: %s", session_id, reason)
            with self.lock:
                # The supervisor may have replaced a dead client already: then this news is old,
                # and the new client (ready, or failing on its own) is not to be disturbed.
                current = not box or self.clients.get(session_id, box[0]) is box[0]
                if current:
                    self.ready.discard(session_id)
            if current and box and self.runner.lost_connection(box[0].returncode):
                self.lost = box[0].exit_reason or reason  # the host is gone: reconnect it whole
            self.rescan.set()
            if not self.stop.is_set():  # not ours to close (close() never calls this): say so
                self.report("tmux", f"control client for session {session_id} exited ({reason}); reconnecting")

        return handle

    # -- the guard ---------------------------------------------------------------------------

    def keep_guard(self, sessions: set[str], new_server: bool) -> None:
        """Keep one ``no-output`` client attached while output clients are (see the fleet's
        module docstring: it is what keeps a stalled client of ours from blocking the agents)."""
        guard = self.guard
        if guard is not None and (new_server or not guard.alive or guard.session_id not in sessions):
            self.drop_guard()
            guard = None
        if guard is not None or not sessions or not self.own_clients_stream:
            return
        session_id = min(sessions)

        def exited(reason: str) -> None:
            log.info("guard client exited: %s", reason)
            self.rescan.set()

        guard = ControlClient(
            self.server,
            session_id,
            on_output=lambda _pane, _data: None,
            on_notification=lambda _line: None,
            on_exit=exited,
            tmux=self.tmux,
            runner=self.runner,
            flags="ignore-size,no-output",
        )
        try:
            guard.start()
        except OSError as exc:  # tried again at the next rescan
            self.guard_failing.failed(f"cannot start tmux's no-output guard client: {exc.strerror or exc}")
            return
        self.guard_failing.ok()
        self.guard = guard

    def drop_guard(self) -> None:
        guard, self.guard = self.guard, None
        if guard is not None:
            guard.close()

    # -- viewers: output follows the watch ---------------------------------------------------

    def sync_viewers(self, sessions: set[str]) -> list[ControlClient]:
        """Attach a viewer to each live session holding a watched pane, detach the others
        (state lock held). Returns the clients to close once the lock is released (closing
        waits for the process)."""
        wanted = self.table.viewed_sessions() & sessions if self.output_follows_watch else set()
        gone = []
        for sid, viewer in list(self.viewers.items()):
            if sid not in wanted or not viewer.alive:
                gone.append(self.viewers.pop(sid))
                self.viewer_ready.discard(sid)
                self.paused.pop(sid, None)
                if sid in wanted:  # died: its watched panes' output went unseen
                    self.table.invalidate_session(sid)
        for sid in wanted - set(self.viewers):
            self.start_viewer(sid)
        return gone

    def start_viewers_watched(self) -> bool:
        """After the watch changed (state lock held): start a viewer at once in each newly viewed
        session (a process start, ~ms: the mirror waits on it); True when viewers are left
        that nobody needs (detaching waits for the process: the supervisor does it)."""
        viewed = self.table.viewed_sessions()
        for sid in viewed - set(self.viewers):
            if sid in self.clients:
                self.start_viewer(sid)
        return bool(set(self.viewers) - viewed)

    def drop_viewers(self) -> list[ControlClient]:
        """Forget every viewer (state lock held); returns them, to close outside the lock."""
        gone = list(self.viewers.values())
        self.viewers.clear()
        self.viewer_ready.clear()
        self.paused.clear()
        return gone

    def start_viewer(self, session_id: str) -> None:
        box: list[ControlClient] = []

        def current() -> bool:
            return bool(box) and self.viewers.get(session_id) is box[0]

        def on_notification(line: str) -> None:
            if not line.startswith("%session-changed"):
                return  # the session's own client reports the rest
            parts = line.split(" ")
            with self.lock:
                if len(parts) < 2 or parts[1] != session_id or not current():
                    return
                self.viewer_ready.add(session_id)
                self.paused[session_id] = set()  # a new client: every pane streams until paused
                self.pause_unwatched(session_id)  # sent before the seeds below
            self.table.seeds_due = True  # the feeder seeds the watched panes that waited for this
            self.table.wake.set()

        def on_exit(reason: str) -> None:
            log.info("viewer client for %s exited: %s", session_id, reason)
            with self.lock:
                was_current = current()
                if was_current:
                    self.viewer_ready.discard(session_id)
                    self.paused.pop(session_id, None)
                main = self.clients.get(session_id)
            self.rescan.set()  # the supervisor replaces it (and re-seeds its watched panes)
            # Not ours to close (close() never calls this): say so, unless the whole session or
            # server went (its own client says that).
            if was_current and main is not None and main.alive and not self.stop.is_set():
                self.report("tmux", f"output control client for session {session_id} exited ({reason}); reattaching")

        viewer = ControlClient(
            self.server,
            session_id,
            on_output=self.table.output_handler(session_id),
            wants_output=self.table.output_filter(session_id),
            on_notification=on_notification,
            on_exit=on_exit,
            tmux=self.tmux,
            runner=self.runner,
            flags="ignore-size",
        )
        box.append(viewer)
        self.viewers[session_id] = viewer  # before it starts: its first line may come at once
        try:
            viewer.start()
        except OSError as exc:
            del self.viewers[session_id]
            self.viewer_failing.failed(f"cannot start a viewer client for session {session_id}: {exc.strerror or exc}")
            return
        self.viewer_failing.ok()

    def pause_unwatched_everywhere(self) -> None:
        """`pause_unwatched` on every ready viewer (state lock held)."""
        for sid in list(self.viewer_ready):
            self.pause_unwatched(sid)

    def pause_unwatched(self, session_id: str) -> None:
        """Make this session's ready viewer carry exactly its watched panes: pause the others
        (new ones too) and continue those watched since (state lock held). One command line,
        sent without waiting; a pane that died meanwhile is skipped by tmux itself."""
        viewer = self.viewer(session_id)
        if viewer is None:
            return
        table = self.table
        paused = self.paused.setdefault(session_id, set())
        mine = {pid for pid, pane in table.panes.items() if pane.session_id == session_id}
        paused &= mine  # gone panes are forgotten
        pause = sorted(mine - table.watched - paused)
        resume = sorted(paused & table.watched)
        if not pause and not resume:
            return
        flags = [("-A", f"{pid}:pause") for pid in pause] + [("-A", f"{pid}:continue") for pid in resume]
        lines: list[tuple[tuple[str, ...], None]] = [
            (("refresh-client", *(word for flag in flags[at : at + PAUSES_PER_LINE] for word in flag)), None)
            for at in range(0, len(flags), PAUSES_PER_LINE)
        ]
        try:
            self.commands.send_many(viewer, lines)
        except TmuxError:
            return  # the viewer died: the supervisor replaces it, and the new one pauses again
        paused.update(pause)
        paused.difference_update(resume)
