"""The operator's layer, without Textual: send, broadcast, poll, marks, switches, needs-you, jump.

`OperatorController` decides and does; the app asks for text, keys and confirmations and hands
the answers here. It talks to tmux only through `nbs_tui.operator.pane_actions.Operator` and
`nbs_tui.tmux.jump.Jumper`, and to the screen only through an `OperatorView`.

Threads: every action blocks on tmux, so actions run in order on one named thread
(``nbs-operator``, started by `start`, ended by `stop`); every failure there meets in one place
and is reported as a problem (``operator action``: the runtime's sink, `nbs_tui.core.fleet.problems`:
the log, the problems screen, a notification). A pane is chosen (a `PaneInfo` snapshot) on the UI thread when the operator acts;
the action thread checks it is still that pane before sending. The marks, per-pane switches and
needs-you queue are touched on the UI thread only.

The fleet's lifecycle (start, stop, restart, background sessions, the remembered fleet) is
``lifecycle``, a `nbs_tui.lifecycle.threaded.LifecycleController` built here: it shares this
controller's view, action log and problem sink, and runs its long actions on threads of its own.
"""

from __future__ import annotations

import logging
import queue
import shutil
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import Protocol

from nbs_tui.config import Settings
from nbs_tui.core.detection.answer import AnswerCard, card_for
from nbs_tui.core.fleet.card_target import format_card_target
from nbs_tui.core.fleet.host_spec import split_pane_id
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.fleet.needs_you import NeedsYouEntry, NeedsYouQueue
from nbs_tui.core.fleet.pane_state import PaneState
from nbs_tui.core.fleet.problems import ProblemSink
from nbs_tui.core.fleet_api.exit_codes import FleetApiError
from nbs_tui.core.notifications.notify_rules import Notification, NotifyDecider, parse_kinds
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase, parse_base
from nbs_tui.core.review.agent_changes import AgentChanges
from nbs_tui.core.sidecar.delivery_rules import Refusal
from nbs_tui.core.sidecar.pane_sidecar import SidecarStatus
from nbs_tui.fleet_api.send_command import send_document
from nbs_tui.lifecycle.threaded import LifecycleController
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome
from nbs_tui.operator.pane_actions import ActionResult, Operator, summarize
from nbs_tui.operator.review_actions import ReviewActions, Said
from nbs_tui.runtime.contract import SidecarView
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.tmux.jump import Jumper, JumpResult
from nbs_tui.tmux.port import PaneGone, TmuxCommandError, TmuxUnavailable

log = logging.getLogger(__name__)


class OperatorView(Protocol):
    """What the controller needs from the screen."""

    def notify_operator(self, text: str, title: str, severity: str, timeout: float) -> None:
        """Show a notification (any thread)."""

    def on_ui(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the UI thread (called from the action thread; a gone UI drops it)."""

    def bell(self) -> None:
        """Ring the terminal bell (UI thread)."""


DELIVERY_WAIT = 60.0
"""Seconds the review waits for the holder's answer to a send (it answers within a few ticks:
pasted, seen in the box, Enter, seen leaving it)."""


class _SidecarProxy:
    """The runtime's sidecar, reached at call time (it starts after the first seed)."""

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def _runner(self) -> SidecarView:
        runner = self._runtime.sidecar_view
        if runner is None:
            raise KeyError("no sidecar is running")
        return runner

    def force_poll(self, pane_id: PaneId) -> tuple[bool, str]:
        try:
            runner = self._runner()
        except KeyError:
            return False, "no sidecar is running to inject polls"
        injected, reason = runner.force_poll(pane_id)
        return bool(injected), str(reason)

    def set_poll_enabled(self, pane_id: PaneId, enabled: bool) -> None:
        self._runner().set_poll_enabled(pane_id, enabled)

    def set_plan_auto(self, pane_id: PaneId, enabled: bool) -> None:
        self._runner().set_plan_auto(pane_id, enabled)

    def note_operator_input(self, pane_id: PaneId) -> None:
        runner = self._runtime.sidecar_view
        if runner is not None:
            runner.note_operator_input(pane_id)


