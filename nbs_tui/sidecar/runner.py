"""Run a `PaneSidecar` for every agent pane of a fleet, on one thread, once a second.

Threading: `SidecarRunner.start` starts one daemon thread, ``nbs-sidecar``, that ticks every
agent pane each second. Per tick it reads only screens whose `PaneScreen.version` moved (the
pure sidecar counts stable time itself); a pane the fleet keeps no live model of (nobody
watches it) is read through ``fleet.captured``, an in-band capture taken only when the pane
printed since the last one and has gone quiet, or every 3 s while it keeps printing (ticks run
`TICK_PHASE` past a wall-clock second, so a pane that stopped is seen quiet on the next one).
It runs detection on those, and carries out the actions the sidecars return through the fleet
(``send_text``/``send_keys``, guarded by the lease when there is one: one path either way),
each after re-reading the live screen with ``fleet.capture_text`` and checking that the pane is
still the same agent.

``on_event`` is called on that thread with frozen `SidecarEvent` values; it must not block
(the app forwards them with ``post_message``; headless prints them).

Locks, and why the UI never waits on tmux: a tick holds ``_tick_lock`` for its whole pass,
tmux calls included (a ``capture-pane`` may take up to tmux's 5 s timeout). Nothing else
ever *waits* for that lock. Readers (`snapshot`, `status`, `statuses`, `stuck`, `escalated`)
read the immutable `SidecarSnapshot` the runner publishes after each tick and after each
operator change: one attribute read, no lock. The operator's controls (`set_poll_enabled`,
`set_plan_policy`, `set_poll_interval`, `set_global`, `note_operator_input`, `force_poll`)
are typed requests put on a queue under ``_requests_lock`` (held for an append, never across
a tmux call); the caller then *tries* the tick lock without blocking and, when no tick is
running, carries the requests out itself (so a toggle shows at once); otherwise the tick
carries them out when it ends. ``force_poll`` needs a reply: it waits on a `Future` for at
most ``FORCE_POLL_WAIT`` seconds, so call it from a worker thread, never from the UI thread.

Usage limits (`nbs_tui.core.limits`): each tick feeds every agent's limit, if any, to one
fleet-wide `ResumePlanner`; no poll and no nudge reach a ``limited`` agent (its detection is not
safe to type into). With ``limit_resume`` on, once a reset has passed (plus a margin) the
planner names one agent per ``limit_resume_stagger`` seconds (a 2.1.1xx limit menu is first
answered "Stop and wait for limit to reset", by label, once); the runner re-checks its live
screen and types the resume message through the poll's handshake (purpose ``resume``). Only a
runner that acts (the lease holder) resumes; every step is an event and a line of the action
log. Where Claude Code says it continues by itself, nothing is sent.

Stuck agents (oj's design, `nbs_tui.core.stuck`): each tick also feeds the pane's detection,
the time its screen last changed and Claude Code's own facts (``signals``: `ClaudeSignals`, or
None for the screen alone) to an `AgentMonitor`. A ``Nudge`` is re-checked on the live screen
and typed through the same handshake as ``/nbs-poll`` (`PaneSidecar.request_text`: text whole,
Enter apart, confirmed, never over the operator's typing, never paused or under context
pressure); a nudge that is not delivered is not counted. ``Escalate`` and ``Ended`` become
``escalate`` and ``agent-ended`` events; a pane that stops being an agent or disappears is
reported ``agent-ended`` too (once per agent).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, tzinfo
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from nbs_tui.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.claude.monitor import AgentMonitor, FactsSource
from nbs_tui.config import Settings
from nbs_tui.core.detect import (
    FLAG_CONTEXT_PRESSURE,
    CapturedScreen,
    RowCache,
    detect_lines,
    detection_as_json,
    screen_lines_and_faint,
)
from nbs_tui.core.lease import inflight_erase_count
from nbs_tui.core.limits import LimitEvent, ResumeConfig, ResumePlanner, is_wait_option
from nbs_tui.core.meters import Meters
from nbs_tui.core.meters_relay import encode_meters
from nbs_tui.core.model import AgentState, Detection, PaneId, PaneInfo
from nbs_tui.core.screen import PaneScreen
from nbs_tui.core.sidecar import (
    Action,
    InjectPoll,
    Notice,
    PaneSidecar,
    ReportCommand,
    SelectPlanOption,
    SidecarConfig,
    SidecarContext,
    SidecarStatus,
    StateChanged,
    SubmitPoll,
)
from nbs_tui.core.stuck import Ended, Escalate, Nudge, Phase, StuckAction, StuckStatus
from nbs_tui.sidecar.pane_options import PublishedState
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.port import FleetPort, PaneGone, TmuxUnavailable

if TYPE_CHECKING:
    from nbs_tui.sidecar.lease import SidecarLease

log = logging.getLogger(__name__)

OPERATOR_QUIET = 5.0
"""Seconds after the operator's last keystroke in a pane before the sidecar may type there."""

LIMIT_MENU_SETTLE = 1.0
"""A usage-limit menu must be on screen this long (two ticks) before its wait option is pressed."""

TICK_PHASE = 0.3
"""Ticks run this long past a wall-clock second (interval 1 s). A no-output fleet knows a pane's
last output only to the second (tmux's ``window_activity``) and reads a changed pane once it is
quiet (`nbs_tui.tmux.fleet.CAPTURE_QUIET`): at this phase a pane that stopped printing is seen
quiet on the first tick after its second ends, 0.3-1.3 s after it stopped, not up to 2.2 s."""

