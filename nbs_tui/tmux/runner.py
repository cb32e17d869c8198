"""How tmux is run for one server: the seam between the fleet and where tmux lives.

`TmuxRunner` runs the local ``tmux`` binary (what the fleet always did); `nbs_tui.tmux.ssh`
adds a runner that runs tmux on another host through the user's OpenSSH. The fleet, the
control client and discovery ask the runner for argv and one-off commands and never build a
``tmux`` command line themselves, so a fleet mirrors a remote server exactly as a local one.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence

from nbs_tui.core.model import PaneInfo, ServerAddress
from nbs_tui.tmux.port import TmuxUnavailable


class HostUnreachable(TmuxUnavailable):
    """The way to the server failed (ssh could not connect, or tmux is unusable there), as
    opposed to tmux answering that it has no server: the fleet retries it with backoff."""


class TmuxRunner:
    """Run tmux for one server on this machine (no shell, no ssh: the cheap path)."""

    remote = False
    """Whether tmux runs elsewhere: /proc walks for agent detection are then meaningless, and a
    control client that dies means the connection to the host is lost."""
    capture_stderr = False
    """Whether a control client's stderr is kept to explain why it ended (ssh says why there)."""

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
        """Run one tmux command; raises `TmuxUnavailable` if the server cannot be reached."""
        try:
            done = subprocess.run(
                self.argv(args),
                input=stdin,
                capture_output=True,
                timeout=timeout,
                env=self.env(),
                check=False,
            )
        except FileNotFoundError as exc:
            raise TmuxUnavailable(f"tmux is not installed ({self.tmux!r} not found)") from exc
        except subprocess.TimeoutExpired as exc:
            raise TmuxUnavailable(f"{self.describe()} did not answer within {timeout}s") from exc
        if done.returncode != 0:
            raise TmuxUnavailable(self.explain(done.returncode, done.stderr.decode("utf-8", "replace")))
        return done.stdout.decode("utf-8", "replace")

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
