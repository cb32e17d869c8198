"""How tmux is run for one server: the seam between the fleet and where tmux lives.

`TmuxRunner` runs the local ``tmux`` binary; `nbs_tui.tmux.ssh` adds a runner that runs tmux on
another host through the user's OpenSSH. The fleet, the control client and the server's
commands (`nbs_tui.tmux.commands`) ask the runner for argv and never build a ``tmux`` command
line themselves, so a fleet mirrors a remote server exactly as a local one.

`TmuxRunner.execute` is the one place nbs-tui starts a short-lived process for a tmux command
(local, or an ssh exec of one), and `failure`/`refusal` the one mapping of what failed to the
typed errors of `nbs_tui.tmux.errors`. The long-lived ``tmux -C`` control clients are started by
`nbs_tui.tmux.control` from `control_argv`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nbs_tui.core.fleet.model import PaneInfo, ServerAddress
from nbs_tui.tmux.errors import (
    HostUnreachable,
    PaneNotFound,
    ServerGone,
    TmuxCommandError,
    TmuxError,
    TmuxTimeout,
    TmuxUnavailable,
)

if TYPE_CHECKING:
    from nbs_tui.core.fleet.host_spec import HostSpec

__all__ = ["HostUnreachable", "TmuxRunner"]

SERVER_GONE = ("no server running", "error connecting", "server exited unexpectedly", "lost server")
"""What tmux says when there is no server to answer (or it died under the command)."""
PANE_GONE = ("can't find pane", "no such pane")
"""What tmux says when a command's target pane does not exist."""


class TmuxRunner:
    """Run tmux for one server on this machine (no shell, no ssh: the cheap path)."""

    remote = False
    """Whether tmux runs elsewhere: /proc walks for agent detection are then meaningless, and a
    control client that dies means the connection to the host is lost."""
    capture_stderr = False
    """Whether a control client's stderr is kept to explain why it ended (ssh says why there)."""
    host: HostSpec | None = None
    """The other host tmux runs on (None: this machine)."""

    def __init__(self, server: ServerAddress, tmux: str = "tmux") -> None:
        self.server = server
        self.tmux = tmux

    def argv(self, args: Sequence[str]) -> list[str]:
        """The command line that runs ``tmux <server args> args``."""
        return [self.tmux, *self.server.tmux_args(), *args]

    def control_argv(self, session_id: str, flags: str = "ignore-size") -> list[str]:
        """The command line of a control-mode client attached to ``session_id`` with the
        client ``flags`` of ``attach-session -f``."""
        return self.argv(["-C", "attach-session", "-f", flags, "-t", session_id])

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        # A command aimed at a chosen server must not be redirected by the caller's own $TMUX.
        env.pop("TMUX", None)
        env.pop("TMUX_PANE", None)
        return env

    def describe(self) -> str:
        return self.server.describe()

    def run(self, *args: str, timeout: float = 5.0, stdin: bytes | None = None) -> str:
        """Run one tmux command as a process; its stdout, or a typed `TmuxError`. Arguments go
        to tmux as they are (`nbs_tui.tmux.commands` escapes them first)."""
        return self.execute(self.argv(args), timeout=timeout, stdin=stdin)

    def execute(self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None) -> str:
        """Run ``argv`` (a tmux command line, or a script through ssh) to its end: its stdout.

        The one place a tmux command runs as a process. Raises `TmuxUnavailable` (tmux, or ssh,
        missing), `HostUnreachable`, `ServerGone`, `PaneNotFound`, `TmuxTimeout` (no answer:
        it may have run) or `TmuxCommandError` (tmux's own message; also a process that could
        not be started, too many open files say: a failure tried again later)."""
        try:
            done = subprocess.run(
                list(argv),
                input=stdin,
                # Never the dashboard's terminal: ssh would read the operator's keys.
                stdin=subprocess.DEVNULL if stdin is None else None,
                capture_output=True,
                timeout=timeout,
                env=self.env(),
                check=False,
            )
        except FileNotFoundError as exc:
            raise self.missing(argv[0]) from exc
        except subprocess.TimeoutExpired as exc:
            raise TmuxTimeout(self.no_answer(timeout)) from exc
        except OSError as exc:
            raise TmuxCommandError(f"cannot run {os.path.basename(argv[0])}: {exc.strerror or exc}") from exc
        if done.returncode != 0:
            raise self.failure(done.returncode, done.stderr.decode("utf-8", "replace"))
        return done.stdout.decode("utf-8", "replace")

    def missing(self, program: str) -> TmuxError:
        return TmuxUnavailable(f"tmux is not installed ({program!r} not found)")

    def no_answer(self, timeout: float) -> str:
        return f"{self.describe()} did not answer within {timeout:g}s"

    def failure(self, returncode: int, stderr: str) -> TmuxError:
        """What a failed process means (`execute`): the way to the host lost, else what tmux said."""
        if self.lost_connection(returncode):
            return HostUnreachable(self.explain(returncode, stderr))
        message = stderr.strip()
        if not message:
            return TmuxCommandError(f"{self.describe()}: tmux exited with {returncode}")
        if any(gone in message for gone in SERVER_GONE):
            return ServerGone(self.explain(returncode, stderr))
        return self.refusal(message)

    def refusal(self, message: str) -> TmuxError:
        """What tmux's own error message means, however the command ran (a process or in-band)."""
        if any(gone in message for gone in SERVER_GONE):
            return ServerGone(f"{self.describe()}: {message}")
        if message.startswith(PANE_GONE):
            return PaneNotFound(message)
        return TmuxCommandError(message)

    def explain(self, returncode: int, stderr: str) -> str:
        """One line saying why a tmux command (or control client) failed."""
        err = stderr.strip()
        return f"{self.describe()}: {err or 'tmux exited with ' + str(returncode)}"

    max_backoff: float | None = None
    """After repeated failures to connect, wait up to this long between tries (None: the fleet's
    fixed ``reconnect_interval``, as a local server is cheap to poll)."""

    def prepare(self) -> list[str]:
        """Called before every (re)connect; raises `TmuxUnavailable` with why it cannot, and
        returns notes for the operator that do not stop the connection."""
        return []

    def detect_agents(self, panes: Sequence[PaneInfo]) -> dict[str, bool]:
        """Agent verdicts by pane id from where the panes run; empty when this machine's /proc
        answers (local) or the host could not be asked (then title and command decide)."""
        return {}

    def reap(self) -> list[int]:
        """Stop orphaned control clients of the server; returns their pids (none locally)."""
        return []

    def lost_connection(self, returncode: int | None) -> bool:
        """Whether a control client that ended with ``returncode`` lost the way to the server
        itself (so every client of it is gone): never for a local tmux."""
        return False

    def lost_message(self) -> str:
        """The line announcing that a live connection to the server ended ("" when there is
        no connection to lose: a local server is reached afresh by every command)."""
        return ""

    def close(self) -> None:
        """Release what the runner holds (nothing locally)."""


class OwnTmuxRunner(TmuxRunner):
    """The tmux this process runs inside, as a plain ``tmux`` in its pane reaches it: ``$TMUX``
    names the server and the client context (the dashboard's pane, its session). Not the watched
    server: a jump to another host opens a window here, notifications ask the operator's pane."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        super().__init__(ServerAddress())
        self.environ = dict(environ)

    def env(self) -> dict[str, str]:
        return dict(self.environ)
