"""`FleetKeeper`: the acting runtime keeps its tmux server's fleet memory current (docs/lifecycle.md).

Only the process that acts for the server (the sidecar lease holder: the service, or a dashboard
that contends) writes the memory, so two processes never race on one file. It is told when
something it remembers may have changed, never on a timer:

* the fleet's pane set changed (`changed`, from the runtime's fanout: a pane or window opened or
  closed, one moved), or a window's layout did (tmux's ``%layout-change``, `FleetListener.layout_changed`);
* an agent's Claude Code session id changed (`facts_changed`: ``/clear``, ``/resume``, a new
  start; from `nbs_tui.claude.watcher` facts, which already weigh hooks, the status file and the
  transcript);
* this process came to hold the lease.

Then, on its own thread (``nbs-fleet-memory``; a burst of news is one pass), one tmux command
line through the fleet's `TmuxServerCommands` reads the server run (``#{pid} #{start_time}``),
every window (its layout) and every pane (its folder, ``@nbs_worker``, ``@nbs_base``); each pane with a running
Claude Code (its facts) becomes a `RememberedAgent`: its name and options read back from its
command line (``/proc/PID/cmdline``, `launch_from_args`), its session id, its config folder.
`FleetStore.remember` writes only when that changed the memory. Failures go to the runtime's
problem sink, named ``fleet memory``.

It also announces an NBS worker's end: a pane ``nbs-tui new --worker`` started carries
``@nbs_worker NAME`` and, when its project has ``.nbs/events``, ``@nbs_worker_bus FOLDER``; when
such a pane is gone at a pass, or its Claude Code is seen exited (facts), the keeper publishes
``worker-died`` there once (`nbs_tui.files.nbs_bus`). Only while acting, as for the memory: a
worker that ends while no process holds the lease is not announced.

This machine's servers only: on another host the agents' processes and Claude's files are
there, and that host's own service remembers its fleet.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from nbs_tui.claude.status import config_dirs_of
from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.core.control.nbs_events import worker_died
from nbs_tui.core.fleet.agent_spec import launch_from_args, start_command_words
from nbs_tui.core.fleet.fleet_memory import (
    RememberedAgent,
    RememberedPane,
    RememberedWindow,
    ServerInstance,
)
from nbs_tui.core.fleet.model import PaneId, ServerAddress
from nbs_tui.core.review.agent_base import BASE_OPTION, parse_base
from nbs_tui.core.sidecar.stuck_agents import Liveness
from nbs_tui.files.fleet_store import FleetStore
from nbs_tui.files.nbs_bus import publish
from nbs_tui.files.proc import cmdline
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import ServerGone, TmuxError

log = logging.getLogger(__name__)

WORKER_OPTION = "@nbs_worker"
"""Pane option ``nbs-tui new --worker NAME`` sets: the NBS worker the agent runs."""
WORKER_BUS_OPTION = "@nbs_worker_bus"
"""Pane option: the worker's project's ``.nbs/events`` folder (set only when it exists)."""
SETTLE = 0.3
"""Seconds a burst of news is let settle before one pass reads the server."""
PROBLEM_SOURCE = "fleet memory"

_SEP = "\x1f"
_WINDOWS = _SEP.join(("#{session_name}", "#{window_index}", "#{window_name}", "#{window_layout}"))
_PANES = _SEP.join(
    (
        "#{session_name}", "#{window_index}", "#{pane_index}", "#{pane_id}", "#{pane_current_path}",
        f"#{{{WORKER_OPTION}}}", f"#{{{WORKER_BUS_OPTION}}}", f"#{{{BASE_OPTION}}}", "#{pane_start_command}",
    )
)  # fmt: skip


def _config_dir(facts: ClaudeFacts) -> str | None:
    """The agent's Claude config folder: its transcript's (``<config>/projects/<slug>/<id>.jsonl``),
    else the one its process's environment names."""
    if facts.transcript_path:
        return str(Path(facts.transcript_path).parents[2])
    if facts.pid is not None:
        dirs = config_dirs_of(facts.pid)
        if dirs:
            return str(dirs[0])
    return None


