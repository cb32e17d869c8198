"""The holder's one entry for typing a caller's text into an agent pane (docs/fleet-api.md).

`SidecarRunner.deliver_text` (any thread; the work queue's feeder calls it) and a tmux request
of ``nbs-tui send`` (`nbs_tui.sidecar.lease_sync.LeaseSync`, on the tick's thread) both end
here: `SendDesk.accept` judges the pane by `nbs_tui.core.sidecar.delivery_rules.send_refusal`
and, when it may take the text, queues it in the pane's `PaneSidecar` with purpose ``send``.
From there it is the poll's own path: the next tick pastes it (after a live re-capture judged by
`live_refusal`, fenced on the lease token with the in-flight mark in the same tmux step), sees
it in the box, presses Enter once, sees it leave. The `ActionCarrier` tells the desk each step
(`typed`, `ended`, `not_sent`); the desk resolves the caller's `Future` with a `Delivery`:
submitted, refused (nothing typed) or failed (typed, not seen submitted). `sweep` resolves what
no step will (the pane went, the lease was lost, the sidecar stopped). Everything here runs
with the runner's tick lock held, so nothing locks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.sidecar.delivery_rules import (
    Delivery,
    DeliveryResult,
    PaneFacts,
    Refusal,
    send_refusal,
)
from nbs_tui.sidecar.events import SendStep
from nbs_tui.sidecar.watched_panes import EventOutlet, TrackedPane, WatchedPanes
from nbs_tui.tmux.commands import Guard

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Pending:
    text: str
    reply: Future[Delivery]
    fence: Guard | None
    """More the typing must go through (a tmux request's: still standing, marked typed)."""
    origin: str
    typed: bool = False


class SendDesk:
    """Sends under way, one per pane at most, each with the `Future` its caller waits on."""

    def __init__(
        self,
        panes: WatchedPanes,
        outlet: EventOutlet,
        *,
        lease: SidecarLease | None,
        clock: Callable[[], float],
    ) -> None:
        self.panes = panes
        self.outlet = outlet
        self.lease = lease
        self.clock = clock
        self._pending: dict[PaneId, _Pending] = {}

    def accept(
        self, pane_id: PaneId, text: str, *, origin: str = "", fence: Guard | None = None,
        reply: Future[Delivery] | None = None,
    ) -> Future[Delivery]:  # fmt: skip
        """Take ``text`` for ``pane_id`` (already `clean_text`'d): queued for the next tick, or
        refused at once. ``fence``: more the typing must go through. ``reply``: the future to
        answer (running already), else a new one."""
        if reply is None:
            reply = Future()
            reply.set_running_or_notify_cancel()
        tracked = self.panes.tracked.get(pane_id)
        if pane_id in self._pending:
            return self._done(reply, Delivery.refused(Refusal.PENDING, "another send to this pane is under way"))
        refusal = send_refusal(self._facts(tracked))
        if refusal is not None:
            return self._done(reply, Delivery.refused(*refusal))
        assert tracked is not None  # send_refusal says not-agent otherwise
        ok, why = tracked.sidecar.request_text(text, "send")
        if not ok:
            return self._done(reply, Delivery.refused(Refusal.CHANGED, why))
        self._pending[pane_id] = _Pending(text, reply, fence, origin)
        by = f" from {origin}" if origin else ""
        self.outlet.emit(SendStep(pane_id, self.outlet.wall(), f"queued{by}", result="queued", text=text))
        return reply

    def _facts(self, tracked: TrackedPane | None) -> PaneFacts:
        """The pane as this holder knows it: its sidecar, and its options as last read from
        tmux (``@nbs_inflight`` of another holder, ``@nbs_starting`` of ``nbs-tui new``)."""
        lease = self.lease
        acting = lease is None or lease.acting()
        if tracked is None or tracked.info is None:
            return PaneFacts(None, acting=acting)
        context = self.panes.context(tracked, self.clock())
        switches = lease.panes.get(tracked.sidecar.pane_id) if lease is not None else None
        inflight = switches is not None and switches.inflight is not None
        claim = switches.start_claim if switches is not None else None
        starting = claim is not None and claim.holds(self.outlet.wall())
        return PaneFacts(
            tracked.sidecar.detection,
            acting=acting and not context.viewer,
            starting=starting,
            paused=context.paused,
            injecting=tracked.sidecar.busy,
            inflight=inflight,
            operator_typing=context.operator_typing,
            held=context.held,
        )

    @staticmethod
    def _done(reply: Future[Delivery], delivery: Delivery) -> Future[Delivery]:
        reply.set_result(delivery)
        return reply

    # -- what the carrier tells it -------------------------------------------------------------

    def fence(self, pane_id: PaneId) -> Guard | None:
        """What the typing of the pane's send must go through besides the lease's own guard."""
        pending = self._pending.get(pane_id)
        return pending.fence if pending is not None else None

    def typed(self, pane_id: PaneId) -> None:
        """The text is in the pane (pasted inside the lease's fence)."""
        pending = self._pending.get(pane_id)
        if pending is not None:
            pending.typed = True

    def ended(self, pane_id: PaneId, submitted: bool, message: str) -> None:
        """The handshake is over: seen submitted, or given up (`HandshakeEnded`)."""
        if submitted:
            self._finish(pane_id, Delivery(DeliveryResult.SUBMITTED, "", message))
        else:
            self._not_done(pane_id, message)

    def not_sent(self, pane_id: PaneId, why: str) -> None:
        """A step was not carried out (the live screen forbade it, the lease's fence refused,
        the pane went): the handshake is over."""
        self._not_done(pane_id, why)

    def _not_done(self, pane_id: PaneId, why: str) -> None:
        pending = self._pending.get(pane_id)
        if pending is None:
            return
        if pending.typed:
            said = f"typed but not seen submitted ({why}): look at the pane before sending again"
            self._finish(pane_id, Delivery(DeliveryResult.FAILED, Refusal.CHANGED.value, said))
            return
        tracked = self.panes.tracked.get(pane_id)
        refusal = send_refusal(self._facts(tracked)) if tracked is not None else None
        code = refusal[0] if refusal is not None else Refusal.CHANGED
        self._finish(pane_id, Delivery.refused(code, f"not typed: {why}"))

    def _finish(self, pane_id: PaneId, delivery: Delivery) -> None:
        pending = self._pending.pop(pane_id, None)
        if pending is None:
            return
        try:
            pending.reply.set_result(delivery)  # its callbacks (a tmux request's answer) run here
        except Exception:  # a callback's failure is logged by Future; a second result is a bug
            log.exception("send to %s answered twice", pane_id)

    # -- what no step reports ------------------------------------------------------------------

    def sweep(self) -> None:
        """After a tick: end the sends whose pane went, whose sidecar dropped them (this
        process became a viewer), or that the sidecar no longer carries for any other reason."""
        for pane_id in list(self._pending):
            tracked = self.panes.tracked.get(pane_id)
            if tracked is None:
                self._not_done(pane_id, "the pane is gone or no longer an agent")
            elif not tracked.sidecar.busy:
                lost = self.lease is not None and not self.lease.acting()
                self._not_done(pane_id, "this process lost the sidecar lease" if lost else "the sidecar dropped it")

    def stop(self, why: str = "the sidecar stopped") -> None:
        """The runner stops: every send not yet typed is refused; one typed is failed (its
        in-flight mark is withdrawn or recovered by the next holder)."""
        for pane_id in list(self._pending):
            pending = self._pending[pane_id]
            if pending.typed:
                self._not_done(pane_id, why)
            else:
                self._finish(pane_id, Delivery.refused(Refusal.STOPPED, why))
