"""Small, direct tmux commands the operator's actions need beyond `FleetPort`.

Checking that a pane is still the one chosen, and pasting multi-line text, are one-off
commands where a fresh answer from tmux matters more than the fleet's cached view, so they run
the ``tmux`` binary (with the watched server's ``-L``/``-S``). Given ``in_band`` (the fleet),
commands run on its open control connection instead when one is ready (the lease's every few
seconds and the sidecar's every tick: ~0.1 ms of tmux's time instead of a ``tmux`` process of
~5 ms); pastes (stdin) and ``-V`` always run the binary. Every call is blocking: callers run
them in a thread worker.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from nbs_tui.core.model import PaneId, ServerAddress
from nbs_tui.tmux.control import CommandLost, Reply, quote
from nbs_tui.tmux.port import PaneGone, TmuxUnavailable
from nbs_tui.tmux.runner import TmuxRunner

_COUNTER = itertools.count(1)
_TIMEOUT = 10.0
_SERVER_GONE = ("no server running", "error connecting", "server exited unexpectedly", "lost server")


def escape_argument(arg: str) -> str:
    """Keep a trailing ``;`` literal: tmux reads an argument ending in ``;`` as a command separator.

    tmux turns a final ``\\;`` back into ``;`` (and only that), so this is exact for any text,
    including text that itself ends in a backslash and a semicolon.
    """
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


class TmuxCommandError(Exception):
    """tmux ran and refused the command; the message is tmux's own."""


class InBand(Protocol):
    """Runs a command line on an open control connection (`TmuxFleet.command_line`)."""

    def command_line(self, line: str, timeout: float = 5.0) -> Reply | None: ...


_TYPING = ("send-keys", "paste-buffer")
"""A line holding these types into a pane: never repeated when its answer was lost."""

_LATER = ("run-shell", "wait-for", "confirm-before", "command-prompt", "display-popup", "display-menu", "popup", "menu")
"""Commands tmux may finish after the next line (a shell, a wait, a prompt): their output would
come after `ControlClient.command_line`'s marker, so a line naming one (anywhere, even inside a
quoted argument) runs as a process."""


@dataclass(frozen=True, slots=True)
class PaneIdentity:
    """What identifies a pane's occupant right now: its id, first process, and whether it died."""

    pane_id: PaneId
    pid: int
    dead: bool
    current_command: str
    session_name: str
    window_index: int
    pane_index: int

    @property
    def target(self) -> str:
        return f"{self.session_name}:{self.window_index}.{self.pane_index}"


