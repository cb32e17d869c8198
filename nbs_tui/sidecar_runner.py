"""Run a `PaneSidecar` for every agent pane of a fleet, on one thread, once a second.

Threading: `SidecarRunner.start` starts one daemon thread, ``nbs-sidecar``, that ticks every
agent pane each second. Per tick it reads only screens whose `PaneScreen.version` moved (the
pure sidecar counts stable time itself), runs detection on those, and carries out the actions
the sidecars return through the fleet (``send_text``/``send_keys``), each after re-reading the
live screen with ``fleet.capture_text`` and checking that the pane is still the same agent.

``on_event`` is called on that thread with frozen `SidecarEvent` values; it must not block
(the app forwards them with ``post_message``; headless prints them). The operator's controls
(`set_poll_enabled`, `set_plan_auto`, `set_poll_interval`, `force_poll`, ...) may be called
from any thread: they take the runner's lock for a moment.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from nbs_tui.config import Settings
from nbs_tui.core.detect import (
    FLAG_CONTEXT_PRESSURE,
    RowCache,
    detect_lines,
    detection_as_json,
    screen_lines_and_faint,
)
from nbs_tui.core.model import AgentState, Detection, PaneId, PaneInfo
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
from nbs_tui.tmux.port import FleetPort, PaneGone, TmuxUnavailable

log = logging.getLogger(__name__)

OPERATOR_QUIET = 5.0
"""Seconds after the operator's last keystroke in a pane before the sidecar may type there."""


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
    ``\\nbs-`` line seen), ``status`` (settings or countdown changed; not printed headless),
    ``error`` (a tmux call failed).
    """

    kind: str
    pane_id: PaneId
    at: float
    """Wall-clock time (``time.time()``)."""
    message: str = ""
    status: SidecarStatus | None = None
    data: tuple[tuple[str, Any], ...] = ()

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"event": self.kind, "pane": self.pane_id, "time": round(self.at, 3)}
        out.update(self.data)
        if self.message:
            out["message"] = self.message
        return out


@dataclass(slots=True)
class _Tracked:
    sidecar: PaneSidecar
    pid: int
    version: tuple[int, int] = (0, -1)
    """(id of the PaneScreen, its version): a replaced mirror counts as changed."""
    last_state: AgentState | None = None
    operator_at: float = float("-inf")
    info: PaneInfo | None = None
    last_key: tuple[Any, ...] = field(default_factory=tuple)
    rows: RowCache = field(default_factory=RowCache)


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
    ) -> None:
        self.fleet = fleet
        self.settings = settings
        self.on_event = on_event
        self.control = control
        self.interval = interval
        self.clock = clock
        self.wall = wall
        self.config = sidecar_config or config_from_settings(settings)
        self.ticks = 0
        self.detections = 0
        """How many screens were run through detection (for benchmarks)."""
        self._tracked: dict[PaneId, _Tracked] = {}
        self._pending: dict[PaneId, dict[str, Any]] = {}
        self._lock = threading.RLock()
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

    def _run(self) -> None:
        next_at = self.clock()
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as error:  # one bad tick must not end the sidecar for every pane
                log.exception("sidecar tick failed")
                self._emit("error", "", f"sidecar tick failed: {error}")
            next_at += self.interval
            delay = next_at - self.clock()
            if delay < 0:
                next_at = self.clock()
                delay = 0.0
            self._stop.wait(delay)

    # -- operator controls (any thread) --------------------------------------------------------

    def _override(self, pane_id: PaneId, name: str, value: Any) -> None:
        """Apply a per-pane setting now, or when the pane is first seen as an agent."""
        tracked = self._tracked.get(pane_id)
        if tracked is None:
            self._pending.setdefault(pane_id, {})[name] = value
            return
        getattr(tracked.sidecar, name)(value)

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool | None) -> None:
        """The operator's per-pane poll switch (None: follow the global setting)."""
        with self._lock:
            self._override(pane_id, "set_poll_enabled", enabled)
            self._emit_status(
                pane_id,
                "poll injection " + ("default" if enabled is None else "on" if enabled else "off"),
            )

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None:
        self.set_plan_policy(pane_id, "no-prompts" if enabled else "off")

    def set_plan_policy(self, pane_id: PaneId, policy: str | None) -> None:
        if policy not in (None, "no-prompts", "off"):
            raise ValueError(f"plan policy must be 'no-prompts' or 'off', not {policy!r}")
        with self._lock:
            self._override(pane_id, "set_plan_policy", policy)
            self._emit_status(pane_id, f"plan auto-select {policy or 'default'}")

    def set_poll_interval(self, pane_id: PaneId, seconds: float | None) -> None:
        """``set-poll-interval`` for one pane (None: back to the project's or global interval)."""
        if seconds is not None and seconds <= 0:
            raise ValueError(f"poll interval must be positive, not {seconds}")
        with self._lock:
            self._override(pane_id, "set_poll_interval", seconds)
            self._emit_status(
                pane_id, f"poll interval {'default' if seconds is None else f'{seconds:g}s'}"
            )

    def set_global(
        self, *, poll_enabled: bool | None = None, plan_policy: str | None = None
    ) -> None:
        """Change the defaults every pane follows unless it has its own override."""
        with self._lock:
            changes: dict[str, Any] = {}
            if poll_enabled is not None:
                changes["poll_enabled"] = poll_enabled
            if plan_policy is not None:
                changes["plan_policy"] = plan_policy
            self.config = replace(self.config, **changes)
            for tracked in self._tracked.values():
                tracked.sidecar.config = self.config

    def force_poll(self, pane_id: PaneId) -> tuple[bool, str]:
        """Inject the poll command at the next tick if typing there is safe (the interval is
        skipped, the safety checks are not)."""
        with self._lock:
            tracked = self._tracked.get(pane_id)
            if tracked is None:
                return False, "not an agent pane the sidecar watches"
            return tracked.sidecar.request_poll()

    def note_operator_input(self, pane_id: PaneId) -> None:
        """The operator typed into the pane: the sidecar keeps its hands off for a few seconds."""
        with self._lock:
            tracked = self._tracked.get(pane_id)
            if tracked is not None:
                tracked.operator_at = self.clock()

    def status(self, pane_id: PaneId) -> SidecarStatus | None:
        with self._lock:
            tracked = self._tracked.get(pane_id)
            if tracked is None:
                return None
            return tracked.sidecar.status(self.clock(), self._context(tracked, self.clock()))

    def statuses(self) -> dict[PaneId, SidecarStatus]:
        with self._lock:
            now = self.clock()
            return {
                pane_id: t.sidecar.status(now, self._context(t, now))
                for pane_id, t in self._tracked.items()
            }

    # -- the tick ------------------------------------------------------------------------------

    def _paused(self, info: PaneInfo | None) -> bool:
        if info is None or not info.current_path:
            return False
        return os.path.exists(os.path.join(info.current_path, ".nbs", "control-pause"))

    def _context(self, tracked: _Tracked, now: float) -> SidecarContext:
        return SidecarContext(
            paused=self._paused(tracked.info),
            operator_typing=now - tracked.operator_at < OPERATOR_QUIET,
        )

    def tick(self) -> None:
        """One pass over every agent pane (the thread calls it each second; tests may too)."""
        with self._lock:
            self.ticks += 1
            now = self.clock()
            panes = {p.pane_id: p for p in self.fleet.panes() if p.is_agent and not p.dead}
            for pane_id in list(self._tracked):
                info = panes.get(pane_id)
                if info is None or info.pid != self._tracked[pane_id].pid:
                    old = self._tracked.pop(pane_id).sidecar
                    kept = {
                        "set_poll_enabled": old.poll_enabled_override,
                        "set_plan_policy": old.plan_policy_override,
                        "set_poll_interval": old.poll_interval_override,
                    }
                    kept = {k: v for k, v in kept.items() if v is not None}
                    if kept:  # the operator's switches outlive an agent restart in the same pane
                        self._pending[pane_id] = kept
                    self._emit("state", pane_id, "pane gone or no longer an agent", state="gone")
            for pane_id, info in panes.items():
                tracked = self._tracked.get(pane_id)
                if tracked is None:
                    tracked = _Tracked(PaneSidecar(pane_id, self.config), info.pid)
                    self._tracked[pane_id] = tracked
                    for name, value in self._pending.pop(pane_id, {}).items():
                        getattr(tracked.sidecar, name)(value)
                tracked.info = info
                self._tick_pane(tracked, info, now)

    def _tick_pane(self, tracked: _Tracked, info: PaneInfo, now: float) -> None:
        screen = self.fleet.screen(info.pane_id)
        if screen is None:
            return
        sidecar = tracked.sidecar
        lines = None
        detection = None
        version = (id(screen), screen.version)
        if version != tracked.version:
            tracked.version = version
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
        key = (sidecar.detection.state, sidecar.injecting, context.paused, sidecar.poll_enabled)
        if key != tracked.last_key:
            tracked.last_key = key
            self._emit_status(info.pane_id, "")

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
            kind = "plan-select" if action.kind.startswith("plan") else "poll"
            result = {
                "poll": "submitted",
                "poll-failed": "failed",
                "plan-select": "landed",
                "plan-failed": "failed",
                "plan-waiting": "waiting",
            }.get(action.kind, action.kind)
            self._emit(kind, pane_id, action.message, result=result)
            return
        try:
            live = self._live(info)
            why = self._refusal(live, action)
            if why is not None:
                sidecar.action_refused(now, action, why)
                self._emit(self._kind(action), pane_id, why, result="refused")
                return
            if isinstance(action, InjectPoll):
                self.fleet.send_text(pane_id, action.text)
                self._emit(
                    "poll", pane_id, "", result="typed", text=action.text, attempt=action.attempt
                )
            elif isinstance(action, SubmitPoll):
                self.fleet.send_keys(pane_id, "Enter")
                self._emit(
                    "poll", pane_id, "", result="enter", text=action.text, attempt=action.attempt
                )
            elif isinstance(action, SelectPlanOption):
                self.fleet.send_keys(pane_id, str(action.number))
                self._emit(
                    "plan-select",
                    pane_id,
                    "",
                    result="pressed",
                    number=action.number,
                    label=action.label,
                )
        except (PaneGone, TmuxUnavailable) as error:
            sidecar.action_refused(now, action, str(error))
            self._emit("error", pane_id, f"{self._kind(action)}: {error}")
        except Exception as error:
            log.exception("sidecar action failed")
            sidecar.action_refused(now, action, str(error))
            self._emit("error", pane_id, f"{self._kind(action)}: {error}")

    @staticmethod
    def _kind(action: Action) -> str:
        return "plan-select" if isinstance(action, SelectPlanOption) else "poll"

    @staticmethod
    def _refusal(live: Detection, action: Action) -> str | None:
        """Why the live screen forbids ``action`` now (None: go ahead)."""
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
            if live.state not in (AgentState.IDLE, AgentState.WORKING):
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
        self._deliver(event)

    def _emit_status(self, pane_id: PaneId, message: str) -> None:
        tracked = self._tracked.get(pane_id)
        if tracked is None:
            return
        now = self.clock()
        status = tracked.sidecar.status(now, self._context(tracked, now))
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
        "status": "per-pane status changed (not printed by --headless)",
        "error": "a tmux call or the control plane failed",
    }
