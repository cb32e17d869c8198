"""`TmuxFleet`: the live mirror of every pane of a tmux server, over control mode.

The fleet is built of parts, one module each, joined here:

* `nbs_tui.tmux.fleet_panes`: the pane table, the watch, and what the reader threads write;
* `nbs_tui.tmux.fleet_clients`: the control clients (a session's own, the guard, the viewers);
* `nbs_tui.tmux.fleet_feeder`: the feeder thread (parse, ration, seed);
* `nbs_tui.tmux.fleet_captures`: the reads of the panes nobody watches;
* `nbs_tui.tmux.fleet_supervisor`: the supervisor thread (discover, reconcile, reconnect);
* every other tmux command goes through the server's one command path, `TmuxFleet.commands`
  (`nbs_tui.tmux.commands`: in-band on a ready client of the fleet, else a process).

Threads (all daemon, all joined by `stop`):

* one reader per watched session (`ControlClient`): drains ``tmux -C attach`` and appends
  each pane's ``%output`` to that pane's bounded buffer; it never waits on anything else;
* ``nbs-fleet-feeder``: feeds the buffers into the panes' `PaneScreen`\\ s, applies seeds,
  rations bytes per pane, and calls ``listener.screens_changed`` at most ``max_rate`` times a
  second with the panes that changed;
* ``nbs-fleet-supervisor``: lists panes (``list-panes -a``, in-band once a control client is
  ready, else a ``tmux`` process; on every structural notification and every
  ``rescan_interval`` seconds), starts/stops one control client per session, calls
  ``listener.fleet_changed`` and ``listener.connection_changed``, and polls for the server
  every ``reconnect_interval`` seconds while it is away.

Rationing: a pane may feed ``feed_rate`` bytes a second into its screen (burst
``feed_burst``); output beyond that, or a buffer over ``max_pending`` bytes, is dropped in
nbs-tui (never in tmux) and the pane is re-seeded from ``capture-pane`` over the same
connection, at most every ``reseed_interval`` seconds. A flooding pane therefore shows a
screen that is at most a fraction of a second old, and costs a bounded share of a core.
Output that will be dropped is not even decoded (the reader asks ``wants_output`` first).

Never ``refresh-client -A '%N:off'`` to mute a flooding pane: on tmux 3.3a toggling a pane's
output while it floods crashed the server (segfault in the control-mode output escaping,
seen three times here): ``off`` keeps the output blocks already queued, whose data it then
skips, and writing one fails (``fatalx("not enough data")`` in control.c). ``'%N:pause'`` and
``'%N:continue'`` are safe: ``pause`` frees the pane's queued blocks first (3.2 to 3.5a alike),
and 53,000 random toggles in 40 s on four flooding panes, with one client draining, one slow
and one never reading, left the server up, where ``off``/``on`` killed it within a second
(`tests/tmux/test_fleet_watch.py` keeps a 4 s version). Never
``refresh-client -C`` either (it resizes every window).

Watching: a pane has a live model (`PaneScreen`) only while some consumer watches it
(`set_watched`: the dashboard's mirror and its visible thumbnails), or always with
``watch_all`` (the default, as before). For any other pane ``%output`` is neither decoded nor
buffered: the reader's output filter only marks the pane changed (it is reported in
``screens_changed`` all the same). A consumer that needs such a pane's screen (the sidecar)
asks `captured`, which takes an in-band ``capture-pane -p -e`` on the session's control
client when the pane printed since the last one, at most once per ``capture_interval``, and
returns a `CapturedScreen` (rows of text and faint rows, no terminal model). A pane that printed
is read once it has gone quiet (``CAPTURE_QUIET``), or every ``CAPTURE_MAX_AGE`` seconds while
it keeps printing (a working agent's spinner): the still screens the sidecar acts on come at
once, the moving ones less often. A pane that
becomes watched is seeded and then fed live; one that stops being watched drops its model.
A fleet that no one will ever watch (``stream_output=False``: headless, the service) attaches
its control clients with ``no-output``: tmux then sends it no pane output at all (and spends
nothing escaping it), and `captured` reads a pane when its window's ``window_activity`` (from
one in-band ``list-panes`` a second) says it may have printed, at most once per interval.

Output follows the watch (a local fleet that streams output but keeps models only of watched
panes: the dashboard). Every session's own client is ``no-output`` as above, and every
unwatched pane is read as a ``no-output`` fleet reads it (window activity, captures on the
session's own client). A session holding a watched pane gets a second client, its *viewer*,
that carries the seeds and live output of its watched panes, and only theirs: the viewer
pauses every other pane of its session (``refresh-client -A '%N:pause'``, see above), and
continues a pane when it becomes watched, before that pane's seed on the same connection
(output after the ``continue`` is inside the seed or follows its reply). tmux then escapes and
sends the output of the panes someone looks at, not of every pane (issue 13: at 200 panes that
was most of tmux's extra CPU and of our reader's, and a session of 40 busy agents streamed all
40 for the one on screen). `set_watched` starts a newly looked-at session's viewer at once, and
a pane watched there is seeded as soon as it is attached; viewers no longer needed are
detached by the supervisor (closing one waits for its process), which also replaces one that
died. A viewer is never switched by ``refresh-client -f no-output`` instead:
tmux 3.3a frees its per-pane state with output still queued, and the queued block then holds
every later reply back (control.c, ``control_reset_offsets``), so a client is swapped whole.
A remote fleet streams every session as before (its window activity is another host's clock).

A stalled reader never blocks a pane: a fleet that streams output on its sessions' own clients
also attaches one ``no-output`` *guard* client (with viewers, the sessions' own ``no-output``
clients are the guard). tmux 3.3a stops reading a pane (``server_client_check_pane_buffer``)
only while every attached client is a control client with that pane's output queued and 512
bytes or more stuck in its write buffer; a ``no-output`` client counts as always able to take
more, so with the guard attached a stopped, starved or stalled dashboard makes tmux buffer its
output instead (until tmux drops a client 300 s behind, "too far behind"; the supervisor then
reattaches it and reseeds), never makes an agent wait. The reader threads already drain
independently of the UI thread; the guard covers the whole process stopping. Without it, one
stalled client on a one-session server blocks the panes whenever its last write left 512 bytes
or more in tmux's buffer (a probe did, 5 of 6 runs); the service and ``--headless`` attach
``no-output`` clients anyway, so they are their own guard.

Seeding: ``display-message`` (cursor, size, modes) ``; capture-pane -p -e -N`` ``;``
``capture-pane -a -q`` on one line. Output before the reply is inside the capture; output
after the reply follows it, so the seed has no gap and no duplicate.

Locks: one state lock (`PaneTable.lock`) for what must agree across panes, sessions and
clients; a pane's own lock for its buffer; never a lock held while closing a client (that
waits for its process).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterable, Sequence

from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.core.screen.screen_rows import CapturedScreen
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.errors import PaneGone, TmuxError
from nbs_tui.tmux.fleet_captures import CAPTURE_MAX_AGE, CAPTURE_QUIET, CAPTURE_SLACK, Captures
from nbs_tui.tmux.fleet_clients import SessionClients
from nbs_tui.tmux.fleet_feeder import Feeder
from nbs_tui.tmux.fleet_panes import LIVE, PaneTable
from nbs_tui.tmux.fleet_supervisor import STRUCTURE_QUIET, Supervisor
from nbs_tui.tmux.port import FleetListener, FleetPort, PaneHistory
from nbs_tui.tmux.tmux_runner import TmuxRunner

__all__ = ["CAPTURE_MAX_AGE", "CAPTURE_QUIET", "CAPTURE_SLACK", "STRUCTURE_QUIET", "TmuxFleet"]

log = logging.getLogger(__name__)


class TmuxFleet(FleetPort):
    """Watch every pane of one tmux server (or of the named sessions) and act on them.

    ``connected`` and ``last_error`` may be read from any thread. Listener callbacks arrive on
    the fleet's threads (see the module docstring) and must not block.
    """

    def __init__(
        self,
        server: ServerAddress,
        sessions: Sequence[str] = (),
        listener: FleetListener | None = None,
        *,
        tmux: str = "tmux",
        rescan_interval: float = 2.0,
        reconnect_interval: float = 1.0,
        max_rate: float = 60.0,
        feed_rate: int = 256 * 1024,
        feed_burst: int = 256 * 1024,
        max_pending: int = 256 * 1024,
        reseed_interval: float = 0.25,
        seeds_per_pass: int = 8,
        runner: TmuxRunner | None = None,
        watch_all: bool = True,
        capture_interval: float = 1.0,
        stream_output: bool = True,
        capture_quiet: float = CAPTURE_QUIET,
        capture_max_age: float = CAPTURE_MAX_AGE,
        output_follows_watch: bool | None = None,
    ) -> None:
        self.server = server
        self.runner = runner or TmuxRunner(server, tmux)
        """Where tmux runs: this machine, or a host through ssh (`nbs_tui.tmux.ssh`)."""
        self.sessions = tuple(sessions)
        self.listener = listener
        self.tmux = tmux
        self.watch_all = watch_all
        """Keep a live model of every pane (as before watching existed); False: only of the
        panes some consumer watches (`set_watched`)."""
        self.stream_output = stream_output or watch_all
        """False: a fleet nobody will watch (headless, the service): its control clients attach
        with ``no-output``, so tmux sends no pane output at all; `captured` then reads a pane
        whose window showed activity since its last read (tmux's ``window_activity``, one
        in-band ``list-panes`` a capture interval; every time it is asked on a remote host), at
        most once per ``capture_interval``, and `set_watched` is refused."""
        follows = not self.runner.remote if output_follows_watch is None else output_follows_watch
        self.output_follows_watch = self.stream_output and not watch_all and follows
        """Only watched panes stream output, on a viewer client per session holding one (see the
        module docstring); the rest are read as a ``no-output`` fleet reads them. By default on
        this machine; False: every session's own client streams (over ssh, where window
        activity is another host's clock)."""

        self._stop = threading.Event()
        self._rescan = threading.Event()
        self._threads: list[threading.Thread] = []
        self._table = PaneTable(
            watch_all=watch_all, max_pending=max_pending, reseed_interval=reseed_interval, feed_burst=feed_burst
        )
        # The command path first: it asks the clients for a ready connection only when it runs one.
        self._commands = TmuxServerCommands(self.runner, lambda: self._clients.ready_clients())
        self._clients = SessionClients(
            server, self.runner, self._table, self._commands, tmux=tmux,
            own_clients_stream=self.stream_output and not self.output_follows_watch,
            output_follows_watch=self.output_follows_watch,
            rescan=self._rescan, stop=self._stop, report=self._report,
            layout_changed=listener.layout_changed if listener is not None else None,
        )  # fmt: skip
        self._feeder = Feeder(
            self._table, self._commands, streaming_client=self._clients.streaming_client, ready_sessions=lambda: self._clients.ready,
            listener=listener, report=self._report, rescan=self._rescan, stop=self._stop, max_rate=max_rate,
            feed_rate=feed_rate,
            feed_burst=feed_burst, reseed_interval=reseed_interval, seeds_per_pass=seeds_per_pass,
        )  # fmt: skip
        self._captures = Captures(
            self._table, self._clients, self._commands,
            capture_interval=capture_interval, capture_quiet=capture_quiet, capture_max_age=capture_max_age,
        )  # fmt: skip
        self._supervisor = Supervisor(
            self._table, self._clients, self._commands, sessions=self.sessions, listener=listener,
            request_seeds=self._feeder.request_due_seeds, rescan=self._rescan, stop=self._stop,
            report=self._report, rescan_interval=rescan_interval, reconnect_interval=reconnect_interval,
        )  # fmt: skip

    # -- FleetPort -----------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            return
        self._stop.clear()
        for name, target in (
            ("nbs-fleet-supervisor", self._supervisor.run),
            ("nbs-fleet-feeder", self._feeder.run),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self._rescan.set()
        self._table.wake.set()
        for thread in self._threads:
            thread.join(5.0)
        self._threads.clear()
        with self._table.lock:
            clients = self._clients.drop_all()
        for client in clients:
            client.close()
        self._clients.drop_guard()
        self.runner.close()

    def panes(self) -> list[PaneInfo]:
        with self._table.lock:
            return list(self._table.order)

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        """The live model of a watched pane (None when the pane is unknown or unwatched)."""
        pane = self._table.panes.get(pane_id)
        return pane.screen if pane else None

    def first_seeded(self, pane_id: PaneId) -> bool:
        """Whether the watched pane's model has had its first seed (`FleetPort.first_seeded`;
        `seeded` says whether no seed is pending now)."""
        pane = self._table.panes.get(pane_id)
        return pane is not None and pane.screen is not None and pane.screen.seeded

    def set_watched(self, consumer: str, pane_ids: Iterable[PaneId]) -> None:
        """``consumer`` now looks at exactly these panes (empty: none). The fleet keeps a live
        model of the panes any consumer watches: a newly watched pane gets a (blank) model at
        once, seeded from tmux and then fed live; a pane no one watches any more drops it."""
        ids = frozenset(pane_ids)
        if ids and not self.stream_output:
            raise ValueError("this fleet streams no pane output (stream_output=False): nothing can be watched")
        with self._table.lock:
            now = time.monotonic()
            self._table.set_watchers(consumer, ids, now)
            self._clients.pause_unwatched_everywhere()  # a newly watched pane continues before its seed
            self._feeder.request_due_seeds(now)
            if self.output_follows_watch and self._clients.start_viewers_watched():
                self._rescan.set()  # detaching waits for the process: the supervisor does it

    def watched(self) -> frozenset[PaneId]:
        """The panes that have a live model now."""
        return self._table.models()

    def captured(self, pane_id: PaneId, timeout: float = 5.0) -> CapturedScreen | None:
        """An unwatched pane's screen, read from tmux with an in-band ``capture-pane -p -e``
        when the pane printed (or changed size, or was reconnected) since the last read and that
        read is ``capture_interval`` old; the last read otherwise (`nbs_tui.tmux.fleet_captures`).
        The same object while the text is the same. Blocks for one round trip when it reads:
        never call it on a listener callback. None for an unknown or watched pane (read
        `screen`), or before any read succeeded."""
        return self._captures.captured(pane_id, timeout)

    def prefetch(
        self, pane_ids: Iterable[PaneId], timeout: float = 5.0, *, eager: Collection[PaneId] = ()
    ) -> int:
        """Take the captures `captured` would take for these panes now, all at once: one write
        per control connection and the replies read together, instead of a round trip a pane
        (a reader of every pane, the sidecar, calls this first; its `captured` calls then
        answer from what was read). ``eager`` panes are read whenever they changed, still
        printing or not (the sidecar's: any pane it last saw still, so that a turn starting
        there is seen at once). Returns how many panes were read."""
        return self._captures.prefetch(pane_ids, timeout, eager)

    @property
    def commands(self) -> TmuxServerCommands:
        """Every tmux command on this server: in-band on a ready control client of the fleet,
        else as a process (`nbs_tui.tmux.commands`)."""
        return self._commands

    def capture_text(self, pane_id: PaneId) -> str:
        self._require(pane_id)
        try:
            return self._commands.run("capture-pane", "-p", "-t", pane_id, timeout=5.0).text
        except TmuxError as exc:
            raise _gone(pane_id, exc) from exc

    def capture_history(self, pane_id: PaneId, lines: int) -> PaneHistory:
        """The pane's mode, then ``capture-pane -e -S -N -E -`` (history and screen, coloured),
        on the server's own host. In the alternate screen tmux would return the normal screen's
        old history above the full-screen program's: only the screen is read then."""
        self._require(pane_id)
        try:
            head = self._commands.display(pane_id, "#{alternate_on} #{history_size}").split()
            alternate = bool(head) and head[0] == "1"
            span = [] if alternate else ["-S", f"-{max(1, int(lines))}", "-E", "-"]
            body = self._commands.run("capture-pane", "-p", "-e", *span, "-t", pane_id).lines
        except TmuxError as exc:
            raise _gone(pane_id, exc) from exc
        size = int(head[1]) if len(head) > 1 and head[1].isdigit() else 0
        return PaneHistory(body, alternate, 0 if alternate else size)

    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        """Type ``text`` literally (`TmuxServerCommands.type_text`). Blocks until tmux has
        taken it (a few ms)."""
        self._require(pane_id)
        try:
            return self._commands.type_text(pane_id, text, guard=guard)
        except TmuxError as exc:
            raise _gone(pane_id, exc) from exc

    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        self._require(pane_id)
        try:
            return self._commands.press(pane_id, *keys, guard=guard)
        except TmuxError as exc:
            raise _gone(pane_id, exc) from exc

    def wait_seeded(self, timeout: float) -> bool:
        """Block until every pane found by the first discovery has been seeded, or for an
        unwatched pane can be `captured` (its session's control client is attached)."""
        return self._table.first_seed_done.wait(timeout)

    # -- state, for the app, tests and benches ----------------------------------------------

    @property
    def connected(self) -> bool:
        return self._supervisor.connected

    @property
    def last_error(self) -> str:
        return self._supervisor.last_error

    @property
    def captures(self) -> int:
        """In-band captures taken for `captured` (for benches)."""
        return self._captures.captures

    @property
    def activity_reads(self) -> int:
        """In-band ``list-panes`` reads of window activity (no-output fleets; for benches)."""
        return self._captures.activity_reads

    @property
    def discoveries_in_band(self) -> int:
        """Discoveries answered on a control connection rather than by a process (for tests)."""
        return self._supervisor.discoveries_in_band

    @property
    def reseeds(self) -> int:
        """How many times a pane was re-seeded because its output was rationed (for benches)."""
        return self._table.reseeds

    def attached_sessions(self) -> set[str]:
        """Sessions whose own control client is attached and ready."""
        return self._clients.attached_sessions()

    def seeded(self, pane_id: PaneId) -> bool:
        pane = self._table.panes.get(pane_id)
        return pane is not None and pane.mode == LIVE and pane.seed is None

    def fed(self, pane_id: PaneId) -> tuple[int, int]:
        """(bytes of output parsed into the pane's model, ``%output`` lines left unparsed
        while it was unwatched), over the pane's life in the fleet (for tests and benches)."""
        pane = self._table.panes.get(pane_id)
        return (pane.fed, pane.unwatched_output) if pane else (0, 0)

    def stats(self) -> dict[str, int]:
        """Counters for benchmarks: bytes dropped by rationing, re-seeds, clients, models."""
        with self._table.lock:
            panes = list(self._table.panes.values())
            return {
                "panes": len(panes),
                "clients": len(self._clients.clients),
                "viewers": len(self._clients.viewers),
                "dropped_bytes": sum(p.dropped_bytes for p in panes),
                "reseeds": self.reseeds,
                "models": sum(p.screen is not None for p in panes),
                "fed_bytes": sum(p.fed for p in panes),
                "unwatched_output": sum(p.unwatched_output for p in panes),
                "captures": self.captures,
                "activity_reads": self.activity_reads,
            }

    def client_pids(self) -> list[int]:
        return self._clients.client_pids()

    def viewed_sessions(self) -> frozenset[str]:
        """The sessions whose output streams to us on a viewer now (for tests and benches)."""
        return self._clients.viewed_sessions()

    # -- inside --------------------------------------------------------------------------

    def _require(self, pane_id: PaneId) -> None:
        if pane_id not in self._table.panes:
            raise PaneGone(f"{pane_id} is not a pane of the fleet")

    def _report(self, source: str, message: str) -> None:
        """A problem for the operator, to the listener (`FleetListener.problem`)."""
        if self.listener is None:
            return
        try:
            self.listener.problem(source, message)
        except Exception:
            log.exception("listener.problem failed")


def _gone(pane_id: PaneId, error: TmuxError) -> PaneGone:
    """The port's one error for a pane command (`FleetPort`): whatever failed, as `PaneGone`."""
    return PaneGone(f"{pane_id}: {error}")
