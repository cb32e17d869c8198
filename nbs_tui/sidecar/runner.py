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

``on_event`` is called on that thread with frozen `SidecarEvent` values; it must not block
(the app forwards them with ``post_message``; headless prints them).

The runner is one class joined from one module per concern, each a class over `RunnerState`
(`nbs_tui.sidecar.state`: the shared attributes, the snapshot, a pane's context, events):
`operator_queue` (the operator's controls, and the locks that keep the UI from ever waiting on
tmux), `live` (re-reading a pane and pressing its keys), `actions` (carrying out a sidecar's
actions), `limits` (usage limits and resuming), `stuck` (nudges, escalations, ended agents) and
`lease_sync` (switches, requests, in-flight marks, relay and meters through the lease). This
module owns the thread, the tick and what the UI reads. `SidecarEvent` and `SidecarSnapshot`
are `nbs_tui.sidecar.events`'s, importable from here too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from nbs_tui.claude.monitor import AgentMonitor, FactsSource
from nbs_tui.config import Settings
from nbs_tui.core.detection.detect import detect_lines
from nbs_tui.core.detection.usage_limits import ResumePlanner
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.core.screen.screen_rows import CapturedScreen, screen_lines_and_faint
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.core.sidecar.pane_sidecar import PaneSidecar, SidecarConfig, SidecarStatus
from nbs_tui.core.sidecar.stuck_agents import StuckStatus
from nbs_tui.operator.action_log import ActionLog
from nbs_tui.sidecar.actions import ActionCarrier
from nbs_tui.sidecar.events import EMPTY_SNAPSHOT, SidecarEvent, SidecarSnapshot, event_kinds
from nbs_tui.sidecar.limits import resume_config, zone
from nbs_tui.sidecar.operator_queue import FORCE_POLL_WAIT, OperatorQueue, _Request
from nbs_tui.sidecar.state import OPERATOR_QUIET, ControlPort, _Tracked
from nbs_tui.sidecar.stuck import StuckWatch
from nbs_tui.tmux.port import FleetPort

if TYPE_CHECKING:
    from nbs_tui.sidecar.lease import SidecarLease

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


class SidecarRunner(ActionCarrier, StuckWatch, OperatorQueue):
    """The sidecar for every pane: see the module docstring for threads and callbacks."""

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
        self.on_event = on_event
        self.control = control
        self.interval = interval
        self.clock = clock
        self.wall = wall
        self.config = sidecar_config or config_from_settings(settings)
        self.monitor = AgentMonitor(signals, settings)
        """Fusion with Claude Code's signals and the stuck watch (nudge, escalate, ended)."""
        self.limits = ResumePlanner(resume_config(settings), zone)
        """The fleet's usage limits and who is resumed when (`nbs_tui.core.detection.usage_limits`)."""
        self.action_log = ActionLog(settings.action_log)
        self.ticks = 0
        self.detections = 0
        """How many screens were run through detection (for benchmarks)."""
        self._tracked: dict[PaneId, _Tracked] = {}
        self._pending: dict[PaneId, dict[str, Any]] = {}
        self._tick_lock = threading.Lock()
        """Held by a tick (tmux calls included) or by a caller carrying out requests; only ever
        waited for by `tick` itself (see `nbs_tui.sidecar.operator_queue`)."""
        self._requests_lock = threading.Lock()
        self._requests: list[_Request] = []
        self._snapshot = EMPTY_SNAPSHOT
        self._encoded: dict[PaneId, tuple[Meters | None, str]] = {}
        """The holder's meters per pane as last encoded (re-encoded only when they change)."""
        self._relayed_meters: dict[PaneId, Meters | None] = {}
        """The meters read from tmux per pane as last told (a ``meters`` event on change)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="nbs-sidecar", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
            if self.lease is not None and self.lease.acting():
                self._withdraw_inflight()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Real clocks, not the injected ones: the wait is real, and the phase is tmux's.
            started, wall = time.monotonic(), time.time()
            try:
                self.tick()
            except Exception as error:  # one bad tick must not end the sidecar for every pane
                log.exception("sidecar tick failed")
                self._emit("error", "", f"sidecar tick failed: {error}")
            self._stop.wait(max(0.0, next_tick(started, wall, self.interval) - time.monotonic()))

    def set_signals(self, signals: FactsSource | None) -> None:
        """Use Claude Code's signals (`ClaudeSignals`) from now on (e.g. started after the runner).
        One reference swap: the next observation uses them."""
        self.monitor.signals = signals

    # -- what the UI reads (any thread, no lock) -----------------------------------------------

    @property
    def snapshot(self) -> SidecarSnapshot:
        return self._snapshot

    def status(self, pane_id: PaneId) -> SidecarStatus | None:
        return self._snapshot.statuses.get(pane_id)

    def statuses(self) -> dict[PaneId, SidecarStatus]:
        return dict(self._snapshot.statuses)

    def stuck(self, pane_id: PaneId) -> StuckStatus | None:
        """Where the pane's agent is in the stuck cycle (None: not watched)."""
        return self._snapshot.stuck.get(pane_id)

    def escalated(self) -> dict[PaneId, str]:
        """Panes whose stuck agent was escalated and has not worked since, with a short reason
        (``stuck (1 nudge)``); the app's "needs you" queue reads it (`NeedsYouQueue.sync`)."""
        return dict(self._snapshot.escalated)

    # -- the tick ------------------------------------------------------------------------------

    def tick(self) -> None:
        """One pass over every agent pane (the thread calls it each second; tests may too), then
        the operator's requests, then a new snapshot."""
        with self._tick_lock:
            try:
                self._carry_out_requests()
                self._tick()
                self._carry_out_requests()
            finally:
                self._publish()
        with self._requests_lock:
            late = bool(self._requests)
        if late:  # asked for while the snapshot was being taken: do not leave it for a second
            self._try_carry_out()

    def _tick(self) -> None:
        self.ticks += 1
        now = self.clock()
        wall_now = self.wall()
        if self.lease is not None:
            self._sync_lease()
        every = {p.pane_id: p for p in self.fleet.panes()}
        panes = {pane_id: p for pane_id, p in every.items() if p.is_agent and not p.dead}
        for pane_id in list(self._tracked):
            info = panes.get(pane_id)
            if info is None or info.pid != self._tracked[pane_id].pid:
                gone = self._tracked.pop(pane_id)
                old = gone.sidecar
                kept = {
                    "set_poll_enabled": old.poll_enabled_override,
                    "set_plan_policy": old.plan_policy_override,
                    "set_poll_interval": old.poll_interval_override,
                }
                kept = {k: v for k, v in kept.items() if v is not None}
                if kept:  # the operator's switches outlive an agent restart in the same pane
                    self._pending[pane_id] = kept
                self._emit("state", pane_id, "pane gone or no longer an agent", state="gone")
                self._report_end(gone, every.get(pane_id))
                self.monitor.forget(pane_id)
                self.limits.forget(pane_id)
        prefetch = getattr(self.fleet, "prefetch", None)
        if prefetch is not None:  # the due captures of every pane in one round trip, not one each
            # The fleet reads a pane that keeps printing only every few seconds (CAPTURE_MAX_AGE),
            # which is right only for one already seen working (its spinner). A pane last seen
            # still is read on the tick it changes: a turn shorter than the max age is then seen
            # starting (idle -> working -> idle is a "finished"), and a handshake sees what it typed.
            eager = {
                p for p, t in self._tracked.items()
                if p in panes and (t.sidecar.injecting or t.sidecar.detection.state is not AgentState.WORKING)
            }  # fmt: skip
            prefetch(panes, eager=eager)
        self._tick_panes(panes, now, wall_now)
        self._resume_limited(panes, now, wall_now)
        if self.lease is not None and self.lease.acting():
            self._publish_options()

    def _tick_panes(self, panes: Mapping[PaneId, PaneInfo], now: float, wall_now: float) -> None:
        for pane_id, info in panes.items():
            tracked = self._tracked.get(pane_id)
            if tracked is None:
                tracked = _Tracked(PaneSidecar(pane_id, self.config), info.pid)
                self._tracked[pane_id] = tracked
                for name, value in self._pending.pop(pane_id, {}).items():
                    getattr(tracked.sidecar, name)(value)
            tracked.info = info
            self._tick_pane(tracked, info, now, wall_now)

    def _tick_pane(self, tracked: _Tracked, info: PaneInfo, now: float, wall_now: float) -> None:
        screen: PaneScreen | CapturedScreen | None = self.fleet.screen(info.pane_id)
        if screen is not None and not self.fleet.first_seeded(info.pane_id):
            # Just watched (the operator selected it): a blank model until its seed lands, not
            # the pane's screen. What was read before stands; read as blank, a waiting menu
            # left the needs-you queue and A found no card (test_limited_tmux, under load).
            screen = tracked.screen
        if screen is None:
            screen = self.fleet.captured(info.pane_id)  # unwatched: read from tmux when it changed
            if screen is None:
                return
        sidecar = tracked.sidecar
        lines = None
        detection = None
        if screen is not tracked.screen or screen.version != tracked.version:
            tracked.screen, tracked.version = screen, screen.version
            if isinstance(screen, CapturedScreen):
                lines, faint = list(screen.lines), list(screen.faint_rows)
            else:
                lines, faint = screen_lines_and_faint(screen, tracked.rows)
            detection = detect_lines(lines, faint_rows=faint)
            self.detections += 1
        if self.control is not None:
            try:
                sidecar.project_poll_interval = self.control.poll_interval_for_pane(info.pane_id)
            except Exception:  # the control plane is optional help, never a reason to stop
                log.exception("control plane poll interval lookup failed")
        context = self._context(tracked, now)
        actions = sidecar.tick(now, lines, context, detection=detection)
        for action in actions:
            self._carry_out(tracked, info, action, now)
        current = sidecar.detection
        limit = current.limit if current.state is AgentState.LIMITED else None
        for event in self.limits.observe(info.pane_id, limit, wall_now):
            self._limit_event(info, event, acting=False)
        reset_at = self.limits.reset_at(info.pane_id)
        sidecar.limit_reset_at = None if reset_at is None else now + (reset_at - wall_now)
        if sidecar.detection.state is not tracked.shown_state:
            tracked.shown_state, tracked.state_wall = sidecar.detection.state, wall_now
        key = (sidecar.detection.state, sidecar.injecting, context.paused, sidecar.poll_enabled)
        if key != tracked.last_key:
            tracked.last_key = key
            self._emit_status(info.pane_id, "")
        self._watch_stuck(tracked, info, now, wall_now, context)
