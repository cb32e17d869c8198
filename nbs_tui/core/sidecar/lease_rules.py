"""The sidecar lease: exactly one acting sidecar per tmux server (design: docs/lease.md).

The lease is one server user option (`LEASE_OPTION`) that tmux changes only by compare-and-set.
This module is the pure part: the value's format, what a watcher may conclude from what it has
seen (with its own clock passed in), and the small rules around it (the in-flight mark of a poll,
the viewers' switches and requests). Expiry is judged by *observed renewal*: a watcher remembers
when (on its own clock) it first saw the current value, and the lease is expired once that value
has not changed for the lease's ttl. No two hosts' wall clocks are ever compared.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from nbs_tui.core.sidecar.delivery_rules import typed_prefix_length
from nbs_tui.core.sidecar.meters import Meters
from nbs_tui.core.sidecar.meters_relay import METERS_OPTION
from nbs_tui.core.sidecar.relay import RelayedAction

LEASE_OPTION = "@nbs_sidecar"
"""Server user option holding the lease value."""
PAUSE_OPTION = "@nbs_pause"
"""Server user option: ``on`` pauses every pane's sidecar actions (any view sets it)."""
MUTE_OPTION = "@nbs_mute"
"""Server user option: the notification kinds muted from a dashboard's palette, comma-separated
(``needs-input,finished``; unset: none). Every dashboard of the server and the lease holder's
pushes (`nbs_tui.notify.push`) honour it until a dashboard unmutes the kind."""
INFLIGHT_OPTION = "@nbs_inflight"
"""Pane option set before a poll is typed and cleared once it is submitted: ``TOKEN TEXT``."""
START_CLAIM_OPTION = "@nbs_starting"
"""Pane option ``TOKEN DEADLINE``: ``nbs-tui new`` is taking this fresh agent through its startup
screens and typing its first prompt (docs/lifecycle.md); the holder's sidecar leaves the pane alone
until the claim is gone or its DEADLINE (wall seconds) has passed."""
POLL_SWITCH_OPTION = "@nbs_poll"
"""Pane option: ``off``/``on`` overrides the poll switch for that pane (unset: the default)."""
PLAN_SWITCH_OPTION = "@nbs_plan"
"""Pane option: ``off``/``on`` overrides plan auto-select for that pane (unset: the default)."""
POLL_REQUEST_OPTION = "@nbs_poll_req"
"""Pane option: a request id; the holder answers in `POLL_ANSWER_OPTION` as ``ID ok|no WHY``."""
POLL_ANSWER_OPTION = "@nbs_poll_ack"
STATE_OPTION = "@nbs_state"
NEEDS_OPTION = "@nbs_needs"
SINCE_OPTION = "@nbs_since"
PUBLISHED_OPTIONS = (STATE_OPTION, NEEDS_OPTION, SINCE_OPTION, METERS_OPTION)
"""Pane options the holder publishes (and the next holder clears when they are left over)."""

VERSION_TAG = "nbs1"
DEFAULT_TTL = 8.0
MIN_TTL = 2.0
MAX_TTL = 120.0
"""A value's ttl is clamped to this range: a garbled huge ttl must not hold the server forever."""
RENEW_FRACTION = 4.0
"""The holder renews every ttl/4 and watchers look as often."""
ACT_FRACTION = 0.5
"""The holder acts only within ttl/2 of sending its last successful renewal."""

