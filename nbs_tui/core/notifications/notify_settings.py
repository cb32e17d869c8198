"""The notification settings, checked when the settings are read (`nbs_tui.config`), and what
they mean: ``notify_osc``'s protocols (or the terminal's one, guessed), ``notify_command``'s
argv with its placeholders filled in, ``notify_urls``'s entries. Pure, below the config, so that
checking them needs no part of the notify room (`nbs_tui.notify`) that writes or sends them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nbs_tui.core.notifications.notify_rules import Notification, NotifyKind, message

OSC_PROTOCOLS = ("9", "777", "99")
BELL = "bell"
"""Not an OSC: the plain bell, `guess_protocols`' answer when it cannot tell the terminal."""
PLACEHOLDERS = ("pane", "pane_id", "host", "project", "state", "reason", "event", "title", "body")


class NotifyConfigError(ValueError):
    """``notify_osc`` or ``notify_command`` cannot be used; the message says why."""


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
    Whether Apprise can send to each is checked by the sender (`nbs_tui.notify.push`), off the start
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


