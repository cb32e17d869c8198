"""``nbs-tui --headless``: the sidecar for every pane, without the UI, one JSON event per line.

Runs `TmuxFleet` (the live mirror), the control plane (``.nbs/`` inboxes and registries of every
project), `ClaudeSignals` (hooks, status files, transcripts) and `SidecarRunner` (detection,
``/nbs-poll``, plan menus, ``\\nbs-`` lines, stuck agents), and prints each event as one JSON
object on stdout::

    {"event": "state", "pane": "%3", "state": "idle", ...}
    {"event": "poll", "pane": "%3", "result": "typed", "text": "/nbs-poll", ...}
    {"event": "plan-select", "pane": "%4", "result": "pressed", "number": 1, ...}
    {"event": "command", "pane": "%5", "line": "\\\\nbs-register-chat .nbs/chat/x.chat", ...}
    {"event": "nudge", "pane": "%6", "result": "queued", "nudge": 1, "text": "Please continue..."}
    {"event": "escalate", "pane": "%6", "reason": "stuck", "message": "still idle 60s after 1 nudge(s)..."}
    {"event": "agent-ended", "pane": "%7", "liveness": "exited", "message": "its Claude Code process exited"}
    {"event": "error", "pane": "%5", "message": "..."}

plus ``start``/``stop`` and the control plane's events (``registry-changed``, ``pause-changed``,
``poll-interval``, ``control-history``, ``control-error``). SIGINT and SIGTERM stop it cleanly
(exit status 0); every thread is joined.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import IO, Any

from nbs_tui.config import Settings
from nbs_tui.core.model import PaneId, PaneInfo
from nbs_tui.sidecar_runner import SidecarEvent, SidecarRunner

QUIET_KINDS = frozenset({"status", "control-snapshot"})


class _Printer:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.lock = threading.Lock()

    def __call__(self, obj: dict[str, Any]) -> None:
        if obj.get("event") in QUIET_KINDS:
            return
        line = json.dumps(obj, ensure_ascii=False, default=str)
        with self.lock:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass


class _FleetListener:
    def __init__(self, emit: _Printer, control: Any | None, signals: Any | None = None) -> None:
        self.emit = emit
        self.control = control
        self.signals = signals
        self._dirs: dict[str, str] = {}

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        if self.signals is not None:
            self.signals.set_panes(panes)
        dirs = {p.pane_id: p.current_path for p in panes if p.current_path and not p.dead}
        if self.control is not None and dirs != self._dirs:
            self._dirs = dirs
            self.control.set_pane_dirs(dirs)

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        pass

    def connection_changed(self, connected: bool, message: str) -> None:
        self.emit(
            {
                "event": "connection" if connected else "error",
                "pane": "",
                "connected": connected,
                "message": message,
            }
        )


def run_headless(
    settings: Settings, *, out: IO[str] | None = None, stop: threading.Event | None = None
) -> int:
    """Run until SIGINT/SIGTERM (or ``stop`` is set, for tests); return the exit status."""
    from nbs_tui.tmux.fleet import TmuxFleet

    emit = _Printer(out or sys.stdout)
    stop = stop or threading.Event()
    control: Any | None = None
    try:
        from nbs_tui.files.control_plane import ControlPlane, event_as_json

        control = ControlPlane(settings, lambda event: emit(event_as_json(event)))
    except ImportError:  # the control plane is optional
        control = None
    signals: Any | None = None
    try:
        from nbs_tui.claude.watcher import ClaudeSignals

        signals = ClaudeSignals(settings)
    except ImportError:  # Claude Code's own signals are optional: the screen alone still works
        signals = None
    listener = _FleetListener(emit, control, signals)
    fleet = TmuxFleet(settings.server, settings.sessions, listener)

    def on_event(event: SidecarEvent) -> None:
        emit(event.as_json())

    runner = SidecarRunner(fleet, settings, on_event, control=control, signals=signals)

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():

        def handle(signum: int, frame: FrameType | None) -> None:
            stop.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[int(signum)] = signal.signal(signum, handle)
    try:
        emit(
            {
                "event": "start",
                "pane": "",
                "server": settings.server.describe(),
                "poll_interval": settings.poll_interval,
                "poll_disabled": settings.poll_disabled,
                "plan_policy": settings.plan_policy,
                "stuck_grace": settings.stuck_grace,
                "stuck_max_nudges": settings.stuck_max_nudges,
                "claude_signals": signals is not None,
            }
        )
        if signals is not None:
            signals.start()
        fleet.start()
        if control is not None:
            control.start()
        # let the mirror seed first, so no pane is reported "unknown" from a blank screen
        fleet.wait_seeded(5.0)
        runner.start()
        while not stop.wait(0.5):
            pass
    finally:
        runner.stop()
        if control is not None:
            control.stop()
        if signals is not None:
            signals.stop()
        fleet.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
        emit({"event": "stop", "pane": ""})
    return 0
