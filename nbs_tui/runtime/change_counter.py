"""`ChangeCounter`: the fleet list's change column (files, +/-) kept current for every agent pane
of this machine's server, from two kinds of news and never a timed scan (docs/review.md):

* a file changed in an agent's worktree (`nbs_tui.files.worktree_watch.WorktreeWatch`: one
  watchfiles watch over the folders git tracks in every agent's worktree, `tracked_folders`, and
  those its changes were seen in);
* an agent's Claude Code wrote a file (its PostToolUse hook, offered by Claude signals: who wrote
  it decides which agent counts it where several share a worktree), or ended a turn (its Stop
  hook: what its Bash commands changed is counted even where the watch failed).

Then, on its own thread (``nbs-change-counts``), that worktree's changes are read from git
(`nbs_tui.files.git_changes.read_folder_changes`: two git commands) once per base in use there,
and each of its agents' counts worked out (`nbs_tui.core.review.agent_changes.attribute`). A
worktree is read at most once per `MIN_GAP`, and all the reads together take at most
`CPU_BUDGET` of a core (the worktrees read longest ago first): a file written every second by
fifty agents costs a bounded share of a core, the counts then following more slowly
(bench/bench_change_column.py).

The review screen reads one agent's changes in full with `ChangeCounter.read_agent`: the same
worktree, base and attribution (`AgentPlace`, published whole after each read, for any thread).

A pane's worktree root is asked of git when its folder is first seen (or changes); its base is
``@nbs_base`` (read for every pane in one ``list-panes`` when the panes change) when that commit
is in the repository, else `fallback_base`. Only counts that changed are reported.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from nbs_tui.claude.hook_writes import WriteFollower, read_writes
from nbs_tui.claude.spool import HookEvent
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import PaneId, PaneInfo
from nbs_tui.core.review.agent_base import BASE_OPTION, parse_base
from nbs_tui.core.review.agent_changes import AgentChanges, ChangeCount, attribute
from nbs_tui.files.git_changes import (
    GitError,
    UntrackedCounter,
    fallback_base,
    has_commit,
    read_folder_changes,
    tracked_folders,
    worktree_root,
)
from nbs_tui.files.worktree_watch import WorktreeWatch
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import TmuxError

log = logging.getLogger(__name__)

MIN_GAP = 2.0
"""Seconds between two reads of one worktree at least: changes meanwhile are read together."""
CPU_BUDGET = 0.05
"""The share of a core the reads may take, however many worktrees change how often: CPU time
is earned at this rate (a token bucket holding at most `BURST` seconds) and each read spends the
CPU it took (this thread's and git's), the worktrees read longest ago first. A few busy agents
are read every `MIN_GAP`; fifty that each change a file every second are read every ~10-15 s
instead of taking a quarter of a core (a read costs ~11-16 ms, git's two commands most of it:
bench/results/2026-12-06-change-column.md)."""
BURST = 0.5
"""Seconds of reading saved up at most: a fleet's first reads, or a burst after a quiet spell."""
SETTLE = 0.2
"""Seconds a burst of news is let settle before the thread reads anything."""
PROBLEM_SOURCE = "change column"


def _cpu_now() -> float:
    """This thread's CPU time and the reaped children's (git's): what a read costs. A child another
    thread reaps meanwhile counts too (rare: the other threads run few processes)."""
    children = os.times()
    return time.thread_time() + children.children_user + children.children_system


@dataclass(frozen=True, slots=True)
class AgentPlace:
    """Where an agent's changes are read, as the counter last read them: for the review screen,
    which reads the same worktree against the same base (`ChangeCounter.read_agent`)."""

    folder: str
    root: str
    base: str | None
    shared: bool
    """Other agents work in the same worktree: the agent sees only its own files."""
    written: Mapping[str, PaneId]
    """Each file some agent's hooks wrote there (as git names it) -> the pane that wrote it last."""


