"""The fleet's panes: one record per pane, the watch, and what the reader threads write.

`PaneTable` holds every pane of a `TmuxFleet` (`FleetPane`) in discovery order, which consumers
watch which panes (a watched pane has a live `PaneScreen`), and the feeder's inbox: the panes
with news (``dirty``) and the event that wakes the feeder. Its ``lock`` is the fleet's state
lock: the other parts of the fleet (`nbs_tui.tmux.fleet_clients`, ``fleet_feeder``,
``fleet_captures``, ``fleet_supervisor``) take it for anything that must agree across panes,
sessions and clients; a pane's own ``lock`` guards its buffer against the reader thread.

The reader thread of each control client calls `PaneTable.output_filter` and
`PaneTable.output_handler` for every ``%output`` line: they only append to the pane's buffer
(or, unwatched, mark it changed) and wake the feeder; they never wait on anything else.

A pane's mode: `NEEDS_SEED` (watched, its model must be seeded from tmux), `SEEDING` (the seed
was asked for), `LIVE` (seeded: output is fed into the model), `UNWATCHED` (no model: output
only marks it changed; its screen is read by `nbs_tui.tmux.fleet_captures`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.core.screen.screen_rows import CapturedScreen
from nbs_tui.tmux.discovery import DiscoveredPane

NEEDS_SEED = 0
SEEDING = 1
LIVE = 2
UNWATCHED = 3
"""No model: output only marks the pane changed; its screen is read with `TmuxFleet.captured`."""


@dataclass
class FleetPane:
    info: PaneInfo
    session_id: str
    screen: PaneScreen | None
    """The live model while the pane is watched, else None."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    chunks: list[bytes] = field(default_factory=list)
    pending: int = 0
    mode: int = NEEDS_SEED
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


