"""What the runtime's callers build it with and give it: `RuntimeOptions` and the listener
listener's base class (`RuntimeListener`), and what they may ask of its sidecar (`SidecarView`).

Apart from `nbs_tui.runtime.runtime` so that `nbs_tui.runtime.hosts`, which runs a runtime per
host, needs nothing of the module that builds it: no import cycle.
"""

from __future__ import annotations

import enum
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.core.fleet.background import BackgroundSession
from nbs_tui.core.fleet.host_spec import HostState
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.fleet.problems import ProblemSink
from nbs_tui.core.review.agent_changes import ChangeCount
from nbs_tui.core.sidecar.lease_rules import LeaseValue
from nbs_tui.files.control_plane import ControlEvent
from nbs_tui.sidecar.sidecar_runner import SidecarEvent
from nbs_tui.tmux.port import FleetListener, FleetPort

if TYPE_CHECKING:
    from concurrent.futures import Future

    from nbs_tui.core.sidecar.delivery_rules import Delivery
    from nbs_tui.core.sidecar.pane_sidecar import SidecarStatus
    from nbs_tui.sidecar.sidecar_runner import SidecarSnapshot

SEED_TIMEOUT = 5.0
"""The longest the sidecar waits for the fleet's first seed (a slow server only delays it)."""

FleetFactory = Callable[[FleetListener], FleetPort]

class RuntimeListener(ABC):
    """Everything the backends report, each called on the reporting backend's thread.

    A listener subclasses this: the news every listener takes are abstract; the optional ones
    (the lease, the hosts, background sessions) do nothing unless overridden, so the runtime
    calls them without asking first."""

    shows_changes: ClassVar[bool] = False
    """True: the listener shows each agent's change count (the fleet list's change column), so
    the runtime keeps them (`changes_counted`); false, no worktree is watched."""

    shows_background_sessions: ClassVar[bool] = False
    """True: the listener shows Claude Code's background sessions, so the runtime polls them
    (`background_sessions_changed`); false, none are polled."""

    @abstractmethod
    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        """The whole fleet, after any change (from the fleet's supervisor thread)."""

    @abstractmethod
    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        """These panes' screens changed (from the fleet's feeder thread, up to ~60 Hz)."""

    @abstractmethod
    def connection_changed(self, connected: bool, message: str) -> None:
        """The tmux server went away (with why) or is back."""

    @abstractmethod
    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        """Claude Code's own signals changed for these panes."""

    @abstractmethod
    def sidecar_event(self, event: SidecarEvent) -> None:
        """The sidecar saw or did something (``error`` events included)."""

    @abstractmethod
    def control_event(self, event: ControlEvent) -> None:
        """The control plane's news (registries, inboxes, pause, errors)."""

    @abstractmethod
    def problem(self, source: str, message: str) -> None:
        """A backend failed in a way a person should see (``source`` names it)."""

    def lease_changed(self, holder: LeaseValue, acting: bool) -> None:  # noqa: B027 (optional news)
        """The lease holder changed (``holder``: None when free); ``acting``: it is this process.
        Called on the lease's thread."""

    def hosts_changed(self, states: tuple[HostState, ...]) -> None:  # noqa: B027 (optional news)
        """Some watched host's state changed (`nbs_tui.runtime.hosts`); every host's, in order."""

    def changes_counted(self, counts: Mapping[PaneId, ChangeCount]) -> None:  # noqa: B027 (optional news)
        """These agents' change counts changed (`nbs_tui.runtime.change_counter`), only for a
        listener that `shows_changes`; from the counter's thread."""

    def background_sessions_changed(self, sessions: tuple[BackgroundSession, ...]) -> None:  # noqa: B027
        """Claude Code's background sessions, polled only for a listener that
        `shows_background_sessions` (`nbs_tui.lifecycle.background_poll`)."""


class SidecarView(Protocol):
    """What the app and the operator ask of the sidecar: one `SidecarRunner`, or every host's."""

    @property
    def snapshot(self) -> SidecarSnapshot: ...

    def force_poll(self, pane_id: PaneId) -> tuple[bool, str]: ...

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool | None) -> None: ...

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None: ...

    def note_operator_input(self, pane_id: PaneId) -> None: ...

    def status(self, pane_id: PaneId) -> SidecarStatus | None: ...

    def escalated(self) -> dict[PaneId, str]: ...

    def deliver_text(self, pane_id: PaneId, text: str, origin: str = "") -> Future[Delivery]:
        """The holder's one entry for a caller's text (`nbs_tui.sidecar.sidecar_runner.SidecarRunner.deliver_text`)."""
        ...


class LeaseMode(enum.Enum):
    CONTEND = "contend"
    """Take the lease when it is free or expired, and act while holding it."""
    WATCH = "watch"
    """Never take it: detect only, and show who acts."""
    SERVICE = "service"
    """Watch; when nobody holds it, start ``nbs-tui service`` for the server (a dashboard with
    ``service = "auto"``); if that service cannot be started, contend after all."""
    OFF = "off"
    """No lease at all: act unconditionally (tests with a fake fleet, one-process tools)."""


class SidecarRole(enum.Enum):
    """What this process does with the panes' screens."""

    ACT = "act"
    """Run the sidecar: detect states, inject polls, answer plan menus."""
    OFF = "off"
    """No sidecar at all (switched off, or no fleet to act on)."""


@dataclass(frozen=True, slots=True)
class RuntimeOptions:
    """Which backends to run and the clocks they share (tests switch backends off)."""

    control_plane: bool = True
    claude: bool = True
    sidecar: bool = True
    clock: Callable[[], float] = time.monotonic
    """Monotonic clock of the sidecar (countdowns, quiet time)."""
    wall: Callable[[], float] = time.time
    """Wall clock of the sidecar's events and Claude Code's signals."""
    fleet_factory: FleetFactory | None = None
    """Builds the fleet given the runtime's listener; by default a `TmuxFleet` on the settings' server."""
    seed_timeout: float = SEED_TIMEOUT
    lease: LeaseMode | None = None
    """None: `CONTEND` with the real tmux fleet, `OFF` with an injected ``fleet_factory``."""
    mirror: bool = True
    """This process shows pane screens (the dashboard). False (``--headless``, the service):
    the fleet asks tmux for no pane output at all and the sidecar reads panes by capture."""
    problems: ProblemSink | None = None
    """Where this runtime's problems go instead of its own log line and listener: a host's
    runtime (`nbs_tui.runtime.hosts`) reports through the dashboard's, its host named first."""
    sidecar_after: threading.Event | None = None
    """The lease and the sidecar start once this is set too, not only after the first seed: a
    runtime started before its app (`nbs_tui.runtime.early`) leaves the CPU to the app's import
    and mount, as one started at mount does (its sidecar follows the first frame's seeds)."""
