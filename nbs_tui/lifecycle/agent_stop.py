"""Stop an agent, or restart it in place (issue 29, item 4): ``nbs-tui stop`` / ``nbs-tui restart``.

Stop, gentlest first, each step only when the one before did not end Claude Code within
`EXIT_WAIT` seconds:

1. ``/exit`` and Enter, only when the input box is on screen, idle and empty (the state is
   certain: an operator's half-typed text is never sent, a menu never answered);
2. ``C-c`` twice (Claude Code exits on a second Ctrl-C; the first stops a turn in progress);
3. ``kill-pane``.

Every key goes under a start claim (`nbs_tui.lifecycle.agent_start`), fenced as ``new``'s are, so
the lease holder's sidecar does not type a poll into a box being closed.

Restart in place: what the agent runs is read back first (its Claude Code session id from its
status file, its name and options from its command line, its folder), the pane is kept
(``remain-on-exit``) while the agent is stopped as above, then ``respawn-pane -k`` runs
``claude --resume ID`` with the same name and options in the same folder, and a `StartupGuide`
takes it to its input box. The pane id, window and layout stay. Every tmux command goes through
`TmuxServerCommands`, here or on another host (its ssh connection); the agent's process, status
file, command line and folder are read where it runs (the starter's `Host`:
`nbs_tui.lifecycle.host`).

Each stop or restart, done or failed, is told to every view of the server (`tell_views`: the
server's lifecycle ring, `nbs_tui.core.sidecar.relay.LIFECYCLE_OPTION`), whoever did it: ``nbs-tui
stop`` or any dashboard. Every dashboard and ``--headless`` reads it with its sidecar's switches
and shows it as an event ``by`` that process.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.detection.startup import StartupExpectation
from nbs_tui.core.fleet.agent_spec import (
    BYPASS,
    ClaudeLaunch,
    agent_command,
    claude_argv,
    launch_from_args,
    start_command_words,
)
from nbs_tui.core.fleet.model import AgentState, PaneId
from nbs_tui.lifecycle.agent_start import AgentStarter, StartStopped
from nbs_tui.lifecycle.host import RunningClaude
from nbs_tui.sidecar.pane_options import announce_lifecycle
from nbs_tui.tmux.commands import TmuxServerCommands
from nbs_tui.tmux.errors import PaneGone, ServerGone, TmuxCommandError, TmuxError

EXIT_WAIT = 5.0
"""Seconds each stop step is given to end Claude Code before the next, firmer one."""


class StopError(RuntimeError):
    """The pane cannot be stopped or restarted as asked; the message says why."""


@dataclass(frozen=True, slots=True)
class Stopped:
    pane_id: PaneId
    target: str
    how: str
    """``/exit``, ``Ctrl-C`` or ``kill-pane``: the step that ended it."""


@dataclass(frozen=True, slots=True)
class Restarted:
    pane_id: PaneId
    target: str
    session_id: str
    how: str
    """How the old process ended (`Stopped.how`)."""
    stopped: str = ""
    """The new one stopped at a startup screen nobody asked to answer: the guide's line."""


