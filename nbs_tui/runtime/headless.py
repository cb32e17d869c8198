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
    {"event": "notify", "pane": "%4", "kind": "needs-input", "state": "permission", "reason": "..."}
    {"event": "error", "pane": "", "source": "sidecar", "message": "%5 poll: ..."}

plus ``start`` (with the watched ``hosts``)/``stop``, ``connection`` (tmux lost or back), one ``error`` line for every problem
a backend reports (with its ``source``: ``tmux``, ``sidecar``, ``sidecar lease``, ``control
plane``, ``Claude Code signals``, ``action log``, ``log file``...; the same line goes to the log
file: `nbs_tui.core.fleet.problems`), and the control plane's events (``registry-changed``,
``pause-changed``, ``poll-interval``, ``control-history``), and ``lease`` when the
server's sidecar lease changes hands (``acting``: this process now acts; docs/lease.md). With
several hosts, pane ids of a host other than this one are qualified (``"pane": "hosta:%3"``) and
each host's connection and lease is one ``host`` line when it changes (``connection`` then says
only whether any host is connected). SIGINT and
SIGTERM stop it cleanly
(exit status 0); every thread is joined. The backends are built and run by
`nbs_tui.runtime.runtime.Runtime`, as in the dashboard.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import IO, Any

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.screen.text import json_line_safe
from nbs_tui.core.sidecar.lease_rules import Lease, LeaseValue
from nbs_tui.files.control_plane import ControlEvent, event_as_json
from nbs_tui.notify.event_notices import EventNotices
from nbs_tui.runtime.contract import LeaseMode, RuntimeListener, RuntimeOptions
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.events import MetersNews, SidecarError, SidecarEvent, StatusChange

QUIET_KINDS = frozenset({"control-snapshot"})


class _Printer:
    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.lock = threading.Lock()

    def __call__(self, obj: dict[str, Any]) -> None:
        if obj.get("event") in QUIET_KINDS:
            return
        line = json_line_safe(json.dumps(obj, ensure_ascii=False, default=str))  # C1 escaped too
        with self.lock:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass


class _Events(RuntimeListener):
    """The runtime's listener: every report becomes one JSON line (or none, for screen news)."""

    def __init__(self, emit: _Printer, settings: Settings | None = None) -> None:
        self.emit = emit
        self._hosts: dict[str, HostState] = {}
        self.notices = EventNotices(settings or Settings())
        """The dashboard's notification rules, as ``notify`` lines (nobody is looking at a pane);
        `run_headless` makes them follow the server's mute once the lease is built."""

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        pass

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        pass

    def connection_changed(self, connected: bool, message: str) -> None:
        # a lost server is also reported as a problem: its error line comes from `problem`
        self.emit({"event": "connection", "pane": "", "connected": connected, "message": message})

    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        pass

    def sidecar_event(self, event: SidecarEvent) -> None:
        # errors: the runtime reports those as problems, one line each
        if not isinstance(event, SidecarError | StatusChange | MetersNews):
            self.emit(event.as_json())
        self._notify(event)

    def _notify(self, event: SidecarEvent) -> None:
        """A ``notify`` line for each notification the dashboard would send on this event."""
        for note in self.notices.observe(event):
            self.emit(
                {"event": "notify", "pane": note.pane_id, "kind": note.kind.value, "state": note.state,
                 "reason": note.reason, "time": round(note.at, 3)}
            )  # fmt: skip

    def control_event(self, event: ControlEvent) -> None:
        self.emit(event_as_json(event))

    def problem(self, source: str, message: str) -> None:
        self.emit({"event": "error", "pane": "", "source": source, "message": message})

    def hosts_changed(self, states: tuple[HostState, ...]) -> None:
        """Several hosts: one line for each host whose connection or lease changed."""
        for state in states:
            if self._hosts.get(state.name) != state:
                self._hosts[state.name] = state
                self.emit(
                    {"event": "host", "pane": "", "host": state.name, "connected": state.connected,
                     "message": state.message, "lease": state.lease, "acting": state.acting}
                )  # fmt: skip

    def lease_changed(self, holder: LeaseValue, acting: bool) -> None:
        """Who holds the sidecar lease of this server (docs/lease.md)."""
        event: dict[str, Any] = {"event": "lease", "pane": "", "acting": acting}
        if isinstance(holder, Lease):
            event.update(host=holder.host, pid=holder.pid, since=holder.since)
        elif holder is not None:
            event.update(foreign=holder.raw)
        self.emit(event)


def run_headless(
    settings: Settings, *, out: IO[str] | None = None, stop: threading.Event | None = None
) -> int:
    """Run until SIGINT/SIGTERM (or ``stop`` is set, for tests); return the exit status."""
    emit = _Printer(out or sys.stdout)
    stop = stop or threading.Event()
    # headless is a sidecar by intent: it contends for the lease whatever `service` says
    # ...and shows no screen: its fleet asks tmux for no pane output (the sidecar captures)
    events = _Events(emit, settings)
    runtime = Runtime(settings, events, RuntimeOptions(lease=LeaseMode.CONTEND, mirror=False))
    runtime.build()
    lease = runtime.lease
    if lease is not None:
        # the kinds a dashboard's palette muted for the whole server (``@nbs_mute``, read by the
        # lease each tick) are silent here too, as in every dashboard and in pushes
        events.notices = EventNotices(settings, lambda: [lease])

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
                "hosts": [host.name for host in settings.watched_hosts()],
                "poll_interval": settings.poll_interval,
                "poll_disabled": settings.poll_disabled,
                "plan_policy": settings.plan_policy,
                "stuck_grace": settings.stuck_grace,
                "stuck_max_nudges": settings.stuck_max_nudges,
                "claude_signals": runtime.claude is not None,
                "sidecar": runtime.role.value,
            }
        )
        runtime.start()
        while not stop.wait(0.5):
            pass
    finally:
        runtime.stop()
        for number, handler in previous.items():
            signal.signal(number, handler)
        emit({"event": "stop", "pane": ""})
    return 0