FORCE_POLL_WAIT = 6.0
"""Longest a `SidecarRunner.force_poll` caller waits for a busy tick (a tmux call times out
after 5 s)."""


def next_tick(started: float, wall: float, interval: float) -> float:
    """When the tick after one that began at ``started`` (the runner's clock; ``wall`` the
    wall-clock time then) is due: the first moment `TICK_PHASE` past a wall-clock interval that
    is at least half an interval after ``started`` (in the past when a long tick went beyond it:
    the next tick then starts at once)."""
    half = started + interval / 2
    return half + (TICK_PHASE - (wall + interval / 2)) % interval


class ControlPort(Protocol):
    """What the runner needs from the control plane (`nbs_tui.files.control_plane.ControlPlane`)."""

    def apply_scanned_command(
        self, pane_id: str, project_dir: str, line: str, handle: str | None = None
    ) -> None: ...

    def poll_interval_for_pane(self, pane_id: str) -> float | None: ...


@dataclass(frozen=True, slots=True)
class SidecarEvent:
    """Something the sidecar saw or did in one pane.

    ``kind``: ``state`` (detected state changed), ``poll`` (injection steps: typed, submitted,
    failed, refused), ``plan-select`` (pressed, landed, failed, waiting), ``command`` (a
    ``\\nbs-`` line seen), ``nudge`` (a stuck agent's nudge: queued, typed, enter, submitted,
    failed, refused), ``escalate`` (a stuck agent needs a person), ``agent-ended`` (its process
    exited or its pane is gone), ``status`` (settings or countdown changed; not printed
    headless), ``error`` (a tmux call failed).
    """

    kind: str
    pane_id: PaneId
    at: float
    """Wall-clock time (``time.time()``)."""
    message: str = ""
    status: SidecarStatus | None = None
    data: tuple[tuple[str, Any], ...] = ()

    @property
    def relayed_by(self) -> str:
        """Who acted when this is the lease holder's action relayed to a view (``HOST pid PID``);
        "" for this process's own."""
        return str(dict(self.data).get("by", ""))

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.kind, "pane": self.pane_id, "time": round(self.at, 3)}
        out.update(self.data)
        if self.message:
            out["message"] = self.message
        return out


@dataclass(frozen=True, slots=True)
class SidecarSnapshot:
    """What the runner knew at the end of its last tick or operator change; immutable, so any
    thread reads it without a lock."""

    statuses: Mapping[PaneId, SidecarStatus]
    stuck: Mapping[PaneId, StuckStatus]
    """Each watched pane's place in the stuck cycle."""
    escalated: Mapping[PaneId, str]
    """Panes whose stuck agent was escalated and has not worked since, with a short reason."""
    ticks: int = 0


EMPTY_SNAPSHOT = SidecarSnapshot(MappingProxyType({}), MappingProxyType({}), MappingProxyType({}))


# -- the operator's requests: typed, frozen, carried out by whoever holds the tick lock ----------


@dataclass(frozen=True, slots=True)
class _Override:
    """A per-pane setting (``method`` of `PaneSidecar`), kept for a pane not seen yet."""

    pane_id: PaneId
    method: str
    value: Any
    message: str


@dataclass(frozen=True, slots=True)
class _SetGlobal:
    poll_enabled: bool | None
    plan_policy: str | None


@dataclass(frozen=True, slots=True)
class _OperatorInput:
    pane_id: PaneId
    at: float
    """The runner clock's time of the keystroke (taken by the caller, not when carried out)."""


@dataclass(frozen=True, slots=True)
class _ForcePoll:
    pane_id: PaneId
    reply: Future[tuple[bool, str]]


_Request = _Override | _SetGlobal | _OperatorInput | _ForcePoll


@dataclass(slots=True)
class _Tracked:
    sidecar: PaneSidecar
    pid: int
    screen: PaneScreen | CapturedScreen | None = None
    """The mirror (or capture) last read, held (an ``id`` could be reused by a replacement)."""
    version: int = -1
    last_state: AgentState | None = None
    operator_at: float = float("-inf")
    info: PaneInfo | None = None
    last_key: tuple[Any, ...] = field(default_factory=tuple)
    rows: RowCache = field(default_factory=RowCache)
    ended: bool = False
    """``agent-ended`` was reported for this agent (it is reported once)."""
    shown_state: AgentState | None = None
    state_wall: float = 0.0
    """Wall time the detected state last changed (published as ``@nbs_since``)."""
    limit_menu: tuple[object, ...] | None = None
    """The usage-limit menu (options, prompt) whose "wait" option was pressed: once per menu."""
    paused_file: tuple[int, bool] = (-1, False)
    """(tick, whether the project's pause file was there): shown statuses reuse the tick's
    look instead of another stat a pane; decisions always look again."""


def zone(name: str | None) -> tzinfo:
    """The zone a limit's reset is written in: the one the screen names, else this machine's."""
    if name:
        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            log.info("unknown time zone %r on a usage-limit screen: using the local zone", name)
    local = datetime.now().astimezone().tzinfo
    return local if local is not None else UTC


def resume_config(settings: Settings) -> ResumeConfig:
    return ResumeConfig(
        enabled=settings.limit_resume,
        message=settings.limit_resume_message,
        margin=settings.limit_resume_margin,
        stagger=settings.limit_resume_stagger,
    )


def config_from_settings(settings: Settings) -> SidecarConfig:
    return SidecarConfig(
        poll_interval=settings.poll_interval,
        poll_enabled=not settings.poll_disabled,
        plan_policy=settings.plan_policy,
        plan_fallback=settings.plan_fallback,
        poll_command=settings.poll_command,
    )