_TOKEN = re.compile(r"^[0-9a-f]{8,64}$")
_HOST_BAD = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease value written by nbs-tui: ``nbs1 HOST PID TOKEN SEQ TTL SINCE``.

    ``seq`` goes up at every renewal (that change is what watchers observe); ``since`` is the
    holder's wall time at acquisition, for display only (never compared across hosts).
    """

    host: str
    pid: int
    token: str
    seq: int
    ttl: float
    since: int

    def render(self) -> str:
        return f"{VERSION_TAG} {self.host} {self.pid} {self.token} {self.seq} {self.ttl:g} {self.since}"

    def renewed(self) -> Lease:
        return replace(self, seq=self.seq + 1)

    @property
    def effective_ttl(self) -> float:
        return min(MAX_TTL, max(MIN_TTL, self.ttl))

    def describe(self) -> str:
        return f"{self.host} pid {self.pid}"


@dataclass(frozen=True, slots=True)
class ForeignLease:
    """A non-empty value nbs-tui did not write (or garbled): held until it stops changing."""

    raw: str
    why: str

    def describe(self) -> str:
        shown = self.raw if len(self.raw) <= 60 else self.raw[:57] + "..."
        return f"unknown holder {shown!r}"


LeaseValue = Lease | ForeignLease | None
"""What the option holds: a lease, a foreign value, or nothing (free)."""


def clean_host(host: str) -> str:
    """A host name safe inside the space-separated value (never empty)."""
    return _HOST_BAD.sub("_", host)[:64] or "unknown"


def new_lease(host: str, pid: int, token: str, since: float, ttl: float = DEFAULT_TTL) -> Lease:
    if not _TOKEN.match(token):
        raise ValueError(f"lease token must be 8-64 lowercase hex digits, not {token!r}")
    return Lease(clean_host(host), pid, token, 0, min(MAX_TTL, max(MIN_TTL, ttl)), int(since))


def parse_lease(raw: str) -> LeaseValue:
    """Read an option value; anything but an exact nbs1 value is a `ForeignLease`."""
    if raw == "":
        return None
    parts = raw.split(" ")
    if len(parts) != 7 or parts[0] != VERSION_TAG:
        return ForeignLease(raw, "not an nbs-tui lease value")
    _, host, pid, token, seq, ttl, since = parts
    if not host or _HOST_BAD.search(host) or not _TOKEN.match(token):
        return ForeignLease(raw, "bad host or token")
    try:
        lease = Lease(host, int(pid), token, int(seq), float(ttl), int(since))
    except ValueError:
        return ForeignLease(raw, "bad number")
    if lease.pid <= 0 or lease.seq < 0 or not lease.ttl > 0:
        return ForeignLease(raw, "bad number")
    if lease.render() != raw:  # e.g. "+5" or "08": not what we write, so not ours
        return ForeignLease(raw, "not in canonical form")
    return lease


class LeaseObserver:
    """What one watcher has seen of the lease option, on its own clock.

    ``observe`` is called with every fresh read; the value is expired once it has stayed the same
    for its ttl since this watcher first saw it. A watcher that has just started therefore waits a
    whole ttl before taking over a value it found (it cannot know how old it is).
    """

    def __init__(self, ttl: float = DEFAULT_TTL) -> None:
        self.ttl = ttl
        """The ttl applied to a foreign value (it carries none of its own)."""
        self.raw: str | None = None
        self.value: LeaseValue = None
        self.first_seen: float = 0.0

    def observe(self, raw: str, now: float) -> bool:
        """Record a read; True when the value differs from the last one seen."""
        if raw == self.raw:
            return False
        self.raw = raw
        self.value = parse_lease(raw)
        self.first_seen = now
        return True

    def expired(self, now: float) -> bool:
        if self.raw is None or self.value is None:
            return False
        return now - self.first_seen >= self.ttl_of(self.value)

    def ttl_of(self, value: LeaseValue) -> float:
        return value.effective_ttl if isinstance(value, Lease) else self.ttl

    def takeover_from(self, now: float) -> str | None:
        """The value to compare-and-set against if this watcher may take the lease now, else None.

        ``""`` when free, the stale value when expired; None when held and live, or never read.
        """
        if self.raw is None:
            return None
        if self.value is None:
            return ""
        return self.raw if self.expired(now) else None


class Vacancy(StrEnum):
    """What one look at the lease says to a command that wants the server served
    (`lease_vacancy`): only ``held`` leaves the service alone."""

    HELD = "held"
    FREE = "free"
    DEAD = "dead"
    """Written by a process of this host that no longer exists: dead at once, no ttl to wait."""
    EXPIRED = "expired"
    """The same value seen again a whole ttl after it was first seen (`LeaseObserver`'s rule)."""


def lease_vacancy(
    raw: str,
    here: str,
    pid_alive: Callable[[int], bool],
    seen: tuple[str, float] | None,
    now: float,
    foreign_ttl: float = DEFAULT_TTL,
) -> Vacancy:
    """Whether a lease value read once still has a holder, for a watcher that lives only one
    command: ``here`` is this host's name, ``pid_alive`` asks this host's process table, ``seen``
    is (value, when first seen) as an earlier command remembered it, on the clock of ``now``.

    A value written on this host by a pid that is gone is dead at once (a SIGKILLed or
    OOM-killed holder never renews again). Any other value is held until it has stayed the same
    for its ttl (a foreign one: ``foreign_ttl``), as every watcher judges (docs/lease.md)."""
    value = parse_lease(raw)
    if value is None:
        return Vacancy.FREE
    if isinstance(value, Lease) and value.host == clean_host(here) and not pid_alive(value.pid):
        return Vacancy.DEAD
    if seen is not None and seen[0] == raw:
        ttl = value.effective_ttl if isinstance(value, Lease) else foreign_ttl
        if now - seen[1] >= ttl:
            return Vacancy.EXPIRED
    return Vacancy.HELD


def renew_due(last_renew_sent: float, now: float, ttl: float) -> bool:
    return now - last_renew_sent >= ttl / RENEW_FRACTION


def may_act(last_renew_sent: float | None, now: float, ttl: float) -> bool:
    """Whether the holder may still act: its last successful renewal was sent within ttl/2.

    Watchers take over no sooner than a whole ttl after they saw that renewal applied, so a
    holder that stalls (a stopped process, a slow tmux) stops acting well before anyone else
    starts; tmux also fences every typing command on the token (docs/lease.md).
    """
    return last_renew_sent is not None and now - last_renew_sent < ttl * ACT_FRACTION


def fence_format(token: str) -> str:
    """A tmux format true only while the lease option carries this holder's token."""
    if not _TOKEN.match(token):
        raise ValueError(f"bad lease token {token!r}")
    return f"#{{m:* {token} *,#{{{LEASE_OPTION}}}}}"


def escape_format_literal(text: str) -> str:
    """Make ``text`` a literal inside a tmux format argument (``#{==:...,TEXT}``)."""
    return text.replace("#", "##").replace(",", "#,").replace("}", "#}")


def cas_format(expected: str) -> str:
    """A tmux format true only while the lease option equals ``expected`` exactly."""
    return f"#{{==:#{{{LEASE_OPTION}}},{escape_format_literal(expected)}}}"


def describe_holder(holder: LeaseValue, acting: bool) -> str:
    """Who acts for the server, in a few words for a status bar (``since`` in local time)."""
    if acting:
        return "sidecar: here"
    if holder is None:
        return "no sidecar"
    if isinstance(holder, ForeignLease):
        return "sidecar: unknown holder"
    since = time.strftime("%H:%M", time.localtime(holder.since))
    return f"sidecar: {holder.host} pid {holder.pid} since {since}"


# -- the in-flight mark -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InflightMark:
    """``TOKEN TEXT``: holder TOKEN typed (or was about to type) TEXT and has not seen it submitted."""

    token: str
    text: str

    def render(self) -> str:
        return f"{self.token} {self.text}"


@dataclass(frozen=True, slots=True)
class StartClaim:
    """``TOKEN DEADLINE`` of `START_CLAIM_OPTION`: a start in progress, until DEADLINE."""

    token: str
    deadline: float

    def render(self) -> str:
        return f"{self.token} {self.deadline:.0f}"

    def holds(self, now: float) -> bool:
        return now < self.deadline


def parse_start_claim(raw: str) -> StartClaim | None:
    token, sep, deadline = raw.strip().partition(" ")
    if not sep or not _TOKEN.match(token):
        return None
    try:
        return StartClaim(token, float(deadline))
    except ValueError:
        return None


def parse_inflight(raw: str) -> InflightMark | None:
    token, sep, text = raw.partition(" ")
    if not sep or not _TOKEN.match(token) or not text:
        return None
    return InflightMark(token, text)


def inflight_erase_count(mark: InflightMark, my_token: str, input_text: str | None) -> int | None:
    """How many characters a new holder erases from the box for a mark left by another holder.

    The rule (docs/lease.md): only a mark from another token is recovered; the box must hold a
    non-empty prefix of the mark's text exactly (the typing may have been cut short; rows wrapped at
    the pane's edge count as the text they show: `typed_prefix_length`), then exactly that many
    characters are erased. Anything else in the box is the operator's, never touched:
    the answer is 0 (just drop the mark). None: the mark is this holder's own, or the box cannot be
    read now (no input box on screen): leave the mark and look again next tick.
    """
    if mark.token == my_token or input_text is None:
        return None
    return typed_prefix_length(mark.text, input_text) or 0


# -- the viewers' switches and requests -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class PaneSwitches:
    """One pane's switches and request as any view wrote them into pane options."""

    poll: bool | None = None
    """None: the default (no override)."""
    plan: bool | None = None
    poll_request: str = ""
    poll_answer: str = ""
    inflight: InflightMark | None = None
    actions: tuple[RelayedAction, ...] = ()
    """The holder's last actions in the pane (`nbs_tui.core.sidecar.relay`)."""
    meters: Meters | None = None
    """The agent's meters as the holder read them (`nbs_tui.core.sidecar.meters_relay`)."""
    start_claim: StartClaim | None = None
    """``nbs-tui new`` is starting this agent: the sidecar leaves it alone while the claim holds."""
    send_request: str = ""
    """``nbs-tui send``'s pending request (`nbs_tui.core.sidecar.delivery_rules.SEND_REQUEST_OPTION`)."""
    send_answer: str = ""


def parse_switch(raw: str) -> bool | None:
    return {"on": True, "off": False}.get(raw.strip().lower())


def parse_tmux_version(text: str) -> tuple[int, int] | None:
    """``tmux 3.3a`` -> (3, 3); None for builds without a number (``tmux master``: assume new)."""
    match = re.search(r"(\d+)\.(\d+)", text)
    return (int(match[1]), int(match[2])) if match else None


MIN_TMUX = (3, 0)
"""Pane user options (``set -p``) came in tmux 3.0; the rest of the lease is older."""


def too_old(version_text: str) -> str | None:
    """A one-line reason when this tmux cannot carry the lease, else None."""
    version = parse_tmux_version(version_text)
    if version is not None and version < MIN_TMUX:
        need = ".".join(map(str, MIN_TMUX))
        return f"{version_text.strip()} is too old for the sidecar lease (needs tmux {need}): viewer only"
    return None


def answered(request: str, answer: str) -> bool:
    """Whether ``answer`` (``ID ok|no WHY``) answers request ``ID``."""
    return bool(request) and answer.split(" ", 1)[0] == request
