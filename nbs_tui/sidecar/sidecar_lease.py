"""The sidecar runner's link to the lease and to what views write into tmux (docs/lease.md).

`SidecarLease` bundles the `LeaseHeartbeat` (its own thread), the switches and requests every
view writes as tmux options (`SidecarSwitches`) and the holder's published pane state
(`PaneOptionsPublisher`). The runner calls `sync` at the start of each tick (one tmux command)
and `publish` at its end; it asks `acting()` before anything it would type.

Writes a view makes from the UI (a switch, the pause, the mute) go through one worker thread, so the UI
never waits on tmux; until tmux has them, `pending` says so and the tick keeps the local value
rather than the one it read. `request_poll` blocks (bounded): call it from a worker thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.notifications.notify_rules import NotifyKind
from nbs_tui.core.sidecar.lease_rules import (
    Lease,
    LeaseValue,
    PaneSwitches,
    answered,
)
from nbs_tui.core.sidecar.relay import (
    RelayedAction,
    RelayNews,
    RelayReader,
    append_action,
    read_all,
)
from nbs_tui.sidecar.events import RELAYED_EVENTS, SidecarEvent
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat, fence
from nbs_tui.sidecar.pane_options import (
    PaneOptionsPublisher,
    PublishedState,
    SidecarSwitches,
    typing_guard,
)
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.port import TmuxCommandError, TmuxUnavailable

log = logging.getLogger(__name__)

REQUEST_WAIT = 5.0
"""Longest a view waits for the holder to answer a poll request."""


class SidecarLease:
    def __init__(
        self,
        commands: TmuxServerCommands,
        heartbeat: LeaseHeartbeat,
        on_problem: Callable[[str], None] | None = None,
    ) -> None:
        self.commands = commands
        self.heartbeat = heartbeat
        self.switches = SidecarSwitches(commands)
        self.publisher = PaneOptionsPublisher(commands)
        self.on_problem = on_problem
        self.paused = False
        self.muted: frozenset[NotifyKind] = frozenset()
        """Notification kinds muted server-wide from a dashboard (``@nbs_mute``)."""
        self.panes: Mapping[PaneId, PaneSwitches] = {}
        self._fresh = threading.Event()
        """Set when this process has just acquired the lease: clear and recover first."""
        self._answered: set[tuple[PaneId, str]] = set()
        self._pending: dict[tuple[PaneId, str], int] = {}
        self._pending_lock = threading.Lock()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nbs-lease-write")
        self._read_failed = False
        self.by = f"{heartbeat.host} pid {heartbeat.pid}"
        """This process as its relayed actions name it."""
        self._reader = RelayReader()
        self._news: dict[PaneId, RelayNews] = {}
        self._lifecycle_reader = RelayReader()
        """The server's lifecycle ring (stop, restart by any process), read as one "pane"."""
        self._lifecycle_news: list[RelayedAction] = []
        self._outbox: dict[PaneId, list[SidecarEvent]] = {}
        self._outbox_lock = threading.Lock()
        self._written: dict[PaneId, tuple[RelayedAction, ...]] = {}
        """What this holder last wrote per pane: numbering goes on from it when the tick's read
        failed (a stale ring would number an action twice)."""
        previous = heartbeat.on_acquired

        def acquired(lease: Lease) -> None:
            self._fresh.set()
            if previous is not None:
                previous(lease)

        heartbeat.on_acquired = acquired
        lost = heartbeat.on_lost

        def on_lost(why: str) -> None:
            self.publisher.forget()  # the next holder clears what we set
            self._written = {}  # and numbers after what it reads
            if lost is not None:
                lost(why)

        heartbeat.on_lost = on_lost

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def token(self) -> str:
        return self.heartbeat.token

    def start(self) -> None:
        self.heartbeat.start()

    def stop(self) -> None:
        """A clean stop: unset what this holder published, then release the lease at once."""
        self._writer.shutdown(wait=True)
        if self.heartbeat.holding:
            try:
                self.publisher.clear_mine()
            except (TmuxCommandError, TmuxUnavailable) as error:
                log.info("published pane options not cleared: %s", error)
        self.heartbeat.stop(release=True)

    def acting(self) -> bool:
        return self.heartbeat.may_act()

    def holder(self) -> LeaseValue:
        return self.heartbeat.holder

    def guard(self, pane_id: PaneId, typing: str | None = None) -> Guard:
        """What the runner's keys in ``pane_id`` go through: only while tmux still has this
        process's token; text it types (``typing``) is marked in flight in the same step."""
        return fence(self.token) if typing is None else typing_guard(self.token, pane_id, typing)

    def take_fresh(self) -> bool:
        """True once after each acquisition (the runner then clears stale options)."""
        if self._fresh.is_set():
            self._fresh.clear()
            return True
        return False

    # -- the tick -----------------------------------------------------------------------------

    def sync(self) -> bool:
        """Read the pause, the mute and every pane's switches (one tmux command); False if tmux failed
        (the last values are kept)."""
        try:
            paused, self.panes = self.switches.read()
            if not self.pending("", "pause"):  # a pause just asked for stays until tmux has it
                self.paused = paused
            if not self.pending("", "mute"):
                self.muted = self.switches.muted
            self._read_relayed()
        except (TmuxCommandError, TmuxUnavailable) as error:
            if not self._read_failed:
                self._read_failed = True
                self._problem(f"sidecar switches not read from tmux: {error}")
            return False
        self._read_failed = False
        return True

    def pending(self, pane_id: PaneId, which: str) -> bool:
        with self._pending_lock:
            return self._pending.get((pane_id, which), 0) > 0

    def new_requests(self) -> list[tuple[PaneId, str]]:
        """Poll requests not yet answered and not yet handled by this holder."""
        out = []
        for pane_id, switches in self.panes.items():
            request = switches.poll_request
            fresh = request and not answered(request, switches.poll_answer)
            if fresh and (pane_id, request) not in self._answered:
                out.append((pane_id, request))
        return out

    def answer(self, pane_id: PaneId, request: str, ok: bool, why: str) -> None:
        self._answered.add((pane_id, request))
        try:
            self.switches.answer_poll(pane_id, request, ok, why)
        except (TmuxCommandError, TmuxUnavailable) as error:
            self._problem(f"poll request not answered in tmux: {error}")

    def publish(self, states: Mapping[PaneId, PublishedState]) -> None:
        try:
            if self.take_fresh():
                self.publisher.clear_stale()
            self.publisher.publish(states)
        except (TmuxCommandError, TmuxUnavailable) as error:
            self.publisher.forget()  # resend everything next time
            log.info("pane state not published: %s", error)
        self.flush_actions()

    # -- the holder's actions, relayed to every view (nbs_tui.core.sidecar.relay) ----------------------

    def record(self, event: SidecarEvent) -> None:
        """The runner did or tried something in a pane: relay it if it is an action of the
        holder's (`RELAYED_EVENTS`) and this process acts. Sent at the tick's `publish`."""
        if not isinstance(event, RELAYED_EVENTS) or not event.pane_id or not self.acting():
            return
        with self._outbox_lock:
            self._outbox.setdefault(event.pane_id, []).append(event)

    def flush_actions(self) -> None:
        """Append the recorded actions to their panes' rings in tmux (one command line for all,
        numbered after what the tick read there). Kept for the next tick if tmux failed."""
        with self._outbox_lock:
            outbox, self._outbox = self._outbox, {}
        if not outbox:
            return
        rings: dict[PaneId, Sequence[RelayedAction]] = {}
        for pane_id, events in outbox.items():
            known = self.panes.get(pane_id)
            ring: tuple[RelayedAction, ...] = known.actions if known is not None else ()
            mine = self._written.get(pane_id, ())
            if mine and (not ring or mine[-1].seq > ring[-1].seq):
                ring = mine
            for event in events:
                ring = append_action(ring, event.at, event.KIND, self.by, event.message, event.details())
            rings[pane_id] = ring
        try:
            self.switches.write_actions(rings)
        except (TmuxCommandError, TmuxUnavailable) as error:
            log.info("sidecar actions not relayed: %s", error)
            with self._outbox_lock:
                for pane_id, events in outbox.items():
                    self._outbox[pane_id] = events[-8:] + self._outbox.get(pane_id, [])
            return
        for pane_id, written in rings.items():
            self._reader.mark(pane_id, written[-1].seq)
            self._written[pane_id] = tuple(written)

    def _read_relayed(self) -> None:
        """With fresh `panes`: note what other holders did since the last read."""
        rings = {pane_id: switches.actions for pane_id, switches in self.panes.items()}
        for pane_id in [p for p in self._written if p not in rings]:
            del self._written[pane_id]  # the pane is gone
        news = read_all(self._reader, rings)
        for pane_id, item in news.items():  # what this process wrote itself is marked seen
            old = self._news.get(pane_id, RelayNews())
            self._news[pane_id] = RelayNews(old.actions + item.actions, old.missed + item.missed)
        lifecycle = self._lifecycle_reader.read("", self.switches.lifecycle)
        self._lifecycle_news.extend(a for a in lifecycle.actions if a.by != self.by)  # ours: said already

    def take_lifecycle(self) -> list[RelayedAction]:
        """Stops and restarts by another process (a CLI run, another dashboard) since the last
        call, oldest first (`nbs_tui.core.sidecar.relay.LIFECYCLE_OPTION`)."""
        news, self._lifecycle_news = self._lifecycle_news, []
        return news

    def take_relayed(self) -> dict[PaneId, RelayNews]:
        """Actions of another process (the holder) seen since the last call, per pane."""
        news, self._news = self._news, {}
        return news

    # -- what any view asks (from the UI thread: never waits on tmux) -------------------------

    def set_switch(self, pane_id: PaneId, which: str, enabled: bool | None) -> None:
        self._write_soon((pane_id, which), lambda: self.switches.set_switch(pane_id, which, enabled), f"{which} switch")

    def set_paused(self, paused: bool) -> None:
        """The server-wide pause (``@nbs_pause``): every holder on any host honours it."""
        self.paused = paused
        self._write_soon(("", "pause"), lambda: self.switches.set_paused(paused), "sidecar pause")

    def set_muted(self, kinds: frozenset[NotifyKind]) -> None:
        """The server-wide mute (``@nbs_mute``): every dashboard of the server and the holder's
        pushes honour it."""
        self.muted = kinds
        self._write_soon(("", "mute"), lambda: self.switches.set_muted(kinds), "notification mute")

    def _write_soon(self, key: tuple[PaneId, str], write: Callable[[], None], what: str) -> None:
        """``write`` to tmux on the worker thread; until it is done, `pending` tells the tick to
        keep this view's value rather than the one it reads (a failure is a problem, ``what``)."""
        with self._pending_lock:
            self._pending[key] = self._pending.get(key, 0) + 1

        def run() -> None:
            try:
                write()
            except (TmuxCommandError, TmuxUnavailable) as error:
                self._problem(f"{what} not written to tmux: {error}")
            finally:
                with self._pending_lock:
                    self._pending[key] -= 1

        self._submit(run)

    def request_poll(self, pane_id: PaneId, timeout: float = REQUEST_WAIT) -> tuple[bool, str]:
        """Ask the holder (possibly this process) for a poll now and wait for its answer."""
        try:
            request = self.switches.request_poll(pane_id)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                time.sleep(0.2)  # the holder answers at its next tick (1 s)
                _, panes = self.switches.read()
                answer = panes.get(pane_id, PaneSwitches()).poll_answer
                if answered(request, answer):
                    verdict, _, why = answer.partition(" ")[2].partition(" ")
                    return verdict == "ok", why or ("poll requested" if verdict == "ok" else "refused")
        except (TmuxCommandError, TmuxUnavailable) as error:
            return False, f"tmux: {error}"
        holder = self.holder()
        who = "no sidecar holds the lease" if holder is None else f"{holder.describe()} did not answer"
        return False, f"poll request not answered within {timeout:g} s ({who})"

    def _submit(self, write: Callable[[], None]) -> None:
        try:
            self._writer.submit(write)
        except RuntimeError:  # shut down: the process is stopping
            log.info("tmux write dropped while stopping")

    def _problem(self, message: str) -> None:
        if self.on_problem is not None:
            self.on_problem(message)  # which logs it
        else:
            log.warning("%s", message)