class SidecarRunner:
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
        """The fleet's usage limits and who is resumed when (`nbs_tui.core.limits`)."""
        self.action_log = ActionLog(settings.action_log)
        self.ticks = 0
        self.detections = 0
        """How many screens were run through detection (for benchmarks)."""
        self._tracked: dict[PaneId, _Tracked] = {}
        self._pending: dict[PaneId, dict[str, Any]] = {}
        self._tick_lock = threading.Lock()
        """Held by a tick (tmux calls included) or by a caller carrying out requests; only ever
        waited for by `tick` itself (see the module docstring)."""
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

    def _withdraw_inflight(self) -> None:
        """A clean stop in the middle of a handshake: erase what this holder typed and did not
        submit (the in-flight rule, applied to its own marks), so no one has to recover it."""
        lease = self.lease
        if lease is None or not lease.sync() or not self._tick_lock.acquire(timeout=5.0):
            return
        try:
            for pane_id, switches in lease.panes.items():
                mark = switches.inflight
                tracked = self._tracked.get(pane_id)
                if mark is None or mark.token != lease.token or tracked is None or tracked.info is None:
                    continue
                try:
                    box = self._live(tracked.info).input_text
                except (PaneGone, TmuxUnavailable):
                    continue
                if box is None:
                    continue  # no box on screen: the next holder looks again
                count = len(box) if box and mark.text.startswith(box) else 0
                lease.switches.erase_inflight(lease.token, pane_id, count)
        except Exception:  # stopping: a mark left over is the next holder's to recover
            log.exception("in-flight polls not withdrawn at stop")
        finally:
            self._tick_lock.release()

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

    # -- operator controls (any thread; none waits on tmux) ----------------------------------

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool | None) -> None:
        """The operator's per-pane poll switch (None: follow the global setting)."""
        word = "default" if enabled is None else "on" if enabled else "off"
        if self.lease is not None:  # every view (and the holder) reads it from tmux
            self.lease.set_switch(pane_id, "poll", enabled)
        self._request(_Override(pane_id, "set_poll_enabled", enabled, f"poll injection {word}"))

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None:
        self.set_plan_policy(pane_id, "no-prompts" if enabled else "off")

    def set_plan_policy(self, pane_id: PaneId, policy: str | None) -> None:
        if policy not in (None, "no-prompts", "off"):
            raise ValueError(f"plan policy must be 'no-prompts' or 'off', not {policy!r}")
        if self.lease is not None:
            self.lease.set_switch(pane_id, "plan", None if policy is None else policy != "off")
        self._request(
            _Override(pane_id, "set_plan_policy", policy, f"plan auto-select {policy or 'default'}")
        )

    def set_poll_interval(self, pane_id: PaneId, seconds: float | None) -> None:
        """``set-poll-interval`` for one pane (None: back to the project's or global interval)."""
        if seconds is not None and seconds <= 0:
            raise ValueError(f"poll interval must be positive, not {seconds}")
        said = "default" if seconds is None else f"{seconds:g}s"
        self._request(_Override(pane_id, "set_poll_interval", seconds, f"poll interval {said}"))

    def set_global(
        self, *, poll_enabled: bool | None = None, plan_policy: str | None = None
    ) -> None:
        """Change the defaults every pane follows unless it has its own override."""
        self._request(_SetGlobal(poll_enabled, plan_policy))

    def force_poll(self, pane_id: PaneId, timeout: float = FORCE_POLL_WAIT) -> tuple[bool, str]:
        """Inject the poll command at the next tick if typing there is safe (the interval is
        skipped, the safety checks are not). Waits up to ``timeout`` for a busy tick: call it
        from a worker thread. A viewer's request goes through tmux to the process that holds the
        lease, and its answer comes back the same way (about a tick)."""
        if self.lease is not None and not self.lease.acting():
            return self.lease.request_poll(pane_id, timeout)  # the holder is another process
        reply: Future[tuple[bool, str]] = Future()
        self._request(_ForcePoll(pane_id, reply))
        try:
            return reply.result(timeout)
        except FutureTimeout:
            if reply.cancel():  # not carried out, and now never will be
                return False, f"the sidecar is busy (a tmux call has taken over {timeout:g}s)"
            return reply.result()

    def set_signals(self, signals: FactsSource | None) -> None:
        """Use Claude Code's signals (`ClaudeSignals`) from now on (e.g. started after the runner).
        One reference swap: the next observation uses them."""
        self.monitor.signals = signals

    def note_operator_input(self, pane_id: PaneId) -> None:
        """The operator typed into the pane: the sidecar keeps its hands off for a few seconds."""
        self._request(_OperatorInput(pane_id, self.clock()))

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

    # -- carrying out requests -----------------------------------------------------------------

    def _request(self, request: _Request) -> None:
        with self._requests_lock:
            self._requests.append(request)
        self._try_carry_out()

    def _try_carry_out(self) -> None:
        """Carry out queued requests now unless a tick holds the lock (it will, when it ends)."""
        if not self._tick_lock.acquire(blocking=False):
            return
        try:
            changed = self._carry_out_requests()
            if changed:
                self._publish(changed)
        finally:
            self._tick_lock.release()

    def _carry_out_requests(self) -> set[PaneId]:
        """With the tick lock held: apply every queued request; the panes whose status changed."""
        with self._requests_lock:
            requests, self._requests = self._requests, []
        changed: set[PaneId] = set()
        for request in requests:
            if isinstance(request, _Override):
                tracked = self._tracked.get(request.pane_id)
                if tracked is None:  # applied when the pane is first seen as an agent
                    self._pending.setdefault(request.pane_id, {})[request.method] = request.value
                else:
                    getattr(tracked.sidecar, request.method)(request.value)
                    changed.add(request.pane_id)
                self._emit_status(request.pane_id, request.message)
            elif isinstance(request, _SetGlobal):
                changes: dict[str, Any] = {}
                if request.poll_enabled is not None:
                    changes["poll_enabled"] = request.poll_enabled
                if request.plan_policy is not None:
                    changes["plan_policy"] = request.plan_policy
                self.config = replace(self.config, **changes)
                for tracked in self._tracked.values():
                    tracked.sidecar.config = self.config
                changed.update(self._tracked)
            elif isinstance(request, _OperatorInput):
                tracked = self._tracked.get(request.pane_id)
                if tracked is not None:
                    tracked.operator_at = max(tracked.operator_at, request.at)
            elif request.reply.set_running_or_notify_cancel():  # _ForcePoll, unless given up
                tracked = self._tracked.get(request.pane_id)
                if tracked is None:
                    request.reply.set_result((False, "not an agent pane the sidecar watches"))
                else:
                    request.reply.set_result(tracked.sidecar.request_poll())
        return changed

    def _publish(self, panes: set[PaneId] | None = None) -> None:
        """With the tick lock held: publish a new snapshot (``panes``: only their statuses moved)."""
        now = self.clock()
        old = self._snapshot
        if panes is None:
            statuses = {p: self._status_now(t, now) for p, t in self._tracked.items()}
            stuck: dict[PaneId, StuckStatus] = {}
            escalated: dict[PaneId, str] = {}
            for pane_id, verdict in self.monitor.verdicts().items():
                stuck[pane_id] = verdict.stuck
                if verdict.stuck.phase is Phase.ESCALATED:
                    n = verdict.stuck.nudges
                    escalated[pane_id] = f"stuck ({n} nudge{'' if n == 1 else 's'})" if n else "stuck"
            self._snapshot = SidecarSnapshot(
                MappingProxyType(statuses),
                MappingProxyType(stuck),
                MappingProxyType(escalated),
                self.ticks,
            )
            return
        statuses = dict(old.statuses)
        for pane_id in panes:
            tracked = self._tracked.get(pane_id)
            if tracked is not None:
                statuses[pane_id] = self._status_now(tracked, now)
        self._snapshot = replace(old, statuses=MappingProxyType(statuses))

    def _status_now(self, tracked: _Tracked, now: float) -> SidecarStatus:
        return tracked.sidecar.status(now, self._context(tracked, now, for_show=True))

    # -- the tick ------------------------------------------------------------------------------

    def _paused(self, info: PaneInfo | None) -> bool:
        if info is None or not info.current_path:
            return False
        return os.path.exists(os.path.join(info.current_path, ".nbs", "control-pause"))

    def _context(self, tracked: _Tracked, now: float, for_show: bool = False) -> SidecarContext:
        """What the pane's sidecar may do now; ``for_show`` (a status to publish, never to act
        on): the pause file as seen in this tick, if it was looked at."""
        lease = self.lease
        tick, paused = tracked.paused_file
        if not for_show or tick != self.ticks:
            paused = self._paused(tracked.info)
            tracked.paused_file = (self.ticks, paused)
        return SidecarContext(
            paused=paused or (lease is not None and lease.paused),
            operator_typing=now - tracked.operator_at < OPERATOR_QUIET,
            viewer=lease is not None and not lease.acting(),
        )

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

    # -- usage limits --------------------------------------------------------------------------

    def _resume_limited(self, panes: Mapping[PaneId, PaneInfo], now: float, wall_now: float) -> None:
        """After the pass: resume the one limited agent whose turn has come (see the docstring)."""
        acting = self.lease is None or self.lease.acting()
        planned = self.limits.next_resume(wall_now)
        for pane_id, tracked in self._tracked.items():
            at = planned.get(pane_id)
            tracked.sidecar.resume_at = None if at is None else now + (at - wall_now)
        if not acting or not self.limits.limited():
            return
        if self.limits.config.enabled:
            for pane_id in self.limits.limited():
                info = panes.get(pane_id)
                menu_pane = self._tracked.get(pane_id)
                if info is not None and menu_pane is not None:
                    self._choose_wait(menu_pane, info, now)
        ready = []
        for pane_id in self.limits.limited():
            limited = self._tracked.get(pane_id)
            if limited is None:
                continue
            d = limited.sidecar.detection
            context = self._context(limited, now)
            if (
                d.input_text == ""
                and not limited.sidecar.injecting
                and not context.paused
                and not context.operator_typing
            ):
                ready.append(pane_id)
        chosen, events = self.limits.due(wall_now, ready)
        for event in events:
            info = panes.get(event.pane_id)
            if info is not None:
                self._limit_event(info, event, acting=True)
        if chosen is None:
            return
        target = self._tracked.get(chosen)
        info = panes.get(chosen)
        if target is None or info is None:
            self.limits.failed(chosen)
            return
        text = self.limits.config.message
        try:
            live = self._live(info)
            why = self._refusal(live, InjectPoll(text, 1, "resume"))
            if why is None:
                ok, message = target.sidecar.request_resume(text)
                why = None if ok else message
        except (PaneGone, TmuxUnavailable) as error:
            why = str(error)
        if why is not None:
            self.limits.failed(chosen)
            self._resume_step(info, "refused", why, text)
            return
        self._resume_step(info, "queued", "reset passed: resume queued", text)

    def _choose_wait(self, tracked: _Tracked, info: PaneInfo, now: float) -> None:
        """2.1.1xx asks "What do you want to do?" at the limit: with resume on, answer "Stop and
        wait for limit to reset" (by label, once per menu, after a live re-check) so the agent's
        box is free for the resume after the reset. The other options cost money: never those."""
        sidecar = tracked.sidecar
        d = sidecar.detection
        context = self._context(tracked, now)
        if d.state is not AgentState.LIMITED or not d.options or context.paused or context.operator_typing:
            return
        wait = next((o for o in d.options if is_wait_option(o.label)), None)
        changed = sidecar.last_change
        menu = (tuple(o.label for o in d.options), d.prompt)
        if wait is None or tracked.limit_menu == menu or changed is None or now - changed < LIMIT_MENU_SETTLE:
            return
        tracked.limit_menu = menu
        text = f"{wait.number}. {wait.label}"
        try:
            live = self._live(info)
            if live.state is not AgentState.LIMITED or tuple(o.label for o in live.options) != menu[0]:
                why: str | None = f"the usage-limit menu changed ({live.state.value}: {live.reason})"
            elif not self._press(info.pane_id, str(wait.number)):
                why = "not sent: this process no longer holds the sidecar lease"
            else:
                why = None
        except (PaneGone, TmuxUnavailable) as error:
            why = str(error)
        if why is not None:
            self._resume_step(info, "refused", f"limit menu: {why}", text)
            return
        self._resume_step(info, "wait-chosen", f"limit menu answered: {text}", text)

    def _limit_event(self, info: PaneInfo, event: LimitEvent, *, acting: bool) -> None:
        """A step of the limit watch: ``limit`` events for every view; the holder's decisions
        (held, due) are ``resume`` events and action-log lines too."""
        if not acting:
            self._emit("limit", info.pane_id, event.message, result=event.kind, reset_at=event.reset_at)
            return
        if event.kind == "held":
            self._resume_step(info, "held", event.message, self.limits.config.message)

    def _resume_step(
        self, info: PaneInfo, result: str, message: str, text: str, *, emit: bool = True
    ) -> None:
        if emit:
            self._emit("resume", info.pane_id, message, result=result, text=text)
        outcome = {
            "submitted": Outcome.SENT,
            "failed": Outcome.FAILED,
        }.get(result, Outcome.SKIPPED if result in ("held", "refused") else None)
        if outcome is None and result not in ("queued", "typed", "enter", "wait-chosen"):
            return
        try:
            self.action_log.append(
                ActionRecord(
                    time=self.wall(),
                    action=f"resume {result}",
                    pane_id=info.pane_id,
                    target=info.target,
                    sent=text if result not in ("held",) else "",
                    why="usage limit reset" if result != "held" else "usage limit",
                    outcome=outcome or Outcome.SENT,
                    reason=message,
                )
            )
        except OSError as error:  # the event above still tells the operator
            self._emit("error", info.pane_id, f"action log: {error}")

    # -- stuck agents --------------------------------------------------------------------------

    def _watch_stuck(
        self, tracked: _Tracked, info: PaneInfo, now: float, wall_now: float, context: SidecarContext
    ) -> None:
        sidecar = tracked.sidecar
        changed = sidecar.last_change
        if changed is None:
            return
        detection = sidecar.detection
        safe = (
            detection.safe_to_inject
            and FLAG_CONTEXT_PRESSURE not in detection.flags
            and not sidecar.injecting
            and not context.paused
            and not context.operator_typing
            and not context.viewer
        )
        try:
            _, actions = self.monitor.observe(
                info.pane_id,
                detection,
                wall_now - (now - changed),
                wall_now,
                safe_to_nudge=safe,
                busy=sidecar.injecting,
            )
        except Exception as error:  # the stuck watch is help, never a reason to stop the tick
            log.exception("stuck watch failed")
            self._emit("error", info.pane_id, f"stuck watch: {error}")
            return
        for action in actions:
            self._carry_out_stuck(tracked, info, action, now)
        verdict = self.monitor.verdict(info.pane_id)
        if verdict is not None and verdict.stuck.phase is not Phase.ENDED:
            tracked.ended = False  # running again: a later exit is news again

    def _carry_out_stuck(self, tracked: _Tracked, info: PaneInfo, action: StuckAction, now: float) -> None:
        pane_id = info.pane_id
        if isinstance(action, Escalate):
            self._emit("escalate", pane_id, action.why, reason="stuck")
            return
        if isinstance(action, Ended):
            if not tracked.ended:
                tracked.ended = True
                self._emit("agent-ended", pane_id, action.why, liveness=action.liveness.value)
            return
        if isinstance(action, Nudge):
            self._nudge(tracked, info, action, now)

    def _nudge(self, tracked: _Tracked, info: PaneInfo, action: Nudge, now: float) -> None:
        """Queue the nudge on the pane's typing handshake after a look at the live screen."""
        pane_id = info.pane_id
        try:
            live = self._live(info)
            why = self._refusal(live, InjectPoll(action.text, action.attempt, "nudge"))
            if why is None and self._context(tracked, now).paused:
                why = "project is paused (.nbs/control-pause)"
            if why is None:
                ok, message = tracked.sidecar.request_text(action.text, "nudge")
                why = None if ok else message
        except (PaneGone, TmuxUnavailable) as error:
            why = str(error)
        if why is not None:
            self.monitor.nudge_failed(pane_id)
            self._emit("nudge", pane_id, why, result="refused", text=action.text, nudge=action.attempt)
            return
        self._emit(
            "nudge",
            pane_id,
            f"stuck: nudge {action.attempt} of {self.settings.stuck_max_nudges} queued",
            result="queued",
            text=action.text,
            nudge=action.attempt,
        )

    def _report_end(self, tracked: _Tracked, current: PaneInfo | None) -> None:
        """The agent in a pane the runner watched is no longer there: say why, once."""
        if tracked.ended:
            return
        tracked.ended = True
        pane_id = tracked.sidecar.pane_id
        if current is None:
            liveness, why = "gone", "its tmux pane is gone"
        elif current.dead:
            liveness, why = "exited", "the pane's process exited"
        elif current.pid != tracked.pid:
            liveness, why = "exited", f"the pane's process was replaced (pid {tracked.pid} -> {current.pid})"
        else:
            liveness, why = "exited", "Claude Code no longer runs in the pane"
        self._emit("agent-ended", pane_id, why, liveness=liveness)

    # -- actions -------------------------------------------------------------------------------

    def _live(self, info: PaneInfo) -> Detection:
        """The pane's screen straight from tmux, with faint rows taken from the mirror."""
        current = {p.pane_id: p for p in self.fleet.panes()}.get(info.pane_id)
        if current is None or current.pid != info.pid or not current.is_agent or current.dead:
            raise PaneGone(f"{info.pane_id} is no longer the same agent pane")
        text = self.fleet.capture_text(info.pane_id)
        lines = text.split("\n")
        faint: list[int] = []
        screen = self.fleet.screen(info.pane_id)
        if screen is not None:
            mirror, mirror_faint = screen_lines_and_faint(screen)
        else:
            seen = self.fleet.captured(info.pane_id)  # unwatched: the faint rows of its capture
            mirror, mirror_faint = (list(seen.lines), list(seen.faint_rows)) if seen else ([], [])
        faint = [y for y in mirror_faint if y < len(lines) and lines[y].rstrip() == mirror[y]]
        return detect_lines(lines, faint_rows=faint)

    def _carry_out(self, tracked: _Tracked, info: PaneInfo, action: Action, now: float) -> None:
        pane_id = info.pane_id
        sidecar = tracked.sidecar
        if isinstance(action, StateChanged):
            d = action.detection
            self._emit("state", pane_id, d.reason, **detection_as_json(d))
            return
        if isinstance(action, ReportCommand):
            project = info.current_path
            self._emit("command", pane_id, "", line=action.line, project=project)
            if self.lease is not None and not self.lease.acting():
                return  # the holder carries it out
            if self.control is not None:
                try:
                    self.control.apply_scanned_command(pane_id, project, action.line)
                except Exception as error:
                    self._emit("error", pane_id, f"control plane refused {action.line!r}: {error}")
            elif action.line.startswith("\\nbs-set-poll-interval "):
                try:
                    sidecar.set_poll_interval(float(action.line.split()[1]))
                except ValueError as error:
                    self._emit("error", pane_id, f"bad interval in {action.line!r}: {error}")
            return
        if isinstance(action, Notice):
            if action.kind.startswith("plan"):
                kind = "plan-select"
            elif action.kind.startswith("nudge"):
                kind = "nudge"
            elif action.kind.startswith("resume"):
                kind = "resume"
            else:
                kind = "poll"
            result = {
                "poll": "submitted",
                "poll-failed": "failed",
                "nudge": "submitted",
                "nudge-failed": "failed",
                "resume": "submitted",
                "resume-failed": "failed",
                "plan-select": "landed",
                "plan-failed": "failed",
                "plan-waiting": "waiting",
            }.get(action.kind, action.kind)
            if action.kind == "nudge-failed":
                self.monitor.nudge_failed(pane_id)
            if action.kind == "resume-failed":
                self.limits.failed(pane_id)
            if action.kind in ("poll", "poll-failed", "nudge", "nudge-failed", "resume", "resume-failed"):
                self._clear_inflight(pane_id)  # the handshake is over either way
            if kind == "resume":
                self._resume_step(info, result, action.message, self.limits.config.message)
                return
            self._emit(kind, pane_id, action.message, result=result)
            return
        try:
            live = self._live(info)
            why = self._refusal(live, action)
            if why is not None:
                self._refused(sidecar, action, now, why)
                self._emit(self._kind(action), pane_id, why, result="refused")
                return
            if isinstance(action, InjectPoll):
                if not self.fleet.send_text(pane_id, action.text, guard=self._guard(pane_id, action.text)):
                    self._lease_refused(sidecar, action, now, pane_id)
                    return
                self._emit(
                    action.purpose,
                    pane_id,
                    self._said(action, "typed"),
                    result="typed",
                    text=action.text,
                    attempt=action.attempt,
                )
                if action.purpose == "resume":
                    self._resume_step(info, "typed", self._said(action, "typed"), action.text, emit=False)
            elif isinstance(action, SubmitPoll):
                if not self._press(pane_id, "Enter"):
                    self._lease_refused(sidecar, action, now, pane_id)
                    return
                self._emit(
                    action.purpose,
                    pane_id,
                    self._said(action, "Enter pressed after"),
                    result="enter",
                    text=action.text,
                    attempt=action.attempt,
                )
                if action.purpose == "resume":
                    self._resume_step(info, "enter", self._said(action, "Enter pressed after"), action.text, emit=False)
            elif isinstance(action, SelectPlanOption):
                if not self._press(pane_id, str(action.number)):
                    self._lease_refused(sidecar, action, now, pane_id)
                    return
                self._emit(
                    "plan-select",
                    pane_id,
                    "",
                    result="pressed",
                    number=action.number,
                    label=action.label,
                )
        except (PaneGone, TmuxUnavailable) as error:
            self._refused(sidecar, action, now, str(error))
            self._emit("error", pane_id, f"{self._kind(action)}: {error}")
        except Exception as error:
            log.exception("sidecar action failed")
            self._refused(sidecar, action, now, str(error))
            self._emit("error", pane_id, f"{self._kind(action)}: {error}")

    def _refused(
        self, sidecar: PaneSidecar, action: Action, now: float, why: str, clear: bool = True
    ) -> None:
        sidecar.action_refused(now, action, why)
        if clear and isinstance(action, InjectPoll | SubmitPoll):
            self._clear_inflight(sidecar.pane_id)
        if isinstance(action, InjectPoll | SubmitPoll) and action.purpose == "nudge":
            self.monitor.nudge_failed(sidecar.pane_id)  # not delivered: it does not count
        if isinstance(action, InjectPoll | SubmitPoll) and action.purpose == "resume":
            self.limits.failed(sidecar.pane_id)

    # -- the lease: switches and requests from tmux, in-flight marks, published state ----------

    def _sync_lease(self) -> None:
        """With the tick lock held: take the views' switches from tmux; as the holder, also
        answer poll requests and recover polls a dead holder typed but never submitted."""
        lease = self.lease
        if lease is None or not lease.sync():
            return
        self._relayed(lease)
        self._relay_meters(lease)
        for pane_id, switches in lease.panes.items():
            tracked = self._tracked.get(pane_id)
            if tracked is None:
                continue
            sidecar = tracked.sidecar
            if not lease.pending(pane_id, "poll") and switches.poll != sidecar.poll_enabled_override:
                sidecar.set_poll_enabled(switches.poll)
            plan = None if switches.plan is None else "no-prompts" if switches.plan else "off"
            if not lease.pending(pane_id, "plan") and plan != sidecar.plan_policy_override:
                sidecar.set_plan_policy(plan)
        if not lease.acting():
            return
        for pane_id, request in lease.new_requests():
            tracked = self._tracked.get(pane_id)
            ok, why = (
                tracked.sidecar.request_poll()
                if tracked is not None
                else (False, "not an agent pane the sidecar watches")
            )
            lease.answer(pane_id, request, ok, why)
        for pane_id, switches in lease.panes.items():
            mark = switches.inflight
            tracked = self._tracked.get(pane_id)
            if mark is None or mark.token == lease.token or tracked is None or tracked.info is None:
                continue
            try:
                box = self._live(tracked.info).input_text
            except (PaneGone, TmuxUnavailable):
                continue
            count = inflight_erase_count(mark, lease.token, box)
            if count is None:
                continue
            if lease.switches.erase_inflight(lease.token, pane_id, count) and count:
                self._emit(
                    "poll",
                    pane_id,
                    f"erased {box!r}, typed by a sidecar that stopped before submitting it",
                    result="recovered",
                    text=mark.text,
                )

    def _relayed(self, lease: SidecarLease) -> None:
        """The holder's actions (another process) become this runner's events, marked ``by``."""
        for pane_id, news in lease.take_relayed().items():
            if news.missed:
                n = news.missed
                self._emit("relay", pane_id, f"{n} action{'s' if n > 1 else ''} of the sidecar not seen")
            for action in news.actions:
                data = (*action.data, ("by", action.by))
                self._deliver(SidecarEvent(action.kind, pane_id, action.at, action.message, None, data))

    def _relay_meters(self, lease: SidecarLease) -> None:
        """The holder's meters of each agent (read from tmux, any host) become ``meters`` events
        when they change; the dashboard shows them for panes it reads no transcript of."""
        seen = self._relayed_meters
        for pane_id in [p for p in seen if p not in lease.panes]:
            del seen[pane_id]
        for pane_id, switches in lease.panes.items():
            if switches.meters != seen.get(pane_id):
                seen[pane_id] = switches.meters
                self._deliver(SidecarEvent("meters", pane_id, self.wall(), "", None, (("meters", switches.meters),)))

    def _meters_option(self, pane_id: PaneId) -> str:
        """The pane's meters from Claude Code's transcript, encoded for `PublishedState`."""
        signals = self.monitor.signals
        facts = signals.facts(pane_id) if signals is not None else None
        meters = facts.meters if facts is not None else None
        last = self._encoded.get(pane_id)
        if last is None or last[0] is not meters:
            last = self._encoded[pane_id] = (meters, encode_meters(meters))
        return last[1]

    def _press(self, pane_id: PaneId, key: str) -> bool:
        """Press a key for the sidecar (False: not pressed, the lease is someone else's)."""
        return self.fleet.send_keys(pane_id, key, guard=self._guard(pane_id))

    def _guard(self, pane_id: PaneId, typing: str | None = None) -> Guard | None:
        """What the sidecar's keys go through: with a lease, only while tmux still has our
        token, and typed text marked in flight in the same step; without one, nothing."""
        return self.lease.guard(pane_id, typing) if self.lease is not None else None

    def _lease_refused(self, sidecar: PaneSidecar, action: Action, now: float, pane_id: PaneId) -> None:
        why = "not sent: this process no longer holds the sidecar lease"
        self._refused(sidecar, action, now, why, clear=False)  # the mark is the next holder's
        self._emit(self._kind(action), pane_id, why, result="refused")

    def _clear_inflight(self, pane_id: PaneId) -> None:
        if self.lease is None:
            return
        try:
            self.lease.switches.clear_inflight(pane_id)
        except Exception as error:  # a mark left over is recovered by the next holder
            log.info("in-flight mark of %s not cleared: %s", pane_id, error)

    def _publish_options(self) -> None:
        lease = self.lease
        if lease is None:
            return
        escalated = {
            pane_id for pane_id, verdict in self.monitor.verdicts().items()
            if verdict.stuck.phase is Phase.ESCALATED
        }
        states: dict[PaneId, PublishedState] = {}
        for pane_id, tracked in self._tracked.items():
            state = tracked.sidecar.detection.state
            if pane_id in escalated:
                needs = "stuck"
            elif state.needs_person or state is AgentState.PLAN:
                needs = state.value
            else:
                needs = ""
            states[pane_id] = PublishedState(
                state.value, needs, int(tracked.state_wall), self._meters_option(pane_id)
            )
        for pane_id in [p for p in self._encoded if p not in states]:
            del self._encoded[pane_id]
        lease.publish(states)

    @staticmethod
    def _said(action: InjectPoll | SubmitPoll, what: str) -> str:
        """The history line of a typing step (poll steps have none: the app words them)."""
        return "" if action.purpose == "poll" else f"{what} {action.text!r}"

    @staticmethod
    def _kind(action: Action) -> str:
        if isinstance(action, InjectPoll | SubmitPoll):
            return action.purpose
        return "plan-select" if isinstance(action, SelectPlanOption) else "poll"

    @staticmethod
    def _refusal(live: Detection, action: Action) -> str | None:
        """Why the live screen forbids ``action`` now (None: go ahead)."""
        if isinstance(action, InjectPoll) and action.purpose == "resume":
            if live.state is not AgentState.LIMITED:
                return f"live screen is no longer limited ({live.state.value}: {live.reason})"
            if live.limit is not None and live.limit.auto_resume:
                return "Claude Code continues by itself (live screen)"
            if live.input_text != "":
                return f"the live input box is not free ({live.input_text!r})"
            return None
        if isinstance(action, InjectPoll):
            if not live.safe_to_inject or live.state is not AgentState.IDLE:
                return (
                    f"live screen is not an empty idle prompt ({live.state.value}: {live.reason})"
                )
            if FLAG_CONTEXT_PRESSURE in live.flags:
                return "context pressure on the live screen"
            return None
        if isinstance(action, SubmitPoll):
            if live.input_text != action.text:
                return f"the input box holds {live.input_text!r}, not {action.text!r}"
            if live.state not in (AgentState.IDLE, AgentState.WORKING, AgentState.LIMITED):
                return f"a {live.state.value} screen is showing"
            return None
        if isinstance(action, SelectPlanOption):
            if live.state is not AgentState.PLAN:
                return f"the plan menu is gone ({live.state.value})"
            if action.options and tuple(o.label for o in live.options) != tuple(
                o.label for o in action.options
            ):
                return "the plan menu changed"
            return None
        return None

    # -- events --------------------------------------------------------------------------------

    def _emit(self, kind: str, pane_id: PaneId, message: str = "", **data: Any) -> None:
        event = SidecarEvent(kind, pane_id, self.wall(), message, None, tuple(data.items()))
        if self.lease is not None:
            self.lease.record(event)  # relayed to every view (docs/lease.md)
        self._deliver(event)

    def _emit_status(self, pane_id: PaneId, message: str) -> None:
        tracked = self._tracked.get(pane_id)
        if tracked is None:
            return
        now = self.clock()
        status = tracked.sidecar.status(now, self._context(tracked, now, for_show=True))
        self._deliver(SidecarEvent("status", pane_id, self.wall(), message, status))

    def _deliver(self, event: SidecarEvent) -> None:
        try:
            self.on_event(event)
        except Exception:
            log.exception("sidecar event listener failed")


