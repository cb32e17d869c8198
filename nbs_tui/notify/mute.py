"""The mute: which notification kinds are silent, here and for the whole server.

Two layers, one rule (`nbs_tui.core.notifications.notify_rules.NotifyDecider`: ``muted`` and
``also_muted``): the kinds this process mutes itself (``notify_mute``, and a dashboard's own
palette toggles), and the kinds muted server-wide (``@nbs_mute``, one tmux option per watched
server, read by its lease each tick and written through it). The server-wide layer is what makes
a dashboard's palette mute reach its other dashboards, ``--headless``'s ``notify`` lines and the
pushes the lease holder (often the service, another process) sends.

`Mute` is that rule for one decider over the leases it is told of: the dashboard, ``--headless``
and the push sender each hold one, so the three follow the server's mute the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from nbs_tui.core.notifications.notify_rules import NotifyDecider, NotifyKind


class ServerMute(Protocol):
    """A server's mute as its lease keeps it (`nbs_tui.sidecar.sidecar_lease.SidecarLease`)."""

    @property
    def muted(self) -> frozenset[NotifyKind]: ...

    def set_muted(self, kinds: frozenset[NotifyKind]) -> None: ...


class Mute:
    """One decider's mute: its own kinds plus those of every server in ``servers()``."""

    def __init__(self, decider: NotifyDecider, servers: Callable[[], Sequence[ServerMute]] = tuple) -> None:
        self._decider = decider
        self._servers = servers

    def server_muted(self) -> frozenset[NotifyKind]:
        """The kinds muted for any watched server (as its lease last read them)."""
        return frozenset().union(*(server.muted for server in self._servers()))

    def follow_servers(self) -> None:
        """Take the servers' mute as it is now: a kind they no longer name is heard again, unless
        muted here."""
        self._decider.also_muted = self.server_muted()

    def muted(self) -> frozenset[NotifyKind]:
        """Every kind silent here: this process's own and the servers'."""
        return self._decider.muted | self.server_muted()

    def toggle(self, kind: NotifyKind) -> bool:
        """Mute ``kind`` here and on every watched server, or, if it is muted here or on one of
        them, unmute it everywhere; True if it is muted now."""
        muted = kind not in self.muted()
        decider = self._decider
        decider.muted = decider.muted | {kind} if muted else decider.muted - {kind}
        for server in self._servers():
            if (kind in server.muted) != muted:
                server.set_muted(server.muted | {kind} if muted else server.muted - {kind})
        self.follow_servers()
        return muted

    def reaches_servers(self) -> bool:
        """Whether a toggle here is server-wide (some server is watched through a lease)."""
        return bool(self._servers())