def report_text(results: Sequence[ActionResult]) -> tuple[str, str]:
    """(text, severity) of one notification about what an action did."""
    if not results:
        return "nothing to do", "information"
    if len(results) == 1:
        result = results[0]
        severity = "information" if result.ok else ("warning" if result.outcome is Outcome.SKIPPED else "error")
        return result.describe(), severity
    return summarize(results), "information" if all(r.ok for r in results) else "warning"


class OperatorController:
    """The operator's actions on the panes on show (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        state: PaneState,
        runtime: Runtime,
        view: OperatorView,
        *,
        clock: Callable[[], float],
    ) -> None:
        self.settings = settings
        self.state = state
        self.runtime = runtime
        self.view = view
        self.clock = clock
        self.action_log = ActionLog(settings.action_log, problem=runtime.problem)
        hosts = settings.watched_hosts()
        self.jumpers = {h.name: Jumper(h.server if len(hosts) > 1 else settings.server, host=h) for h in hosts}
        """One per watched host: a pane is jumped to on its own host (`jumper_for`)."""
        self.jumper = self.jumpers[hosts[0].name] if len(hosts) == 1 else Jumper(settings.server)
        self.needs_you = NeedsYouQueue(idle_threshold=settings.needs_you_idle, clock=clock)
        self.notifications = NotifyDecider(muted=parse_kinds(settings.notify_mute), repeat=settings.notify_repeat)
        """What becomes a notification to the operator's terminal and ``notify_command``."""
        self.marked: set[PaneId] = set()
        """Panes marked for broadcast."""
        self.poll_off: set[PaneId] = set()
        """Panes whose poll injection the operator turned off."""
        self.plan_manual: set[PaneId] = set()
        """Panes whose plan menus wait for a person."""
        self._operator: Operator | None = None
        self._last_needs: PaneId | None = None
        self.rang_bell = False
        """Whether the last `needs_you_tick` rang the bell (the notifications then ring none)."""
        self._pass_pending: list[tuple[bool, str]] = []
        self._pass_lock = threading.Lock()
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.lifecycle = LifecycleController(settings, runtime, view, self.action_log, clock=clock)
        """Start, stop, restart, background sessions and the remembered fleet (each on its own thread)."""
        self.review = ReviewActions(
            self.action_log, self._deliver_prompt, lambda pane_id: self.state.agent_states().get(pane_id), self._pane_base,
            local=self._on_this_machine, counted=self._counted_changes,
        )
        """The review screen's actions: an agent's changes read, comments sent, merge, discard (`v`)."""

    # -- lifecycle and the action thread -------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run_jobs, name="nbs-operator", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            thread.join(timeout)

    def subscribe_log(self, listener: Callable[[ActionRecord], None]) -> Callable[[], None]:
        """Call ``listener`` (on the writing thread) for every record; returns the unsubscriber."""
        return self.action_log.subscribe(listener)

    def _run_jobs(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except Exception as error:  # every failure meets here, and goes the problems' one way
                log.exception("operator action failed")
                self.runtime.problem("operator action", f"{type(error).__name__}: {error}")

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on the action thread, after those already queued."""
        self._jobs.put(job)

    def report(self, results: Sequence[ActionResult], title: str) -> None:
        text, severity = report_text(results)
        self.view.notify_operator(text, title, severity, 6)

    @property
    def operator(self) -> Operator | None:
        """The operator service, once the fleet exists."""
        fleet = self.runtime.fleet
        if self._operator is None and fleet is not None:
            proxy = _SidecarProxy(self.runtime)
            # the fleet's own server commands (here or on its host), or each pane's host's
            tmux = self.runtime.hosts.tmux if self.runtime.hosts is not None else None
            self._operator = Operator(
                fleet, self.action_log, server=self.settings.server, tmux=tmux, poller=proxy, controls=proxy
            )
        return self._operator

    def ready(self, pane: PaneInfo | None) -> Operator | None:
        """The operator service if ``pane`` can be acted on; otherwise says why and returns None."""
        if pane is None:
            self.view.notify_operator("No pane selected.", "", "warning", 5)
            return None
        op = self.operator
        if op is None:
            self.view.notify_operator("Not connected to tmux.", "", "warning", 5)
        return op

    # -- jump ----------------------------------------------------------------------------------

    def jump(self, pane: PaneInfo, attach: Callable[[PaneInfo], None]) -> None:
        """Switch the operator's tmux client to ``pane``; outside tmux, ``attach`` (UI thread)."""
        op = self.ready(pane)
        if op is None:
            return
        jumper, raw = self.jumper_for(pane.pane_id)
        plan = jumper.plan(raw)

        def job() -> None:
            gone = op.check_pane(pane)
            if gone:
                op.record_jump(pane, plan.mode, Outcome.SKIPPED, gone)
                self.report([ActionResult(pane.pane_id, pane.target, "jump", plan.mode, Outcome.SKIPPED, gone)], "Jump")
                return
            if plan.mode == "switch":
                result = jumper.switch(raw)
                op.record_jump(pane, "switch-client", Outcome.SENT if result.ok else Outcome.FAILED, result.message)
                self.view.notify_operator(result.message, "Jump", "information" if result.ok else "error", 5)
            else:
                self.view.on_ui(lambda: attach(pane))

        self.submit(job)

    def jumper_for(self, pane_id: PaneId) -> tuple[Jumper, PaneId]:
        """The jumper of the pane's host and the pane's id on that host's server."""
        if len(self.jumpers) < 2:
            return self.jumper, pane_id
        host, raw = split_pane_id(pane_id)
        return self.jumpers.get(host, self.jumper), raw

    def attach_argv(self, pane: PaneInfo) -> list[str]:
        jumper, raw = self.jumper_for(pane.pane_id)
        return list(jumper.attach_plan(raw).argv)

    def attach(self, pane: PaneInfo) -> JumpResult:
        """Attach to ``pane`` in this terminal until the operator detaches (the UI is suspended)."""
        jumper, raw = self.jumper_for(pane.pane_id)
        return jumper.attach(raw)

    def attached(self, pane: PaneInfo, result: JumpResult | None, why_not: str = "") -> None:
        """Record an attach: its result, or why it could not happen."""
        op = self.operator
        if op is None:
            return
        if result is None:
            op.record_jump(pane, "attach", Outcome.SKIPPED, why_not)
        else:
            op.record_jump(pane, "attach", Outcome.SENT if result.ok else Outcome.FAILED, result.message)

    # -- send text and keys ----------------------------------------------------------------------

    def send_text(self, pane: PaneInfo, text: str, *, enter: bool) -> None:
        op = self.ready(pane)
        if op is not None:
            self.submit(lambda: self.report([op.send_text(pane, text, enter=enter)], "Send"))

    def send_key(self, pane: PaneInfo, key: str) -> None:
        op = self.ready(pane)
        if op is not None:
            self.submit(lambda: self.report([op.send_key(pane, key)], "Key"))

    # -- broadcast -----------------------------------------------------------------------------

    def toggle_mark(self, pane: PaneInfo) -> int:
        """Mark or unmark ``pane``; returns how many are marked now."""
        if pane.pane_id in self.marked:
            self.marked.discard(pane.pane_id)
        else:
            self.marked.add(pane.pane_id)
        return len(self.marked)

    def clear_marks(self) -> None:
        self.marked.clear()

    def marked_panes(self) -> list[PaneInfo]:
        return [p for p in self.state.panes if p.pane_id in self.marked]

    def broadcast(self, targets: Sequence[PaneInfo], *, text: str | None = None, key: str | None = None, enter: bool = False) -> None:
        op = self.operator
        if op is not None:
            chosen = list(targets)
            self.submit(lambda: self.report(op.broadcast(chosen, text=text, key=key, enter=enter), "Broadcast"))

    # -- pass-through ------------------------------------------------------------------------------

    def type_keys(self, pane: PaneInfo, keys: Sequence[tuple[bool, str]], failed: Callable[[], None]) -> None:
        """Type ``keys`` into ``pane``, batched: keys that come while a batch is queued join it.
        ``failed`` runs on the UI thread when a key did not arrive."""
        op = self.operator
        if op is None:
            return
        with self._pass_lock:
            first = not self._pass_pending
            self._pass_pending.extend(keys)
        if not first:
            return  # a flush is already queued; it will take these too

        def flush() -> None:
            with self._pass_lock:
                batch, self._pass_pending = self._pass_pending, []
            self._quiet_report(op.type_keys(pane, batch), failed)

        self.submit(flush)

    def paste(self, pane: PaneInfo, text: str, failed: Callable[[], None]) -> None:
        op = self.operator
        if op is not None:
            self.submit(lambda: self._quiet_report(op.send_text(pane, text, why="pass-through paste"), failed))

    def _quiet_report(self, result: ActionResult, failed: Callable[[], None]) -> None:
        """Pass-through speaks up only when a key did not arrive."""
        if not result.ok:
            self.report([result], "Pass-through")
            self.view.on_ui(failed)

    # -- polls and per-pane switches ---------------------------------------------------------------

    def force_poll(self, pane: PaneInfo) -> None:
        op = self.ready(pane)
        if op is not None:
            self.submit(lambda: self.report([op.force_poll(pane)], "Force poll"))

    def force_poll_idle(self) -> None:
        op = self.operator
        if op is None:
            self.view.notify_operator("Not connected to tmux.", "", "warning", 5)
            return
        panes = list(self.state.panes)
        idle = {p for p, s in self.state.statuses.items() if s.state is AgentState.IDLE}
        self.submit(lambda: self.report(op.force_poll_all(panes, lambda p: p.pane_id in idle), "Poll idle agents"))

    def toggle_poll(self, pane: PaneInfo, switched: Callable[[], None]) -> None:
        """Turn poll injection the other way for ``pane``; ``switched`` runs on the UI thread after."""
        op = self.ready(pane)
        if op is None:
            return
        status = self._sidecar_status(pane.pane_id)
        enabled = bool(status.poll_enabled) if status is not None else pane.pane_id not in self.poll_off

        def job() -> None:
            result = op.set_poll_enabled(pane, not enabled)
            if result.ok:
                self.view.on_ui(lambda: self._switched(self.poll_off, pane.pane_id, enabled, switched))
            self.report([result], "Poll injection")

        self.submit(job)

    def toggle_plan(self, pane: PaneInfo, switched: Callable[[], None]) -> None:
        """Turn plan auto-select the other way for ``pane``; ``switched`` runs on the UI thread after."""
        op = self.ready(pane)
        if op is None:
            return
        status = self._sidecar_status(pane.pane_id)
        auto = status.plan_policy != "off" if status is not None else pane.pane_id not in self.plan_manual

        def job() -> None:
            result = op.set_plan_auto(pane, not auto)
            if result.ok:
                self.view.on_ui(lambda: self._switched(self.plan_manual, pane.pane_id, auto, switched))
            self.report([result], "Plan auto-select")

        self.submit(job)

    @staticmethod
    def _switched(off: set[PaneId], pane_id: PaneId, now_off: bool, switched: Callable[[], None]) -> None:
        if now_off:
            off.add(pane_id)
        else:
            off.discard(pane_id)
        switched()

    def _sidecar_status(self, pane_id: PaneId) -> SidecarStatus | None:
        runner = self.runtime.sidecar_view
        return runner.status(pane_id) if runner is not None else None

    # -- needs you -------------------------------------------------------------------------------

    def needs_you_tick(self) -> list[NeedsYouEntry]:
        """Bring the needs-you queue up to date (UI thread); announce newcomers; return the queue."""
        self.rang_bell = False
        state = self.state
        states = state.agent_states()
        manual = set(self.plan_manual)
        if self.settings.plan_policy == "off":
            manual |= set(states)
        change = self.needs_you.sync(
            states,
            labels={p: state.pane_by_id[p].target for p in states},
            plan_waits=frozenset(manual),
            stuck={**self._limit_menus(states), **self._escalated()},
            since={
                pane_id: status.idle_since
                for pane_id, status in state.statuses.items()
                if pane_id in states and status.idle_since is not None
            },
        )
        if change.joined:
            self._announce([entry.label or entry.pane_id for entry in change.joined], change.joined[0].reason)
        return list(self.needs_you.entries())

    def notify_tick(self, looking_at: PaneId | None) -> list[Notification]:
        """The notifications due now (UI thread), none for ``looking_at``, the pane on show."""
        state = self.state
        states = state.agent_states()
        manual = set(self.plan_manual) | (set(states) if self.settings.plan_policy == "off" else set())
        return self.notifications.sync(
            {pane_id: str(agent_state.value) for pane_id, agent_state in states.items()},
            self.clock(),
            reasons={pane_id: status.reason for pane_id, status in state.statuses.items() if pane_id in states},
            plan_waits=frozenset(manual),
            stuck=self._escalated(),
            looking_at=looking_at,
        )

    def _limit_menus(self, states: dict[PaneId, AgentState]) -> dict[PaneId, str]:
        """Limited agents whose usage-limit menu is open (2.1.1xx): they wait for a choice (the
        queue's ``stuck`` reasons carry them in, as they do escalated agents)."""
        menus: dict[PaneId, str] = {}
        for pane_id, agent_state in states.items():
            if agent_state is AgentState.LIMITED:
                status = self._sidecar_status(pane_id)
                if status is not None and status.detection.options:
                    menus[pane_id] = "usage-limit menu"
        return menus

    def _escalated(self) -> dict[PaneId, str]:
        """Agents the sidecar's stuck watch gave up nudging."""
        runner = self.runtime.sidecar_view
        return dict(runner.escalated()) if runner is not None else {}

    def label(self, pane_id: PaneId) -> str:
        pane = self.state.pane_by_id.get(pane_id)
        return pane.target if pane is not None else pane_id

    def _announce(self, names: list[str], reason: str) -> None:
        text = f"{', '.join(names)} needs you ({reason})" if len(names) == 1 else f"{', '.join(names)} need you"
        self.view.notify_operator(text, "Needs you", "warning", 6)
        if self.settings.bell:
            self.view.bell()
            self.rang_bell = True
        if self.settings.desktop_notify and shutil.which("notify-send"):
            self.submit(lambda: _desktop_notify("nbs-tui: needs you", text, self.runtime.problem))

    def next_needs_you(self, selected: PaneId | None) -> NeedsYouEntry | None:
        """The next agent waiting on the operator after the last one shown (None: nobody)."""
        current = self._last_needs if self._last_needs in self.needs_you else selected
        entry = self.needs_you.next_after(current)
        if entry is None:
            self.view.notify_operator("Nobody is waiting on you.", "", "information", 3)
            return None
        self._last_needs = entry.pane_id
        waited = int(entry.waited(self.clock()))
        self.view.notify_operator(f"{self.label(entry.pane_id)}: {entry.reason} (waiting {waited}s) · g jumps in", "", "information", 4)
        return entry

    def needs_chosen(self, pane_id: PaneId) -> None:
        """The operator picked ``pane_id`` in the needs-you panel: `next_needs_you` goes on from it."""
        self._last_needs = pane_id

    # -- answering from the needs-you queue ----------------------------------------------------

    def answer_card(self, pane_id: PaneId) -> AnswerCard | None:
        """The menu the pane waits on, from its last detection (None: no menu to answer)."""
        pane = self.state.pane_by_id.get(pane_id)
        status = self._sidecar_status(pane_id)
        if pane is None or status is None:
            return None
        return card_for(pane_id, pane.pid, status.detection)

    def next_answer_card(self, after: PaneId | None = None, skip: frozenset[PaneId] = frozenset()) -> AnswerCard | None:
        """The first waiting agent with a menu to answer, in the queue's order after ``after``
        (wrapping; ``after`` itself last), leaving out ``skip``."""
        line = [entry.pane_id for entry in self.needs_you.entries()]
        if after in line:
            at = line.index(after)
            line = line[at + 1 :] + line[: at + 1]
        for pane_id in line:
            if pane_id in skip:
                continue
            card = self.answer_card(pane_id)
            if card is not None:
                return card
        return None

    def _deliver_prompt(self, pane: PaneInfo, prompt: str) -> Said:
        """A prompt typed into the agent once, whole, and submitted, by the server's lease holder
        under its sidecar's rules (refused while the agent works, waits on a menu, or has
        half-typed input): this process's own sidecar when it holds the lease
        (`SidecarRunner.deliver_text`), else the holder asked through tmux as ``nbs-tui send``
        asks it (`send_document`: a viewer dashboard, the service holding the lease). Blocks
        until it answers (the action thread)."""
        runner = self.runtime.sidecar_view
        if runner is not None:
            try:
                delivery = runner.deliver_text(pane.pane_id, prompt, origin="review comments").result(timeout=DELIVERY_WAIT)
            except (KeyError, ValueError) as error:
                return Said(False, f"not sent: {error.args[0] if error.args else error}")
            except TimeoutError:
                return Said(False, f"not sent: the sidecar gave no answer within {DELIVERY_WAIT:.0f} s")
            if delivery.ok:
                return Said(True, "sent")
            if delivery.reason != Refusal.NOT_HOLDER.value:
                return Said(False, f"not sent: {delivery.message or delivery.reason}")
        return self._ask_the_holder(pane, prompt)

    def _ask_the_holder(self, pane: PaneInfo, prompt: str) -> Said:
        """Another process holds the lease: ask it through tmux (`nbs_tui.fleet_api.send_command`)."""
        hosts = self.settings.watched_hosts()
        host = next((h for h in hosts if h.name == pane.host), None) if pane.host else hosts[0]
        if host is None:
            return Said(False, f"not sent: no watched host {pane.host!r}")
        try:
            send_document(self.settings, format_card_target(host.name, host.server, pane.pane_id), prompt)
        except FleetApiError as error:
            return Said(False, f"not sent: {error.message}")
        return Said(True, "sent")

    def _counted_changes(self, pane: PaneInfo) -> AgentChanges | None:
        """The change column's reading of the agent (its own files in a shared worktree), if any."""
        counter = self.runtime.changes
        return counter.read_agent(pane.pane_id, pane.target) if counter is not None else None

    def _on_this_machine(self, pane: PaneInfo) -> bool:
        """The pane's host is this machine (its folder can be read here)."""
        hosts = self.settings.watched_hosts()
        host = next((h for h in hosts if h.name == pane.host), None) if pane.host else hosts[0] if len(hosts) == 1 else None
        return host is not None and host.is_local

    def _pane_base(self, pane: PaneInfo) -> AgentBase | None:
        """The base ``nbs-tui new`` left on the agent's pane (``@nbs_base``); None when it has none."""
        fleet = self.runtime.fleet
        commands = fleet.commands if fleet is not None else None
        if commands is None:
            return None
        try:
            return parse_base(commands.display(pane.pane_id, f"#{{{BASE_OPTION}}}"))
        except (TmuxCommandError, TmuxUnavailable, PaneGone):
            return None

    def run_off_ui(self, work: Callable[[], object], done: Callable[[object], None]) -> None:
        """``work`` on the action thread, ``done`` with its result on the UI thread."""

        def job() -> None:
            result = work()
            self.view.on_ui(lambda: done(result))

        self.submit(job)

    def answer(self, card: AnswerCard, key: str, done: Callable[[ActionResult], None]) -> None:
        """Answer ``card`` with ``key`` on the action thread, after a live re-check of the pane
        (`nbs_tui.operator.pane_actions.Operator.answer`); ``done`` gets the result on the UI thread."""
        pane = self.state.pane_by_id.get(card.pane_id)
        op = self.ready(pane)
        if op is None or pane is None:
            return

        def job() -> None:
            result = op.answer(pane, card, key)
            self.report([result], "Answer")
            self.view.on_ui(lambda: done(result))

        self.submit(job)


def _desktop_notify(title: str, text: str, problem: ProblemSink) -> None:
    """``notify-send``; a failure (no desktop session to send to, say) is a ``notify`` problem."""
    try:
        done = subprocess.run(["notify-send", title, text], check=False, timeout=5, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        problem("notify", "notify-send still running after 5 s; killed")
        return
    except OSError as error:
        problem("notify", f"notify-send: {error.strerror or error}")
        return
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        problem("notify", f"notify-send exited {done.returncode}" + (f": {said[-1]}" if said else ""))
