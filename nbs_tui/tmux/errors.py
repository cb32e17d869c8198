"""What can go wrong with a tmux command, as types (raised by `nbs_tui.tmux.commands` and the
fleet; `nbs_tui.tmux.tmux_runner` maps a failed process or tmux's own message to them, in one place).

`TmuxUnavailable` and its kinds mean the server cannot be reached (the fleet reconnects, the
lease holder lets go); `TmuxCommandError` that tmux answered and refused, or did not answer in
time (try again later); `PaneGone` that the pane acted on is not there any more.
"""

from __future__ import annotations


class TmuxError(Exception):
    """Any failure of a tmux command: the kinds below say what it means for the caller."""


class TmuxUnavailable(TmuxError):
    """The tmux binary is missing or the server cannot be reached."""


class ServerGone(TmuxUnavailable):
    """tmux answered that the server is not running (or died under the command)."""


class HostUnreachable(TmuxUnavailable):
    """The way to the server failed (ssh could not connect, or tmux is unusable there), as
    opposed to tmux answering that it has no server: the fleet retries it with backoff."""


class TmuxCommandError(TmuxError):
    """tmux ran and refused the command; the message is tmux's own."""


class TmuxTimeout(TmuxCommandError):
    """No answer in time: the command may or may not have run (never repeat one that types)."""


class PaneGone(TmuxError):
    """The pane died or was replaced between choosing it and acting on it."""


class PaneNotFound(PaneGone, TmuxCommandError):
    """tmux refused a command because its target pane does not exist (any more)."""