class AgentControl:
    """Stops and restarts agents of one server (module docstring). Blocks: a worker thread."""

    def __init__(
        self,
        starter: AgentStarter,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        exit_wait: float = EXIT_WAIT,
    ) -> None:
        self.commands: TmuxServerCommands = starter.commands
        self.starter = starter
        self.clock = clock
        self.sleep = sleep
        self.exit_wait = exit_wait

    def resolve(self, pane: str) -> tuple[PaneId, int, str, str]:
        """(pane id, pane pid, target, current folder) of a pane id or target (``agents:api``);
        `StopError` when there is no such pane."""
        return self._pane_fields(pane)[:4]

    def _pane_fields(self, pane: str) -> tuple[PaneId, int, str, str, str]:
        """`resolve`'s fields and the pane's start command."""
        try:
            out = self.commands.display(
                pane,
                "#{pane_id}\t#{pane_pid}\t#{session_name}:#{window_index}.#{pane_index}\t#{pane_current_path}"
                "\t#{pane_start_command}",
            )
        except TmuxCommandError as error:
            raise StopError(f"no pane {pane} on {self.commands.describe()} ({error})") from None
        fields = out.split("\t", 4)
        if len(fields) != 5 or not fields[0].startswith("%"):
            raise StopError(f"no pane {pane} on {self.commands.describe()}")
        return fields[0], int(fields[1] or 0), fields[2], fields[3], fields[4]

    def _claude(self, pane_pid: int) -> RunningClaude | None:
        return self.starter.host.claude(pane_pid, self.starter.config_dirs)

    def _ended(self, pane_id: PaneId, pid: int) -> bool:
        """Claude Code (``pid``) is gone: the pane closed, died, or the process ended (or the
        server ended with its last pane)."""
        try:
            identity = self.commands.pane_identity(pane_id)
        except ServerGone:
            return True
        if identity is None or identity.dead:
            return True
        return not self.starter.host.alive(pid)

    def _wait_ended(self, pane_id: PaneId, pid: int) -> bool:
        deadline = self.clock() + self.exit_wait
        while not self._ended(pane_id, pid):
            if self.clock() > deadline:
                return False
            self.sleep(0.1)
        return True

    def stop(self, pane_id: PaneId, *, keep_pane: bool = False) -> Stopped:
        """Stop the agent in ``pane_id`` (module docstring); ``keep_pane``: the pane stays, dead
        (for a restart)."""
        pane_id, pane_pid, target, _folder = self.resolve(pane_id)
        running = self._claude(pane_pid)
        if running is None:
            raise StopError(f"no Claude Code runs in {target} ({pane_id})")
        claim = self.starter.new_claim()
        setup = self.starter.claim_commands(pane_id, claim)
        self.commands.run_many(setup if keep_pane else setup[:1])
        guard = self.starter.guard(pane_id, claim)
        try:
            out = self.commands.run("capture-pane", "-p", "-t", pane_id)
            detection = detect_text(out.text)
            idle_empty = detection.state is AgentState.IDLE and detection.input_text == "" and detection.safe_to_inject
            exited = (
                idle_empty
                and self.commands.type_text(pane_id, "/exit", guard=guard)
                and self._box_holds(pane_id, "/exit")
                and self.commands.press(pane_id, "Enter", guard=guard)
                and self._wait_ended(pane_id, running.pid)
            )
            if exited:  # (a /exit typed but not taken is cleared by the first Ctrl-C)
                return Stopped(pane_id, target, "/exit")
            if self.commands.press(pane_id, "C-c", guard=guard):
                self.sleep(0.3)
                self.commands.press(pane_id, "C-c", guard=guard)
                if self._wait_ended(pane_id, running.pid):
                    return Stopped(pane_id, target, "Ctrl-C")
            if keep_pane:
                self.commands.run("respawn-pane", "-k", "-t", pane_id, "true")  # the process goes, the pane stays
                if self._wait_ended(pane_id, running.pid):
                    return Stopped(pane_id, target, "respawn-pane -k")
                raise StopError(f"Claude Code (pid {running.pid}) in {target} did not end")
            self.commands.run("kill-pane", "-t", pane_id)
            return Stopped(pane_id, target, "kill-pane")
        finally:
            if not keep_pane:
                self.starter.release(pane_id, claim)

    def _box_holds(self, pane_id: PaneId, text: str) -> bool:
        deadline = self.clock() + 3.0
        while True:
            out = self.commands.run("capture-pane", "-p", "-t", pane_id)
            if (detect_text(out.text).input_text or "").strip() == text:
                return True
            if self.clock() > deadline:
                return False
            self.sleep(0.1)

    def restart(self, pane_id: PaneId) -> Restarted:
        """Restart the agent in ``pane_id`` in place, resuming its conversation (module docstring)."""
        pane_id, pane_pid, target, folder, start_command = self._pane_fields(pane_id)
        running = self._claude(pane_pid)
        if running is None:
            raise StopError(f"no Claude Code runs in {target} ({pane_id}): nothing to restart")
        if not running.session_id:
            raise StopError(f"the Claude Code session of {target} is not known (no status file): not restarted")
        args = running.args
        if len(args) <= 1:  # Claude Code on node (2.1.1xx) keeps only "claude" in /proc: see start_command_words
            args = start_command_words(start_command) or args
        old = launch_from_args(args[1:])
        launch = ClaudeLaunch(name=old.name, model=old.model, permission_mode=old.permission_mode, resume=running.session_id)
        argv = claude_argv(self.starter.claude_command, launch, self.starter.flags())
        cwd = running.cwd or folder
        # The account stays: a respawned pane has the session's environment, not the process's.
        default_home = posixpath.join(self.starter.home or "", ".claude")
        account = running.config if running.config and posixpath.normpath(running.config) != default_home else None
        stopped = self.stop(pane_id, keep_pane=True)
        claim = self.starter.new_claim()
        try:
            self.commands.run_many(
                [
                    ("respawn-pane", "-k", "-t", pane_id, "-c", cwd, agent_command(argv, account)),
                    *self.starter.claim_commands(pane_id, claim),
                ]
            )
            line = ""
            try:
                self.starter.guide(pane_id, StartupExpectation(cwd, (), self.starter.home, bypass=launch.permission_mode == BYPASS), claim)
            except StartStopped as stop:
                line = stop.line
        finally:
            with contextlib.suppress(TmuxError, PaneGone):
                self.starter.release(pane_id, claim)
        return Restarted(pane_id, target, running.session_id, stopped.how, line)


def tell_views(
    commands: TmuxServerCommands, action: str, pane_id: str, target: str, sent: str, ok: bool, reason: str,
    *, by: str | None = None, wall: Callable[[], float] = time.time,
) -> str:
    """Tell every view of the server that ``action`` (``stop``, ``restart``) was done (or failed)
    in ``pane_id``; ``by`` is who did it as the views show it (a dashboard's lease names it so: its
    own action is not shown to it twice). Returns "" or why the views were not told."""
    result = "sent" if ok else "failed"
    message = f"{action} {result}" + (f": {sent}" if sent else "") + (f" ({reason})" if reason else "")
    data = (("result", result), ("pane", pane_id), ("target", target), ("text", sent), ("reason", reason))
    try:
        if announce_lifecycle(commands, wall(), action, by or f"{socket.gethostname()} pid {os.getpid()}", message, data):
            return ""
        return "other processes kept writing the server's lifecycle events"
    except TmuxError as error:
        return str(error)