class ChangeCounter:
    """Keeps every agent pane's `ChangeCount` (module docstring). ``report`` gets the counts that
    changed, on the counter's thread."""

    def __init__(
        self,
        settings: Settings,
        commands: Callable[[], TmuxServerCommands | None],
        tmux_socket: str,
        report: Callable[[Mapping[PaneId, ChangeCount]], None],
        problem: Callable[[str, str], None],
        *,
        min_gap: float = MIN_GAP,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._settings = settings
        self._commands = commands
        self._report = report
        self._problem = problem
        self._min_gap = min_gap
        self._clock = clock
        self._follower = WriteFollower(tmux_socket)
        self._untracked = UntrackedCounter()
        self._watch = WorktreeWatch(self._roots_changed, lambda message: problem(PROBLEM_SOURCE, message))
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        # handed over under the lock, taken by the thread
        self._pending_panes: dict[PaneId, str] | None = None
        self._pending_events: list[HookEvent] = []
        self._pending_roots: set[str] = set()
        # the thread's own
        self._folders: dict[PaneId, str] = {}
        self._root_of_folder: dict[str, str | None] = {}
        self._bases: dict[PaneId, str | None] = {}
        self._fallbacks: dict[str, str | None] = {}
        self._spool_read = False
        self._watched: dict[str, frozenset[str]] = {}
        """Worktree root -> its folders watched (`tracked_folders`, and those changes were seen in)."""
        self._dirty: set[str] = set()
        self._last_read: dict[str, float] = {}
        self.counts: dict[PaneId, ChangeCount] = {}
        """The counts last reported (the counter's thread only)."""
        self.places: Mapping[PaneId, AgentPlace] = {}
        """Each agent's `AgentPlace` at its last read: replaced whole, so any thread may read it."""
        self.reads = 0
        """Worktree reads so far (tests, benches)."""
        self._tokens = BURST
        """Seconds of reading the budget allows now (`CPU_BUDGET`); below zero: owed."""
        self._tokens_at = clock()

    # -- news, from any thread --------------------------------------------------------------------

    def set_panes(self, panes: Sequence[PaneInfo]) -> None:
        """The fleet changed: its live agent panes and their folders."""
        folders = {p.pane_id: p.current_path for p in panes if p.is_agent and not p.dead and p.current_path}
        with self._lock:
            self._pending_panes = folders
        self._wake.set()

    def hook_event(self, event: HookEvent) -> None:
        """Every hook event Claude signals read: a finished write (who wrote what), and the end of
        a turn (its worktree read again: what a Bash command changed, if no watch saw it)."""
        if event.event in ("PostToolUse", "Stop"):
            with self._lock:
                self._pending_events.append(event)
            self._wake.set()

    def _roots_changed(self, roots: frozenset[str]) -> None:
        with self._lock:
            self._pending_roots |= roots
        self._wake.set()

    # -- the thread -------------------------------------------------------------------------------

    def start(self) -> None:
        self._watch.start()
        self._thread = threading.Thread(target=self._run, name="nbs-change-counts", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        self._watch.stop()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)

    def _read_earlier_writes(self) -> None:
        """The writes before this process started (who wrote what, in shared worktrees): read once,
        before the first worktree is, so a fleet outside git never reads the spool."""
        if self._spool_read:
            return
        self._spool_read = True
        try:
            earlier = read_writes(self._settings.hook_spool, self._follower.socket)
        except OSError as error:
            self._problem(PROBLEM_SOURCE, f"the hook spool was not read: {error}")
            return
        for pane_id in earlier.panes():  # what the hooks said since is newer: kept over it
            for path, at in earlier.writes_of(pane_id).items():
                self._follower.written.add(pane_id, path, at)

    def _run(self) -> None:
        timeout: float | None = None
        while not self._stopping.is_set():
            self._wake.wait(timeout)
            if self._stopping.wait(SETTLE):
                return
            self._wake.clear()
            try:
                timeout = self.pass_once()
            except Exception as error:  # the thread goes on: the next news tries again
                log.exception("change column pass failed")
                self._problem(PROBLEM_SOURCE, f"the change counts were not read: {error}")
                timeout = None

    def pass_once(self) -> float | None:
        """Take the news, read the worktrees that are due; the seconds until the next one is
        due (None: none is waiting)."""
        with self._lock:
            panes, self._pending_panes = self._pending_panes, None
            events, self._pending_events = self._pending_events, []
            roots, self._pending_roots = self._pending_roots, set()
        if panes is not None:
            self._take_panes(panes)
        self._dirty |= roots
        for event in events:
            writer = self._follower.offer(event)
            if event.event == "Stop" and event.pane_id is not None and self._follower.ours(event):
                writer = event.pane_id
            if writer is not None and writer in self._folders:
                root = self._root_of_folder.get(self._folders[writer])
                if root is not None:
                    self._dirty.add(root)
        return self._read_due()

    def _take_panes(self, folders: dict[PaneId, str]) -> None:
        changed = {p for p, f in folders.items() if self._folders.get(p) != f}
        gone = set(self._folders) - set(folders)
        for pane_id in gone:
            root = self._root_of_folder.get(self._folders[pane_id])
            if root is not None:
                self._dirty.add(root)  # its neighbours may no longer share the worktree
            self._bases.pop(pane_id, None)
            self.counts.pop(pane_id, None)
            self.places = {p: place for p, place in self.places.items() if p != pane_id}
            self._follower.written.forget(pane_id)
        self._folders = dict(folders)
        if not changed:
            if gone:
                self._watch_folders()
            return
        bases = self._read_bases()
        for pane_id in changed:
            folder = folders[pane_id]
            if folder not in self._root_of_folder:
                self._root_of_folder[folder] = worktree_root(folder)
            root = self._root_of_folder[folder]
            if root is None:
                self._bases.pop(pane_id, None)
                continue
            remembered = bases.get(pane_id)
            self._bases[pane_id] = remembered if remembered is not None and has_commit(root, remembered) else None
            self._dirty.add(root)
            if root not in self._watched:
                try:
                    self._watched[root] = tracked_folders(root)
                except GitError as error:
                    self._problem(PROBLEM_SOURCE, f"{root}: {error}")
                    self._watched[root] = frozenset({root})
        self._watch_folders()

    def _watch_folders(self) -> None:
        roots = self._roots()
        self._watched = {root: folders for root, folders in self._watched.items() if root in roots}
        self._watch.set_folders(self._watched)

    def _read_bases(self) -> dict[PaneId, str]:
        """Every pane's ``@nbs_base`` commit, in one tmux command."""
        commands = self._commands()
        if commands is None:
            return {}
        try:
            out = commands.run("list-panes", "-a", "-F", f"#{{pane_id}}\t#{{{BASE_OPTION}}}")
        except TmuxError as error:
            self._problem(PROBLEM_SOURCE, f"the agents' bases were not read: {error}")
            return {}
        found: dict[PaneId, str] = {}
        for pane_id, _, value in (line.partition("\t") for line in out.lines):
            base = parse_base(value)
            if base is not None:
                found[pane_id] = base.commit
        return found

    def _roots(self) -> set[str]:
        return {root for f in self._folders.values() if (root := self._root_of_folder.get(f)) is not None}

    def _read_due(self) -> float | None:
        now = self._clock()
        self._tokens = min(BURST, self._tokens + (now - self._tokens_at) * CPU_BUDGET)
        self._tokens_at = now
        wait: float | None = None
        reported: dict[PaneId, ChangeCount] = {}
        for root in sorted(self._dirty, key=lambda r: self._last_read.get(r, float("-inf"))):
            left = self._last_read.get(root, float("-inf")) + self._min_gap - now
            if left <= 0 and self._tokens <= 0:
                left = -self._tokens / CPU_BUDGET  # the budget is spent: when it allows one more
            if left > 0:
                wait = left if wait is None else min(wait, left)
                continue
            self._dirty.discard(root)
            self._last_read[root] = now
            began = _cpu_now()
            reported.update(self._read_root(root))
            self._tokens -= _cpu_now() - began
        if reported:
            self._report(reported)
        return wait

    def _read_root(self, root: str) -> dict[PaneId, ChangeCount]:
        """Read one worktree once per base in use there; the counts of its panes that changed."""
        panes = [p for p, f in self._folders.items() if self._root_of_folder.get(f) == root]
        if not panes:
            return {}
        self._read_earlier_writes()
        writers = self._follower.written.writers_under(root)
        shared = len(panes) > 1
        by_base: dict[str | None, list[PaneId]] = {}
        for pane_id in panes:
            base = self._bases.get(pane_id)
            if base is None:
                if root not in self._fallbacks:
                    self._fallbacks[root] = fallback_base(root)
                base = self._fallbacks[root]
            by_base.setdefault(base, []).append(pane_id)
        changed: dict[PaneId, ChangeCount] = {}
        places = dict(self.places)
        for base, members in by_base.items():
            for pane_id in members:
                places[pane_id] = AgentPlace(self._folders[pane_id], root, base, shared, writers)
            try:
                folder_changes = read_folder_changes(root, base, self._untracked)
            except GitError as error:
                self._problem(PROBLEM_SOURCE, f"{root}: {error}")
                continue
            self.reads += 1
            seen = {os.path.dirname(os.path.join(root, change.path)) for change in folder_changes.files}
            more = {folder for folder in seen - self._watched.get(root, frozenset()) if os.path.isdir(folder)}
            if more:  # a folder the agent made: watched from now on
                self._watched[root] = self._watched.get(root, frozenset()) | more
                self._watch_folders()
            for pane_id in members:
                count = attribute(
                    folder_changes, target=pane_id, agent_folder=self._folders[pane_id], written=writers, shared=shared
                ).count()
                if self.counts.get(pane_id) != count:
                    self.counts[pane_id] = count
                    changed[pane_id] = count
        self.places = places
        return changed

    def read_agent(self, pane_id: PaneId, target: str | None = None) -> AgentChanges | None:
        """One agent's changes read now, where and against what the counter reads them (for the
        review screen; blocks on git: call it from a worker thread). ``target`` names the agent
        (and its files' ``by``: the others keep their pane ids); None before the counter has
        read the agent's worktree, or when the agent is not in git. Raises `GitError`."""
        place = self.places.get(pane_id)
        if place is None:
            return None
        name = target or pane_id
        written = {path: name if writer == pane_id else writer for path, writer in place.written.items()}
        changes = read_folder_changes(place.root, place.base, UntrackedCounter())
        return attribute(changes, target=name, agent_folder=place.folder, written=written, shared=place.shared)
