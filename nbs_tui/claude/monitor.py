"""AgentMonitor: per pane, fuse the screen with ClaudeSignals' facts and run the stuck watch.

The one object a per-pane loop (the sidecar runner) needs to use Claude Code's exact signals::

    monitor = AgentMonitor(signals, settings)                 # signals may be None
    fused, actions = monitor.observe(pane_id, detection, screen_changed_at, now)
    for action in actions:                                    # Nudge | Escalate | Ended
        ...                                                   # the runner carries them out
    monitor.forget(pane_id)                                   # when the pane goes

``signals`` is anything with ``facts(pane_id)`` (`ClaudeSignals`; tests pass a fake). All times
are wall-clock seconds (``time.time()``): hooks and status files use that clock.
``observe`` is meant for one thread (the runner's tick); ``fused``/``stuck`` may be read from
any thread (frozen values, swapped whole).

A ``Nudge`` is a request: type ``action.text`` and press Enter only after re-reading the live
screen (idle, empty input box), exactly like a poll injection; if the runner cannot, it calls
``nudge_failed`` so the attempt is not counted. ``safe_to_nudge`` (default: the detection's
``safe_to_inject``) lets the caller hold nudges back for reasons of its own (paused project,
the operator typing); ``busy`` holds nudges and escalations back while text of the caller's is
being typed into the pane (a nudge in flight must not be escalated over).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.config import Settings
from nbs_tui.core.detection.fusion import (
    DEFAULT_POLICY,
    FusedState,
    FusionPolicy,
    fuse,
    screen_reading,
)
from nbs_tui.core.fleet.model import Detection, PaneId
from nbs_tui.core.sidecar.stuck_agents import Liveness, StuckAction, StuckStatus, StuckWatch


class FactsSource(Protocol):
    def facts(self, pane_id: PaneId) -> ClaudeFacts | None: ...


@dataclass(frozen=True, slots=True)
class PaneVerdict:
    """What the monitor concluded for one pane at one tick (for the detail view)."""

    fused: FusedState
    stuck: StuckStatus
    facts: ClaudeFacts | None


class AgentMonitor:
    def __init__(
        self, signals: FactsSource | None, settings: Settings, policy: FusionPolicy = DEFAULT_POLICY
    ) -> None:
        self.signals = signals
        self.settings = settings
        self.policy = policy
        self._watches: dict[PaneId, StuckWatch] = {}
        self._verdicts: dict[PaneId, PaneVerdict] = {}
        self._lock = threading.Lock()

    def observe(
        self,
        pane_id: PaneId,
        detection: Detection,
        screen_changed_at: float,
        now: float,
        *,
        safe_to_nudge: bool | None = None,
        busy: bool = False,
    ) -> tuple[FusedState, list[StuckAction]]:
        """Fuse this tick's screen with the pane's latest facts and advance its stuck watch."""
        facts = self.signals.facts(pane_id) if self.signals is not None else None
        previous = self._verdicts.get(pane_id)
        readings = [screen_reading(detection, screen_changed_at), *(facts.readings if facts else ())]
        fused = fuse(readings, now, previous.fused if previous else None, self.policy)
        watch = self._watches.get(pane_id)
        if watch is None:
            watch = self._watches[pane_id] = StuckWatch(
                pane_id,
                grace=self.settings.stuck_grace,
                nudge_text=self.settings.stuck_nudge,
                max_nudges=self.settings.stuck_max_nudges,
            )
        actions = watch.observe(
            now,
            fused.state,
            facts.transcript_size if facts is not None else None,
            facts.liveness if facts is not None else Liveness.UNKNOWN,
            safe_to_nudge=detection.safe_to_inject if safe_to_nudge is None else safe_to_nudge,
            busy=busy,
        )
        with self._lock:
            self._verdicts[pane_id] = PaneVerdict(fused, watch.status, facts)
        return fused, actions

    def nudge_failed(self, pane_id: PaneId) -> None:
        """The runner could not deliver the last nudge: do not count it."""
        watch = self._watches.get(pane_id)
        if watch is not None:
            watch.undo_nudge()

    def forget(self, pane_id: PaneId) -> None:
        self._watches.pop(pane_id, None)
        with self._lock:
            self._verdicts.pop(pane_id, None)

    def verdict(self, pane_id: PaneId) -> PaneVerdict | None:
        with self._lock:
            return self._verdicts.get(pane_id)

    def verdicts(self) -> dict[PaneId, PaneVerdict]:
        """Every watched pane's latest verdict (any thread)."""
        with self._lock:
            return dict(self._verdicts)
