"""`TmuxFleet`: the live mirror of every pane of a tmux server, over control mode.

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
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from nbs_tui.core.detect import CapturedScreen
from nbs_tui.core.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.core.screen import PaneScreen
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.control import ControlClient, ControlError, Reply
from nbs_tui.tmux.discovery import DiscoveredPane, discover, filter_sessions
from nbs_tui.tmux.errors import HostUnreachable, PaneGone, TmuxError, TmuxTimeout
from nbs_tui.tmux.port import FleetListener, FleetPort, PaneHistory
from nbs_tui.tmux.runner import TmuxRunner

log = logging.getLogger(__name__)

_SEED_FORMAT = ",".join(
    "#{" + f + "}"
    for f in (
        "pane_width",
        "pane_height",
        "cursor_x",
        "cursor_y",
        "cursor_flag",
        "alternate_on",
        "scroll_region_upper",
        "scroll_region_lower",
        "alternate_saved_x",
        "alternate_saved_y",
    )
)
_RESCAN_NOTIFICATIONS = (
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

STRUCTURE_QUIET = 0.3
"""Seconds without a structural notification (a session or window made, closed, switched)
before a client is started for a new session. tmux 3.2-3.6b crash when such a notification,
which goes to every control client, reaches one still identifying itself
(`nbs_tui.tmux.control.StartGate`): a script making or killing sessions in a row, while the
service starts a client for each new one, did that within two bursts of 15 sessions
(`tests/tmux/test_control_gate.py`). Starting once the burst is over keeps our clients'
identify out of it; it cannot close the window for a lone notification that lands there."""

# pane modes
_NEEDS_SEED = 0
_SEEDING = 1
_LIVE = 2
_UNWATCHED = 3
"""No model: output only marks the pane changed; its screen is read with `TmuxFleet.captured`."""

CAPTURE_SLACK = 0.1
"""A capture is due ``capture_interval`` less this after the last: a once-a-second reader
whose ticks jitter by a few ms still gets a fresh one every tick."""

PAUSES_PER_LINE = 200
"""``refresh-client -A`` arguments per command line: a line must fit tmux's 16 KiB message."""

CAPTURE_QUIET = 0.2
"""A changed pane is read once it has printed nothing for this long (a fleet that streams output
times its last ``%output``; a no-output fleet knows its window's last activity to the second, so
it waits for that second to be over by this much): a pane that goes quiet is read at once."""

CAPTURE_MAX_AGE = 3.0
"""A changed pane that is still printing is read when its last read is this old, not every
``capture_interval``. Why that is safe: every screen the sidecar acts on or reports as waiting
(idle prompt, permission, plan approval, question, startup dialog) is a still one (Claude Code
stops its spinner when it waits), so it is read within about a tick of appearing; only a screen
that keeps changing (a working agent's spinner, a build's output) is seen every 3 s instead of
every second. The sidecar passes the panes it last saw still as ``eager`` to `prefetch`: those
are read on the tick they change, so a turn shorter than 3 s is still seen working. Every key
the sidecar types is decided on a fresh ``capture-pane`` taken just before
(`SidecarRunner._live`), never on a read's age. Reading a spinning pane every second was
most of the service's cost (bench/README.md, bench_headless.py)."""