class PaneTable:
    """Every pane of the fleet, the watch, and the feeder's inbox (module docstring)."""

    def __init__(self, *, watch_all: bool, max_pending: int, reseed_interval: float, feed_burst: int) -> None:
        self.watch_all = watch_all
        """Keep a live model of every pane; False: only of the panes some consumer watches."""
        self.max_pending = max_pending
        self.reseed_interval = reseed_interval
        self.feed_burst = feed_burst
        self.lock = threading.RLock()
        """The fleet's state lock (module docstring)."""
        self.panes: dict[PaneId, FleetPane] = {}
        self.order: list[PaneInfo] = []
        """The panes as discovered, in session/window/pane order."""
        self.watchers: dict[str, frozenset[PaneId]] = {}
        self.watched: frozenset[PaneId] = frozenset()
        """Every pane some consumer watches."""
        self.dirty: deque[PaneId] = deque()
        """Panes with news for the feeder (output, a seed, a switch of the watch)."""
        self.wake = threading.Event()
        """Wakes the feeder."""
        self.seeds_due = False
        """A viewer attached: the feeder asks for the seeds that waited for it."""
        self.reseeds = 0
        """How many times a pane was re-seeded because its output was rationed (for benches)."""
        self.discovered = False
        """The first discovery was made, or failed (no server): "every pane" means something."""
        self.first_seed_done = threading.Event()

    def mark(self, pane_id: PaneId) -> None:
        """The pane has news for the feeder."""
        self.dirty.append(pane_id)
        if not self.wake.is_set():  # set() takes a lock and notifies: skip when already set
            self.wake.set()

    # -- the watch ---------------------------------------------------------------------------

    def wants_model(self, pane_id: PaneId) -> bool:
        return self.watch_all or pane_id in self.watched

    def set_watchers(self, consumer: str, pane_ids: frozenset[PaneId], now: float) -> None:
        """``consumer`` watches exactly these panes now: models made and dropped to match
        (lock held)."""
        if pane_ids:
            self.watchers[consumer] = pane_ids
        else:
            self.watchers.pop(consumer, None)
        self.watched = frozenset().union(*self.watchers.values())
        for pane_id, pane in self.panes.items():
            self.apply_watch(pane, self.wants_model(pane_id), now)

    def apply_watch(self, pane: FleetPane, watch: bool, now: float) -> None:
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
                pane.mode = NEEDS_SEED
                pane.next_seed_at = 0.0
                pane.tokens = float(self.feed_burst)
                pane.tokens_at = now
            else:
                pane.screen = None
                pane.mode = UNWATCHED
        self.dirty.append(pane.info.pane_id)  # consumers hear of the switch
        self.wake.set()

    def viewed_sessions(self) -> set[str]:
        """The sessions holding a watched pane of the fleet (state lock held)."""
        return {pane.session_id for pid in self.watched if (pane := self.panes.get(pid)) is not None}

    def models(self) -> frozenset[PaneId]:
        """The panes that have a live model now."""
        with self.lock:
            return frozenset(p for p, pane in self.panes.items() if pane.screen is not None)

    # -- what discovery found -----------------------------------------------------------------

    def update(self, found: list[DiscoveredPane], new_server: bool) -> bool:
        """Bring the table to ``found`` (the watched sessions' panes, in order; lock held): new
        panes added (with a blank model when watched), changed ones updated and, resized or
        moved or dead or alive again, seeded or read again; gone ones dropped. True when the
        fleet as consumers see it changed."""
        changed = False
        seen: set[PaneId] = set()
        for d in found:
            pid = d.info.pane_id
            seen.add(pid)
            pane = self.panes.get(pid)
            if pane is None or new_server:
                screen = pane.screen if pane else None
                if screen is None and self.wants_model(pid):
                    screen = PaneScreen(d.info.width, d.info.height)
                pane = FleetPane(d.info, d.session_id, screen)
                if screen is None:
                    pane.mode = UNWATCHED
                pane.tokens = float(self.feed_burst)
                pane.tokens_at = time.monotonic()
                self.panes[pid] = pane
                changed = True
                continue
            old = pane.info
            if old != d.info:
                changed = True
            resized = (old.width, old.height) != (d.info.width, d.info.height)
            moved = pane.session_id != d.session_id
            if resized or moved or (old.dead != d.info.dead):
                self.invalidate(pane)
            pane.info = d.info
            pane.session_id = d.session_id
        for pid in list(self.panes):
            if pid not in seen:
                del self.panes[pid]
                changed = True
        order = [d.info for d in found]
        if order != self.order:
            changed = True
        self.order = order
        return changed

    # -- tmux changed a pane behind our back ---------------------------------------------------

    @staticmethod
    def invalidate(pane: FleetPane) -> None:
        """Seed the pane again (watched), read it again (unwatched): its output went unseen,
        or it was resized or moved."""
        with pane.lock:
            pane.generation += 1
            pane.unseen = pane.reread = True
            if pane.mode == UNWATCHED:
                return
            pane.mode = NEEDS_SEED
            pane.seed = None
            pane.chunks = []
            pane.pending = 0
            pane.next_seed_at = 0.0

    def invalidate_session(self, session_id: str) -> None:
        for pane in self.panes.values():
            if pane.session_id == session_id:
                self.invalidate(pane)

    def invalidate_all(self) -> None:
        for pane in self.panes.values():
            self.invalidate(pane)

    # -- the reader threads' callbacks (must not block) ------------------------------------

    def output_filter(self, session_id: str) -> Callable[[str], bool]:
        """Asked first for each ``%output`` line: output that will be dropped is not decoded."""
        panes = self.panes

        def wants(pane_id: str) -> bool:
            pane = panes.get(pane_id)
            if pane is None or pane.session_id != session_id:
                return False
            if pane.mode == LIVE:
                return True
            if pane.mode == UNWATCHED:
                # Nobody looks at it: no decoding, no buffer, no wake-up; the feeder's next
                # look at every pane (at least every 0.25 s) reports it changed.
                pane.unseen = pane.marked = True
                pane.printed_at = time.monotonic()
                pane.unwatched_output += 1
            return False

        return wants

    def output_handler(self, session_id: str) -> Callable[[str, bytes], None]:
        panes = self.panes

        def on_output(pane_id: str, data: bytes) -> None:
            pane = panes.get(pane_id)
            # A window linked into two sessions reports its output to both clients: take it
            # from the client of the session the pane is filed under.
            if pane is not None and pane.session_id == session_id:
                self._on_output(pane, data)

        return on_output

    def _on_output(self, pane: FleetPane, data: bytes) -> None:
        with pane.lock:
            if pane.mode != LIVE:
                return
            pane.chunks.append(data)
            pane.pending += len(data)
            if pane.pending > self.max_pending:
                pane.dropped_bytes += pane.pending
                pane.chunks = []
                pane.pending = 0
                pane.mode = NEEDS_SEED
                pane.next_seed_at = time.monotonic() + self.reseed_interval
                pane.reseeds += 1
                self.reseeds += 1
        self.mark(pane.info.pane_id)

    # -- the first seed --------------------------------------------------------------------------

    def check_first_seed(self, ready: Iterable[str]) -> None:
        """Every pane of the first discovery seeded, or (unwatched) its session's client ready
        (``ready``: those sessions): `TmuxFleet.wait_seeded` returns."""
        if self.first_seed_done.is_set() or not self.discovered:
            return  # before the first discovery (a remote one takes a connect), nothing is known
        with self.lock:
            sessions = set(ready)
            if all(
                (p.mode == LIVE and p.seed is None) or (p.mode == UNWATCHED and p.session_id in sessions)
                for p in self.panes.values()
            ):
                self.first_seed_done.set()
