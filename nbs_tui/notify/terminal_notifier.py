"""Notifications that reach the operator wherever they sit: escape sequences written to the
dashboard's own terminal, and a user command per event.

The dashboard often runs on a remote box; the bell and ``notify-send`` fire there, not where the
operator sits. Terminal notifications (OSC 9, OSC 777, kitty's OSC 99) travel back through ssh
to the operator's terminal, which turns them into desktop notifications. Inside tmux they are
wrapped for passthrough (``ESC P tmux; ... ESC \\`` with every ESC doubled), which tmux forwards
only when its ``allow-passthrough`` option is on: `passthrough_problem` finds out and says how.
Where the terminal cannot be told (`guess_protocols`), a plain bell (BEL) is written instead:
every terminal understands it, most turn it into an urgency hint, a badge or a sound, and tmux
passes it on to its client by itself (``bell-action``), passthrough or not.

What is notified is decided in `nbs_tui.core.notifications` (pure, with the settings'
meaning: protocols, the command's placeholders); this module only writes. The user
command (``notify_command``) runs without a shell, its placeholders filled in per argument (a
reason with quotes or ``;`` stays one argument), on a thread of its own so the UI never waits;
a failure is reported through ``problem``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import threading
from collections.abc import Callable, Sequence

from nbs_tui.core.notifications.notify_rules import Notification, message
from nbs_tui.core.notifications.notify_settings import BELL, NotifyConfigError, Subject, fill

log = logging.getLogger(__name__)

COMMAND_TIMEOUT = 30.0


def _clean(text: str) -> str:
    """No control characters (an ESC or BEL would end the sequence early), one line, bounded."""
    return "".join(ch if ch.isprintable() else " " for ch in text)[:200]


def osc_sequence(protocol: str, title: str, body: str, ident: int = 1) -> str:
    """One notification in one protocol (``9``, ``777`` or ``99``), terminated by ST."""
    title, body = _clean(title), _clean(body)
    if protocol == "9":  # iTerm2, WezTerm, Ghostty: one text; never starting "digit;" (ConEmu's subcommands)
        return f"\x1b]9;{title}: {body}\x1b\\"
    if protocol == "777":  # urxvt, foot, VTE, Ghostty, WezTerm: notify;title;body (the title holds no ';')
        return f"\x1b]777;notify;{title.replace(';', ',')};{body}\x1b\\"
    if protocol == "99":  # kitty: a title chunk (d=0: more to come), then the body
        return f"\x1b]99;i={ident}:d=0:p=title;{title}\x1b\\\x1b]99;i={ident}:d=1:p=body;{body}\x1b\\"
    raise NotifyConfigError(f"unknown terminal notification protocol {protocol!r}")


def tmux_wrap(sequence: str) -> str:
    """For tmux passthrough: a DCS ``tmux;`` with every ESC inside doubled."""
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def passthrough_problem(state: str | None) -> str | None:
    """What to tell the operator once when tmux will swallow the notifications."""
    if state not in ("off", "0"):  # tmux 3.3 says 0/1, later ones may name the choice (on, all)
        return None
    return (
        "terminal notifications cannot leave tmux: allow-passthrough is off in the dashboard's pane; "
        "turn it on with: tmux set -g allow-passthrough on (and in ~/.tmux.conf: set -g allow-passthrough on)"
    )


class TerminalNotifier:
    """Writes notifications to the dashboard's terminal and runs the user's command."""

    def __init__(
        self,
        write: Callable[[str], None] | None,
        protocols: tuple[str, ...],
        *,
        in_tmux: bool,
        command: str = "",
        problem: Callable[[str, str], None],
        subject: Callable[[Notification], Subject],
    ) -> None:
        self.write = write
        self.protocols = protocols
        self.in_tmux = in_tmux
        self.command = command.strip()
        self.problem = problem
        self.subject = subject
        self._ident = 0

    def sequences(self, note: Notification) -> str:
        """The OSC sequences for one notification (wrapped inside tmux); never the bell."""
        subject = self.subject(note)
        title, body = message(note, subject.pane)
        self._ident += 1
        out = "".join(osc_sequence(p, title, body, self._ident) for p in self.protocols if p != BELL)
        return tmux_wrap(out) if out and self.in_tmux else out

    def notify_all(self, notes: Sequence[Notification], *, bell_rang: bool = False) -> None:
        """UI thread: the notifications due in one tick, and at most one bell for all of them
        (none when the tick already rang one, e.g. the needs-you bell for the same event)."""
        for note in notes:
            self.notify(note)
        if notes and BELL in self.protocols and self.write is not None and not bell_rang:
            self.write("\a")  # unwrapped: tmux rings its client's terminal itself

    def notify(self, note: Notification) -> None:
        """UI thread: write the sequences now; start the command on its own thread."""
        if self.write is not None and (out := self.sequences(note)):
            self.write(out)
        if self.command:
            try:
                argv = fill(self.command, note, self.subject(note))
            except NotifyConfigError as error:
                self.problem("notify", str(error))
                return
            threading.Thread(target=self._run, args=(argv,), name="nbs-notify-command", daemon=True).start()

    def _run(self, argv: list[str]) -> None:
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False,
                stdin=subprocess.DEVNULL, env={**os.environ},
            )  # fmt: skip
        except FileNotFoundError:
            self.problem("notify", f"notify_command: {argv[0]} not found")
            return
        except subprocess.TimeoutExpired:
            self.problem("notify", f"notify_command: {argv[0]} still running after {COMMAND_TIMEOUT:.0f} s; killed")
            return
        except OSError as error:
            self.problem("notify", f"notify_command: {argv[0]}: {error.strerror or error}")
            return
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            self.problem("notify", f"notify_command exited {done.returncode}" + (f": {said[-1]}" if said else ""))