class TmuxCommands:
    """Run ``tmux <server args> ...`` against one server."""

    def __init__(
        self,
        server: ServerAddress,
        environ: Mapping[str, str] | None = None,
        runner: TmuxRunner | None = None,
        in_band: InBand | None = None,
    ) -> None:
        self.server = server
        self.in_band = in_band
        """The same server's control connections (the fleet); None: always a process."""
        self.in_band_runs = 0
        """Commands lines run in-band (for benches and tests)."""
        self.runner = runner
        """Where tmux runs (e.g. over ssh, the fleet's own runner); None: this host's tmux."""
        base = dict(os.environ if environ is None else environ)
        # A command aimed at a chosen server must not be redirected by the caller's own $TMUX.
        base.pop("TMUX", None)
        self._env = base if runner is None else runner.env()

    def argv(self, *args: str) -> list[str]:
        return self._argv([escape_argument(a) for a in args])

    def _argv(self, args: list[str]) -> list[str]:
        if self.runner is not None:
            return self.runner.argv(args)
        return ["tmux", *self.server.tmux_args(), *args]

    def run(self, *args: str, stdin: bytes | None = None, env: Mapping[str, str] | None = None) -> str:
        """Run one tmux command and return its stdout; raise on failure with tmux's message."""
        if stdin is None and env is None and args and not args[0].startswith("-"):
            out = self._run_in_band([args])
            if out is not None:
                return out
        return self._exec(self.argv(*args), args[0], stdin, env)

    def run_many(self, commands: Sequence[Sequence[str]]) -> str:
        """Run several commands as one tmux command line (``a ; b ; c``): one process, and tmux
        runs them back to back with no other client's command in between. A failing command
        skips the rest (``set-option -q`` does not fail on a missing target)."""
        out = self._run_in_band(commands) if commands else None
        if out is not None:
            return out
        args: list[str] = []
        for i, command in enumerate(commands):
            if i:
                args.append(";")
            args.extend(escape_argument(a) for a in command)
        return self._exec(self._argv(args), commands[0][0] if commands else "", None, None)

    def _run_in_band(self, commands: Sequence[Sequence[str]]) -> str | None:
        """The line's stdout from a control connection, or None: run it as a process."""
        if self.in_band is None:
            return None
        if any(c[0] in ("if-shell", "if", "run") and "-F" not in c[1:] for c in commands if c):
            return None  # a shell runs it, later
        line = " ; ".join(" ".join(quote(arg) for arg in command) for command in commands)
        if any(word in line for word in _LATER):
            return None
        try:
            reply = self.in_band.command_line(line, _TIMEOUT)
        except CommandLost as error:
            if any(word in line for word in _TYPING):  # it may have typed: never twice
                raise TmuxCommandError(f"tmux {commands[0][0]}: {error}") from None
            return None  # a read, or a set that means the same twice: ask a process
        if reply is None:
            return None
        self.in_band_runs += 1
        if not reply.ok:
            message = b"\n".join(reply.errors).decode("utf-8", "replace").strip() or "failed"
            if any(gone in message for gone in _SERVER_GONE):
                raise TmuxUnavailable(f"{self.server.describe()}: {message}")
            raise TmuxCommandError(message)
        return "".join(line + "\n" for line in reply.text())

    def _exec(
        self, argv: list[str], name: str, stdin: bytes | None, env: Mapping[str, str] | None
    ) -> str:
        try:
            done = subprocess.run(
                argv,
                input=stdin,
                # Over ssh, never the dashboard's terminal: ssh would read the operator's keys.
                stdin=subprocess.DEVNULL if stdin is None and self.runner is not None else None,
                capture_output=True,
                env=dict(env) if env is not None else self._env,
                timeout=_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise TmuxUnavailable("tmux is not installed") from None
        except subprocess.TimeoutExpired:
            raise TmuxCommandError(f"tmux {name} did not answer within {_TIMEOUT:.0f} s") from None
        except OSError as error:  # too many open files, no memory for a fork: a failed command, tried again later
            raise TmuxCommandError(f"cannot run tmux {name}: {error.strerror or error}") from None
        if done.returncode != 0:
            message = done.stderr.decode("utf-8", errors="replace").strip() or f"exit {done.returncode}"
            if self.runner is not None and self.runner.lost_connection(done.returncode):
                raise TmuxUnavailable(self.runner.explain(done.returncode, message))  # ssh's, not tmux's
            if any(gone in message for gone in _SERVER_GONE):
                raise TmuxUnavailable(f"{self.server.describe()}: {message}")
            raise TmuxCommandError(message)
        return done.stdout.decode("utf-8", errors="replace")

    def pane_identity(self, pane_id: PaneId) -> PaneIdentity | None:
        """The pane as tmux sees it now, or None when no pane has that id any more."""
        fmt = "\t".join(
            (
                "#{pane_id}",
                "#{pane_pid}",
                "#{pane_dead}",
                "#{pane_current_command}",
                "#{session_name}",
                "#{window_index}",
                "#{pane_index}",
            )
        )
        try:
            out = self.run("display-message", "-p", "-t", pane_id, fmt)
        except TmuxCommandError:
            return None
        fields = out.rstrip("\n").split("\t")
        if len(fields) != 7 or fields[0] != pane_id:
            return None
        try:
            return PaneIdentity(
                pane_id=fields[0],
                pid=int(fields[1] or 0),
                dead=fields[2] == "1",
                current_command=fields[3],
                session_name=fields[4],
                window_index=int(fields[5]),
                pane_index=int(fields[6]),
            )
        except ValueError:
            return None

    def paste(self, pane_id: PaneId, text: str, *, bracketed: bool = True) -> None:
        """Paste ``text`` into the pane as a terminal paste would.

        ``load-buffer`` reads the bytes from stdin (no quoting, no key-name parsing, no length
        limit of a command line); ``paste-buffer -p`` wraps them in bracketed-paste markers when
        the pane's program asked for them (Claude Code does), so newlines inside stay newlines and
        do not submit; ``-d`` deletes the private buffer. As a terminal does, tmux turns each LF
        into CR on the way in; a program in cooked mode (a shell's ``cat``) turns it back.
        """
        name = f"nbs-tui-{os.getpid()}-{next(_COUNTER)}"
        self.run("load-buffer", "-b", name, "-", stdin=text.encode("utf-8"))
        args = ["paste-buffer", "-d", "-b", name, "-t", pane_id]
        if bracketed:
            args.insert(1, "-p")
        try:
            self.run(*args)
        except TmuxCommandError as error:
            with contextlib.suppress(TmuxCommandError):  # the paste error is what matters
                self.run("delete-buffer", "-b", name)
            if "can't find pane" in str(error):
                raise PaneGone(f"pane {pane_id} is gone") from None
            raise
