"""``nbs-tui restore``: carry out `nbs_tui.core.fleet.restore`'s plan through the tmux command path.

`gather` reads what the plan needs on this machine: the remembered fleet (`FleetStore`), the
server running now (its run and windows, one tmux command line), the conversations live now (the
status files of running Claude Code processes in every remembered config folder, and ``claude
agents --json`` where the installed version has it), which folders and transcripts still exist,
and what the installed Claude Code accepts. `RestoreRun.execute` then, in plan order: starts
the server and makes the sessions, each window under its name at its index, and each pane in its
folder (an agent as ``claude --resume ID ...``, at its stagger time; a shell pane as a shell),
applies the layout once a window is complete, and takes each agent through its startup screens
with a `StartupGuide` under a start claim (`nbs_tui.lifecycle.agent_start`: the holder's sidecar
leaves the pane alone meanwhile). No prompt is ever sent again. Every agent not brought back
is reported with why; the memory then forgets the lost fleet (`forget_restored`).

Every tmux command goes through `TmuxServerCommands`. This machine's servers only for now.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

from nbs_tui.claude.status import is_alive, read_status_file
from nbs_tui.core.detection.startup import StartupExpectation
from nbs_tui.core.fleet.agent_spec import (
    BYPASS,
    ClaudeFlags,
    agent_command,
    command_words,
    server_env_unsets,
)
from nbs_tui.core.fleet.fleet_memory import (
    FleetMemory,
    RememberedWindow,
    ServerInstance,
    fleet_to_restore,
    forget_restored,
)
from nbs_tui.core.fleet.host_spec import LOCAL
from nbs_tui.core.fleet.model import PaneId, ServerAddress
from nbs_tui.core.fleet.restore import (
    HostChecks,
    LiveServer,
    LiveWindow,
    PlannedPane,
    PlannedWindow,
    RestorePlan,
    plan_restore,
    sessions_in_agents_json,
)
from nbs_tui.core.review.agent_base import BASE_OPTION
from nbs_tui.files.fleet_store import FleetStore
from nbs_tui.lifecycle.agent_start import AgentStarter, StartStopped
from nbs_tui.lifecycle.host import read_flags
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import ServerGone, TmuxError

_SEP = "\x1f"
_PANE = "#{pane_id}\x1f#{session_name}:#{window_index}.#{pane_index}"


@dataclass(frozen=True, slots=True)
class Gathered:
    memory: FleetMemory
    windows: tuple[RememberedWindow, ...]
    live: LiveServer
    instance: ServerInstance | None
    live_sessions: dict[str, str]
    checks: HostChecks
    flags: ClaudeFlags


@dataclass(frozen=True, slots=True)
class RestoredAgent:
    name: str
    pane_id: PaneId
    target: str
    session_id: str | None
    stopped: str = ""
    """Started, but its startup stopped at a screen nobody asked to answer: the guide's line."""


@dataclass(slots=True)
class RestoreReport:
    restored: list[RestoredAgent] = field(default_factory=list)
    not_restored: list[tuple[str, str, str]] = field(default_factory=list)
    """(name, where, why)."""

    def as_json(self) -> dict[str, object]:
        return {
            "restored": [
                {"name": a.name, "pane_id": a.pane_id, "target": a.target, "session_id": a.session_id, "stopped": a.stopped or None}
                for a in self.restored
            ],
            "not_restored": [{"name": n, "where": w, "reason": r} for n, w, r in self.not_restored],
        }

    def lines(self) -> list[str]:
        out = []
        for a in self.restored:
            if a.stopped:
                out.append(f"started {a.name} in {a.target} ({a.pane_id}), but: {a.stopped}")
            else:
                out.append(f"restored {a.name} in {a.target} ({a.pane_id}), conversation {a.session_id}")
        out += [f"not restored: {n} ({w}): {r}" for n, w, r in self.not_restored]
        return out


