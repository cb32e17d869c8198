"""Start one Claude Code agent in a new tmux window: ``nbs-tui new`` (docs/lifecycle.md).

`AgentStarter.start` takes a `nbs_tui.files.agent_input.PreparedAgent` (checked, folder resolved,
prompt read) and, through the server's one command path (`TmuxServerCommands`, no other tmux
process): refuses a NAME already used on the server; makes the window (a new session when
SESSION is missing, which also starts a server that is not running); claims the pane for the
start; shows each screen to a `nbs_tui.core.detection.startup.StartupGuide` and presses what it says;
types the prompt once the input box is ready, whole (a bracketed paste: newlines stay newlines)
and presses Enter exactly once; releases the claim and reads the Claude Code session id. Before the window is made it reads
where the folder's git stands (`Host.start_base`) and leaves it on the pane as ``@nbs_base``: the
base the agent's changes are counted from (a ``--worktree`` branch starts there too).

Who types. The sidecar's lease holder (service or dashboard) types polls into agent panes; a
``new`` run types the first prompt. Both never mix in a pane because of the **start claim**
(``@nbs_starting TOKEN DEADLINE`` on the new pane, `nbs_tui.core.sidecar.lease_rules.START_CLAIM_OPTION`):

* ``new`` sets it right after the window is made (the agent is not even drawn yet; a holder
  polls only after ``poll_interval`` of idleness it saw itself) and every key ``new`` sends is
  fenced inside tmux on it being still ``new``'s claim *and* no poll in flight there;
* the holder reads the claim in its per-tick ``list-panes`` and, while it holds, treats the pane
  as poll off and plan off; its own typing guard also requires the pane unclaimed, in the same
  tmux step as its lease fence;
* a claim whose ``new`` died is dropped by the holder once its DEADLINE passed (START_TIMEOUT
  plus typing time); ``new`` drops its own claim when it ends, however it ends.

So with or without a holder, the first prompt and a poll are never typed into one box, and the
holder's rules (lease fence, in-flight marks) are unchanged for every other pane.

`AgentStarter.open_background` opens one of Claude Code's own background sessions (``claude
--bg``) the same way: a new window running ``claude_command attach ID`` in the session's folder,
named after it; nothing is typed there, so no claim. The window is then a pane like any other.

Bad input leaves nothing behind: every check is made before the window exists. A start that
stops at a screen nobody asked to answer leaves the window for the operator (the agent is
there, waiting) and says why; Claude Code exiting during the start closes the window it made.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.core.detection.detect import detect_text
from nbs_tui.core.detection.startup import (
    START_TIMEOUT,
    PressKey,
    Ready,
    StartupExpectation,
    StartupGuide,
    Stop,
)
from nbs_tui.core.fleet.agent_spec import (
    BYPASS,
    ClaudeFlags,
    SpecError,
    agent_command,
    claude_argv,
    command_words,
    launch_for,
    server_env_unsets,
)
from nbs_tui.core.fleet.background import BackgroundSession, attach_argv
from nbs_tui.core.fleet.model import AgentState, PaneId
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase
from nbs_tui.core.sidecar.lease_rules import INFLIGHT_OPTION, START_CLAIM_OPTION, StartClaim
from nbs_tui.files.agent_input import PreparedAgent
from nbs_tui.lifecycle.fleet_keeper import WORKER_BUS_OPTION, WORKER_OPTION
from nbs_tui.lifecycle.host import Host
from nbs_tui.tmux.commands import Guard, TmuxServerCommands
from nbs_tui.tmux.errors import PaneGone, ServerGone, TmuxCommandError, TmuxError

DEFAULT_SESSION = "agents"
"""The session a new agent's window goes into when ``--session`` is not given."""
LOOK_EVERY = 0.1
"""Seconds between two looks at the starting pane's screen (one in-band or process capture)."""
TYPE_TIMEOUT = 10.0
"""Seconds for a pasted prompt to show in the box, and then to leave it once Enter is pressed."""
SESSION_ID_WAIT = 10.0
"""Seconds to wait for Claude Code's status file to name the session after the start."""
CLAIM_SPARE = 60.0
"""Seconds a claim outlives the startup timeout: time to type and submit the prompt."""


def _window_name_ok(name: str) -> bool:
    """A name tmux reads as a window's, not as a target's parts or a window number."""
    return not any(c in name for c in ":.\t\n") and not name.isdigit() and len(name) <= 64


