"""Run a `PaneSidecar` for every agent pane of a fleet, on one thread, once a second.

Threading: `SidecarRunner.start` starts one daemon thread, ``nbs-sidecar``, that ticks every
agent pane each second. Per tick it reads only screens whose `PaneScreen.version` moved (the
pure sidecar counts stable time itself); a pane the fleet keeps no live model of (nobody
watches it) is read through ``fleet.captured``, an in-band capture taken only when the pane
printed since the last one and has gone quiet, or every 3 s while it keeps printing (ticks run
`TICK_PHASE` past a wall-clock second, so a pane that stopped is seen quiet on the next one).
It runs detection on those, and carries out the actions the sidecars return through the fleet
(``send_text``/``send_keys``), each after re-reading the live screen with ``fleet.capture_text``
and checking that the pane is still the same agent.

``on_event`` is called on that thread with frozen `SidecarEvent` values (one class per thing
reported: `nbs_tui.sidecar.events`); it must not block
(the app forwards them with ``post_message``; headless prints them).

The runner is built from parts, each an object given what it needs, as the fleet is
(`nbs_tui.tmux.fleet`): `WatchedPanes` (the panes, their context, the snapshot) and
`EventOutlet` (`nbs_tui.sidecar.watched_panes`), `LivePane` (re-reading a pane and pressing its keys),
`ActionCarrier` (carrying out a sidecar's actions), `LimitWatch` (usage limits and resuming),
`AgentWatch` (nudges, escalations, ended agents), `LeaseSync` (switches, requests, in-flight
marks, relay and meters through the lease), `SendDesk` (a caller's text typed once:
`SidecarRunner.deliver_text`), `OperatorQueue` (the operator's controls, and the
locks that keep the UI from ever waiting on tmux) and `SidecarTick` (one pass over every pane:
the walk of a ``/nbs-poll`` is told there). This module owns the thread and what the UI reads
and asks. `SidecarEvent` and `SidecarSnapshot` are `nbs_tui.sidecar.events`'s, importable from
here too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING

from nbs_tui.claude.monitor import AgentMonitor, FactsSource
from nbs_tui.config import Settings
from nbs_tui.core.detection.usage_limits import ResumePlanner
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.delivery_rules import Delivery, clean_text
from nbs_tui.core.sidecar.pane_sidecar import SidecarConfig, SidecarStatus
from nbs_tui.core.sidecar.stuck_agents import StuckStatus
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.operator.action_log import ActionLog
from nbs_tui.sidecar.action_carrier import ActionCarrier
from nbs_tui.sidecar.agent_watch import AgentWatch
from nbs_tui.sidecar.budget_watch import BudgetWatch
from nbs_tui.sidecar.events import (
    EMPTY_SNAPSHOT,
    SidecarError,
    SidecarEvent,
    SidecarSnapshot,
    event_kinds,
)
from nbs_tui.sidecar.lease_sync import LeaseSync
from nbs_tui.sidecar.limit_watch import LimitWatch, resume_config, zone
from nbs_tui.sidecar.live_pane import LivePane
from nbs_tui.sidecar.operator_queue import FORCE_POLL_WAIT, OperatorQueue
from nbs_tui.sidecar.queue_feeder import Deliver, QueueFeeder, StartAgent
from nbs_tui.sidecar.send_desk import SendDesk
from nbs_tui.sidecar.sidecar_tick import SidecarTick
from nbs_tui.sidecar.watched_panes import OPERATOR_QUIET, ControlPort, EventOutlet, WatchedPanes
from nbs_tui.tmux.port import FleetPort

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

__all__ = [
    "EMPTY_SNAPSHOT",
    "FORCE_POLL_WAIT",
    "OPERATOR_QUIET",
    "TICK_PHASE",
    "ControlPort",
    "SidecarEvent",
    "SidecarRunner",
    "SidecarSnapshot",
    "config_from_settings",
    "event_kinds",
    "next_tick",
]

log = logging.getLogger(__name__)

TICK_PHASE = 0.3
"""Ticks run this long past a wall-clock second (interval 1 s). A no-output fleet knows a pane's
last output only to the second (tmux's ``window_activity``) and reads a changed pane once it is
quiet (`nbs_tui.tmux.fleet.CAPTURE_QUIET`): at this phase a pane that stopped printing is seen
quiet on the first tick after its second ends, 0.3-1.3 s after it stopped, not up to 2.2 s."""

def next_tick(started: float, wall: float, interval: float) -> float:
    """When the tick after one that began at ``started`` (the runner's clock; ``wall`` the
    wall-clock time then) is due: the first moment `TICK_PHASE` past a wall-clock interval that
    is at least half an interval after ``started`` (in the past when a long tick went beyond it:
    the next tick then starts at once)."""
    half = started + interval / 2
    return half + (TICK_PHASE - (wall + interval / 2)) % interval


def config_from_settings(settings: Settings) -> SidecarConfig:
    return SidecarConfig(
        poll_interval=settings.poll_interval,
        poll_enabled=not settings.poll_disabled,
        plan_policy=settings.plan_policy,
        plan_fallback=settings.plan_fallback,
        poll_command=settings.poll_command,
    )


class SidecarRunner:
    """The sidecar for every pane: see the module docstring for threads, callbacks and parts."""

    def __init__(
        self,
        fleet: FleetPort,
        settings: Settings,
        on_event: Callable[[SidecarEvent], None],
        *,
        control: ControlPort | None = None,
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sidecar_config: SidecarConfig | None = None,
        signals: FactsSource | None = None,
        lease: SidecarLease | None = None,
    ) -> None:
        self.fleet = fleet
        self.lease = lease
        """With a lease (docs/lease.md) this runner acts only while it holds it, reads the views'
        switches and requests from tmux and publishes pane state there; without one it always acts."""
        self.settings = settings
        self.interval = interval
        self.monitor = AgentMonitor(signals, settings)
        """Fusion with Claude Code's signals and the stuck watch (nudge, escalate, ended)."""
        self.limits = ResumePlanner(resume_config(settings), zone)
        """The fleet's usage limits and who is resumed when (`nbs_tui.core.detection.usage_limits`)."""
        self._tick_lock = threading.Lock()
        """Held by a tick (tmux calls included) or by a caller carrying out requests; only ever
        waited for by `tick` itself (see `nbs_tui.sidecar.operator_queue`)."""
        outlet = EventOutlet(on_event, lease, wall)
        self.outlet = outlet
        config = sidecar_config or config_from_settings(settings)
        self.panes = WatchedPanes(config, lease=lease, monitor=self.monitor, outlet=outlet, clock=clock, wall=wall)
        live = LivePane(fleet, lease, self.panes)
        self.desk = SendDesk(self.panes, outlet, lease=lease, clock=clock)
        """Callers' texts under way (`deliver_text`, ``nbs-tui send`` through the lease)."""
        self.lease_sync = (
            None if lease is None
            else LeaseSync(lease, self.panes, live, outlet, self.monitor, self.desk, tick_lock=self._tick_lock, wall=wall)
        )  # fmt: skip
        self.limit_watch = LimitWatch(
            self.limits, self.panes, live, outlet, ActionLog(settings.action_log), lease=lease, wall=wall
        )
        self.budget = BudgetWatch(settings, outlet, ActionLog(settings.action_log), lease=lease, wall=wall)
        """The budget governor (`nbs_tui.sidecar.budget_watch`): acts only while this runner does."""
        self.panes.held = self.budget.held
        self.limit_watch.on_limit = self.budget.limit_seen
        self.panes.budget_needs = self.budget.needs_you
        self.agent_watch = AgentWatch(self.monitor, self.panes, live, outlet, max_nudges=settings.stuck_max_nudges)
        carrier = ActionCarrier(
            live, outlet, self.monitor, self.limit_watch, lease=lease, lease_sync=self.lease_sync, control=control,
            desk=self.desk,
        )
        self.sidecar_tick = SidecarTick(
            fleet, self.panes, carrier, self.agent_watch, self.limit_watch, outlet, self.monitor,
            lease_sync=self.lease_sync, control=control, clock=clock, wall=wall, desk=self.desk, budget=self.budget,
        )  # fmt: skip
        self.operator = OperatorQueue(self.panes, lease=lease, tick_lock=self._tick_lock, clock=clock, desk=self.desk)
        """The operator's controls (`set_poll_enabled`, `force_poll`...: this runner's are its)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.queue: QueueFeeder | None = None
        """The work queue's feeder (`feed_queue`): hands tasks out while this process holds the lease."""

    def feed_queue(
        self,
        store: QueueStore,
        *,
        deliver: Deliver | None,
        start_agent: StartAgent | None,
        limits: Mapping[str, int] | None = None,
    ) -> QueueFeeder:
        """Feed the server's work queue from this runner (docs/queue.md): its thread starts and
        stops with the runner's. ``deliver`` types a task (the sidecar's delivery entry),
        ``start_agent`` starts an agent for one (the lifecycle's, given by the runtime)."""
        self.queue = QueueFeeder(
            store, self.fleet, self.panes, self.monitor, self.outlet, lease=self.lease, deliver=deliver,
            start_agent=start_agent, limits=limits, claude_home=self.settings.claude_home, wall=self.outlet.wall,
        )  # fmt: skip
        if self._thread is not None:
            self.queue.start()
        return self.queue

    @property
    def config(self) -> SidecarConfig:
        """The defaults every pane follows (the operator's global switches change them)."""
        return self.panes.config

    @property
    def ticks(self) -> int:
        return self.panes.ticks

    @property
    def detections(self) -> int:
        """How many screens were run through detection (for benchmarks)."""
        return self.panes.detections

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="nbs-sidecar", daemon=True)
        self._thread.start()
        if self.queue is not None:
            self.queue.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self.queue is not None:
            self.queue.stop(timeout)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
            if self.lease_sync is not None and self.lease_sync.lease.acting():
                self.lease_sync.withdraw_inflight()  # answers the sends under way first
            else:
                with self._tick_lock:
                    self.desk.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Real clocks, not the injected ones: the wait is real, and the phase is tmux's.
            started, wall = time.monotonic(), time.time()
            try:
                self.tick()
            except Exception as error:  # one bad tick must not end the sidecar for every pane
                log.exception("sidecar tick failed")
                self.outlet.emit(SidecarError("", self.outlet.wall(), f"sidecar tick failed: {error}"))
            self._stop.wait(max(0.0, next_tick(started, wall, self.interval) - time.monotonic()))

    def set_signals(self, signals: FactsSource | None) -> None:
        """Use Claude Code's signals (`ClaudeSignals`) from now on (e.g. started after the runner).
        One reference swap: the next observation uses them."""
        self.monitor.signals = signals

    # -- what the UI reads (any thread, no lock) -----------------------------------------------

    @property
    def snapshot(self) -> SidecarSnapshot:
        return self.panes.snapshot

    def status(self, pane_id: PaneId) -> SidecarStatus | None:
        return self.panes.snapshot.statuses.get(pane_id)

    def statuses(self) -> dict[PaneId, SidecarStatus]:
        return dict(self.panes.snapshot.statuses)

    def stuck(self, pane_id: PaneId) -> StuckStatus | None:
        """Where the pane's agent is in the stuck cycle (None: not watched)."""
        return self.panes.snapshot.stuck.get(pane_id)

    def escalated(self) -> dict[PaneId, str]:
        """Panes whose stuck agent was escalated and has not worked since, with a short reason
        (``stuck (1 nudge)``); the app's "needs you" queue reads it (`NeedsYouQueue.sync`)."""
        return dict(self.panes.snapshot.escalated)

    # -- what the UI asks (any thread; none waits on tmux: `OperatorQueue`) ---------------------

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool | None) -> None:
        self.operator.set_poll_enabled(pane_id, enabled)

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None:
        self.operator.set_plan_auto(pane_id, enabled)

    def set_plan_policy(self, pane_id: PaneId, policy: str | None) -> None:
        self.operator.set_plan_policy(pane_id, policy)

    def set_poll_interval(self, pane_id: PaneId, seconds: float | None) -> None:
        self.operator.set_poll_interval(pane_id, seconds)

    def set_global(self, *, poll_enabled: bool | None = None, plan_policy: str | None = None) -> None:
        self.operator.set_global(poll_enabled=poll_enabled, plan_policy=plan_policy)

    def force_poll(self, pane_id: PaneId, timeout: float = FORCE_POLL_WAIT) -> tuple[bool, str]:
        return self.operator.force_poll(pane_id, timeout)

    def note_operator_input(self, pane_id: PaneId) -> None:
        self.operator.note_operator_input(pane_id)

    def deliver_text(self, pane_id: PaneId, text: str, origin: str = "") -> Future[Delivery]:
        """Type ``text`` into the agent pane ``pane_id`` once, whole, and submit it, under the
        sidecar's rules (docs/fleet-api.md): the holder's one entry for a caller's text (the
        work queue's feeder calls it; ``nbs-tui send`` reaches it through tmux). Any thread;
        never waits. ``text`` goes through `nbs_tui.core.sidecar.delivery_rules.clean_text`
        (ValueError: empty, a control character, too long); ``origin`` names the caller in the
        pane's history (``queue task 12``). The future's `Delivery`: submitted, refused with a
        `Refusal` code (nothing typed: not the lease holder, not an agent, working, a menu,
        paused, half-typed input, a poll in flight, the operator typing...) or failed (typed,
        not seen submitted), within a few ticks."""
        return self.operator.deliver_text(pane_id, clean_text(text), origin)

    # -- the tick ------------------------------------------------------------------------------

    def tick(self) -> None:
        """One pass over every agent pane (the thread calls it each second; tests may too), then
        the operator's requests, then a new snapshot."""
        with self._tick_lock:
            try:
                self.operator.carry_out()
                self.sidecar_tick.run()
                self.operator.carry_out()
            finally:
                self.panes.publish()
        if self.operator.waiting:  # asked for while the snapshot was being taken: not left for a second
            self.operator.try_carry_out()