class FleetKeeper:
    """Keeps one server's fleet memory (module docstring)."""

    def __init__(
        self,
        commands: TmuxServerCommands,
        store: FleetStore,
        host: str,
        server: ServerAddress,
        *,
        acting: Callable[[], bool],
        facts: Callable[[], Mapping[PaneId, ClaudeFacts]],
        problem: Callable[[str, str], None],
        cmdline: Callable[[int], tuple[str, ...]] = cmdline,
    ) -> None:
        self.commands = commands
        self.store = store
        self.host = host
        self.server = server
        self._acting = acting
        self._facts = facts
        self._problem = problem
        self._cmdline = cmdline
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._sessions: dict[PaneId, str | None] = {}
        self._workers: dict[PaneId, tuple[str, str, str]] = {}
        """Worker panes seen at the last pass: (worker, bus folder, target)."""
        self._announced: set[PaneId] = set()
        self._seen_panes: set[PaneId] = set()
        self.writes = 0
        """Times the memory file was written (tests, benches)."""

    # -- news ----------------------------------------------------------------------------------

    def changed(self) -> None:
        """Something remembered may have changed: look soon (any thread, never blocks)."""
        self._wake.set()

    def facts_changed(self, facts: Mapping[PaneId, ClaudeFacts]) -> None:
        """Claude signals' news: a look only when some agent's session id changed."""
        news = False
        for pane_id, fact in facts.items():
            if pane_id in self._workers and fact.liveness is Liveness.EXITED:
                news = True
            if self._sessions.get(pane_id) != fact.session_id:
                self._sessions[pane_id] = fact.session_id
                news = True
        if news:
            self._wake.set()

    # -- the thread ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nbs-fleet-memory", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait()
            if self._stopping.wait(SETTLE):
                return
            self._wake.clear()
            try:
                self.remember_now()
            except Exception as error:  # the thread goes on: the next change tries again
                log.exception("fleet memory pass failed")
                self._problem(PROBLEM_SOURCE, f"the fleet was not remembered: {error}")

    def remember_now(self) -> bool:
        """One pass (module docstring); True when the memory file was written."""
        if not self._acting():
            return False
        try:
            instance, windows = self.read_server()
        except ServerGone:  # no server: nothing learnt, nothing forgotten; its workers ended
            self._seen_panes = set()
            self._announce_ended_workers()
            return False
        except TmuxError as error:
            self._problem(PROBLEM_SOURCE, f"cannot read the fleet of {self.commands.describe()}: {error}")
            return False
        wrote = self.store.remember(self.host, self.server, instance, windows)
        if wrote:
            self.writes += 1
        self._announce_ended_workers()
        return wrote

    def _announce_ended_workers(self) -> None:
        facts = self._facts()
        for pane_id, (worker, bus, target) in list(self._workers.items()):
            gone = pane_id not in self._seen_panes
            fact = facts.get(pane_id)
            exited = fact is not None and fact.liveness is Liveness.EXITED
            if not (gone or exited) or pane_id in self._announced:
                continue
            self._announced.add(pane_id)
            why = "its tmux pane closed" if gone else f"its Claude Code exited ({fact.liveness_why if fact else ''})"
            try:
                publish(bus, worker_died(worker, target=target, pane_id=pane_id, why=why))
            except (OSError, ValueError) as error:
                self._problem(PROBLEM_SOURCE, f"worker-died of {worker} not published in {bus}: {error}")
            if gone:
                del self._workers[pane_id]

    def read_server(self) -> tuple[ServerInstance | None, list[RememberedWindow]]:
        out = self.commands.run_many(
            [
                ("display-message", "-p", "#{pid} #{start_time}"),
                ("list-windows", "-a", "-F", _WINDOWS),
                ("list-panes", "-a", "-F", _PANES),
            ]
        )
        pid, _, started = out.first.partition(" ")
        instance = ServerInstance(int(pid), int(started)) if pid.isdigit() and started.isdigit() else None
        layouts: dict[tuple[str, str], tuple[str, str]] = {}
        panes: dict[tuple[str, str], list[RememberedPane]] = {}
        facts = self._facts()
        self._seen_panes = set()
        for row in out.lines[1:]:
            fields = row.split(_SEP)
            if len(fields) == 4:
                layouts[(fields[0], fields[1])] = (fields[2], fields[3])
            elif len(fields) == 9:
                session, window, index, pane_id, folder, worker, bus, base, start_command = fields
                self._seen_panes.add(pane_id)
                if worker and bus:
                    self._workers[pane_id] = (worker, bus, f"{session}:{window}.{index}")
                agent = self._agent(facts.get(pane_id), layouts.get((session, window), ("", ""))[0], worker, start_command)
                if agent is not None:
                    agent = replace(agent, base=parse_base(base))
                fact = facts.get(pane_id)
                if agent is not None and fact is not None and fact.project:
                    folder = fact.project  # the agent's own folder (a worktree's for -w)
                pane = RememberedPane(int(index) if index.isdigit() else 0, folder, pane_id, agent)
                panes.setdefault((session, window), []).append(pane)
        windows = [
            RememberedWindow(session, int(window) if window.isdigit() else 0, name, layout, tuple(panes.get((session, window), ())))
            for (session, window), (name, layout) in layouts.items()
        ]
        return instance, windows

    def _agent(self, facts: ClaudeFacts | None, window_name: str, worker: str, start_command: str = "") -> RememberedAgent | None:
        if facts is None or facts.liveness is not Liveness.RUNNING or facts.pid is None:
            return None
        command = self._cmdline(facts.pid)
        if len(command) <= 1:
            # Claude Code on node (2.1.1xx) sets its process title: /proc keeps only "claude". The
            # pane's start command (what `new` or `restore` ran) still says how it was started.
            command = start_command_words(start_command) or command
        launch = launch_from_args(command[1:])  # (an option's value is never the first word)
        return RememberedAgent(
            name=launch.name or window_name,
            session_id=facts.session_id,
            command=command,
            model=launch.model,
            permission_mode=launch.permission_mode,
            worktree=launch.worktree,
            worktree_name=launch.worktree_name,
            config_dir=_config_dir(facts),
            worker=worker or None,
        )
