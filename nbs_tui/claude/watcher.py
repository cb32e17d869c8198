"""ClaudeSignals: the hook spool, session-status files and transcripts, per watched pane.

One daemon thread ("nbs-claude-signals") polls: the spool every ``interval`` (0.2 s: a stat and,
when it grew, one read), the panes' status files and transcripts every ``refresh`` (0.5 s), and
``/proc`` to map panes to Claude processes every ``rescan`` (2 s, or at once after set_panes or
a SessionStart). It keeps one :class:`ClaudeFacts` per pane and calls the listener, on its own
thread, with the panes whose facts changed. ``facts()``/``all_facts()`` may be called from any
thread: the values are frozen and swapped whole.

Incremental, so that a fleet of 200 agents costs little: a rescan walks only the process trees
of panes with no live Claude process (`subtree_table`, not all of ``/proc``); whether the found
processes still run is one ``poll`` of their pidfds (`ExitWatch`); a status file or transcript
is read only when its stat changed (or when it was modified within `RACY` seconds of the last
read, as git does: a rewrite in the same clock tick keeps its size and mtime); hook events
refresh only their panes between two
refreshes; and facts are rebuilt only for the panes something happened to. ``poll_once`` (tests,
one-shots) still does everything.

Wiring (runner / app)::

    signals = ClaudeSignals(settings, listener)        # listener.claude_facts_changed(dict)
    signals.start()
    fleet listener -> signals.set_panes(panes)         # the whole fleet, on every change
    per tick:  facts = signals.facts(pane_id)          # None until anything is known
               fused = fuse([screen_reading(det, changed_at), *facts.readings], now, prev)
    signals.stop()
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from nbs_tui.claude.spool import HookEvent, SpoolReader, rotate
from nbs_tui.claude.status import (
    ClaudeProcess,
    ExitWatch,
    SessionStatus,
    find_claude_process,
    process_table,
    read_status_file,
    subtree_table,
)
from nbs_tui.claude.transcript import ApiError, TranscriptTail, find_transcript
from nbs_tui.config import Settings
from nbs_tui.core.detection.fusion import MENU_STATES, Reading, Source
from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo, ServerAddress
from nbs_tui.core.fleet.problems import ProblemSink
from nbs_tui.core.fleet.process_tree import children_map
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.core.sidecar.stuck_agents import Liveness
from nbs_tui.tmux.address import socket_path_of

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClaudeFacts:
    """Everything the exact sources say about one pane's agent (all times wall-clock seconds)."""

    pane_id: PaneId
    liveness: Liveness = Liveness.UNKNOWN
    liveness_why: str = ""
    pid: int | None = None
    session_id: str | None = None
    model: str | None = None
    project: str | None = None
    """The agent's working folder (``cwd``)."""
    version: str | None = None
    transcript_path: str | None = None
    transcript_size: int | None = None
    transcript_grew_at: float | None = None
    last_assistant_message: str | None = None
    last_assistant_at: float | None = None
    api_error: ApiError | None = None
    hook: Reading | None = None
    status: Reading | None = None
    transcript: Reading | None = None
    last_hook_event: str | None = None
    last_hook_at: float | None = None
    last_prompt: str | None = None
    """The last prompt submitted (UserPromptSubmit), ours or a person's."""
    permission_mode: str | None = None
    """``default``, ``plan``, ``acceptEdits``, ``auto``... as the last hook event reported it."""
    meters: Meters | None = None
    """Tokens and context from the transcript's usage records (None: no transcript read)."""

    @property
    def readings(self) -> tuple[Reading, ...]:
        """The exact sources' readings, ready for :func:`nbs_tui.core.detection.fusion.fuse`."""
        return tuple(r for r in (self.hook, self.status, self.transcript) if r is not None)


PROBLEM_SOURCE = "Claude Code signals"

RACY = 0.1
"""A file modified this close to (or after) our read of it is read again at the next refresh
whatever its stat says: a rewrite of the same size in the same kernel clock tick (a few ms)
leaves the stat as it was."""