class StartStopped(RuntimeError):
    """The agent was started but not through its startup, or its prompt not submitted: ``line``
    says what is on screen; the window is left (or, when Claude Code exited, closed)."""

    def __init__(self, line: str, started: Started | None = None) -> None:
        super().__init__(line)
        self.line = line
        self.started = started


@dataclass(frozen=True, slots=True)
class Started:
    pane_id: PaneId
    target: str
    """``session:window.pane``, as tmux names it."""
    name: str
    session_id: str | None = None
    prompt_submitted: bool = False
    answered: tuple[str, ...] = ()
    """The startup dialogs nbs-tui answered (the trust dialog, the bypass confirmation)."""

    def as_json(self) -> dict[str, object]:
        return {
            "pane_id": self.pane_id,
            "target": self.target,
            "name": self.name,
            "session_id": self.session_id,
            "prompt_submitted": self.prompt_submitted,
            "answered": list(self.answered),
        }


class AgentStarter:
    """Starts agents on one tmux server (module docstring). Blocks: call from a worker thread."""

    def __init__(
        self,
        host: Host,
        claude_command: str,
        *,
        claude_home: Path | None = None,
        flags: ClaudeFlags | None = None,
        home: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.host = host
        """Where the agent runs: its tmux command path, and where its processes are read (its
        session id): this machine, or another host's ssh connection (`nbs_tui.lifecycle.host`)."""
        self.commands: TmuxServerCommands = host.commands
        self.claude_command = claude_command
        self.config_dirs = host.config_dirs(claude_home) if claude_home is not None else ()
        """The Claude config folders tried first for an agent's status file (the settings'
        ``claude_home`` on this machine; on another host each process's environment says)."""
        self._flags = flags
        self.home = home if home is not None else os.environ.get("HOME")
        """HOME where the agent runs: the trust dialog may show a folder as ``~/...``."""
        self.clock = clock
        self.wall = wall
        self.sleep = sleep
        self.start_timeout = start_timeout

    # -- checks that need tmux -------------------------------------------------------------------

    def windows(self) -> list[tuple[str, str, str]] | None:
        """(session, window index, window name) of every window; None: no server runs."""
        try:
            out = self.commands.run("list-windows", "-a", "-F", "#{session_name}\t#{window_index}\t#{window_name}")
        except ServerGone:
            return None
        return [(row[0], row[1], row[2]) for row in out.rows("\t") if len(row) == 3]

    def name_problem(self, name: str, windows: list[tuple[str, str, str]] | None) -> str | None:
        for session, index, window in windows or ():
            if window == name:
                return f"NAME {name!r} is already used on {self.commands.describe()} (window {session}:{index})"
        return None

    def flags(self) -> ClaudeFlags:
        """What the agent's Claude Code accepts: read once, where it runs."""
        if self._flags is None:
            self._flags = self.host.flags(self.claude_command)
        return self._flags

    # -- the start --------------------------------------------------------------------------------

    def start(self, agent: PreparedAgent, on_pane: Callable[[Started], None] | None = None) -> Started:
        """Start ``agent``; raises `SpecError` (nothing made) or `StartStopped` (module docstring).
        ``on_pane`` hears of the pane as soon as it exists."""
        spec = agent.spec
        windows = self.windows()
        problem = self.name_problem(spec.name, windows)
        if problem:
            raise SpecError([problem])
        argv = claude_argv(self.claude_command, launch_for(spec), self.flags())  # LaunchError: a SpecError
        command = agent_command(argv, spec.config_dir)
        session = spec.session or DEFAULT_SESSION
        base = self.host.start_base(spec.directory)  # before Claude Code's -w branches off it
        claim = self.new_claim()
        pane_id, target = self._make_window(
            session, spec.name, spec.directory, command, windows is None, claim, spec.worker, base
        )
        if spec.worker and agent.events is not None:  # the holder announces its end (fleet_keeper)
            self.commands.run_many([("set-option", "-p", "-t", pane_id, WORKER_BUS_OPTION, str(agent.events))])
        started = Started(pane_id, target, spec.name)
        if on_pane is not None:
            on_pane(started)
        try:
            answered = self._guide(agent, pane_id, claim)
            submitted = False
            if agent.prompt is not None:
                self._type_prompt(pane_id, agent.prompt, claim)
                submitted = True
        except StartStopped as stop:
            raise StartStopped(stop.line, started) from None
        finally:
            self.release(pane_id, claim)
        return Started(pane_id, target, spec.name, self._session_id(pane_id), submitted, tuple(answered))

    def open_background(self, background: BackgroundSession, session: str = DEFAULT_SESSION) -> Started:
        """A new window (in ``session``, made when missing) running ``claude_command attach ID`` in
        the background session's folder, named after it (``bg-ID`` when it has no name or its
        name is taken). Raises `SpecError` when the folder is gone (nothing made)."""
        folder = background.cwd or os.environ.get("HOME", "/")
        if not os.path.isdir(folder):
            raise SpecError([f"the folder {folder} of background session {background.id} is gone"])
        windows = self.windows()
        name = background.name if background.name and _window_name_ok(background.name) else f"bg-{background.id}"
        if self.name_problem(name, windows):
            name = f"bg-{background.id}"
        argv = attach_argv(command_words(self.claude_command), background)
        command = agent_command(argv)
        pane_id, target = self._make_window(session, name, folder, command, windows is None, None, None)
        return Started(pane_id, target, name, background.session_id or None)

    def _make_window(
        self, session: str, name: str, folder: str, command: str, no_server: bool, claim: StartClaim | None,
        worker: str | None, base: AgentBase | None = None,
    ) -> tuple[PaneId, str]:  # fmt: skip
        fmt = "#{pane_id}\t#{session_name}:#{window_index}.#{pane_index}"
        has_session = False
        if not no_server:
            try:
                self.commands.run("has-session", "-t", f"={session}")
                has_session = True
            except TmuxCommandError:
                has_session = False
        if has_session:
            make = ("new-window", "-d", "-P", "-F", fmt, "-t", f"={session}:", "-n", name, "-c", folder, command)
        else:
            make = ("new-session", "-d", "-P", "-F", fmt, "-s", session, "-n", name, "-c", folder, command)
        out = self.commands.run(*make)
        pane_id, _, target = out.first.partition("\t")
        if not pane_id.startswith("%"):
            raise TmuxCommandError(f"tmux made no pane for {name!r} ({out.first!r})")
        setup = self.claim_commands(pane_id, claim) if claim is not None else []
        if worker:  # remembered with the agent (`nbs_tui.lifecycle.fleet_keeper`)
            setup.append(("set-option", "-p", "-t", pane_id, WORKER_OPTION, worker))
        if base is not None:  # its changes are counted from here (`nbs_tui.core.review.agent_base`)
            setup.append(("set-option", "-p", "-t", pane_id, BASE_OPTION, base.render()))
        if no_server:  # a server this started must not hand a nested-session mark to later panes
            setup.extend(server_env_unsets())
        if setup:
            self.commands.run_many(setup)
        return pane_id, target

    def guard(self, pane_id: PaneId, claim: StartClaim) -> Guard:
        """Keys go in only while the pane is still this start's and no poll is in flight there."""
        condition = (
            f"#{{&&:#{{==:#{{{START_CLAIM_OPTION}}},{claim.render()}}},#{{==:#{{{INFLIGHT_OPTION}}},}}}}"
        )
        return Guard(condition, target=pane_id)

    def _screen(self, pane_id: PaneId) -> tuple[list[str], bool]:
        """The pane's rows and whether its process ended (``remain-on-exit`` keeps it)."""
        try:
            out = self.commands.run_many(
                [("display-message", "-p", "-t", pane_id, "#{pane_dead}"), ("capture-pane", "-p", "-t", pane_id)]
            )
        except TmuxCommandError as error:
            raise StartStopped(f"the pane {pane_id} is gone ({error})") from None
        return list(out.lines[1:]), out.first == "1"

    def _guide(self, agent: PreparedAgent, pane_id: PaneId, claim: StartClaim) -> list[str]:
        spec = agent.spec
        aliases = (agent.typed_folder,) if agent.typed_folder != spec.directory else ()
        expect = StartupExpectation(
            spec.directory, aliases, self.home, bypass=spec.permission_mode == BYPASS
        )
        return self.guide(pane_id, expect, claim)

    def guide(self, pane_id: PaneId, expect: StartupExpectation, claim: StartClaim) -> list[str]:
        """Take a claimed pane's Claude Code through its startup screens (`StartupGuide`); the
        dialogs answered, or `StartStopped`."""
        guide = StartupGuide(expect, self.clock(), timeout=self.start_timeout)
        while True:
            lines, dead = self._screen(pane_id)
            if dead:
                words = " / ".join(" ".join(row.split()) for row in lines if row.strip())[-200:] or "no output"
                self._close(pane_id)
                raise StartStopped(f"Claude Code exited while starting: {words}")
            step = guide.step(lines, detect_text("\n".join(lines)), self.clock())
            if isinstance(step, PressKey):
                if not self.commands.press(pane_id, step.key, guard=self.guard(pane_id, claim)):
                    raise StartStopped("the pane is no longer this start's (its claim is gone): look at the pane")
            elif isinstance(step, Ready):
                return list(guide.answered)
            elif isinstance(step, Stop):
                raise StartStopped(step.line)
            self.sleep(LOOK_EVERY)

    def new_claim(self) -> StartClaim:
        return StartClaim(secrets.token_hex(8), int(self.wall() + self.start_timeout + CLAIM_SPARE))

    def claim_commands(self, pane_id: PaneId, claim: StartClaim) -> list[tuple[str, ...]]:
        """The start claim on a new pane, and ``remain-on-exit`` while it starts."""
        return [
            ("set-option", "-p", "-t", pane_id, START_CLAIM_OPTION, claim.render()),
            # the pane stays when Claude Code exits during the start: its last words are read
            ("set-option", "-p", "-t", pane_id, "remain-on-exit", "on"),
        ]

    def _box(self, pane_id: PaneId) -> tuple[str | None, AgentState]:
        lines, dead = self._screen(pane_id)
        if dead:
            raise StartStopped("Claude Code exited while its prompt was typed: look at the pane")
        detection = detect_text("\n".join(lines))
        return detection.input_text, detection.state

    def _wait_box(self, pane_id: PaneId, done: Callable[[str | None, AgentState], bool]) -> bool:
        deadline = self.clock() + TYPE_TIMEOUT
        while True:
            box, state = self._box(pane_id)
            if done(box, state):
                return True
            if self.clock() > deadline:
                return False
            self.sleep(LOOK_EVERY)

    def _type_prompt(self, pane_id: PaneId, prompt: str, claim: StartClaim) -> None:
        """Paste the prompt whole (bracketed: a newline in it does not submit), see it in the
        box, press Enter once, see the box empty or the agent working. Enter is never pressed a
        second time: a prompt not seen leaving the box is reported instead."""
        guard = self.guard(pane_id, claim)
        if not self.commands.paste(pane_id, prompt, guard=guard):
            raise StartStopped("the pane is no longer this start's (its claim is gone): the prompt was not typed")
        if not self._wait_box(pane_id, lambda box, _state: bool(box)):
            raise StartStopped("the prompt was pasted but never showed in the input box: look at the pane")
        if not self.commands.press(pane_id, "Enter", guard=guard):
            raise StartStopped("the pane is no longer this start's: the prompt is typed, not submitted")
        if not self._wait_box(pane_id, lambda box, state: box == "" or state is AgentState.WORKING):
            raise StartStopped("Enter was pressed once but the prompt did not leave the input box: look at the pane")

    def release(self, pane_id: PaneId, claim: StartClaim) -> None:
        """Drop this start's claim (only if still its own) and ``remain-on-exit``."""
        guard = Guard(f"#{{==:#{{{START_CLAIM_OPTION}}},{claim.render()}}}", target=pane_id)
        with contextlib.suppress(TmuxError, PaneGone):
            self.commands.run_guarded(
                guard,
                [
                    ("set-option", "-pqu", "-t", pane_id, START_CLAIM_OPTION),
                    ("set-option", "-pqu", "-t", pane_id, "remain-on-exit"),
                ],
            )

    def _close(self, pane_id: PaneId) -> None:
        with contextlib.suppress(TmuxError, PaneGone):
            self.commands.run("kill-pane", "-t", pane_id)

    def _session_id(self, pane_id: PaneId) -> str | None:
        """Claude Code's session id, from the status file of the process below the pane (on the
        agent's host)."""
        deadline = self.clock() + SESSION_ID_WAIT
        while True:
            identity = self.commands.pane_identity(pane_id)
            if identity is None or identity.dead:
                return None
            found = self.host.claude(identity.pid, self.config_dirs)
            if found is not None and found.session_id:
                return found.session_id
            if self.clock() > deadline:
                return None
            self.sleep(self.host.look_every)
