"""What the runner exchanges with the server's lease each tick (docs/lease.md): the views'
switches and poll requests read from tmux, polls a stopped holder typed and never submitted
(recovered by the next holder, or withdrawn at a clean stop), ``nbs-tui send``'s requests
(`nbs_tui.sidecar.send_channel`: handed to the `SendDesk`, answered when it ends; one a holder
that died had pasted is never taken again: `nbs_tui.core.sidecar.delivery_rules.request_step`),
the holder's actions and meters relayed to every view as events, and the pane state the holder
publishes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.core.fleet.model import AgentState, PaneId
from nbs_tui.core.sidecar.delivery_rules import (
    AnswerRequest,
    Delivery,
    Refusal,
    SendRequest,
    TakeRequest,
    chip_erase_count,
    clean_text,
    parse_send_answer,
    parse_send_request,
    request_step,
)
from nbs_tui.core.sidecar.lease_rules import PaneSwitches, inflight_erase_count
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.core.sidecar.meters_relay import encode_meters
from nbs_tui.core.sidecar.relay import RelayedAction
from nbs_tui.core.sidecar.stuck_agents import Phase
from nbs_tui.sidecar.events import MetersNews, PollStep, RelayGap, relayed_event
from nbs_tui.sidecar.live_pane import LivePane
from nbs_tui.sidecar.pane_options import PublishedState
from nbs_tui.sidecar.send_channel import SendChannel
from nbs_tui.sidecar.send_desk import SendDesk
from nbs_tui.sidecar.sidecar_lease import SidecarLease
from nbs_tui.sidecar.watched_panes import EventOutlet, WatchedPanes
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.port import PaneGone, TmuxUnavailable

log = logging.getLogger(__name__)


class LeaseSync:
    """The runner's side of the lease: switches, requests, in-flight marks, relay, meters."""

    def __init__(
        self,
        lease: SidecarLease,
        panes: WatchedPanes,
        live: LivePane,
        outlet: EventOutlet,
        monitor: AgentMonitor,
        desk: SendDesk,
        *,
        tick_lock: threading.Lock,
        wall: Callable[[], float],
    ) -> None:
        self.lease = lease
        self.panes = panes
        self.live = live
        self._emit = outlet.emit
        self._deliver = outlet.deliver
        self.monitor = monitor
        self.desk = desk
        """Callers' texts: a tmux request (``nbs-tui send``) is handed to it, answered when it ends."""
        self.channel = SendChannel(lease.commands)
        self._sends: set[tuple[PaneId, str]] = set()
        """Requests this holder took and has not answered yet."""
        self.tick_lock = tick_lock
        """The runner's tick lock: a stop's withdrawal takes it (`withdraw_inflight`)."""
        self.wall = wall
        self._encoded: dict[PaneId, tuple[Meters | None, str]] = {}
        """The holder's meters per pane as last encoded (re-encoded only when they change)."""
        self._relayed_meters: dict[PaneId, Meters | None] = {}
        """The meters read from tmux per pane as last told (a ``meters`` event on change)."""

    def withdraw_inflight(self) -> None:
        """A clean stop in the middle of a handshake: erase what this holder typed and did not
        submit (the in-flight rule, applied to its own marks), so no one has to recover it."""
        lease = self.lease
        if not lease.sync() or not self.tick_lock.acquire(timeout=5.0):
            return
        try:
            self.desk.stop()  # each caller answered before its mark goes
            for pane_id, switches in lease.panes.items():
                mark = switches.inflight
                tracked = self.panes.tracked.get(pane_id)
                if mark is None or mark.token != lease.token or tracked is None or tracked.info is None:
                    continue
                try:
                    box = self.live.read(tracked).input_text
                except (PaneGone, TmuxUnavailable):
                    continue
                if box is None:
                    continue  # no box on screen: the next holder looks again
                count = len(box) if box and mark.text.startswith(box) else 0
                lease.switches.erase_inflight(lease.token, pane_id, count)
        except Exception:  # stopping: a mark left over is the next holder's to recover
            log.exception("in-flight polls not withdrawn at stop")
        finally:
            self.tick_lock.release()

    # -- the lease: switches and requests from tmux, in-flight marks, published state ----------

    def sync(self) -> None:
        """With the tick lock held: take the views' switches from tmux; as the holder, also
        answer poll requests and recover polls a dead holder typed but never submitted."""
        lease = self.lease
        if not lease.sync():
            return
        self._relayed(lease)
        self._relay_meters(lease)
        for pane_id, switches in lease.panes.items():
            tracked = self.panes.tracked.get(pane_id)
            if tracked is None:
                continue
            sidecar = tracked.sidecar
            # a pane `nbs-tui new` is starting is left alone: it types the first prompt itself
            claimed = switches.start_claim is not None and switches.start_claim.holds(self.wall())
            poll = False if claimed else switches.poll
            if not lease.pending(pane_id, "poll") and poll != sidecar.poll_enabled_override:
                sidecar.set_poll_enabled(poll)
            plan = "off" if claimed else None if switches.plan is None else "no-prompts" if switches.plan else "off"
            if not lease.pending(pane_id, "plan") and plan != sidecar.plan_policy_override:
                sidecar.set_plan_policy(plan)
        if not lease.acting():
            return
        for pane_id, request in lease.new_requests():
            tracked = self.panes.tracked.get(pane_id)
            ok, why = (
                tracked.sidecar.request_poll()
                if tracked is not None
                else (False, "not an agent pane the sidecar watches")
            )
            lease.answer(pane_id, request, ok, why)
        for pane_id, switches in lease.panes.items():
            claim = switches.start_claim
            if claim is not None and not claim.holds(self.wall()):
                lease.switches.drop_start_claim(lease.token, pane_id, claim.render())
        recovered: dict[PaneId, tuple[str, int]] = {}
        for pane_id, switches in lease.panes.items():
            mark = switches.inflight
            tracked = self.panes.tracked.get(pane_id)
            if mark is None or mark.token == lease.token or tracked is None or tracked.info is None:
                continue
            try:
                box = self.live.read(tracked).input_text
            except (PaneGone, TmuxUnavailable):
                continue
            count = inflight_erase_count(mark, lease.token, box)
            if count == 0:  # a paste chip is not the mark's text: a send's buffer says if it is its
                count = self._chip_left(switches, mark.token, box) or 0
            if count is None:
                continue
            if lease.switches.erase_inflight(lease.token, pane_id, count):
                recovered[pane_id] = (mark.token, count)
                if count:
                    said = f"erased {box!r}, typed by a sidecar that stopped before submitting it"
                    self._emit(PollStep(pane_id, self.wall(), said, result="recovered", text=mark.text))
        self._send_requests(recovered)

    # -- nbs-tui send's requests (`nbs_tui.sidecar.send_channel`) --------------------------------

    def _chip_left(self, switches: PaneSwitches, token: str, box: str | None) -> int | None:
        """1 when the box holds, as Claude Code's paste chip, the text of the pane's send request
        that the holder ``token`` pasted (and died): it is erased like any text left in flight."""
        request, answer = parse_send_request(switches.send_request), parse_send_answer(switches.send_answer)
        if request is None or answer is None or answer.id != request.id or answer.token != token:
            return None
        try:
            sent = clean_text(self.channel.text(request) or "")
        except ValueError:
            return None
        return chip_erase_count(sent, box)

    def _send_requests(self, recovered: dict[PaneId, tuple[str, int]]) -> None:
        """As the holder, after the in-flight rule ran: take each new request, answer the ones
        a holder that is gone had pasted (never typed again) or whose caller gave up."""
        lease = self.lease
        for pane_id, switches in lease.panes.items():
            request = parse_send_request(switches.send_request)
            if request is None:
                continue
            answer = parse_send_answer(switches.send_answer)
            mark, done = switches.inflight, recovered.get(pane_id)
            erased = done[1] if done is not None and answer is not None and done[0] == answer.token else None
            step = request_step(
                request, answer, mine=(pane_id, request.id) in self._sends, my_token=lease.token,
                now=self.wall(), mark_token=mark.token if mark is not None else None, erased=erased,
            )  # fmt: skip
            if isinstance(step, AnswerRequest):
                self._reply(pane_id, request, step.delivery)
            elif isinstance(step, TakeRequest):
                self._take(pane_id, request)

    def _take(self, pane_id: PaneId, request: SendRequest) -> None:
        try:
            text = clean_text(self.channel.text(request) or "")
        except ValueError as error:
            self._reply(pane_id, request, Delivery.refused(Refusal.BAD_TEXT, f"no text to send: {error}"))
            return
        self._sends.add((pane_id, request.id))
        fence = self.channel.typing_fence(request, pane_id, self.lease.token)
        reply = self.desk.accept(pane_id, text, origin="nbs-tui send", fence=fence)
        reply.add_done_callback(lambda done: self._replied(pane_id, request, done))

    def _replied(self, pane_id: PaneId, request: SendRequest, done: Future[Delivery]) -> None:
        """The desk's answer (on the tick's thread, before the in-flight mark is cleared)."""
        self._sends.discard((pane_id, request.id))
        self._reply(pane_id, request, done.result())

    def _reply(self, pane_id: PaneId, request: SendRequest, delivery: Delivery) -> None:
        try:
            self.channel.reply(request, pane_id, delivery)
        except TmuxError as error:  # the caller times out and says so
            log.info("send request %s in %s not answered: %s", request.id, pane_id, error)

    def _relayed(self, lease: SidecarLease) -> None:
        """The holder's actions (another process) become this runner's events, marked ``by``."""
        for pane_id, news in lease.take_relayed().items():
            if news.missed:
                n = news.missed
                said = f"{n} action{'s' if n > 1 else ''} of the sidecar not seen"
                self._emit(RelayGap(pane_id, self.wall(), said))
            for action in news.actions:
                self._deliver_relayed(action, pane_id)
        for action in lease.take_lifecycle():  # another process stopped or restarted an agent
            self._deliver_relayed(action, str(dict(action.data).get("pane", "")))

    def _deliver_relayed(self, action: RelayedAction, pane_id: PaneId) -> None:
        event = relayed_event(action, pane_id)
        if event is None:
            log.info("relayed action of unknown kind %r from %s skipped", action.kind, action.by)
            return
        self._deliver(event)

    def _relay_meters(self, lease: SidecarLease) -> None:
        """The holder's meters of each agent (read from tmux, any host) become ``meters`` events
        when they change; the dashboard shows them for panes it reads no transcript of."""
        seen = self._relayed_meters
        for pane_id in [p for p in seen if p not in lease.panes]:
            del seen[pane_id]
        for pane_id, switches in lease.panes.items():
            if switches.meters != seen.get(pane_id):
                seen[pane_id] = switches.meters
                self._deliver(MetersNews(pane_id, self.wall(), meters=switches.meters))

    def _meters_option(self, pane_id: PaneId) -> str:
        """The pane's meters from Claude Code's transcript, encoded for `PublishedState`."""
        signals = self.monitor.signals
        facts = signals.facts(pane_id) if signals is not None else None
        meters = facts.meters if facts is not None else None
        last = self._encoded.get(pane_id)
        if last is None or last[0] is not meters:
            last = self._encoded[pane_id] = (meters, encode_meters(meters))
        return last[1]

    def clear_inflight(self, pane_id: PaneId) -> None:
        """A handshake is over: drop its in-flight mark (the text is submitted or abandoned)."""
        try:
            self.lease.switches.clear_inflight(pane_id)
        except Exception as error:  # a mark left over is recovered by the next holder
            log.info("in-flight mark of %s not cleared: %s", pane_id, error)

    def publish_options(self) -> None:
        """As the holder, after a pass: each pane's state, needs, since and meters into tmux."""
        lease = self.lease
        escalated = {
            pane_id for pane_id, verdict in self.monitor.verdicts().items()
            if verdict.stuck.phase is Phase.ESCALATED
        }
        budget = self.panes.budget_needs()  # an account at its cap, a burn alarm (budget_watch)
        states: dict[PaneId, PublishedState] = {}
        for pane_id, tracked in self.panes.tracked.items():
            state = tracked.sidecar.detection.state
            if pane_id in escalated:
                needs = "stuck"
            elif state.needs_person or state is AgentState.PLAN:
                needs = state.value
            elif pane_id in budget:
                needs = "burn" if budget[pane_id].startswith("burn:") else "budget"
            else:
                needs = ""
            states[pane_id] = PublishedState(
                state.value, needs, int(tracked.state_wall), self._meters_option(pane_id)
            )
        for pane_id in [p for p in self._encoded if p not in states]:
            del self._encoded[pane_id]
        lease.publish(states)
