"""The operator's controls of the sidecar: typed requests on a queue, carried out by whoever
holds the tick lock, so no caller ever waits on tmux.

Locks, and why the UI never waits on tmux: a tick holds the runner's tick lock for its whole pass,
tmux calls included (a ``capture-pane`` may take up to tmux's 5 s timeout). Nothing else
ever *waits* for that lock. Readers (`snapshot`, `status`, `statuses`, `stuck`, `escalated`)
read the immutable `SidecarSnapshot` the runner publishes after each tick and after each
operator change (`WatchedPanes.publish`): one attribute read, no lock. The operator's controls (`set_poll_enabled`,
`set_plan_policy`, `set_poll_interval`, `set_global`, `note_operator_input`, `force_poll`)
are typed requests put on a queue under ``_requests_lock`` (held for an append, never across
a tmux call); the caller then *tries* the tick lock without blocking and, when no tick is
running, carries the requests out itself (so a toggle shows at once); otherwise the tick
carries them out when it ends. ``force_poll`` needs a reply: it waits on a `Future` for at
most ``FORCE_POLL_WAIT`` seconds, so call it from a worker thread, never from the UI thread.
``deliver_text`` returns its `Future` at once: the text's `Delivery` comes when the sidecar has
typed and submitted it (or refused it), a few ticks later (`nbs_tui.sidecar.send_desk`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.delivery_rules import Delivery
from nbs_tui.sidecar.send_desk import SendDesk
from nbs_tui.sidecar.watched_panes import WatchedPanes

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

FORCE_POLL_WAIT = 6.0
"""Longest a `SidecarRunner.force_poll` caller waits for a busy tick (a tmux call times out
after 5 s)."""


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


@dataclass(frozen=True, slots=True)
class _Deliver:
    pane_id: PaneId
    text: str
    origin: str
    reply: Future[Delivery]


_Request = _Override | _SetGlobal | _OperatorInput | _ForcePoll | _Deliver


class OperatorQueue:
    """The operator's side of the runner: its controls and the queue they go through."""

    def __init__(
        self,
        panes: WatchedPanes,
        *,
        lease: SidecarLease | None,
        tick_lock: threading.Lock,
        clock: Callable[[], float],
        desk: SendDesk,
    ) -> None:
        self.panes = panes
        self.desk = desk
        self.lease = lease
        self.tick_lock = tick_lock
        """The runner's: held by a tick, or by whoever carries out the requests."""
        self.clock = clock
        self._requests_lock = threading.Lock()
        """Held for an append or a take of the queue, never across a tmux call."""
        self._requests: list[_Request] = []

    @property
    def waiting(self) -> bool:
        """Requests are queued (asked for while a tick held the lock)."""
        with self._requests_lock:
            return bool(self._requests)

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

    def deliver_text(self, pane_id: PaneId, text: str, origin: str = "") -> Future[Delivery]:
        """Type ``text`` (`clean_text`'d) into the pane once, under the sidecar's rules; the
        `Delivery` comes in the returned future (`nbs_tui.sidecar.send_desk`). Never waits."""
        reply: Future[Delivery] = Future()
        reply.set_running_or_notify_cancel()
        self._request(_Deliver(pane_id, text, origin, reply))
        return reply

    def note_operator_input(self, pane_id: PaneId) -> None:
        """The operator typed into the pane: the sidecar keeps its hands off for a few seconds."""
        self._request(_OperatorInput(pane_id, self.clock()))

    # -- carrying out requests -----------------------------------------------------------------

    def _request(self, request: _Request) -> None:
        with self._requests_lock:
            self._requests.append(request)
        self.try_carry_out()

    def try_carry_out(self) -> None:
        """Carry out queued requests now unless a tick holds the lock (it will, when it ends)."""
        if not self.tick_lock.acquire(blocking=False):
            return
        try:
            changed = self.carry_out()
            if changed:
                self.panes.publish(changed)
        finally:
            self.tick_lock.release()

    def carry_out(self) -> set[PaneId]:
        """With the tick lock held: apply every queued request; the panes whose status changed."""
        with self._requests_lock:
            requests, self._requests = self._requests, []
        changed: set[PaneId] = set()
        for request in requests:
            if isinstance(request, _Override):
                tracked = self.panes.tracked.get(request.pane_id)
                if tracked is None:  # applied when the pane is first seen as an agent
                    self.panes.pending.setdefault(request.pane_id, {})[request.method] = request.value
                else:
                    getattr(tracked.sidecar, request.method)(request.value)
                    changed.add(request.pane_id)
                self.panes.emit_status(request.pane_id, request.message)
            elif isinstance(request, _SetGlobal):
                changes: dict[str, Any] = {}
                if request.poll_enabled is not None:
                    changes["poll_enabled"] = request.poll_enabled
                if request.plan_policy is not None:
                    changes["plan_policy"] = request.plan_policy
                self.panes.set_config(replace(self.panes.config, **changes))
                changed.update(self.panes.tracked)
            elif isinstance(request, _Deliver):
                self.desk.accept(request.pane_id, request.text, origin=request.origin, reply=request.reply)
            elif isinstance(request, _OperatorInput):
                tracked = self.panes.tracked.get(request.pane_id)
                if tracked is not None:
                    tracked.operator_at = max(tracked.operator_at, request.at)
            elif request.reply.set_running_or_notify_cancel():  # _ForcePoll, unless given up
                tracked = self.panes.tracked.get(request.pane_id)
                if tracked is None:
                    request.reply.set_result((False, "not an agent pane the sidecar watches"))
                else:
                    request.reply.set_result(tracked.sidecar.request_poll())
        return changed