def event_kinds() -> Mapping[str, str]:
    """The event kinds, for documentation and the headless reader."""
    return {
        "state": "detected state changed (state, options, input, safe_to_inject, plan_choice, flags)",
        "poll": "poll injection step: typed, enter, submitted, failed, refused",
        "plan-select": "plan menu: pressed, landed, failed, waiting",
        "command": "a \\nbs- line seen on screen (line, project)",
        "nudge": "a stuck agent's nudge: queued, refused (nudge: its number), typed, enter (attempt), submitted, failed",
        "limit": "a usage limit seen or gone (result: limited, cleared; reset_at: unix seconds or null)",
        "resume": "resuming a limited agent after its reset: wait-chosen (2.1.1xx's limit menu), held (why), queued, refused, typed, enter, submitted, failed",
        "escalate": "a stuck agent needs a person: idle past the grace period after its nudges (reason)",
        "agent-ended": "the agent's process exited or its tmux pane is gone (liveness: exited, gone)",
        "status": "per-pane status changed (not printed by --headless)",
        "error": "a tmux call or the control plane failed",
        "meters": "an agent's meters as the sidecar lease holder published them (meters: nbs_tui.core.meters.Meters or null; not printed by --headless)",
        "relay": "actions of the sidecar lease holder were missed between two reads (poll, plan-select, nudge and escalate events of another process carry its by)",
    }