def live_server(commands: TmuxServerCommands) -> tuple[ServerInstance | None, LiveServer]:
    try:
        out = commands.run_many(
            [
                ("display-message", "-p", "#{pid} #{start_time}"),
                ("list-windows", "-a", "-F", f"#{{session_name}}{_SEP}#{{window_index}}{_SEP}#{{window_name}}"),
            ]
        )
    except ServerGone:
        return None, LiveServer(running=False)
    pid, _, started = out.first.partition(" ")
    instance = ServerInstance(int(pid), int(started)) if pid.isdigit() and started.isdigit() else None
    windows = tuple(
        LiveWindow(row[0], int(row[1]), row[2]) for row in (line.split(_SEP) for line in out.lines[1:]) if len(row) == 3
    )
    return instance, LiveServer(True, windows)


def live_conversations(config_dirs: Collection[str], claude_argv0: list[str], flags: ClaudeFlags) -> dict[str, str]:
    """Session id -> where it runs: every running Claude Code's status file in these config
    folders, and ``claude agents --json`` (2.1.150+)."""
    found: dict[str, str] = {}
    for config in config_dirs:
        for path in sorted(Path(config, "sessions").glob("*.json")):
            status = read_status_file(path)
            if status is None or not status.session_id or not path.stem.isdigit():
                continue
            if is_alive(int(path.stem), status.proc_start):
                found[status.session_id] = f"Claude Code pid {path.stem}"
    if flags.agents_json:
        try:
            done = subprocess.run(
                [*claude_argv0, "agents", "--json"], capture_output=True, text=True, timeout=30,
                stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0:
            found = {**sessions_in_agents_json(done.stdout), **found}
    return found


def host_checks(windows: Collection[RememberedWindow]) -> HostChecks:
    folders: dict[str, bool] = {}
    conversations: dict[str, bool] = {}
    for window in windows:
        for pane in window.panes:
            folders[pane.folder] = os.path.isdir(pane.folder)
            agent = pane.agent
            if agent is not None and agent.session_id and agent.config_dir:
                projects = Path(agent.config_dir, "projects")
                conversations[agent.session_id] = any(projects.glob(f"*/{agent.session_id}.jsonl"))
    return HostChecks(folders=folders, conversations=conversations)


def gather(commands: TmuxServerCommands, store: FleetStore, claude_command: str) -> Gathered:
    """What the plan needs (module docstring); raises RuntimeError when nothing is remembered."""
    memory = store.load()
    if memory is None:
        why = f": {store.read_only}" if store.read_only else ""
        raise RuntimeError(f"no remembered fleet for {commands.describe()} in {store.path}{why}")
    instance, live = live_server(commands)
    windows = fleet_to_restore(memory, instance)
    argv0 = command_words(claude_command)
    flags = read_flags(argv0)
    configs = {p.agent.config_dir for w in windows for p in w.panes if p.agent is not None and p.agent.config_dir}
    return Gathered(memory, windows, live, instance, live_conversations(configs, argv0, flags), host_checks(windows), flags)


class RestoreRun:
    """Carries out one plan (module docstring). Blocks: call from a worker thread."""

    def __init__(
        self,
        starter: AgentStarter,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.commands = starter.commands
        self.starter = starter
        self.clock = clock
        self.sleep = sleep

    def execute(self, plan: RestorePlan) -> RestoreReport:
        report = RestoreReport(not_restored=[(n.name, n.where, n.reason) for n in plan.not_restored])
        began = self.clock()
        made_sessions: set[str] = set()
        to_guide: list[tuple[PlannedPane, PaneId, str]] = []
        claims = {}
        server_started = False
        for window in plan.windows:
            first_pane: PaneId | None = None
            complete = True
            for pane in window.panes:
                wait = began + pane.start_after - self.clock()
                if wait > 0:
                    self.sleep(wait)
                try:
                    pane_id, target = self._make_pane(window, pane, first_pane, made_sessions, plan)
                except TmuxError as error:
                    complete = False
                    if pane.agent is not None:
                        report.not_restored.append((pane.agent, f"{window.session}:{window.name}", f"tmux refused: {error}"))
                    continue
                if not server_started and plan.start_server:
                    server_started = True
                    self.commands.run_many(server_env_unsets())
                first_pane = first_pane or pane_id
                if pane.argv is not None:
                    claim = claims[pane_id] = self.starter.new_claim()
                    setup = self.starter.claim_commands(pane_id, claim)
                    if pane.base is not None:  # its changes still counted from where it began
                        setup.append(("set-option", "-p", "-t", pane_id, BASE_OPTION, pane.base.render()))
                    self.commands.run_many(setup)
                    to_guide.append((pane, pane_id, target))
            if complete and window.layout and first_pane is not None:
                try:
                    self.commands.run("select-layout", "-t", first_pane, window.layout)
                except TmuxError as error:
                    report.not_restored.append(("(layout)", f"{window.session}:{window.name}", f"layout not applied: {error}"))
        for pane, pane_id, target in to_guide:
            claim = claims[pane_id]
            expect = StartupExpectation(pane.folder, (), os.environ.get("HOME"), bypass=BYPASS in (pane.argv or ()))
            stopped = ""
            try:
                self.starter.guide(pane_id, expect, claim)
            except StartStopped as stop:
                stopped = stop.line
            finally:
                self.starter.release(pane_id, claim)
            report.restored.append(RestoredAgent(pane.agent or "", pane_id, target, pane.session_id, stopped))
        return report

    def _make_pane(
        self, window: PlannedWindow, pane: PlannedPane, first: PaneId | None, made: set[str], plan: RestorePlan
    ) -> tuple[PaneId, str]:
        command = () if pane.argv is None else (agent_command(pane.argv),)
        folder = ("-c", pane.folder) if pane.folder else ()
        if first is not None:
            out = self.commands.run("split-window", "-d", "-P", "-F", _PANE, "-t", first, *folder, *command)
        elif window.session in plan.create_sessions and window.session not in made:
            out = self.commands.run("new-session", "-d", "-P", "-F", _PANE, "-s", window.session, "-n", window.name, *folder, *command)
            made.add(window.session)
            pane_id = out.first.split(_SEP)[0]
            target = out.first.partition(_SEP)[2]
            if window.index is not None and target.split(":")[-1].split(".")[0] != str(window.index):
                # the session's first window at its old index
                out = self.commands.run_many(
                    [
                        ("move-window", "-s", pane_id, "-t", f"={window.session}:{window.index}"),
                        ("display-message", "-p", "-t", pane_id, _PANE),
                    ]
                )
        else:
            at = f"={window.session}:{window.index}" if window.index is not None else f"={window.session}:"
            out = self.commands.run("new-window", "-d", "-P", "-F", _PANE, "-t", at, "-n", window.name, *folder, *command)
        pane_id, _, target = out.first.partition(_SEP)
        if not pane_id.startswith("%"):
            raise TmuxError(f"tmux made no pane ({out.first!r})")
        return pane_id, target


def after_restore(store: FleetStore, memory: FleetMemory, instance: ServerInstance | None) -> None:
    """The lost fleet is back (or reported): no longer offered. A new server run's windows are
    the keeper's to fill in."""
    latest = store.load() or memory
    if instance is not None and latest.instance != instance:
        latest = replace(latest, instance=instance, windows=())
    store.update(forget_restored(latest))


def plan_for(gathered: Gathered, server: ServerAddress, claude_command: str, stagger: float, names: Collection[str]) -> RestorePlan:
    return plan_restore(
        gathered.windows, gathered.live, gathered.live_sessions, gathered.checks,
        host=LOCAL, server=server, claude_command=claude_command, flags=gathered.flags, stagger=stagger, names=names,
    )  # fmt: skip
