"""The dashboard's runtime, started before the dashboard is imported, when it watches another host.

A host over ssh needs round trips before its first frame: the login and connect script (started
first, `nbs_tui.tmux.ssh.preconnect`), then a control client attached per session and the seeds
of the panes shown. Started from the app's ``on_mount`` those followed Python's import of Textual
and the app (~0.3-0.6 s); started here, by the CLI right before that import, they run beside it,
and the app mounts to panes already listed and seeded (bench_remote.py's dash-ssh; the timeline is
in bench/results/2026-11-29-remote-first-frame.md).

Until the app mounts, the runtime reports to `HeldNews`, which keeps what it hears in order;
the CLI hands the runtime to the app (`nbs_tui.app.create_app`'s ``early``) and, once mounted, `HeldNews.attach` hands what was held
to the app's listener and then passes everything straight on. The lease and the sidecar wait for
that too (`RuntimeOptions.sidecar_after`): as at mount, they start after the first frame's seeds
and leave the import alone. A runtime no app claimed is stopped at exit.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.config import Settings
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.review.agent_changes import ChangeCount
from nbs_tui.core.sidecar.lease_rules import LeaseValue
from nbs_tui.files.control_plane import ControlEvent
from nbs_tui.runtime.contract import RuntimeListener, RuntimeOptions
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.sidecar.sidecar_runner import SidecarEvent
from nbs_tui.tmux.errors import TmuxUnavailable

log = logging.getLogger(__name__)

_WHOLE = frozenset({"fleet_changed", "hosts_changed", "background_sessions_changed"})
"""News that carries the whole state each time: only the latest is worth holding."""


class HeldNews(RuntimeListener):
    """A `RuntimeListener` that holds the runtime's news until the real listener is attached,
    then hands it over in order and passes on every later call (any thread)."""

    shows_background_sessions = True  # the dashboard's bridge shows them: poll as for the bridge
    shows_changes = True  # and its change column: counted as for the bridge

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: list[tuple[str, tuple[Any, ...]]] = []
        self._target: RuntimeListener | None = None
        self.attached = threading.Event()
        """Set once the listener is attached (the app has mounted): the sidecar may start."""

    @property
    def held(self) -> int:
        """How many calls wait for the listener (for tests)."""
        with self._lock:
            return len(self._held)

    def attach(self, listener: RuntimeListener) -> None:
        """Tell ``listener`` what was held, in order, then pass everything on to it."""
        with self._lock:  # a backend's call waits meanwhile: nothing overtakes the held news
            held, self._held = self._held, []
            for name, args in held:
                try:
                    getattr(listener, name)(*args)  # a RuntimeListener's method: every one exists
                except Exception:  # as the backend that said it would have: logged, not raised
                    log.exception("listener.%s failed", name)
            self._target = listener
        self.attached.set()

    def _tell(self, name: str, *args: Any) -> None:
        with self._lock:
            target = self._target
            if target is None:
                self._hold(name, args)
                return
        getattr(target, name)(*args)

    def _hold(self, name: str, args: tuple[Any, ...]) -> None:
        held = self._held
        if name == "screens_changed" and held and held[-1][0] == name:
            held[-1] = (name, (held[-1][1][0] | args[0],))  # one set of changed panes, not one per tick
            return
        if name in _WHOLE:
            self._held = held = [entry for entry in held if entry[0] != name]
        held.append((name, args))

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self._tell("fleet_changed", panes)

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        self._tell("screens_changed", pane_ids)

    def connection_changed(self, connected: bool, message: str) -> None:
        self._tell("connection_changed", connected, message)

    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        self._tell("claude_facts_changed", facts)

    def sidecar_event(self, event: SidecarEvent) -> None:
        self._tell("sidecar_event", event)

    def control_event(self, event: ControlEvent) -> None:
        self._tell("control_event", event)

    def problem(self, source: str, message: str) -> None:
        self._tell("problem", source, message)

    def lease_changed(self, holder: LeaseValue, acting: bool) -> None:
        self._tell("lease_changed", holder, acting)

    def hosts_changed(self, states: tuple[HostState, ...]) -> None:
        self._tell("hosts_changed", states)

    def background_sessions_changed(self, sessions: tuple[BackgroundSession, ...]) -> None:
        """The dashboard's bridge shows them; held, the runtime builds its poller as for the bridge."""
        self._tell("background_sessions_changed", sessions)

    def changes_counted(self, counts: Mapping[PaneId, ChangeCount]) -> None:
        """The change column's news (each only some agents': all held, in order)."""
        self._tell("changes_counted", counts)


@dataclass
class EarlyRuntime:
    """A runtime started before the app, and what it said meanwhile."""

    settings: Settings
    runtime: Runtime
    news: HeldNews
    failed: TmuxUnavailable | None = None
    """Why its fleet did not start (the app shows it as it would its own start's failure)."""
    claimed: bool = False

    def serves(self, settings: Settings, options: RuntimeOptions) -> bool:
        """Whether the app would build this very runtime (``options`` its defaults); if so, it is
        the app's from now on. Taken once."""
        if self.claimed or self.settings is not settings or options != replace(self.runtime.options, sidecar_after=None):
            return False
        self.claimed = True
        return True

    def stop_unclaimed(self) -> None:
        """At exit: a runtime no app took is stopped here (one the app took, the app stops)."""
        if not self.claimed:
            self.runtime.stop()


def start_early(settings: Settings) -> EarlyRuntime:
    """Build and start the runtime the dashboard would start at mount, with its default options,
    its news held until the app attaches (module docstring). The caller hands it to the app
    (`nbs_tui.app.create_app`'s ``early``); if the app never takes it, it stops at exit."""
    news = HeldNews()
    runtime = Runtime(settings, news, RuntimeOptions(sidecar_after=news.attached))
    early = EarlyRuntime(settings, runtime, news)
    try:
        runtime.start()
    except TmuxUnavailable as error:
        early.failed = error
    atexit.register(early.stop_unclaimed)
    return early
