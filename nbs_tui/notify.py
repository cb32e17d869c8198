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

What is notified is decided in `nbs_tui.core.notify` (pure); this module only writes. The user
command (``notify_command``) runs without a shell, its placeholders filled in per argument (a
reason with quotes or ``;`` stays one argument), on a thread of its own so the UI never waits;
a failure is reported through ``problem``.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nbs_tui.core.notify import Notification, NotifyKind, message

log = logging.getLogger(__name__)

OSC_PROTOCOLS = ("9", "777", "99")
BELL = "bell"
"""Not an OSC: the plain bell, `guess_protocols`' answer when it cannot tell the terminal."""
COMMAND_TIMEOUT = 30.0
PLACEHOLDERS = ("pane", "pane_id", "host", "project", "state", "reason", "event", "title", "body")


class NotifyConfigError(ValueError):
    """``notify_osc`` or ``notify_command`` cannot be used; the message says why."""


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


def parse_protocols(value: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """``notify_osc``: ``auto`` (guess from the terminal's name), ``off``, or a list like ``9,99``
    (``bell`` among them writes a plain bell)."""
    text = value.strip().lower()
    if text in ("off", "none", ""):
        return ()
    if text == "auto":
        return guess_protocols(environ)
    chosen = tuple(part.strip().removeprefix("osc") for part in text.split(",") if part.strip())
    for protocol in chosen:
        if protocol not in (*OSC_PROTOCOLS, BELL):
            raise NotifyConfigError(f"notify_osc: unknown protocol {protocol!r} (use 9, 777, 99, bell, auto or off)")
    return chosen


def guess_protocols(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The one protocol the operator's terminal is known to show, else the plain bell.

    One, because a terminal that speaks two (Ghostty and WezTerm take both 9 and 777) shows each
    event twice. The bell when the terminal cannot be told: all three would show duplicates
    wherever two are spoken and nothing where none is, while every terminal handles a bell. ``TERM`` and
    ``LC_TERMINAL`` survive ssh; ``TERM_PROGRAM``, ``KITTY_WINDOW_ID`` and ``VTE_VERSION`` only
    locally."""
    term = environ.get("TERM", "")
    program = (environ.get("TERM_PROGRAM") or environ.get("LC_TERMINAL") or "").lower()
    if "kitty" in term or environ.get("KITTY_WINDOW_ID"):
        return ("99",)
    if "iterm" in program:
        return ("9",)
    if "ghostty" in term or program in ("ghostty", "wezterm") or "foot" in term or "rxvt" in term:
        return ("777",)
    if environ.get("VTE_VERSION"):  # GNOME Terminal & co: shown where the distribution patched VTE
        return ("777",)
    return (BELL,)


@dataclass(frozen=True, slots=True)
class Subject:
    """What a notification names: the pane as a person reads it, its host and project."""

    pane: str
    host: str
    project: str


def fill(template: str, note: Notification, subject: Subject) -> list[str]:
    """``notify_command`` as argv: split like a shell would, then each placeholder filled in
    within its own argument (so a value never becomes a second argument or a shell command)."""
    title, body = message(note, subject.pane)
    values = {
        "pane": subject.pane + (f" and {len(note.also)} more" if note.also else ""), "pane_id": note.pane_id, "host": subject.host, "project": subject.project,
        "state": note.state, "reason": note.reason, "event": note.kind.value, "title": title, "body": body,
    }  # fmt: skip
    try:
        argv = shlex.split(template)
    except ValueError as error:
        raise NotifyConfigError(f"notify_command: {error}") from None
    try:
        return [part.format_map(values) for part in argv]
    except (KeyError, ValueError, IndexError) as error:
        names = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        raise NotifyConfigError(f"notify_command: bad placeholder {error} (known: {names})") from None


def check_command(template: str) -> None:
    """Raise `NotifyConfigError` now, at start, for a command that could never run."""
    if template.strip():
        fill(template, Notification(NotifyKind.FINISHED, "%0", "idle", "", 0.0), Subject("s:0.0", "h", "p"))


def check_urls(urls: Sequence[Any]) -> None:
    """Raise `NotifyConfigError` for a ``notify_urls`` entry that is not a non-empty string.
    Whether Apprise can send to each is checked by the sender (`nbs_tui.push`), off the start
    path: loading Apprise and its plugins costs a dashboard's start ~0.25-0.6 s."""
    for index, url in enumerate(urls):
        if not isinstance(url, str) or not url.strip():
            raise NotifyConfigError(f"notify_urls[{index}] must be a non-empty string (an Apprise URL)")


def unusable_url(index: int, url: str) -> str:
    """What to say of a ``notify_urls`` entry Apprise cannot send to: its position and scheme
    only (the rest of a URL is often a token)."""
    scheme = url.strip().partition("://")[0] if "://" in url else "(no scheme)"
    return (
        f"notify_urls[{index}]: Apprise cannot send to this URL (scheme {scheme}); "
        "see https://github.com/caronc/apprise/wiki for the URL of each service"
    )


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
