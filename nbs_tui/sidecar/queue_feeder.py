"""The work queue's one actor: the lease holder's feeder (docs/queue.md).

A thread of its own, ``nbs-queue``, built and started by `SidecarRunner` beside the sidecar's
tick (a hand-out types through the sidecar's delivery entry, which takes the tick lock, and a
start through `Lifecycle` takes seconds: neither may hold up the tick). While
this process holds the lease and has held it for `SETTLE` (the sidecar has then recovered any
in-flight mark a dead holder left), every `LOOK_EVERY`, it:

1. reads the records appended to the server's queue file since its last look;
2. settles every hand-out left ``handing`` that is not its own in progress (a killed holder's,
   or its own that ended without an outcome): from the pane's in-flight mark, the agent's
   state and its transcript it decides whether the prompt went in (`QueueFeeder._settle`);
3. follows each task out: ``needs`` while its agent waits on the operator, ``done`` once the
   transcript shows the prompt's turn over and the agent idle (the last assistant text kept),
   ``failed`` when the agent exits, errors or hits its limit;
4. hands out what `nbs_tui.core.queue.handout.plan_handouts` says, each hand-out a
   ``handing`` record written and synced *before* the text is typed (or the agent started),
   then ``handed`` or ``unhanded``.

Writes go through the store's compare-and-append (`QueueStore.append_checked`), so a record is
written only if the task is still in the state the feeder read (a cancel from a dashboard in
between wins).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from nbs_tui.claude.monitor import AgentMonitor
from nbs_tui.claude.prompt_turn import PromptTurn, TurnReader
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.queue.handout import QueueAgent, blocked_for_good, plan_handouts
from nbs_tui.core.queue.records import (
    Record,
    TaskDone,
    TaskFailed,
    TaskHanded,
    TaskHanding,
    TaskNeeds,
    TaskRunning,
    TaskUnhanded,
)
from nbs_tui.core.queue.task_states import QueueState, Task, TaskState
from nbs_tui.core.sidecar.delivery_rules import Delivery, DeliveryResult, clean_text
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.sidecar.events import SidecarError
from nbs_tui.sidecar.watched_panes import EventOutlet, WatchedPanes
from nbs_tui.tmux.errors import TmuxError
from nbs_tui.tmux.port import FleetPort

if TYPE_CHECKING:
    from nbs_tui.sidecar.sidecar_lease import SidecarLease

log = logging.getLogger(__name__)

LOOK_EVERY = 0.5
"""Seconds between two looks (a look with nothing queued or out reads one file's size)."""
SETTLE = 1.0
"""Seconds the lease is held before the feeder acts: the sidecar's first ticks as holder have
recovered in-flight marks and published fresh states by then."""
GRACE = 3.0
"""Seconds after a hand-out began before an idle agent with no trace of the prompt counts as
"it never went in" (Claude Code writes a submitted prompt to its transcript at once)."""
GIVE_UP = 120.0
"""Seconds a hand-out may stay unsettled while its agent is neither idle nor gone (a dialog,
a start left at a screen): then it did not go in."""
REFUSED_REST = 10.0
"""Seconds an agent that refused a task is left out of the plan (the operator typing...),
doubled at each refusal in a row (a paused project refuses until resumed), at most 5 minutes."""
GONE_AFTER = 2.0
"""Seconds a task's pane must stay missing from the fleet before its agent counts as gone."""
DONE_QUIET = 2.0
"""Seconds an agent must stay idle before a task it was seen working on, with no transcript
to read, is done."""
WORKER = "@nbs_worker"
"""The pane option ``new --worker`` sets (`nbs_tui.lifecycle.fleet_keeper.WORKER_OPTION`)."""
NOT_IDLE_NEEDS = {
    AgentState.PERMISSION: "permission",
    AgentState.QUESTION: "question",
    AgentState.PLAN: "plan",
    AgentState.DIALOG: "dialog",
}


@dataclass(frozen=True, slots=True)
class Delivered:
    """What the delivery entry answered (its `Delivery`, or no answer in time)."""

    result: str
    """``submitted`` (typed whole, seen submitted once), ``refused`` (nothing typed) or
    ``failed`` (typed, not seen submitted: settled from the transcript, `QueueFeeder._settle`)."""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.result == "submitted"


class Deliver(Protocol):
    """The sidecar's one in-holder delivery entry (`SidecarRunner.deliver_text`, the ``send``
    work's): type ``text`` into ``pane_id`` once, under the sidecar's rules, fenced on the lease."""

    def __call__(self, pane_id: PaneId, text: str, origin: str) -> Delivered: ...


DELIVERY_WAIT = 60.0
"""Seconds the feeder waits for the delivery entry's answer (a few ticks, normally)."""


def queue_delivery(entry: Callable[[PaneId, str, str], Future[Delivery]]) -> Deliver:
    """The sidecar's delivery entry (`SidecarRunner.deliver_text`: a future of a `Delivery`) as
    the feeder calls it: waiting for the answer, at most `DELIVERY_WAIT` (then "failed": whether
    the text went in is settled from the pane)."""

    def deliver(pane_id: PaneId, text: str, origin: str) -> Delivered:
        future = entry(pane_id, text, origin)
        try:
            delivery = future.result(timeout=DELIVERY_WAIT)
        except TimeoutError:
            return Delivered(DeliveryResult.FAILED.value, f"no answer from the sidecar in {DELIVERY_WAIT:.0f} s")
        why = f"{delivery.reason}: {delivery.message}" if delivery.message else delivery.reason
        return Delivered(delivery.result.value, why)

    return deliver


@dataclass(frozen=True, slots=True)
class StartRequest:
    """A new agent for a task: in ``folder``, window ``name``, the task's text as its first
    prompt, or an NBS worker's file."""

    folder: str
    name: str
    prompt: str = ""
    worker: str = ""


@dataclass(frozen=True, slots=True)
class StartedAgent:
    pane_id: PaneId
    session_id: str = ""
    prompt_submitted: bool = False


StartAgent = Callable[[StartRequest], StartedAgent]
"""Starts an agent through the lifecycle (`nbs_tui.lifecycle.operations.Lifecycle`), given by
the runtime (the sidecar room does not import the lifecycle); raises on a start that failed."""


@dataclass
class _Following:
    """What this feeder saw of a task out (lost with the process: the transcript is the record)."""

    worked: bool = False
    idle_since: float | None = None


class QueueFeeder:
    """The feeder (module docstring). `tick` may be called directly (tests)."""

    def __init__(
        self,
        store: QueueStore,
        fleet: FleetPort,
        panes: WatchedPanes,
        monitor: AgentMonitor,
        outlet: EventOutlet,
        *,
        lease: SidecarLease | None,
        deliver: Deliver | None,
        start_agent: StartAgent | None = None,
        limits: Mapping[str, int] | None = None,
        claude_home: Path,
        interval: float = LOOK_EVERY,
        wall: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.fleet = fleet
        self.panes = panes
        self.monitor = monitor
        self.outlet = outlet
        self.lease = lease
        self.deliver = deliver
        self.start_agent = start_agent
        self.limits = dict(limits or {})
        self.turns = TurnReader(claude_home)
        self.interval = interval
        self.wall = wall
        self.clock = clock
        self._acting_since: float | None = None
        self._mine: set[str] = set()
        """Marks of this feeder's hand-outs still in progress (typing, or a start in a worker)."""
        self._mine_lock = threading.Lock()
        self._following: dict[str, _Following] = {}
        self._refused: dict[PaneId, tuple[float, int]] = {}
        """Agents that refused a task: until when they are left out, and how many refusals in a row."""
        self._missing: dict[PaneId, float] = {}
        """Panes a task is with that the fleet did not list, since when (clock)."""
        self._typing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nbs-queue-type")
        """Hand-outs typed in queue order, each once the one before was submitted (a few sidecar
        ticks): the prompts reach the agents in the queue's order; following goes on meanwhile."""
        self._workers_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nbs-queue-start")
        """Starts (seconds each), two at once."""
        self._store_lock = threading.RLock()
        """The store and the queue it folds are one reader/writer's: the feeder's look and its
        workers' outcome writes take turns (a refresh mid-look would change the queue under it)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reported: set[str] = set()

    # -- the thread ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="nbs-queue", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self._typing.shutdown(wait=False, cancel_futures=True)
        self._workers_pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as error:  # one bad look must not end the queue
                log.exception("queue feeder tick failed")
                self._problem(f"work queue: {error}")
            self._stop.wait(self.interval)

    def _problem(self, message: str) -> None:
        if message not in self._reported:  # once each: a file that stays bad is not news each second
            self._reported.add(message)
            self.outlet.emit(SidecarError("", self.wall(), message))

    # -- one look ------------------------------------------------------------------------------

    def acting(self) -> bool:
        if self.lease is not None and not self.lease.acting():
            self._acting_since = None
            return False
        now = self.clock()
        if self._acting_since is None:
            self._acting_since = now
        return now - self._acting_since >= (SETTLE if self.lease is not None else 0.0)

    def _refresh(self) -> QueueState:
        with self._store_lock:
            return self.store.refresh()

    def tick(self) -> None:
        if not self.acting():
            return
        with self._store_lock:  # the workers' outcomes wait (a look takes milliseconds): one queue read at a time
            self._look()

    def _look(self) -> None:
        queue = self._refresh()
        for problem in self.store.problems:
            self._problem(problem)
        if not any(task.state is TaskState.QUEUED or task.state.out for task in queue):
            return  # nothing to do: no tmux round trip
        infos = {p.pane_id: p for p in self.fleet.panes() if p.is_agent and not p.dead}
        held = {task.pane for task in queue if task.state.out}
        for pane in [p for p in self._missing if p in infos or p not in held]:
            del self._missing[pane]
        agents = self._agents(queue, infos)
        now = self.wall()
        for task in list(queue):
            if task.state is TaskState.HANDING:
                self._settle(task, infos.get(task.pane) if task.pane else None, agents, now)
            elif task.state in (TaskState.RUNNING, TaskState.NEEDS):
                self._follow(task, infos.get(task.pane), agents.get(task.pane), now)
        for task, why in blocked_for_good(self._refresh()):
            self._write_if(task, TaskState.QUEUED, TaskFailed(task.id, now, why, final=True))
        self._hand_out(now)

    def _agents(self, queue: QueueState, infos: Mapping[PaneId, PaneInfo]) -> dict[PaneId, QueueAgent]:
        snapshot = self.panes.snapshot
        switches = self.lease.panes if self.lease is not None else {}
        workers = self._workers() if any(t.added.agents for t in queue if t.state is TaskState.QUEUED) else {}
        agents: dict[PaneId, QueueAgent] = {}
        for pane_id, info in infos.items():
            status = snapshot.statuses.get(pane_id)
            state = status.state.value if status is not None else ""
            pane = switches.get(pane_id)
            busy = (status is not None and status.injecting) or (
                pane is not None and (pane.inflight is not None or pane.start_claim is not None)
            )
            if pane_id in snapshot.escalated and state == AgentState.IDLE.value:
                state = "stuck"
            agents[pane_id] = QueueAgent(
                pane=pane_id,
                folder=info.current_path,
                window=info.window_name,
                worker=workers.get(pane_id, ""),
                state="busy" if busy else state,
            )
        return agents

    def _workers(self) -> dict[PaneId, str]:
        commands = self.fleet.commands
        if commands is None:
            return {}
        try:
            lines = commands.run("list-panes", "-a", "-F", f"#{{pane_id}}\t#{{{WORKER}}}").lines
        except TmuxError as error:
            log.info("worker names not read: %s", error)
            return {}
        return dict(line.split("\t", 1) for line in lines if "\t" in line)

    def _write_if(self, task: Task, state: TaskState, record: Record) -> bool:
        """Append ``record`` only if ``task`` is still in ``state`` (and, when handing, still the
        same hand-out): a cancel or another outcome in between wins."""
        mark = task.handing.mark if task.handing is not None else None

        def decide(queue: QueueState) -> Record | None:
            now = queue.get(task.id)
            if now is None or now.state is not state:
                return None
            if mark is not None and (now.handing is None or now.handing.mark != mark):
                return None
            return record

        try:
            with self._store_lock:
                return self.store.append_checked(decide) is not None
        except OSError as error:
            self._problem(f"work queue not written ({self.store.path}): {error.strerror or error}")
            return False

    # -- 2. settling a hand-out nobody finished ---------------------------------------------

    def _settle(self, task: Task, info: PaneInfo | None, agents: Mapping[PaneId, QueueAgent], now: float) -> None:
        handing = task.handing
        assert handing is not None
        with self._mine_lock:
            if handing.mark in self._mine:
                return  # still being typed or started here
        pane = handing.pane
        if not pane:  # a start: the window it was to make names the agent
            pane = self._window_pane(handing.window)
            if not pane:
                if now - handing.at >= GRACE:
                    self._unhand(task, now, "the agent for it was not started")
                return
            info = {p.pane_id: p for p in self.fleet.panes()}.get(pane)
        if info is None:
            if not self._gone(pane):
                return  # missing from one look (tmux reconnecting...): look again
            turn = self._turn(task, handing, pane)
            if turn.found:  # it went in, and the agent is gone since
                self._write_if(task, TaskState.HANDING, TaskHanded(task.id, now, handing.mark, pane, by=self._token()))
            else:
                self._unhand(task, now, "its agent is gone")
            return
        agent = agents.get(pane)
        switches = self.lease.panes.get(pane) if self.lease is not None else None
        if switches is not None and (switches.inflight is not None or switches.start_claim is not None):
            return  # the box may still hold it: the sidecar recovers the mark first
        turn = self._turn(task, handing, pane)
        if turn.found:
            self._write_if(task, TaskState.HANDING, TaskHanded(task.id, now, handing.mark, pane, self._session(pane), by=self._token()))
            return
        idle = agent is not None and agent.idle
        if idle and now - handing.at >= GRACE:
            self._unhand(task, now, "the prompt did not go in")
        elif not idle and now - handing.at >= GIVE_UP:
            self._unhand(task, now, f"the prompt did not go in ({agent.state if agent else 'no agent'} for {GIVE_UP:.0f} s)")

    def _gone(self, pane: PaneId) -> bool:
        """The pane has been missing from the fleet for `GONE_AFTER` (one look without it is not
        enough: a fleet that reconnects lists no panes for a moment)."""
        now = self.clock()
        since = self._missing.setdefault(pane, now)
        return now - since >= GONE_AFTER

    def _unhand(self, task: Task, now: float, why: str) -> None:
        assert task.handing is not None
        self._write_if(task, TaskState.HANDING, TaskUnhanded(task.id, now, task.handing.mark, why, by=self._token()))

    def _window_pane(self, window: str) -> PaneId:
        for info in self.fleet.panes():
            if window and info.window_name == window:
                return info.pane_id
        return ""

    def _session(self, pane: PaneId) -> str:
        signals = self.monitor.signals
        facts = signals.facts(pane) if signals is not None else None
        return (facts.session_id or "") if facts is not None else ""

    def _transcript(self, pane: PaneId) -> tuple[str, int]:
        """The agent's transcript path ("" unknown) and its size now."""
        signals = self.monitor.signals
        facts = signals.facts(pane) if signals is not None else None
        if facts is None:
            return "", 0
        path = self.turns.transcript(facts.transcript_path or "", facts.session_id or "")
        if path is None:
            return "", 0
        try:
            return str(path), path.stat().st_size
        except OSError:
            return str(path), 0

    def _turn(self, task: Task, handing: TaskHanding, pane: PaneId) -> PromptTurn:
        """The task's prompt in the agent's transcript (the one known at the hand-out, else the
        one the agent has now: a new agent's transcript begins with its first prompt)."""
        path = handing.transcript or self._transcript(pane)[0]
        if not path:
            return PromptTurn()
        prompt = task.text or self._worker_prompt(task)
        if not prompt:
            return PromptTurn()
        offset = handing.offset if handing.transcript == path else 0
        return self.turns.turn(Path(path), prompt, handing.at, offset)

    def _worker_prompt(self, task: Task) -> str:
        try:
            return (Path(task.folder) / ".nbs" / "workers" / f"{task.worker}.md").read_text(encoding="utf-8").rstrip("\n")
        except (OSError, UnicodeDecodeError):
            return ""

    # -- 3. following a task out ----------------------------------------------------------------

    def _follow(self, task: Task, info: PaneInfo | None, agent: QueueAgent | None, now: float) -> None:
        seen = self._following.setdefault(task.id, _Following())
        if info is None or agent is None:
            if self._gone(task.pane):
                self._fail(task, now, "its agent exited")
            return
        state = agent.state
        if state == AgentState.LIMITED.value:
            self._fail(task, now, "its agent hit its usage limit")
            return
        needs = {s.value: why for s, why in NOT_IDLE_NEEDS.items()}.get(state)
        if needs is not None:
            if task.state is TaskState.RUNNING:
                self._write_if(task, TaskState.RUNNING, TaskNeeds(task.id, now, needs))
            return
        if state == AgentState.WORKING.value:
            seen.worked, seen.idle_since = True, None
            if task.state is TaskState.NEEDS:
                self._write_if(task, TaskState.NEEDS, TaskRunning(task.id, now))
            return
        if state == AgentState.ERROR.value:
            self._fail(task, now, "its agent shows an error")
            return
        if not agent.idle:
            return
        seen.idle_since = seen.idle_since if seen.idle_since is not None else now
        turn = self._running_turn(task)
        if turn.found:
            if turn.state is AgentState.ERROR:
                self._fail(task, now, f"API error: {turn.error}" if turn.error else "API error")
            elif turn.over:
                self._done(task, now, turn.reply or "")
            return
        if seen.worked and now - seen.idle_since >= DONE_QUIET:  # no transcript to read
            signals = self.monitor.signals
            facts = signals.facts(task.pane) if signals is not None else None
            self._done(task, now, (facts.last_assistant_message or "") if facts is not None else "")

    def _running_turn(self, task: Task) -> PromptTurn:
        path, _size = self._transcript(task.pane)
        prompt = task.text or self._worker_prompt(task)
        if not path or not prompt:
            return PromptTurn()
        return self.turns.turn(Path(path), prompt, task.handed_at, 0)

    def _done(self, task: Task, now: float, message: str) -> None:
        if self._write_if(task, task.state, TaskDone(task.id, now, message)):
            self._following.pop(task.id, None)

    def _fail(self, task: Task, now: float, why: str) -> None:
        if self._write_if(task, task.state, TaskFailed(task.id, now, why)):
            self._following.pop(task.id, None)

    # -- 4. handing out --------------------------------------------------------------------------

    def _hand_out(self, now: float) -> None:
        queue = self._refresh()
        if queue.paused or (self.lease is not None and self.lease.paused):
            return  # the queue's pause, or the sidecar's (@nbs_pause: it acts nowhere)
        infos = {p.pane_id: p for p in self.fleet.panes() if p.is_agent and not p.dead}
        resting = {pane for pane, (until, _n) in list(self._refused.items()) if until > self.clock()}
        agents = [a for pane, a in self._agents(queue, infos).items() if pane not in resting]
        for handout in plan_handouts(queue, agents, self.limits):
            if not self.acting():
                return
            task = handout.task
            if handout.starts:
                if self.start_agent is not None:
                    self._start(task, now)
                continue
            if self.deliver is None:
                continue
            try:
                text = clean_text(task.text)
            except ValueError as error:  # never typed, whatever agent takes it
                self._write_if(task, TaskState.QUEUED, TaskFailed(task.id, now, str(error), final=True))
                continue
            path, size = self._transcript(handout.pane)
            handing = TaskHanding(
                task.id, self.wall(), pane=handout.pane, token=self._token(), mark=self._new_mark(), transcript=path,
                offset=size,
            )  # fmt: skip
            if self._begin(task, handing):  # typed one after the other, in order, off the feeder's thread
                self._typing.submit(self._deliver_now, task, handing, text)

    def _deliver_now(self, task: Task, handing: TaskHanding, text: str) -> None:
        assert self.deliver is not None
        pane = handing.pane
        try:
            delivered: Delivered | None = self.deliver(pane, text, f"queue task {task.id}")
        except Exception as error:  # unknown whether it went in: settled from the pane next look
            log.exception("queue delivery failed")
            self._problem(f"work queue: typing task {task.id} failed: {error}")
            delivered = None
        try:
            if delivered is None or delivered.result == DeliveryResult.FAILED.value:
                return  # unknown whether it went in: settled from the pane and its transcript
            if delivered.ok:
                self._refused.pop(pane, None)
                record: Record = TaskHanded(task.id, self.wall(), handing.mark, pane, self._session(pane), by=self._token())
            else:
                refusals = self._refused.get(pane, (0.0, 0))[1] + 1  # 10 s, 20 s, 40 s... at most 5 min
                self._refused[pane] = (self.clock() + min(REFUSED_REST * 2 ** (refusals - 1), 300.0), refusals)
                record = TaskUnhanded(task.id, self.wall(), handing.mark, f"refused: {delivered.reason}", by=self._token())
            self._write_outcome(task, handing, record)
        finally:  # only now may `_settle` look at it (the outcome is on disk, or it must decide)
            with self._mine_lock:
                self._mine.discard(handing.mark)

    def _write_outcome(self, task: Task, handing: TaskHanding, record: Record) -> None:
        """Settle ``handing`` with ``record``, if the task is still in that hand-out."""
        self._write_if(replace(task, state=TaskState.HANDING, handing=handing), TaskState.HANDING, record)

    def _new_mark(self) -> str:
        return f"{self._token() or 'local'}.{secrets.token_hex(4)}"

    def _token(self) -> str:
        return self.lease.token if self.lease is not None else ""

    def _begin(self, task: Task, handing: TaskHanding) -> bool:
        """Write the in-flight mark (the task still queued, the queue not paused); True if written."""
        with self._mine_lock:
            self._mine.add(handing.mark)

        def decide(queue: QueueState) -> Record | None:
            now = queue.get(task.id)
            return handing if now is not None and now.state is TaskState.QUEUED and not queue.paused else None

        try:
            with self._store_lock:
                if self.store.append_checked(decide) is not None:
                    return True
        except OSError as error:
            self._problem(f"work queue not written ({self.store.path}): {error.strerror or error}")
        with self._mine_lock:
            self._mine.discard(handing.mark)
        return False

    def _start(self, task: Task, now: float) -> None:
        assert self.start_agent is not None
        name = f"task-{task.id}" if not task.handouts and not task.failures else f"task-{task.id}-{task.failures + 1}"
        handing = TaskHanding(task.id, self.wall(), window=name, token=self._token(), mark=self._new_mark())
        if not self._begin(task, handing):
            return
        request = StartRequest(folder=task.folder, name=name, prompt=task.text, worker=task.worker)
        self._workers_pool.submit(self._start_now, task, handing, request)

    def _start_now(self, task: Task, handing: TaskHanding, request: StartRequest) -> None:
        assert self.start_agent is not None
        try:
            started = self.start_agent(request)
        except Exception as error:  # settled from what tmux shows next look
            log.info("queue start of task %s failed: %s", task.id, error)
            self._problem(f"work queue: starting an agent for task {task.id} failed: {error}")
            started = None
        try:
            if started is not None and started.prompt_submitted:  # else the window, claim and transcript decide
                record = TaskHanded(task.id, self.wall(), handing.mark, started.pane_id, started.session_id, by=self._token())
                self._write_outcome(task, handing, record)
        finally:
            with self._mine_lock:
                self._mine.discard(handing.mark)