@dataclass
class _Pane:
    info: PaneInfo
    session_id: str
    screen: PaneScreen | None
    """The live model while the pane is watched, else None."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    chunks: list[bytes] = field(default_factory=list)
    pending: int = 0
    mode: int = _NEEDS_SEED
    seed: tuple[bytes, list[int], bytes | None] | None = None
    seed_sent_at: float = 0.0
    next_seed_at: float = 0.0
    tokens: float = 0.0
    tokens_at: float = 0.0
    dropped_bytes: int = 0
    reseeds: int = 0
    generation: int = 0
    """Bumped whenever tmux changed the pane behind our back (resize, move, new client): a
    seed reply asked for before that is stale and must not make the pane live."""
    fed: int = 0
    """Bytes of output parsed into the model (for tests and benches)."""
    marked: bool = False
    """Unwatched: output since the feeder last reported the pane."""
    unseen: bool = True
    """Unwatched: output (or a resize, a new client) since the last capture."""
    unwatched_output: int = 0
    """``%output`` lines seen while unwatched and not parsed (for tests and benches)."""
    capture: CapturedScreen | None = None
    capture_at: float = float("-inf")
    capture_second: int = 0
    """Wall-clock second (tmux's ``window_activity`` resolution) at which the last read was asked."""
    printed_at: float = float("-inf")
    """Unwatched, streaming: when its last ``%output`` came (monotonic), to read it once quiet."""
    reread: bool = False
    """Read at the next chance, printing or not: resized, moved, reconnected, or a read failed."""


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
        self._commands = TmuxServerCommands(self.runner, self._ready_clients)
        self.sessions = tuple(sessions)
        self.listener = listener
        self.tmux = tmux
        self.rescan_interval = rescan_interval
        self.reconnect_interval = reconnect_interval
        self.max_rate = max_rate
        self.feed_rate = feed_rate
        self.feed_burst = feed_burst
        self.max_pending = max_pending
        self.reseed_interval = reseed_interval
        self.seeds_per_pass = seeds_per_pass
        self.watch_all = watch_all
        """Keep a live model of every pane (as before watching existed); False: only of the
        panes some consumer watches (`set_watched`)."""
        self.capture_interval = capture_interval
        """The shortest time between two `captured` reads of one unwatched pane from tmux."""
        self.capture_quiet = capture_quiet
        """A changed pane is read once it printed nothing for this long (`CAPTURE_QUIET`)."""
        self.capture_max_age = capture_max_age
        """A pane still printing is read when its last read is this old (`CAPTURE_MAX_AGE`)."""
        self.captures = 0
        """In-band captures taken for `captured` (for benches)."""
        self.activity_reads = 0
        """In-band ``list-panes`` reads of window activity (no-output fleets; for benches)."""
        self.discoveries_in_band = 0
        """Discoveries answered on a control connection rather than by a process (for tests)."""
        self._activity: dict[PaneId, int] = {}
        self._activity_at = float("-inf")
        self._activity_wall = 0.0
        """Wall-clock time just before ``_activity`` was asked for."""
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

        self.connected = False
        self.last_error = ""
        self.reseeds = 0
        """How many times a pane was re-seeded because its output was rationed (for benches)."""

        self._panes: dict[PaneId, _Pane] = {}
        self._order: list[PaneInfo] = []
        self._clients: dict[str, ControlClient] = {}
        self._viewers: dict[str, ControlClient] = {}
        """Output follows the watch: the output client of each session holding a watched pane."""
        self._viewer_ready: set[str] = set()
        self._paused: dict[str, set[PaneId]] = {}
        """The panes each ready viewer was told to pause (its session's unwatched ones)."""
        self._seeds_due = False
        """A viewer attached: the feeder asks for the seeds that waited for it."""
        self._guard: ControlClient | None = None
        self._start_error = ""
        """Why the last control client could not be started ("" once one could)."""
        """The ``no-output`` client that keeps tmux reading every pane while ours stall."""
        self._ready: set[str] = set()
        self._state_lock = threading.RLock()
        self._stop = threading.Event()
        self._rescan = threading.Event()
        self._structure_at = float("-inf")
        """When a notification last said sessions or windows changed (`STRUCTURE_QUIET`)."""
        self._start_deferred = False
        self._feed_wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._announced: bool | None = None
        self._server_pid = 0
        self._first_seed_done = threading.Event()
        self._dirty: deque[PaneId] = deque()
        self._agent_cache: dict[tuple[str, int, str, bool], bool] = {}
        self._emitted_fleet = False
        self._last_scan = 0.0
        self._watchers: dict[str, frozenset[PaneId]] = {}
        self._watched: frozenset[PaneId] = frozenset()
        self._lost = ""
        """Set by a reader thread when a remote runner's connection died (the supervisor acts)."""
        self._tried = False
        """The first discovery was made, or failed (no server): "every pane" means something."""
        self._remote_pids: dict[str, int] = {}
        """Remote: the tmux client pid of each session's control client (asked in-band)."""
        self._suspects: dict[int, float] = {}
        """Remote: client pids of a lost connection, still to be seen gone (or reaped)."""

    # -- FleetPort -----------------------------------------------------------------------

    def start(self) -> None:
        if self._threads:
            return
        self._stop.clear()
        for name, target in (
            ("nbs-fleet-supervisor", self._supervise),
            ("nbs-fleet-feeder", self._feed_loop),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        self._rescan.set()
        self._feed_wake.set()
        for thread in self._threads:
            thread.join(5.0)
        self._threads.clear()
        with self._state_lock:
            clients = list(self._clients.values()) + self._drop_viewers()
            self._clients.clear()
            self._ready.clear()
        for client in clients:
            client.close()
        self._drop_guard()
        self.runner.close()

    def panes(self) -> list[PaneInfo]:
        with self._state_lock:
            return list(self._order)

    def attached_sessions(self) -> set[str]:
        """Sessions whose own control client is attached and ready."""
        with self._state_lock:
            return {sid for sid, client in self._clients.items() if client.alive and sid in self._ready}

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        """The live model of a watched pane (None when the pane is unknown or unwatched)."""
        pane = self._panes.get(pane_id)
        return pane.screen if pane else None

    def set_watched(self, consumer: str, pane_ids: Iterable[PaneId]) -> None:
        """``consumer`` now looks at exactly these panes (empty: none). The fleet keeps a live
        model of the panes any consumer watches: a newly watched pane gets a (blank) model at
        once, seeded from tmux and then fed live; a pane no one watches any more drops it."""
        ids = frozenset(pane_ids)
        if ids and not self.stream_output:
            raise ValueError("this fleet streams no pane output (stream_output=False): nothing can be watched")
        with self._state_lock:
            if ids:
                self._watchers[consumer] = ids
            else:
                self._watchers.pop(consumer, None)
            self._watched = frozenset().union(*self._watchers.values())
            now = time.monotonic()
            for pane_id, pane in self._panes.items():
                self._apply_watch(pane, self._wants_model(pane_id), now)
            for sid in list(self._viewer_ready):
                self._pause_unwatched(sid)  # a newly watched pane continues before its seed
            self._request_due_seeds(now)
            if self.output_follows_watch:
                viewed = self._viewed_sessions()
                for sid in viewed - set(self._viewers):
                    if sid in self._clients:
                        self._start_viewer(sid)  # at once (a process start, ~ms): the mirror waits on it
                if set(self._viewers) - viewed:
                    self._rescan.set()  # detaching waits for the process: the supervisor does it

    def watched(self) -> frozenset[PaneId]:
        """The panes that have a live model now."""
        with self._state_lock:
            return frozenset(p for p, pane in self._panes.items() if pane.screen is not None)

    def captured(self, pane_id: PaneId, timeout: float = 5.0) -> CapturedScreen | None:
        """An unwatched pane's screen, read from tmux with an in-band ``capture-pane -p -e``
        when the pane printed (or changed size, or was reconnected) since the last read and that
        read is ``capture_interval`` old; the last read otherwise. The same object while the
        text is the same. Blocks for one round trip when it reads: never call it on a listener
        callback. None for an unknown or watched pane (read `screen`), or before any read
        succeeded."""
        pane = self._panes.get(pane_id)
        if pane is None or pane.screen is not None:
            return None
        now = time.monotonic()
        if not self._capture_due(pane, now):
            return pane.capture
        return self._read_captures([pane], now, timeout).get(pane_id, pane.capture)

    def prefetch(
        self, pane_ids: Iterable[PaneId], timeout: float = 5.0, *, eager: Collection[PaneId] = ()
    ) -> int:
        """Take the captures `captured` would take for these panes now, all at once: one write
        per control connection and the replies read together, instead of a round trip a pane
        (a reader of every pane, the sidecar, calls this first; its `captured` calls then
        answer from what was read). ``eager`` panes are read whenever they changed, still
        printing or not (the sidecar's: any pane it last saw still, so that a turn starting
        there is seen at once). Returns how many panes were read."""
        now = time.monotonic()
        due = []
        for pane_id in pane_ids:
            pane = self._panes.get(pane_id)
            if pane is not None and pane.screen is None and self._capture_due(pane, now, pane_id in eager):
                due.append(pane)
        return len(self._read_captures(due, now, timeout)) if due else 0

    def _capture_due(self, pane: _Pane, now: float, eager: bool = False) -> bool:
        """First read at once; then at most once per ``capture_interval``: at once after a
        resize or reconnection, else when the pane changed and has gone quiet, or changed and
        its last read is ``capture_max_age`` old (it keeps printing: see `CAPTURE_MAX_AGE`)."""
        if pane.capture is None:
            return True
        age = now - pane.capture_at
        if age < self.capture_interval - CAPTURE_SLACK:
            return False
        if pane.reread:
            return True
        if self._own_clients_stream:
            if not pane.unseen:
                return False
            printing = now - pane.printed_at < self.capture_quiet
        else:
            activity = self._window_activity(pane, now)
            if activity is None:
                return True  # unknown (remote, or not listed yet): read, as every interval
            if activity < pane.capture_second:
                return False  # its window printed nothing since the read
            # Active in second S: it may have printed until S + 1; quiet once that is past.
            printing = activity + 1 + self.capture_quiet > self._activity_wall
        return eager or not printing or age >= self.capture_max_age - CAPTURE_SLACK

    def _read_captures(self, panes: list[_Pane], now: float, timeout: float) -> dict[PaneId, CapturedScreen]:
        """Capture these panes in-band (lines per connection in one write) and keep what is new;
        the panes read successfully, with their screens (the same object when unchanged)."""
        by_client: dict[ControlClient, list[_Pane]] = {}
        for pane in panes:
            # On the session's own client: when it streams, its replies arrive in order with the
            # pane's %output; a viewer never carries an unwatched pane's output (it pauses them).
            client = self._own_client(pane.session_id)
            if client is not None:
                by_client.setdefault(client, []).append(pane)
        done = threading.Event()
        lock = threading.Lock()
        replies: dict[PaneId, Reply] = {}
        expected = [0]
        second = int(time.time())

        def on_reply(pane: _Pane, generation: int) -> Callable[[Reply], None]:
            def got(reply: Reply) -> None:
                # On the reader thread, in order with %output: output after this is unseen.
                # (With no %output at all, tmux's window activity tells: `_window_activity`.)
                if reply.ok and pane.generation == generation:
                    pane.unseen = pane.reread = False
                with lock:
                    replies[pane.info.pane_id] = reply
                    if len(replies) >= expected[0]:
                        done.set()

            return got

        sent: list[_Pane] = []
        for client, group in by_client.items():
            commands = []
            for pane in group:
                pane.capture_at = now
                pane.capture_second = second
                commands.append((f"capture-pane -p -e -t {pane.info.pane_id}", on_reply(pane, pane.generation)))
            with lock:
                expected[0] += len(commands)
            try:
                client.send_lines(commands)
            except ControlError:
                with lock:
                    expected[0] -= len(commands)
                continue
            sent.extend(group)
        with lock:
            if len(replies) >= expected[0]:
                done.set()
        if sent:
            done.wait(timeout)
        found: dict[PaneId, CapturedScreen] = {}
        for pane in sent:
            pane_id = pane.info.pane_id
            with lock:
                reply = replies.get(pane_id)
            if reply is None or not reply.ok:
                pane.unseen = pane.reread = True
                continue
            self.captures += 1
            last = pane.capture
            raw = b"\n".join(reply.lines).decode("utf-8", "replace")
            if last is not None and last.raw == raw:
                found[pane_id] = last
                continue
            fresh = CapturedScreen.parse(raw, last.version + 1 if last is not None else 1)
            if pane.screen is None:  # not watched meanwhile (a watched pane keeps no capture)
                pane.capture = fresh
            found[pane_id] = fresh
        return found

    @property
    def _own_clients_stream(self) -> bool:
        """The sessions' own clients take ``%output`` (no viewers: every session streams)."""
        return self.stream_output and not self.output_follows_watch

    def _own_client(self, session_id: str) -> ControlClient | None:
        """The session's own client, once attached and ready; None before that."""
        own = self._clients.get(session_id)
        return own if own is not None and own.alive and session_id in self._ready else None

    def _viewer(self, session_id: str) -> ControlClient | None:
        """The session's viewer (output follows the watch), once attached and ready."""
        viewer = self._viewers.get(session_id)
        return viewer if viewer is not None and viewer.alive and session_id in self._viewer_ready else None

    def _streaming_client(self, session_id: str) -> ControlClient | None:
        """The ready client that carries this session's ``%output`` (seeds go on it): its viewer
        when output follows the watch, else its own client."""
        return self._viewer(session_id) if self.output_follows_watch else self._own_client(session_id)

    def _pause_unwatched(self, session_id: str) -> None:
        """Make this session's ready viewer carry exactly its watched panes: pause the others
        (new ones too) and continue those watched since (state lock held). One command line,
        sent without waiting; a pane that died meanwhile is skipped by tmux itself."""
        viewer = self._viewer(session_id)
        if viewer is None:
            return
        paused = self._paused.setdefault(session_id, set())
        mine = {pid for pid, pane in self._panes.items() if pane.session_id == session_id}
        paused &= mine  # gone panes are forgotten
        pause = sorted(mine - self._watched - paused)
        resume = sorted(paused & self._watched)
        if not pause and not resume:
            return
        flags = [f"-A '{pid}:pause'" for pid in pause] + [f"-A '{pid}:continue'" for pid in resume]
        lines = [
            ("refresh-client " + " ".join(flags[at : at + PAUSES_PER_LINE]), None)
            for at in range(0, len(flags), PAUSES_PER_LINE)
        ]
        try:
            viewer.send_lines(lines)
        except ControlError:
            return  # the viewer died: the supervisor replaces it, and the new one pauses again
        paused.update(pause)
        paused.difference_update(resume)

    def _window_activity(self, pane: _Pane, now: float) -> int | None:
        """Without %output: the wall-clock second of the pane's window's last activity.

        One in-band ``list-panes -a`` a capture interval gives every window's last activity
        (whole seconds, updated by any output): a window active in or after the second of the
        last read may have printed since. Only on this machine (tmux's clock is ours); None
        (read again) when unsure."""
        if self.runner.remote:
            return None
        if now - self._activity_at >= self.capture_interval - CAPTURE_SLACK:
            self._activity_at = now
            self._activity_wall = time.time()
            self._activity = self._list_activity()
        return self._activity.get(pane.info.pane_id)

    def _list_activity(self) -> dict[PaneId, int]:
        if not self._ready_clients():
            return {}  # in-band only: not a process a second
        try:
            reply = self._commands.run("list-panes", "-a", "-F", "#{pane_id} #{window_activity}", timeout=5.0)
        except TmuxError:
            return {}
        self.activity_reads += 1
        found: dict[PaneId, int] = {}
        for line in reply.lines:
            pane_id, _, when = line.partition(" ")
            if when.isdigit():
                found[pane_id] = int(when)
        return found

    @property
    def commands(self) -> TmuxServerCommands:
        """Every tmux command on this server: in-band on a ready control client of the fleet,
        else as a process (`nbs_tui.tmux.commands`)."""
        return self._commands

    def _ready_clients(self) -> list[ControlClient]:
        """The sessions' own control clients that are attached and ready (commands go there)."""
        with self._state_lock:
            return [c for sid, c in self._clients.items() if c.alive and sid in self._ready]

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

    # -- extras --------------------------------------------------------------------------

    def wait_seeded(self, timeout: float) -> bool:
        """Block until every pane found by the first discovery has been seeded, or for an
        unwatched pane can be `captured` (its session's control client is attached)."""
        return self._first_seed_done.wait(timeout)

    def seeded(self, pane_id: PaneId) -> bool:
        pane = self._panes.get(pane_id)
        return pane is not None and pane.mode == _LIVE and pane.seed is None

    def fed(self, pane_id: PaneId) -> tuple[int, int]:
        """(bytes of output parsed into the pane's model, ``%output`` lines left unparsed
        while it was unwatched), over the pane's life in the fleet (for tests and benches)."""
        pane = self._panes.get(pane_id)
        return (pane.fed, pane.unwatched_output) if pane else (0, 0)

    def stats(self) -> dict[str, int]:
        """Counters for benchmarks: bytes dropped by rationing, re-seeds, clients, models."""
        with self._state_lock:
            panes = list(self._panes.values())
            return {
                "panes": len(panes),
                "clients": len(self._clients),
                "viewers": len(self._viewers),
                "dropped_bytes": sum(p.dropped_bytes for p in panes),
                "reseeds": self.reseeds,
                "models": sum(p.screen is not None for p in panes),
                "fed_bytes": sum(p.fed for p in panes),
                "unwatched_output": sum(p.unwatched_output for p in panes),
                "captures": self.captures,
                "activity_reads": self.activity_reads,
            }

    def client_pids(self) -> list[int]:
        with self._state_lock:
            return [c.pid for c in [*self._clients.values(), *self._viewers.values()] if c.pid]

    def viewed_sessions(self) -> frozenset[str]:
        """The sessions whose output streams to us on a viewer now (for tests and benches)."""
        with self._state_lock:
            return frozenset(sid for sid in self._viewers if sid in self._viewer_ready)

    def _require(self, pane_id: PaneId) -> _Pane:
        pane = self._panes.get(pane_id)
        if pane is None:
            raise PaneGone(f"{pane_id} is not a pane of the fleet")
        return pane

    # -- reader-thread callbacks (must not block) ----------------------------------------

    def _make_output_filter(self, session_id: str) -> Callable[[str], bool]:
        panes = self._panes

        def wants(pane_id: str) -> bool:
            pane = panes.get(pane_id)
            if pane is None or pane.session_id != session_id:
                return False
            if pane.mode == _LIVE:
                return True
            if pane.mode == _UNWATCHED:
                # Nobody looks at it: no decoding, no buffer, no wake-up; the feeder's next
                # look at every pane (at least every 0.25 s) reports it changed.
                pane.unseen = pane.marked = True
                pane.printed_at = time.monotonic()
                pane.unwatched_output += 1
            return False

        return wants

    def _make_output_handler(self, session_id: str) -> Callable[[str, bytes], None]:
        def on_output(pane_id: str, data: bytes) -> None:
            pane = self._panes.get(pane_id)
            # A window linked into two sessions reports its output to both clients: take it
            # from the client of the session the pane is filed under.
            if pane is not None and pane.session_id == session_id:
                self._on_output(pane, data)

        return on_output

    def _on_output(self, pane: _Pane, data: bytes) -> None:
        with pane.lock:
            if pane.mode != _LIVE:
                return
            pane.chunks.append(data)
            pane.pending += len(data)
            if pane.pending > self.max_pending:
                pane.dropped_bytes += pane.pending
                pane.chunks = []
                pane.pending = 0
                pane.mode = _NEEDS_SEED
                pane.next_seed_at = time.monotonic() + self.reseed_interval
                pane.reseeds += 1
                self.reseeds += 1
        self._dirty.append(pane.info.pane_id)
        if not self._feed_wake.is_set():  # set() takes a lock and notifies: skip when already set
            self._feed_wake.set()

    def _make_notification_handler(self, session_id: str) -> object:
        def handle(line: str) -> None:
            raw = line.encode("utf-8", "replace")
            if raw.startswith(b"%session-changed"):
                parts = line.split(" ")
                if len(parts) >= 2 and parts[1] != session_id:
                    log.info("control client for %s moved to %s; dropping it", session_id, parts[1])
                    with self._state_lock:
                        self._ready.discard(session_id)
                else:
                    with self._state_lock:
                        self._ready.add(session_id)
                    if self.runner.remote:
                        self._learn_remote_pid(session_id)
                self._rescan.set()
            elif raw.startswith(_RESCAN_NOTIFICATIONS):
                self._structure_at = max(self._structure_at, time.monotonic())
                self._rescan.set()

        return handle

    def _learn_remote_pid(self, session_id: str) -> None:
        client = self._clients.get(session_id)
        if client is None:
            return

        def got(reply: Reply) -> None:
            text = reply.text()
            if reply.ok and text and text[0].strip().isdigit():
                self._remote_pids[session_id] = int(text[0])

        with contextlib.suppress(ControlError):
            client.send("display-message -p '#{client_pid}'", got)

    def _reap_suspects(self) -> None:
        """A client of a lost connection still attached after reconnecting may be orphaned
        (sshd can notice the loss after we are back): reap until it is gone (for a minute)."""
        now = time.monotonic()
        self._suspects = {pid: t for pid, t in self._suspects.items() if now - t < 60.0}
        if not self._suspects:
            return
        try:
            listed = {int(pid) for pid in self._commands.run("list-clients", "-F", "#{client_pid}").lines if pid}
        except (TmuxError, ValueError):
            return
        self._suspects = {pid: t for pid, t in self._suspects.items() if pid in listed}
        if not self._suspects:
            return
        try:
            reaped = self.runner.reap()
        except TmuxError as exc:
            log.warning("reaping failed: %s", exc)
            return
        for pid in reaped:
            self._suspects.pop(pid, None)
        if reaped:
            self._report(
                "ssh",
                f"{self.runner.describe()}: stopped {len(reaped)} orphaned tmux control client(s) "
                "of the lost connection (they froze the host's panes)",
            )

    def _make_exit_handler(self, session_id: str, box: list[ControlClient]) -> object:
        def handle(reason: str) -> None:
            log.info("control client for %s exited: %s", session_id, reason)
            with self._state_lock:
                # The supervisor may have replaced a dead client already: then this news is old,
                # and the new client (ready, or failing on its own) is not to be disturbed.
                current = not box or self._clients.get(session_id, box[0]) is box[0]
                if current:
                    self._ready.discard(session_id)
            if current and box and self.runner.lost_connection(box[0].returncode):
                self._lost = box[0].exit_reason or reason  # the host is gone: reconnect it whole
            self._rescan.set()
            if not self._stop.is_set():  # not ours to close (close() never calls this): say so
                self._report("tmux", f"control client for session {session_id} exited ({reason}); reconnecting")

        return handle

    # -- supervisor ----------------------------------------------------------------------

    def _supervise(self) -> None:
        failures = 0
        while not self._stop.is_set():
            if self._lost:
                lost, self._lost = self._lost, ""
                self._disconnected(lost)
            try:
                if not self.connected:
                    for note in self.runner.prepare():  # remote: connect, check tmux, reap
                        self._report("ssh", note)
                found = self._discover()
            except TmuxError as exc:
                # A host that does not answer in time is unreachable too; a local tmux is
                # polled as usual, as is "no server".
                unreachable = isinstance(exc, HostUnreachable) or (self.runner.remote and isinstance(exc, TmuxTimeout))
                self._disconnected(str(exc), unreachable=unreachable)
                # Back off only while the host cannot be reached; "no server" is polled as usual.
                failures = failures + 1 if unreachable else 0
                self._rescan.wait(self._retry_delay(failures))
                self._rescan.clear()
                continue
            except Exception as exc:
                log.exception("discovery failed")
                self._disconnected(f"discovery failed: {exc}")
                self._stop.wait(self.reconnect_interval)
                continue
            failures = 0
            try:
                self._reconcile(found)
            except Exception:
                log.exception("reconcile failed")
            if self._suspects:
                self._reap_suspects()
            wait = self.rescan_interval
            if self._start_deferred:  # come back once the structure has been quiet long enough
                self._start_deferred = False
                wait = min(wait, max(0.0, self._structure_at + STRUCTURE_QUIET - time.monotonic()) + 0.01)
            self._rescan.wait(wait)
            if self._stop.is_set():
                break
            self._rescan.clear()
            self._stop.wait(0.03)  # let a burst of notifications settle into one rescan

    def _retry_delay(self, failures: int) -> float:
        """Locally a fixed interval; an unreachable host backs off (1, 2, 4 ... up to its cap)."""
        cap = self.runner.max_backoff
        if cap is None or failures <= 0:
            return self.reconnect_interval
        return min(cap, self.reconnect_interval * 2 ** min(failures - 1, 16))

    def _discover(self) -> list[DiscoveredPane]:
        """List every pane: in-band on an attached control connection (~1 ms instead of a
        ``tmux`` process, or an ssh exec when tmux is remote), else one ``tmux list-panes``
        process (before the first connection, and while none is ready)."""
        found = discover(self._commands, self._agent_cache)
        if found.in_band:
            self.discoveries_in_band += 1
        return found.panes

    def _disconnected(self, message: str, unreachable: bool = False) -> None:
        changed = message != self.last_error
        # A host that was up and now cannot be reached lost its connection: that is the news,
        # even when a command tried a new one (refused) before the dying client's exit landed.
        lost = self.runner.lost_message() if unreachable and self._announced is True else ""
        self.last_error = message
        self._tried = True
        now = time.monotonic()
        for pid in self._remote_pids.values():
            self._suspects[pid] = now
        self._remote_pids.clear()
        with self._state_lock:
            clients = list(self._clients.values()) + self._drop_viewers()
            self._clients.clear()
            self._ready.clear()
            for pane in self._panes.values():
                self._invalidate(pane)
        for client in clients:
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
                self._report("ssh", message)  # why it cannot be made again, once
        elif changed and self.runner.remote:
            # Still away, for another reason now (lost -> refused -> timed out): say so once.
            self._report("ssh", message)

    def _reconcile(self, found: list[DiscoveredPane]) -> None:
        server_pid = found[0].server_pid if found else self._server_pid
        new_server = bool(found) and self._server_pid not in (0, server_pid)
        if found:
            self._server_pid = server_pid
        if new_server:
            log.info("tmux server restarted (pid %s)", server_pid)
            with self._state_lock:
                clients = list(self._clients.values()) + self._drop_viewers()
                self._clients.clear()
                self._ready.clear()
            for client in clients:
                client.close()
        self.connected = True
        self.last_error = ""
        if self._announced is not True:
            self._announced = True
            self._notify_connection(True, f"connected to {self.runner.describe()}")

        wanted = filter_sessions(found, self.sessions)
        sessions = {p.session_id for p in wanted}
        fleet_changed = False
        with self._state_lock:
            # control clients: one per watched session
            for sid in list(self._clients):
                client = self._clients[sid]
                if sid not in sessions or not client.alive:
                    del self._clients[sid]
                    self._ready.discard(sid)
                    client.close()
                    self._invalidate_session(sid)  # output went unseen: seed again
            settling = time.monotonic() - self._structure_at < STRUCTURE_QUIET
            for sid in sessions:
                if sid not in self._clients:
                    if settling:  # a burst of sessions being made or killed: not now
                        self._start_deferred = True
                        continue
                    self._start_client(sid)
            self._keep_guard(sessions, new_server)
            # panes
            seen: set[PaneId] = set()
            for d in wanted:
                pid = d.info.pane_id
                seen.add(pid)
                pane = self._panes.get(pid)
                if pane is None or new_server:
                    screen = pane.screen if pane else None
                    if screen is None and self._wants_model(pid):
                        screen = PaneScreen(d.info.width, d.info.height)
                    pane = _Pane(d.info, d.session_id, screen)
                    if screen is None:
                        pane.mode = _UNWATCHED
                    pane.tokens = float(self.feed_burst)
                    pane.tokens_at = time.monotonic()
                    self._panes[pid] = pane
                    fleet_changed = True
                    continue
                old = pane.info
                if old != d.info:
                    fleet_changed = True
                resized = (old.width, old.height) != (d.info.width, d.info.height)
                moved = pane.session_id != d.session_id
                if resized or moved or (old.dead != d.info.dead):
                    self._invalidate(pane)
                pane.info = d.info
                pane.session_id = d.session_id
            for pid in list(self._panes):
                if pid not in seen:
                    del self._panes[pid]
                    fleet_changed = True
            order = [d.info for d in wanted]
            if order != self._order:
                fleet_changed = True
            self._order = order
            detached = self._sync_viewers(sessions)
            for sid in list(self._viewer_ready):
                self._pause_unwatched(sid)  # new panes of a viewed session
            # seeds for panes whose session's client is attached
            self._request_due_seeds(time.monotonic())
        for viewer in detached:
            viewer.close()
        if not self._emitted_fleet:
            self._emitted_fleet = fleet_changed = True
        self._tried = True
        if fleet_changed and self.listener is not None:
            try:
                self.listener.fleet_changed(list(order))
            except Exception:
                log.exception("listener.fleet_changed failed")
        self._check_first_seed()

    def _invalidate_session(self, session_id: str) -> None:
        for pane in self._panes.values():
            if pane.session_id == session_id:
                self._invalidate(pane)

    @staticmethod
    def _invalidate(pane: _Pane) -> None:
        with pane.lock:
            pane.generation += 1
            pane.unseen = pane.reread = True
            if pane.mode == _UNWATCHED:
                return
            pane.mode = _NEEDS_SEED
            pane.seed = None
            pane.chunks = []
            pane.pending = 0
            pane.next_seed_at = 0.0

    def _wants_model(self, pane_id: PaneId) -> bool:
        return self.watch_all or pane_id in self._watched

    def _apply_watch(self, pane: _Pane, watch: bool, now: float) -> None:
        """Give a newly watched pane a blank model (the next seed fills it); drop an unwatched
        pane's model. Runs with the state lock held."""
        if watch == (pane.screen is not None):
            return
        with pane.lock:
            pane.generation += 1  # a seed asked for before this does not apply
            pane.seed = None
            pane.chunks = []
            pane.pending = 0
            pane.marked = False
            pane.unseen = True
            pane.capture = None
            if watch:
                pane.screen = PaneScreen(pane.info.width, pane.info.height)
                pane.mode = _NEEDS_SEED
                pane.next_seed_at = 0.0
                pane.tokens = float(self.feed_burst)
                pane.tokens_at = now
            else:
                pane.screen = None
                pane.mode = _UNWATCHED
        self._dirty.append(pane.info.pane_id)  # consumers hear of the switch
        self._feed_wake.set()

    def _start_client(self, session_id: str) -> None:
        box: list[ControlClient] = []
        client = ControlClient(
            self.server,
            session_id,
            on_output=self._make_output_handler(session_id),
            wants_output=self._make_output_filter(session_id),
            on_notification=self._make_notification_handler(session_id),  # type: ignore[arg-type]
            on_exit=self._make_exit_handler(session_id, box),  # type: ignore[arg-type]
            tmux=self.tmux,
            runner=self.runner,
            flags="ignore-size" if self._own_clients_stream else "ignore-size,no-output",
        )
        box.append(client)
        try:
            client.start()
        except OSError as exc:
            message = f"cannot start tmux control client: {exc.strerror or exc}; tried again every rescan"
            if message != self._start_error:  # once per episode (too many open files, say), not every rescan
                self._report("tmux", message)
            self.last_error = self._start_error = message
            log.warning(message)
            return
        self._start_error = ""
        self._clients[session_id] = client

    def _keep_guard(self, sessions: set[str], new_server: bool) -> None:
        """Keep one ``no-output`` client attached while output clients are (see the module
        docstring: it is what keeps a stalled client of ours from blocking the agents)."""
        guard = self._guard
        if guard is not None and (new_server or not guard.alive or guard.session_id not in sessions):
            self._drop_guard()
            guard = None
        if guard is not None or not sessions or not self._own_clients_stream:
            return
        session_id = min(sessions)

        def exited(reason: str) -> None:
            log.info("guard client exited: %s", reason)
            self._rescan.set()

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
        except OSError as exc:
            log.warning("cannot start the guard client: %s", exc)
            return
        self._guard = guard

    def _viewed_sessions(self) -> set[str]:
        """The sessions holding a watched pane of the fleet (state lock held)."""
        return {pane.session_id for pid in self._watched if (pane := self._panes.get(pid)) is not None}

    def _sync_viewers(self, sessions: set[str]) -> list[ControlClient]:
        """Attach a viewer to each live session holding a watched pane, detach the others
        (state lock held). Returns the clients to close once the lock is released (closing
        waits for the process)."""
        wanted = self._viewed_sessions() & sessions if self.output_follows_watch else set()
        gone = []
        for sid, viewer in list(self._viewers.items()):
            if sid not in wanted or not viewer.alive:
                gone.append(self._viewers.pop(sid))
                self._viewer_ready.discard(sid)
                self._paused.pop(sid, None)
                if sid in wanted:  # died: its watched panes' output went unseen
                    self._invalidate_session(sid)
        for sid in wanted - set(self._viewers):
            self._start_viewer(sid)
        return gone

    def _drop_viewers(self) -> list[ControlClient]:
        """Forget every viewer (state lock held); returns them, to close outside the lock."""
        gone = list(self._viewers.values())
        self._viewers.clear()
        self._viewer_ready.clear()
        self._paused.clear()
        return gone

    def _start_viewer(self, session_id: str) -> None:
        box: list[ControlClient] = []

        def current() -> bool:
            return bool(box) and self._viewers.get(session_id) is box[0]

        def on_notification(line: str) -> None:
            if not line.startswith("%session-changed"):
                return  # the session's own client reports the rest
            parts = line.split(" ")
            with self._state_lock:
                if len(parts) < 2 or parts[1] != session_id or not current():
                    return
                self._viewer_ready.add(session_id)
                self._paused[session_id] = set()  # a new client: every pane streams until paused
                self._pause_unwatched(session_id)  # sent before the seeds below
            self._seeds_due = True  # the feeder seeds the watched panes that waited for this
            self._feed_wake.set()

        def on_exit(reason: str) -> None:
            log.info("viewer client for %s exited: %s", session_id, reason)
            with self._state_lock:
                was_current = current()
                if was_current:
                    self._viewer_ready.discard(session_id)
                    self._paused.pop(session_id, None)
                main = self._clients.get(session_id)
            self._rescan.set()  # the supervisor replaces it (and re-seeds its watched panes)
            # Not ours to close (close() never calls this): say so, unless the whole session or
            # server went (its own client says that).
            if was_current and main is not None and main.alive and not self._stop.is_set():
                self._report("tmux", f"output control client for session {session_id} exited ({reason}); reattaching")

        viewer = ControlClient(
            self.server,
            session_id,
            on_output=self._make_output_handler(session_id),
            wants_output=self._make_output_filter(session_id),
            on_notification=on_notification,
            on_exit=on_exit,
            tmux=self.tmux,
            runner=self.runner,
            flags="ignore-size",
        )
        box.append(viewer)
        self._viewers[session_id] = viewer  # before it starts: its first line may come at once
        try:
            viewer.start()
        except OSError as exc:
            del self._viewers[session_id]
            log.warning("cannot start a viewer client for %s: %s", session_id, exc)

    def _drop_guard(self) -> None:
        guard, self._guard = self._guard, None
        if guard is not None:
            guard.close()

    def _request_due_seeds(self, now: float) -> None:
        with self._state_lock:
            for pane in self._panes.values():
                if pane.mode == _NEEDS_SEED and now >= pane.next_seed_at:
                    self._request_seed(pane, now)
                elif pane.mode == _SEEDING and now - pane.seed_sent_at > 10.0:
                    pane.mode = _NEEDS_SEED  # lost reply (client died): try again

    def _request_seed(self, pane: _Pane, now: float) -> None:
        sid = pane.session_id
        client = self._streaming_client(sid)
        if client is None:
            return  # not attached yet (following the watch: its session's viewer)
        pid = pane.info.pane_id
        box: dict[str, Reply] = {}
        generation = pane.generation

        def got(name: str) -> object:
            def cb(reply: Reply) -> None:
                box[name] = reply
                if name == "alt":
                    self._seed_replied(pane, box, generation)

            return cb

        with pane.lock:
            pane.mode = _SEEDING
            pane.seed_sent_at = now
            pane.chunks = []
            pane.pending = 0
        try:
            client.send_group(
                [
                    (f"display-message -p -t {pid} '{_SEED_FORMAT}'", got("info")),  # type: ignore[list-item]
                    (f"capture-pane -p -e -N -t {pid}", got("screen")),  # type: ignore[list-item]
                    (f"capture-pane -p -e -N -a -q -t {pid}", got("alt")),  # type: ignore[list-item]
                ]
            )
        except ControlError:
            with pane.lock:
                pane.mode = _NEEDS_SEED

    def _seed_replied(self, pane: _Pane, box: dict[str, Reply], generation: int) -> None:
        """Runs on the reader thread, in order with %output: the seed takes effect here."""
        info, screen, alt = box.get("info"), box.get("screen"), box.get("alt")
        with pane.lock:
            if generation != pane.generation:
                return  # stale: the pane was invalidated after this seed was asked for
            if not (info and screen and alt and info.ok and screen.ok and alt.ok and info.lines):
                pane.mode = _NEEDS_SEED
                pane.next_seed_at = time.monotonic() + 1.0
                self._rescan.set()
                return
            numbers = [int(x) if x.strip().isdigit() else -1 for x in info.lines[0].split(b",")]
            main = b"\n".join(alt.lines) if alt.lines else None
            pane.seed = (b"\n".join(screen.lines), numbers, main)
            pane.chunks = []
            pane.pending = 0
            pane.mode = _LIVE
        self._dirty.append(pane.info.pane_id)
        if not self._feed_wake.is_set():  # set() takes a lock and notifies: skip when already set
            self._feed_wake.set()

    def _check_first_seed(self) -> None:
        if self._first_seed_done.is_set() or not self._tried:
            return  # before the first discovery (a remote one takes a connect), nothing is known
        with self._state_lock:
            ready = self._ready
            if all(
                (p.mode == _LIVE and p.seed is None) or (p.mode == _UNWATCHED and p.session_id in ready)
                for p in self._panes.values()
            ):
                self._first_seed_done.set()

    def _report(self, source: str, message: str) -> None:
        """A problem for the operator, to a listener that takes them (`ProblemListener`)."""
        report = getattr(self.listener, "problem", None)
        if report is None:
            return
        try:
            report(source, message)
        except Exception:
            log.exception("listener.problem failed")

    def _notify_connection(self, connected: bool, message: str) -> None:
        if self.listener is None:
            return
        try:
            self.listener.connection_changed(connected, message)
        except Exception:
            log.exception("listener.connection_changed failed")

    # -- feeder --------------------------------------------------------------------------

    def _feed_loop(self) -> None:
        changed: set[PaneId] = set()
        last_emit = 0.0
        period = 1.0 / self.max_rate if self.max_rate > 0 else 0.0
        while not self._stop.is_set():
            timeout = 0.25
            if changed:
                timeout = max(0.0, last_emit + period - time.monotonic())
            self._feed_wake.wait(timeout)
            self._feed_wake.clear()
            if self._stop.is_set():
                break
            now = time.monotonic()
            try:
                changed |= self._feed_all(now)
            except Exception:
                log.exception("feeding screens failed")
            if changed and now - last_emit >= period:
                batch = frozenset(changed)
                changed.clear()
                last_emit = now
                if self.listener is not None:
                    try:
                        self.listener.screens_changed(batch)
                    except Exception:
                        log.exception("listener.screens_changed failed")
            if not self._first_seed_done.is_set():
                self._check_first_seed()

    def _feed_all(self, now: float) -> set[PaneId]:
        changed: set[PaneId] = set()
        need_seed = False
        dirty = self._dirty
        ids: set[PaneId] = set()
        while dirty:
            ids.add(dirty.popleft())
        if self._seeds_due:
            self._seeds_due = False
            need_seed = True
        if now - self._last_scan >= 0.1:
            # Also look at every pane now and then: seeds due, and nothing left behind.
            self._last_scan = now
            for pane_id, each in list(self._panes.items()):
                if each.mode == _NEEDS_SEED:
                    need_seed = True
                if each.chunks or each.seed is not None or each.marked:
                    ids.add(pane_id)
        # Live output first, then at most `seeds_per_pass` seeds (painting a seed costs a few
        # ms): a burst of seeds (start-up, reconnect) does not hold up the other panes. A pane
        # whose seed waits is skipped whole, so its later output still follows its seed.
        ordered = sorted(ids, key=lambda i: self._panes[i].seed is not None if i in self._panes else False)
        seeds_left = self.seeds_per_pass
        for pane_id in ordered:
            found = self._panes.get(pane_id)
            if found is None:
                continue
            if found.mode == _UNWATCHED or found.screen is None:
                # Unwatched: nothing to parse; its output (or the switch) is news all the same.
                found.marked = False
                changed.add(pane_id)
                continue
            if not found.chunks and found.seed is None:
                continue
            if found.seed is not None:
                if seeds_left <= 0:
                    self._dirty.append(pane_id)
                    self._feed_wake.set()
                    continue
                seeds_left -= 1
            pane = found
            with pane.lock:
                screen = pane.screen
                seed, pane.seed = pane.seed, None
                chunks, pane.chunks = pane.chunks, []
                size, pane.pending = pane.pending, 0
            if screen is None:  # unwatched meanwhile: its model is gone
                continue
            if seed is not None:
                capture, n, main = seed
                width, height, cx, cy, cflag, alt, top, bottom, sx, sy = (n + [-1] * 10)[:10]
                with screen.lock:
                    screen.resize(width, height)
                    screen.seed(
                        capture,
                        cx,
                        cy,
                        alternate=bool(alt),
                        cursor_visible=bool(cflag),
                        main_capture=main,
                        scroll_region=(top, bottom),
                        saved_cursor=(sx, sy) if alt and sx >= 0 and sy >= 0 else None,
                    )
                changed.add(pane_id)
            if chunks:
                elapsed = now - pane.tokens_at
                pane.tokens = min(float(self.feed_burst), pane.tokens + elapsed * self.feed_rate)
                pane.tokens_at = now
                if size > pane.tokens:
                    # Over its ration: drop in nbs-tui, re-seed from tmux a little later.
                    pane.dropped_bytes += size
                    with pane.lock:
                        if pane.mode == _LIVE:
                            pane.mode = _NEEDS_SEED
                            pane.chunks = []
                            pane.pending = 0
                            pane.next_seed_at = now + self.reseed_interval
                    pane.reseeds += 1
                    self.reseeds += 1
                    need_seed = True
                    continue
                pane.tokens -= size
                pane.fed += size
                screen.feed(b"".join(chunks))
                changed.add(pane_id)
        if need_seed:
            self._request_due_seeds(now)
        return changed


def _gone(pane_id: PaneId, error: TmuxError) -> PaneGone:
    """The port's one error for a pane command (`FleetPort`): whatever failed, as `PaneGone`."""
    return PaneGone(f"{pane_id}: {error}")
