"""The fleet's feeder: the ``nbs-fleet-feeder`` thread of a `TmuxFleet`.

It feeds the watched panes' buffered ``%output`` into their `PaneScreen` models, applies seeds,
rations bytes per pane, and calls ``listener.screens_changed`` at most ``max_rate`` times a
second with the panes that changed (an unwatched pane that printed counts as changed).

Rationing: a pane may feed ``feed_rate`` bytes a second into its screen (burst ``feed_burst``);
output beyond that is dropped in nbs-tui (never in tmux) and the pane is re-seeded a little
later (``reseed_interval``): a flooding pane shows a screen at most a fraction of a second old
and costs a bounded share of a core.

Seeding: ``display-message`` (cursor, size, modes) ``;`` ``capture-pane -p -e -N`` ``;``
``capture-pane -a -q`` on one line, on the client that carries the pane's output. Output before
the reply is inside the capture; output after the reply follows it, so the seed has no gap and
no duplicate. The reply takes effect on the reader thread (`Feeder.seed_replied`), in order
with ``%output``; the feeder paints it (at most ``seeds_per_pass`` a pass: painting a seed costs
a few ms, and live output goes first).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.tmux.commands import Answer, Answered, TmuxServerCommands
from nbs_tui.tmux.control import ControlClient
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.fleet_clients import Episode, Report
from nbs_tui.tmux.fleet_panes import LIVE, NEEDS_SEED, SEEDING, UNWATCHED, FleetPane, PaneTable
from nbs_tui.tmux.port import FleetListener

log = logging.getLogger(__name__)

SEED_FORMAT = ",".join(
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

SEED_LOST = 10.0
"""Seconds after which a seed asked for and never answered (its client died) is asked again."""


class Feeder:
    """The feeder thread's work (module docstring)."""

    def __init__(
        self,
        table: PaneTable,
        commands: TmuxServerCommands,
        *,
        streaming_client: Callable[[str], ControlClient | None],
        ready_sessions: Callable[[], Iterable[str]],
        listener: FleetListener | None,
        report: Report,
        rescan: threading.Event,
        stop: threading.Event,
        max_rate: float,
        feed_rate: int,
        feed_burst: int,
        reseed_interval: float,
        seeds_per_pass: int,
    ) -> None:
        self.table = table
        self.commands = commands
        """The server's command path: the seeds are sent through it (`TmuxServerCommands.send_many`)."""
        self.streaming_client = streaming_client
        """The ready client that carries a session's ``%output`` (seeds go on it)."""
        self.ready_sessions = ready_sessions
        self.listener = listener
        self.feeding_failing = Episode(report)
        self.listener_failing = Episode(report)
        self.rescan = rescan
        self.stop = stop
        self.max_rate = max_rate
        self.feed_rate = feed_rate
        self.feed_burst = feed_burst
        self.reseed_interval = reseed_interval
        self.seeds_per_pass = seeds_per_pass
        self._last_scan = 0.0

    def run(self) -> None:
        """The thread: feed, then tell the listener, until the fleet stops."""
        table = self.table
        changed: set[PaneId] = set()
        last_emit = 0.0
        period = 1.0 / self.max_rate if self.max_rate > 0 else 0.0
        while not self.stop.is_set():
            timeout = 0.25
            if changed:
                timeout = max(0.0, last_emit + period - time.monotonic())
            table.wake.wait(timeout)
            table.wake.clear()
            if self.stop.is_set():
                break
            now = time.monotonic()
            try:
                changed |= self.feed_all(now)
            except Exception as error:  # the next pass tries again; the operator hears of it once
                log.exception("feeding screens failed")
                self.feeding_failing.failed(f"feeding screens failed: {error!r}")
            else:
                self.feeding_failing.ok()
            if changed and now - last_emit >= period:
                batch = frozenset(changed)
                changed.clear()
                last_emit = now
                if self.listener is not None:
                    try:
                        self.listener.screens_changed(batch)
                    except Exception as error:
                        log.exception("listener.screens_changed failed")
                        self.listener_failing.failed(f"showing changed screens failed: {error!r}")
                    else:
                        self.listener_failing.ok()
            if not table.first_seed_done.is_set():
                table.check_first_seed(self.ready_sessions())

    def feed_all(self, now: float) -> set[PaneId]:
        table = self.table
        panes = table.panes
        changed: set[PaneId] = set()
        need_seed = False
        dirty = table.dirty
        ids: set[PaneId] = set()
        while dirty:
            ids.add(dirty.popleft())
        if table.seeds_due:
            table.seeds_due = False
            need_seed = True
        if now - self._last_scan >= 0.1:
            # Also look at every pane now and then: seeds due, and nothing left behind.
            self._last_scan = now
            for pane_id, each in list(panes.items()):
                if each.mode == NEEDS_SEED:
                    need_seed = True
                if each.chunks or each.seed is not None or each.marked:
                    ids.add(pane_id)
        # Live output first, then at most `seeds_per_pass` seeds (painting a seed costs a few
        # ms): a burst of seeds (start-up, reconnect) does not hold up the other panes. A pane
        # whose seed waits is skipped whole, so its later output still follows its seed.
        ordered = sorted(ids, key=lambda i: panes[i].seed is not None if i in panes else False)
        seeds_left = self.seeds_per_pass
        for pane_id in ordered:
            found = panes.get(pane_id)
            if found is None:
                continue
            if found.mode == UNWATCHED or found.screen is None:
                # Unwatched: nothing to parse; its output (or the switch) is news all the same.
                found.marked = False
                changed.add(pane_id)
                continue
            if not found.chunks and found.seed is None:
                continue
            if found.seed is not None:
                if seeds_left <= 0:
                    dirty.append(pane_id)
                    table.wake.set()
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
                        if pane.mode == LIVE:
                            pane.mode = NEEDS_SEED
                            pane.chunks = []
                            pane.pending = 0
                            pane.next_seed_at = now + self.reseed_interval
                    pane.reseeds += 1
                    table.reseeds += 1
                    need_seed = True
                    continue
                pane.tokens -= size
                pane.fed += size
                screen.feed(b"".join(chunks))
                changed.add(pane_id)
        if need_seed:
            self.request_due_seeds(now)
        return changed

    # -- seeds ---------------------------------------------------------------------------------

    def request_due_seeds(self, now: float) -> None:
        with self.table.lock:
            for pane in self.table.panes.values():
                if pane.mode == NEEDS_SEED and now >= pane.next_seed_at:
                    self._request_seed(pane, now)
                elif pane.mode == SEEDING and now - pane.seed_sent_at > SEED_LOST:
                    pane.mode = NEEDS_SEED  # lost reply (client died): try again

    def _request_seed(self, pane: FleetPane, now: float) -> None:
        sid = pane.session_id
        client = self.streaming_client(sid)
        if client is None:
            return  # not attached yet (following the watch: its session's viewer)
        pid = pane.info.pane_id
        box: dict[str, Answer] = {}
        generation = pane.generation

        def got(name: str) -> Answered:
            def cb(reply: Answer) -> None:
                box[name] = reply
                if name == "alt":
                    self.seed_replied(pane, box, generation)

            return cb

        with pane.lock:
            pane.mode = SEEDING
            pane.seed_sent_at = now
            pane.chunks = []
            pane.pending = 0
        try:
            self.commands.send_many(
                client,
                [
                    (("display-message", "-p", "-t", pid, SEED_FORMAT), got("info")),
                    (("capture-pane", "-p", "-e", "-N", "-t", pid), got("screen")),
                    (("capture-pane", "-p", "-e", "-N", "-a", "-q", "-t", pid), got("alt")),
                ],
                one_line=True,
            )
        except TmuxError:
            with pane.lock:
                pane.mode = NEEDS_SEED

    def seed_replied(self, pane: FleetPane, box: dict[str, Answer], generation: int) -> None:
        """Runs on the reader thread, in order with %output: the seed takes effect here."""
        info, screen, alt = box.get("info"), box.get("screen"), box.get("alt")
        with pane.lock:
            if generation != pane.generation:
                return  # stale: the pane was invalidated after this seed was asked for
            if not (info and screen and alt and info.ok and screen.ok and alt.ok and info.lines):
                pane.mode = NEEDS_SEED
                pane.next_seed_at = time.monotonic() + 1.0
                self.rescan.set()
                return
            numbers = [int(x) if x.strip().isdigit() else -1 for x in info.lines[0].split(b",")]
            main = b"\n".join(alt.lines) if alt.lines else None
            pane.seed = (b"\n".join(screen.lines), numbers, main)
            pane.chunks = []
            pane.pending = 0
            pane.mode = LIVE
        self.table.mark(pane.info.pane_id)
