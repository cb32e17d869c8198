"""The port the app and the headless runner use to watch and steer a tmux server.

`nbs_tui.tmux.fleet.TmuxFleet` implements it over tmux control mode. Callbacks arrive on
the fleet's own threads: a listener must not block and must not touch the UI directly
(the app turns each call into a Textual message with ``call_from_thread``/``post_message``).

Threads, as built in `TmuxFleet`:

* ``fleet_changed`` and ``connection_changed`` come from the supervisor thread, in order;
  the first ``fleet_changed`` always comes (possibly with an empty fleet) once tmux answers;
* ``screens_changed`` comes from the feeder thread, at most ~60 times a second;
* a `PaneScreen` is changed only by the feeder thread, under ``screen.lock``; readers on any
  other thread hold ``with screen.lock:`` across reads that must agree (one repaint). The same
  `PaneScreen` object stays with a pane id while the pane is watched (and across a reconnect);
* watching: a fleet may keep a live model only of the panes some consumer watches
  (`FleetPort.set_watched`); ``screens_changed`` still reports the unwatched panes it sees
  print (`TmuxFleet` sees only the sessions holding a watched pane: output follows the watch),
  and `FleetPort.captured` reads an unwatched pane's screen from tmux (at most about once a
  second), whether it was seen printing or not;
* `FleetPort.send_text`, `send_keys`, `capture_text` and `captured` block for a few
  milliseconds (one tmux round trip): call them from a worker thread, any thread but the
  listener callbacks.

Every other tmux command on the fleet's server goes through `FleetPort.commands`
(`nbs_tui.tmux.commands.TmuxServerCommands`: in-band on the fleet's connections when ready).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nbs_tui.tmux.errors import (
    HostUnreachable,
    PaneGone,
    PaneNotFound,
    ServerGone,
    TmuxCommandError,
    TmuxError,
    TmuxTimeout,
    TmuxUnavailable,
)

__all__ = [
    "FleetListener",
    "FleetPort",
    "HostUnreachable",
    "PaneGone",
    "PaneHistory",
    "PaneNotFound",
    "ServerGone",
    "TmuxCommandError",
    "TmuxError",
    "TmuxTimeout",
    "TmuxUnavailable",
]

if TYPE_CHECKING:
    from nbs_tui.core.fleet.model import PaneId, PaneInfo
    from nbs_tui.core.screen.pane_screen import PaneScreen
    from nbs_tui.core.screen.screen_rows import CapturedScreen
    from nbs_tui.tmux.commands import Guard, TmuxServerCommands


@dataclass(frozen=True, slots=True)
class PaneHistory:
    """A pane's scrollback and screen as tmux keeps them, read on demand (never kept per pane)."""

    lines: tuple[str, ...]
    """Oldest first, each with its SGR escapes (``capture-pane -e``), the visible screen last."""
    alternate: bool
    """The pane shows its alternate screen (a full-screen program): it has no scrollback, and
    ``lines`` is that screen only."""
    history_size: int
    """Lines tmux holds above the visible screen (of the normal screen)."""


class FleetListener(ABC):
    """What a fleet tells, on its own threads. A listener subclasses this: the fleet's news are
    abstract; its trouble (`problem`) and layout-only changes (`layout_changed`) do nothing
    unless overridden, so the fleet calls them without asking first."""

    @abstractmethod
    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        """The set of panes or any of their details changed; ``panes`` is the whole fleet."""

    @abstractmethod
    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        """These panes' screen models changed since the last call (coalesced, at most ~60 Hz)."""

    @abstractmethod
    def connection_changed(self, connected: bool, message: str) -> None:
        """The server went away (``connected=False``, with why) or is back."""

    def problem(self, source: str, message: str) -> None:  # noqa: B027 (optional news)
        """Something went wrong that a person should see (``source``: ``tmux``): a control
        client that died."""

    def layout_changed(self) -> None:  # noqa: B027 (optional news)
        """Some window's layout changed (panes resized or rearranged: tmux's ``%layout-change``,
        which changes no `PaneInfo` and so calls no ``fleet_changed``); the fleet keeper
        remembers layouts. On the fleet's reader thread: must not block."""


class FleetPort(ABC):
    """Watch every pane of one tmux server and act on them."""

    @abstractmethod
    def start(self) -> None:
        """Connect and begin mirroring; returns at once, reconnects on its own."""

    @abstractmethod
    def stop(self) -> None:
        """Disconnect and join every thread; leaves the server and its panes untouched."""

    @abstractmethod
    def panes(self) -> list[PaneInfo]:
        """The fleet as last discovered, in session/window/pane order."""

    @abstractmethod
    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        """The live mirror of a pane, or None if the pane is unknown.

        It is blank until the pane's first seed; a pane whose output is rationed (a flood) is
        refreshed from ``capture-pane`` a few times a second instead of byte by byte.
        """

    def set_watched(self, consumer: str, pane_ids: Iterable[PaneId]) -> None:  # noqa: B027
        """``consumer`` (any name: ``mirror``, ``grid``) looks at exactly these panes now.

        A fleet may keep a live `screen` only of the panes some consumer watches (and give a
        newly watched one a blank model at once, filled by its seed). This one mirrors every
        pane anyway and ignores it.
        """

    def first_seeded(self, pane_id: PaneId) -> bool:
        """Whether the pane's live `screen` holds the pane yet (False while it is the blank
        model of a pane just watched, before its first seed landed: no reader should take
        that blank for the pane's screen). True where there is no seeding to wait for."""
        return True

    def captured(self, pane_id: PaneId) -> CapturedScreen | None:
        """An unwatched pane's screen as rows of text, read from tmux at most about once a
        second while it changes (blocks for one round trip when it reads). None when the pane
        is unknown or has a live `screen`, which is then the one to read; this one always has."""
        return None

    @abstractmethod
    def capture_text(self, pane_id: PaneId) -> str:
        """The pane's visible screen as plain text straight from tmux (raises PaneGone)."""

    def capture_history(self, pane_id: PaneId, lines: int) -> PaneHistory:
        """Up to ``lines`` of the pane's history plus its screen, with colours, straight from
        tmux on its own host (blocks for a round trip; raises PaneGone)."""
        raise PaneGone(f"{pane_id}: this fleet keeps no history")

    @abstractmethod
    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        """Type ``text`` literally into the pane, no Enter (raises PaneGone).

        Byte-exact: quotes, ``;``, ``$``, ``#{}``, a leading ``-``, unicode and newlines (a
        newline is typed as ``C-j``; press ``Enter`` with `send_keys` to submit). With a
        ``guard`` (the sidecar lease's), only while it holds, in the same step inside tmux:
        False when it did not (nothing typed), else True.
        """

    @abstractmethod
    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        """Press named tmux keys (``Enter``, ``Escape``, ``C-c``, ``Up``, ``1``) (raises
        PaneGone); ``guard`` as for `send_text`."""

    @property
    def commands(self) -> TmuxServerCommands | None:
        """Every other tmux command on the fleet's server, by its one path; None for a fleet
        that is not one tmux server (several hosts as one, a test's fake)."""
        return None

    def wait_seeded(self, timeout: float) -> bool:
        """Block until every pane of the first discovery can be read (seeded, or for an
        unwatched pane its connection is ready); False on timeout. At once for this one."""
        return True