WALK_BUDGET = 200
"""Process trees a rescan walks at most besides the panes new or changed since their last walk
(what `nbs_tui.tmux.discovery.WALK_BUDGET` is to the fleet's listing): past that, the panes where
no Claude Code process was found are walked in turns, each every ``panes / 200`` rescans. A
Claude Code started there is found sooner all the same: its SessionStart hook asks for a walk,
and the pane's current command or title changes."""


class ClaudeSignalsListener(Protocol):
    def claude_facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        """These panes' facts changed (called on the signals thread; must not block)."""


# -- pure translations -------------------------------------------------------------------------


def hook_reading(event: HookEvent, previous: Reading | None) -> Reading | None:
    """What a hook event says about the agent's state; None for events that say nothing."""
    name = event.event
    tool = event.text("tool_name") or ""
    detail = f"{name} {tool}".strip()
    if name == "SessionStart":
        return Reading(Source.HOOK, AgentState.IDLE, event.time, f"SessionStart ({event.text('source') or '?'})")
    if name in ("UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "SubagentStart", "PreCompact"):
        return Reading(Source.HOOK, AgentState.WORKING, event.time, detail)
    if name == "PreToolUse":
        if tool == "AskUserQuestion":
            return Reading(Source.HOOK, AgentState.QUESTION, event.time, detail)
        return Reading(Source.HOOK, AgentState.WORKING, event.time, detail)
    if name == "PermissionRequest":
        state = {"ExitPlanMode": AgentState.PLAN, "AskUserQuestion": AgentState.QUESTION}.get(tool, AgentState.PERMISSION)
        return Reading(Source.HOOK, state, event.time, detail)
    if name == "Notification":
        kind = event.text("notification_type") or ""
        if kind == "permission_prompt":
            if previous is not None and previous.state in MENU_STATES:
                return replace(previous, at=event.time, detail=f"{previous.detail}; Notification permission_prompt")
            return Reading(Source.HOOK, AgentState.PERMISSION, event.time, "Notification permission_prompt")
        if kind == "idle_prompt":
            return Reading(Source.HOOK, AgentState.IDLE, event.time, "Notification idle_prompt")
        if kind == "elicitation_dialog":
            return Reading(Source.HOOK, AgentState.DIALOG, event.time, "Notification elicitation_dialog")
        return None
    if name == "Stop":
        return Reading(Source.HOOK, AgentState.IDLE, event.time, "Stop")
    if name == "StopFailure":
        return Reading(Source.HOOK, AgentState.ERROR, event.time, "StopFailure")
    if name == "SessionEnd":
        return Reading(Source.HOOK, AgentState.UNKNOWN, event.time, f"SessionEnd ({event.text('reason') or '?'})")
    return None


def status_reading(status: SessionStatus) -> Reading:
    state = {"idle": AgentState.IDLE, "busy": AgentState.WORKING, "waiting": AgentState.PERMISSION}.get(
        status.status, AgentState.UNKNOWN
    )
    detail = status.status + (f": {status.waiting_for}" if status.waiting_for else "")
    return Reading(Source.STATUS, state, status.updated_at, detail)


def server_socket(server: ServerAddress, environ: Mapping[str, str] | None = None) -> str:
    """The socket path of the tmux server nbs-tui watches (``$TMUX`` was already applied
    where the command line was read: `nbs_tui.tmux.address.default_server`)."""
    return os.path.realpath(socket_path_of(server, environ))


# -- per-pane bookkeeping (only touched on the signals thread, under the lock) -----------------


class _Pane:
    def __init__(self, info: PaneInfo) -> None:
        self.info = info
        self.process: ClaudeProcess | None = None
        self.status: SessionStatus | None = None
        self.exited_pid: int | None = None
        self.session_ended: str | None = None
        self.hook: Reading | None = None
        self.last_event: HookEvent | None = None
        self.hook_message: tuple[str, float] | None = None
        self.hook_model: str | None = None
        self.hook_cwd: str | None = None
        self.last_prompt: str | None = None
        self.permission_mode: str | None = None
        self.session_id: str | None = None
        self.session_at: float | None = None
        """The newest time a source named ``session_id`` (a hook event's, the status file's
        ``statusUpdatedAt``, the transcript's last growth): older news of another session loses."""
        self.transcript_path: Path | None = None
        self.tail: TranscriptTail | None = None
        self.status_path: tuple[ClaudeProcess, Path] | None = None
        """The process's status file, built once per process (pathlib is slow at 400 a second)."""
        self.seen: dict[Path, tuple[tuple[object, ...], bool]] = {}
        """Per file read: its stat at the last read, and whether that read was racy
        (`ClaudeSignals._changed`)."""
        self.walked: PaneInfo | None = None
        """The pane as it was when its process tree was last walked (`WALK_BUDGET`)."""


class ClaudeSignals:
    """Watch the exact Claude Code signals for a set of panes (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        listener: ClaudeSignalsListener | None = None,
        *,
        tmux_socket: str | None = None,
        interval: float = 0.2,
        refresh: float = 0.5,
        rescan: float = 2.0,
        clock: Callable[[], float] = time.time,
        problems: ProblemSink | None = None,
        hook_tap: Callable[[HookEvent], None] | None = None,
    ) -> None:
        self._settings = settings
        self._problems = problems
        self._hook_tap = hook_tap
        """Also hears every hook event read (on this thread): the change column's writes."""
        """Where problems worth showing a person go (bad spool lines, unreadable files)."""
        self._listener = listener
        self._socket = os.path.realpath(tmux_socket) if tmux_socket else server_socket(settings.server)
        self._interval = interval
        self._refresh = refresh
        self._rescan = rescan
        self._clock = clock
        self._spool = SpoolReader(settings.hook_spool, clock=clock)
        self._lock = threading.Lock()
        self._panes: dict[PaneId, _Pane] = {}
        self._pending_panes: Sequence[PaneInfo] | None = None
        self._gone: dict[PaneId, ClaudeFacts] = {}
        self._early: dict[PaneId, list[HookEvent]] = {}
        self._facts: dict[PaneId, ClaudeFacts] = {}
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_refresh = 0.0
        self._last_rescan = 0.0
        self._rescan_now = True
        self._env_cache: dict[tuple[int, str], list[Path]] = {}
        self._turn = 0
        """Rescans past `WALK_BUDGET` so far: whose turn the unchanged panes' walk is."""
        self._turns = 1
        """Into how many turns the last rescan split the unchanged panes."""
        self._walked_lately: set[tuple[int, str]] = set()
        """Processes walked since the environment cache was last pruned (after a whole round
        of turns: a pane not walked this turn keeps what its process's environment said)."""
        self._exits = ExitWatch()
        self._dirty: set[PaneId] = set()
        """Panes whose facts may have changed since the last publish."""
        self._touched: set[PaneId] = set()
        """Panes hook events reached in this cycle (refreshed at once)."""
        self._spool_trouble: dict[str, str | None] = {}
        """Per step (read, rotate): the spool's problem last reported (reported again only once
        it was gone meanwhile)."""

    # -- public API ------------------------------------------------------------------------

    @property
    def tmux_socket(self) -> str:
        return self._socket

    def start(self) -> None:
        """Start the polling thread; returns at once."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="nbs-claude-signals", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop and join the thread."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            running = self._thread.is_alive()
            self._thread = None
            if running:
                return  # still in a cycle: its pidfds are its own until it ends
        self._exits.close()

    def set_panes(self, panes: Sequence[PaneInfo]) -> None:
        """The whole fleet as discovered (every pane; agents or not). Any thread."""
        with self._lock:
            self._pending_panes = list(panes)
        self._wake.set()

    def facts(self, pane_id: PaneId) -> ClaudeFacts | None:
        """The latest facts for a pane (any thread); None when the pane is not watched."""
        return self._facts.get(pane_id)

    def all_facts(self) -> dict[PaneId, ClaudeFacts]:
        return dict(self._facts)

    def poll_once(self) -> dict[PaneId, ClaudeFacts]:
        """One full cycle on the caller's thread (tests, headless one-shots); returns what changed."""
        return self._cycle(force=True)

    # -- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._cycle(force=False)
            except Exception as error:  # one bad cycle must not end the watcher: report it
                log.exception("claude signals cycle failed")
                self._error(f"claude signals: {type(error).__name__}: {error}")
            self._wake.wait(self._interval)
            self._wake.clear()

    def _error(self, message: str) -> None:
        if self._problems is None:  # no one to show it to: the log at least has it
            log.warning("%s", message)
            return
        try:
            self._problems(PROBLEM_SOURCE, message)
        except Exception:
            log.exception("claude signals problem sink failed on: %s", message)

    def _spool_checked(self, step: str) -> None:
        """Report the spool reader's trouble once per episode, not on every 0.2 s cycle."""
        trouble, self._spool.last_error = self._spool.last_error, None
        if trouble is not None and trouble != self._spool_trouble.get(step):
            self._error(f"hook spool: {trouble}")
        self._spool_trouble[step] = trouble

    def _cycle(self, force: bool) -> dict[PaneId, ClaudeFacts]:
        now = self._clock()
        with self._lock:
            pending, self._pending_panes = self._pending_panes, None
        if pending is not None:
            self._apply_panes(pending)
        events = self._spool.read()
        self._spool_checked("read")
        for event in events:
            self._route(event)
        if force or self._rescan_now or now - self._last_rescan >= self._rescan:
            self._rescan_now = False
            self._last_rescan = now
            self._map_processes(every=force)
            rotated = rotate(self._settings.hook_spool, self._spool)
            if rotated is not None:
                late = rotated[1] + self._spool.read()
                for event in late:
                    self._route(event)
                events = events + late
            self._spool_checked("rotate")
        if force or pending is not None or now - self._last_refresh >= self._refresh:
            self._last_refresh = now
            self._exits.refresh()
            for pane in self._panes.values():
                self._refresh_pane(pane, force)
        elif self._touched:
            self._exits.refresh()
            for pane_id in self._touched:
                touched = self._panes.get(pane_id)
                if touched is not None:
                    self._refresh_pane(touched, force)
        self._touched.clear()
        return self._publish(full=force)

    def _apply_panes(self, panes: Sequence[PaneInfo]) -> None:
        seen = set()
        for info in panes:
            seen.add(info.pane_id)
            pane = self._panes.get(info.pane_id)
            if pane is None or pane.info.pid != info.pid:
                pane = self._panes[info.pane_id] = _Pane(info)
                self._dirty.add(info.pane_id)
                for event in self._early.pop(info.pane_id, []):
                    self._apply_event(pane, event)
            elif pane.info != info:
                pane.info = info
                self._dirty.add(info.pane_id)
        for pane_id in [p for p in self._panes if p not in seen]:
            old = self._facts.get(pane_id) or ClaudeFacts(pane_id)
            self._gone[pane_id] = replace(old, liveness=Liveness.GONE, liveness_why="the pane's tmux session is gone")
            del self._panes[pane_id]
        self._rescan_now = True

    # -- hooks -------------------------------------------------------------------------------

    def _route(self, event: HookEvent) -> None:
        if self._hook_tap is not None:
            self._hook_tap(event)
        if event.tmux_socket and os.path.realpath(event.tmux_socket) != self._socket:
            by_session = self._pane_for_session(event.session_id)
            if by_session is None:
                return
            self._apply_event(by_session, event)
            return
        pane = self._panes.get(event.pane_id) if event.pane_id else None
        if pane is None:
            pane = self._pane_for_session(event.session_id)
        if pane is None:
            if event.pane_id and (event.pane_id in self._early or len(self._early) < 1000):
                early = self._early.setdefault(event.pane_id, [])
                early.append(event)
                del early[:-20]
            return
        self._apply_event(pane, event)

    def _pane_for_session(self, session_id: str | None) -> _Pane | None:
        if not session_id:
            return None
        for pane in self._panes.values():
            if pane.session_id == session_id:
                return pane
        return None

    def _apply_event(self, pane: _Pane, event: HookEvent) -> None:
        if pane.last_event is not None and event.time < pane.last_event.time:
            return
        if not self._claim_session(pane, event.session_id, event.time):
            return  # the pane moved on to a session named later (its status file, say)
        pane.last_event = event
        self._dirty.add(pane.info.pane_id)
        self._touched.add(pane.info.pane_id)
        reading = hook_reading(event, pane.hook)
        if reading is not None:
            pane.hook = reading
        if event.transcript_path:
            path = Path(event.transcript_path)
            if pane.transcript_path != path:
                pane.transcript_path = path
                pane.tail = TranscriptTail(path)
                pane.seen.pop(path, None)
        if event.cwd:
            pane.hook_cwd = event.cwd
        mode = event.text("permission_mode")
        if mode:
            pane.permission_mode = mode
        if event.event == "UserPromptSubmit":
            pane.last_prompt = event.text("prompt")
        if event.event == "SessionStart":
            pane.walked = None  # walked at the rescan it asks for, whatever the budget
            pane.session_ended = None
            pane.exited_pid = None
            model = event.text("model")
            if model:
                pane.hook_model = model
            self._rescan_now = True
        elif event.event == "SessionEnd":
            pane.session_ended = event.text("reason") or "ended"
        elif event.event == "Stop":
            message = event.text("last_assistant_message")
            if message:
                pane.hook_message = (message, event.time)

    def _claim_session(self, pane: _Pane, session_id: str | None, at: float) -> bool:
        """A source says the pane's agent is in ``session_id`` as of ``at``; the newest word
        wins (after ``/clear`` the SessionStart hook names the new session while the status
        file may still name the old one). False when ``session_id`` lost to newer news."""
        if not session_id:
            return True
        if session_id == pane.session_id:
            pane.session_at = at if pane.session_at is None else max(pane.session_at, at)
            return True
        if pane.session_at is not None and at < pane.session_at:
            return False
        self._switch_session(pane, session_id, at)
        return True

    def _switch_session(self, pane: _Pane, session_id: str, at: float) -> None:
        self._dirty.add(pane.info.pane_id)
        pane.session_id = session_id
        pane.session_at = at
        pane.transcript_path = None
        pane.tail = None

    # -- processes, status files, transcripts -----------------------------------------------

    def _map_processes(self, every: bool = False) -> None:
        """Find the Claude process of each pane that has none running (``every``: of all)."""
        if not self._panes:
            return
        self._exits.refresh()
        todo = [
            pane for pane in self._panes.values()
            if every or pane.process is None or not self._exits.alive(pane.process.pid, pane.process.start)
        ]  # fmt: skip
        if not every:
            todo = self._in_budget(todo)
        table = None
        children = None
        walked: set[tuple[int, str]] = set()
        preferred = [self._settings.claude_home]
        for pane in todo:
            pane.walked = pane.info
            self._dirty.add(pane.info.pane_id)
            sub = subtree_table(pane.info.pid)
            if sub is None:  # no children files: one pass over all of /proc, as before
                if table is None:
                    table = process_table()
                    children = children_map(table)
                sub, sub_children = table, children
            else:
                sub_children = children_map(sub)
            walked.update((pid, info.start) for pid, info in sub.items())
            found = find_claude_process(
                pane.info.pid, sub, preferred, children=sub_children, env_cache=self._env_cache
            )
            if found is None:
                if pane.process is not None and not self._exits.alive(pane.process.pid, pane.process.start):
                    pane.exited_pid = pane.process.pid
                    pane.process = None
                    pane.status = None
                continue
            if pane.process is None or pane.process.pid != found.pid or pane.process.start != found.start:
                pane.process = found
                pane.exited_pid = None
                pane.session_ended = None
            if found.status is not None:
                self._take_status(pane, found.status)
                pane.seen.pop(found.status.path, None)  # read again at the next refresh
        self._walked_lately |= walked
        if todo and (self._turns <= 1 or self._turn % self._turns == 0):  # every pane walked since the last pruning
            for key in [k for k in self._env_cache if k not in self._walked_lately]:
                del self._env_cache[key]
            self._walked_lately = set()
        self._exits.keep({(p.process.pid, p.process.start) for p in self._panes.values() if p.process is not None})

    def _in_budget(self, todo: list[_Pane]) -> list[_Pane]:
        """Of the panes to walk, those new or changed since their last walk (or whose process
        ended, or that a SessionStart hook named) all, the others at most `WALK_BUDGET` at a time,
        in turns: a rescan of 1,000 idle shells walks 200 process trees, not 1,000."""
        fresh = [pane for pane in todo if pane.walked is not pane.info or pane.process is not None]
        unchanged = [pane for pane in todo if pane.walked is pane.info and pane.process is None]
        turns = self._turns = -(-len(unchanged) // WALK_BUDGET)
        if turns <= 1:
            return todo
        self._turn += 1
        return fresh + [pane for at, pane in enumerate(unchanged) if at % turns == self._turn % turns]

    def _changed(self, pane: _Pane, path: Path, force: bool) -> bool:
        """Whether ``path`` may hold something new since the pane last read it (a stat); if so
        the caller reads it now."""
        now_ns = time.time_ns()
        try:
            info = os.stat(path)
            key: tuple[object, ...] = (info.st_ino, info.st_size, info.st_mtime_ns)
            racy = info.st_mtime_ns >= now_ns - int(RACY * 1e9)
        except OSError:
            key, racy = (), False
        seen = pane.seen.get(path)
        if not force and seen is not None and seen == (key, False):
            return False
        pane.seen[path] = (key, racy)
        return True

    def _refresh_pane(self, pane: _Pane, force: bool = False) -> None:
        process = pane.process
        if process is not None:
            if not self._exits.alive(process.pid, process.start):
                pane.exited_pid = process.pid
                pane.process = None
                pane.status = None
                self._dirty.add(pane.info.pane_id)
            else:
                if pane.status_path is None or pane.status_path[0] is not process:
                    pane.status_path = (process, process.config_dir / "sessions" / f"{process.pid}.json")
                path = pane.status_path[1]
                if self._changed(pane, path, force):
                    status = read_status_file(path)
                    if status is not None:
                        self._take_status(pane, status)
        if pane.tail is None and pane.session_id and pane.process is not None:
            transcript = find_transcript(pane.process.config_dir, pane.session_id)
            if transcript is not None:
                pane.transcript_path = transcript
                pane.tail = TranscriptTail(transcript)
                pane.seen.pop(transcript, None)
                self._dirty.add(pane.info.pane_id)
        if pane.tail is not None and self._changed(pane, pane.tail.path, force) and pane.tail.read():
            self._dirty.add(pane.info.pane_id)
            grew = pane.tail.facts.grew_at
            if grew is not None and pane.tail.facts.session_id in (None, pane.session_id):
                self._claim_session(pane, pane.session_id, grew)  # the session is alive as of then

    def _take_status(self, pane: _Pane, status: SessionStatus) -> None:
        if status != pane.status:
            self._dirty.add(pane.info.pane_id)
        pane.status = status
        if not self._claim_session(pane, status.session_id, status.updated_at):
            return  # an older word than the pane's session (not rewritten after /clear)
        last = pane.last_event
        if (
            last is not None
            and last.session_id
            and status.session_id
            and last.session_id != status.session_id
            and last.time < status.updated_at
        ):
            # The pane's last hook events belong to an earlier session (hooks were installed
            # after this one started, or the spool was read from before it): not this agent's.
            pane.hook = None
            pane.hook_message = None
            pane.hook_model = None
            pane.last_event = None
            pane.last_prompt = None
            pane.permission_mode = None

    # -- facts -------------------------------------------------------------------------------

    def _liveness(self, pane: _Pane) -> tuple[Liveness, str]:
        if pane.info.dead:
            return Liveness.EXITED, "the pane's process is dead"
        if pane.process is not None:
            return Liveness.RUNNING, f"Claude Code pid {pane.process.pid}"
        if pane.exited_pid is not None:
            return Liveness.EXITED, f"Claude Code (pid {pane.exited_pid}) exited"
        if pane.session_ended is not None:
            return Liveness.EXITED, f"session ended ({pane.session_ended})"
        return Liveness.UNKNOWN, ""

    def _facts_for(self, pane: _Pane) -> ClaudeFacts:
        liveness, why = self._liveness(pane)
        tail = pane.tail.facts if pane.tail is not None else None
        status = pane.status
        message: tuple[str, float] | None = pane.hook_message
        if (
            tail is not None
            and tail.last_assistant_message
            and tail.last_assistant_at is not None
            and (message is None or tail.last_assistant_at > message[1])
        ):
            message = (tail.last_assistant_message, tail.last_assistant_at)
        transcript_reading = None
        if tail is not None and tail.state != AgentState.UNKNOWN and tail.state_at is not None:
            transcript_reading = Reading(Source.TRANSCRIPT, tail.state, tail.state_at, tail.state_why)
        return ClaudeFacts(
            pane_id=pane.info.pane_id,
            liveness=liveness,
            liveness_why=why,
            pid=pane.process.pid if pane.process is not None else None,
            session_id=pane.session_id,
            model=(tail.model if tail is not None and tail.model else None) or pane.hook_model,
            project=(status.cwd if status is not None else None) or pane.hook_cwd or (tail.cwd if tail else None),
            version=(status.version if status is not None else None) or (tail.version if tail else None),
            transcript_path=str(pane.transcript_path) if pane.transcript_path else None,
            transcript_size=tail.size if tail is not None else None,
            transcript_grew_at=tail.grew_at if tail is not None else None,
            last_assistant_message=message[0] if message else None,
            last_assistant_at=message[1] if message else None,
            api_error=tail.api_error if tail is not None else None,
            hook=pane.hook,
            status=status_reading(status) if status is not None and liveness == Liveness.RUNNING else None,
            transcript=transcript_reading,
            last_hook_event=pane.last_event.event if pane.last_event else None,
            last_hook_at=pane.last_event.time if pane.last_event else None,
            last_prompt=pane.last_prompt,
            permission_mode=pane.permission_mode,
            meters=tail.meters if tail is not None else None,
        )

    def _publish(self, full: bool = False) -> dict[PaneId, ClaudeFacts]:
        changed: dict[PaneId, ClaudeFacts] = {}
        dirty = self._panes.keys() if full else self._dirty & self._panes.keys()
        self._dirty = set()
        for pane_id in dirty:
            facts = self._facts_for(self._panes[pane_id])
            if self._facts.get(pane_id) != facts:
                changed[pane_id] = facts
        if changed or self._gone or len(self._facts) != len(self._panes):
            # readers on other threads get a new dict, never one changing under them
            fresh = {pane_id: facts for pane_id, facts in self._facts.items() if pane_id in self._panes}
            fresh.update(changed)
            self._facts = fresh
        for pane_id, facts in self._gone.items():
            changed[pane_id] = facts
        self._gone.clear()
        if changed and self._listener is not None:
            try:
                self._listener.claude_facts_changed(changed)
            except Exception as error:
                log.exception("claude facts listener failed")
                self._error(f"claude facts listener: {type(error).__name__}: {error}")
        return changed
