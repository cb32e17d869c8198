"""Control commands: parse one inbox (or screen) line, apply it to a registry.

The seed's sidecar read ``.nbs/control-inbox`` one line at a time; the verbs are bare there
(``register-chat .nbs/chat/x.chat``) and prefixed ``\\nbs-`` when an agent prints them on its
screen. Both spellings are accepted everywhere, so a line copied from a screen into the inbox
still works. Unlike the NBS sidecars, nothing is ignored silently: an unknown verb, a missing
argument or a bad interval becomes a :class:`ControlError` with a reason a person can read, and
the caller goes on with the next line.

Paths are the rest of the line after the verb (trimmed), so paths with spaces work; a path
wrapped in matching quotes has them removed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbs_tui.core.control.registry import Registry

PREFIX = "\\nbs-"
"""How an agent writes a control verb on its screen (a literal backslash, then ``nbs-``)."""

MAX_ARGUMENT = 4096
"""Longest path accepted (PATH_MAX on Linux); longer arguments are reported, not applied."""


class Verb(StrEnum):
    REGISTER_CHAT = "register-chat"
    UNREGISTER_CHAT = "unregister-chat"
    REGISTER_BUS = "register-bus"
    UNREGISTER_BUS = "unregister-bus"
    REGISTER_HUB = "register-hub"
    UNREGISTER_HUB = "unregister-hub"
    SET_POLL_INTERVAL = "set-poll-interval"

    @property
    def kind(self) -> str | None:
        """The registry type a (un)register verb acts on: ``chat``, ``bus`` or ``hub``."""
        if self is Verb.SET_POLL_INTERVAL:
            return None
        return self.value.rsplit("-", 1)[1]

    @property
    def registers(self) -> bool:
        return self.value.startswith("register-")

    @property
    def unregisters(self) -> bool:
        return self.value.startswith("unregister-")


VERBS: frozenset[str] = frozenset(v.value for v in Verb)
_BY_NAME: dict[str, Verb] = {v.value: v for v in Verb}
# The Verb properties as plain lookups, for the hot path of a long replay.
_KIND: dict[Verb, str | None] = {v: v.kind for v in Verb}
_REGISTERS: frozenset[Verb] = frozenset(v for v in Verb if v.registers)


@dataclass(frozen=True, slots=True)
class ControlCommand:
    """A well-formed command. ``argument`` is a path, or a number of seconds for the interval."""

    verb: Verb
    argument: str
    raw: str

    @property
    def kind(self) -> str | None:
        return _KIND[self.verb]

    @property
    def registers(self) -> bool:
        return self.verb in _REGISTERS

    @property
    def seconds(self) -> float | None:
        """The interval of ``set-poll-interval`` (already validated by :func:`parse_line`)."""
        if self.verb is not Verb.SET_POLL_INTERVAL:
            return None
        return _parse_seconds(self.argument)

    def inbox_line(self) -> str:
        """The line to append to a control inbox for this command (bare verb, as NBS writes)."""
        return f"{self.verb.value} {self.argument}"


@dataclass(frozen=True, slots=True)
class Comment:
    """A ``#`` comment or a blank line: recorded in the history, otherwise skipped."""

    raw: str

    @property
    def blank(self) -> bool:
        return not self.raw.strip()


@dataclass(frozen=True, slots=True)
class ControlError:
    """A line that is not a usable command, and why."""

    raw: str
    reason: str


ParsedLine = ControlCommand | Comment | ControlError


class Outcome(StrEnum):
    """What became of a line: the history panel shows this with the reason."""

    APPLIED = "applied"
    DUPLICATE = "duplicate"
    """Nothing to do: already registered, or unregistering something that is not registered."""
    COMMENT = "comment"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Result:
    outcome: Outcome
    why: str = ""
    poll_interval: float | None = None
    """Set for an applied ``set-poll-interval``: the new interval in seconds."""


_MAX_SECONDS = 7 * 24 * 3600.0


def _parse_seconds(text: str) -> float | None:
    value = text.strip()
    if value.endswith("s") and not value.endswith("ss"):
        value = value[:-1]
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds <= 0 or seconds > _MAX_SECONDS:
        return None
    return seconds


def _strip_quotes(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


_BAD_CHARACTER = re.compile("[\x00-\x08\x0a-\x1f\x7f\ufffd]")


def _printable_problem(text: str) -> str | None:
    match = _BAD_CHARACTER.search(text)
    if match is None:
        return None
    char = match.group()
    if char == "\ufffd":
        return "is not valid UTF-8"
    return f"contains control character U+{ord(char):04X}"


def parse_line(line: str) -> ParsedLine:
    """Classify one line of a control inbox (without its newline).

    Leading and trailing whitespace (and a trailing ``\\r``) are ignored. A ``\\nbs-`` prefix on
    the verb is accepted. The result never raises: bad input comes back as a ControlError.
    """
    text = line.strip()
    if not text or text.startswith("#"):
        return Comment(line)
    problem = _printable_problem(text)
    if problem is not None:
        return ControlError(line, f"line {problem}")
    parts = text.split(None, 1)
    word = parts[0]
    verb_text = word[5:] if word.startswith(PREFIX) else word
    verb = _BY_NAME.get(verb_text)
    if verb is None and verb_text.startswith("nbs-"):
        verb = _BY_NAME.get(verb_text[4:])
    if verb is None:
        shown = word if len(word) <= 60 else word[:57] + "..."
        return ControlError(line, f"unknown verb {shown!r}")
    argument = _strip_quotes(parts[1].strip()) if len(parts) > 1 else ""
    if not argument:
        what = "a number of seconds" if verb is Verb.SET_POLL_INTERVAL else "a path"
        return ControlError(line, f"{verb.value} needs {what}")
    if len(argument) > MAX_ARGUMENT:
        return ControlError(line, f"argument is {len(argument)} characters long (at most {MAX_ARGUMENT})")
    if verb is Verb.SET_POLL_INTERVAL and _parse_seconds(argument) is None:
        return ControlError(
            line, f"bad interval {argument[:40]!r}: want a positive number of seconds up to one week"
        )
    return ControlCommand(verb, argument, line)


def apply_command(registry: Registry, command: ControlCommand) -> Result:
    """Apply one command to a registry in memory (the caller writes the file).

    ``set-poll-interval`` does not touch the registry; its Result carries the interval.
    """
    if command.verb is Verb.SET_POLL_INTERVAL:
        seconds = command.seconds
        assert seconds is not None  # parse_line validated it
        return Result(Outcome.APPLIED, f"poll interval {seconds:g}s", poll_interval=seconds)
    kind = _KIND[command.verb]
    assert kind is not None
    if command.verb in _REGISTERS:
        if registry.register(kind, command.argument):
            return _RESULTS[(kind, "registered")]
        return _RESULTS[(kind, "already")]
    return _unregistered(kind, registry.unregister(kind, command.argument))


# Results are immutable, so the common ones are made once (a replay may produce 100,000).
_RESULTS: dict[tuple[str, str], Result] = {}
for _kind in ("chat", "bus", "hub"):
    _RESULTS[(_kind, "registered")] = Result(Outcome.APPLIED, f"registered {_kind}")
    _RESULTS[(_kind, "already")] = Result(Outcome.DUPLICATE, f"{_kind} already registered")
    _RESULTS[(_kind, "unregistered")] = Result(Outcome.APPLIED, f"unregistered {_kind}")
    _RESULTS[(_kind, "absent")] = Result(Outcome.DUPLICATE, f"{_kind} was not registered")
_COMMENT = Result(Outcome.COMMENT, "comment")
_BLANK = Result(Outcome.COMMENT, "blank line")


def _unregistered(kind: str, removed: int) -> Result:
    """The outcome of an unregister that took ``removed`` lines out of the registry."""
    if removed == 1:
        return _RESULTS[(kind, "unregistered")]
    if removed:
        return Result(Outcome.APPLIED, f"unregistered {kind} ({removed} lines)")
    return _RESULTS[(kind, "absent")]


def _not_applied(parsed: Comment | ControlError) -> Result:
    """The outcome of a line that is not a command: a comment, a blank or an error."""
    if isinstance(parsed, Comment):
        return _BLANK if parsed.blank else _COMMENT
    return Result(Outcome.ERROR, parsed.reason)


def process_line(registry: Registry, line: str) -> tuple[ParsedLine, Result]:
    """Parse and apply one line: the whole life of an inbox line, for callers and tests."""
    parsed = parse_line(line)
    if not isinstance(parsed, ControlCommand):
        return parsed, _not_applied(parsed)
    return parsed, apply_command(registry, parsed)


class Replay:
    """Replay a whole inbox onto an existing registry so that replaying again changes nothing.

    At launch the sidecar replayed its inbox from line 1 onto the registry it had left on disk.
    Applied one by one, an ``unregister X`` followed by ``register X`` moves X to the end each
    time, so every restart could reorder the registry (and NBS tools use the first ``chat:``
    line). A Replay computes each line's outcome one by one on a scratch copy (for the history),
    but changes the real registry only by each resource's *last* command: registered if its
    last command registers it (kept where it is if already there, else appended), removed if
    its last command unregisters it. The registry a running dashboard leaves behind is then a
    fixed point: replaying the same inbox onto it gives it back unchanged.
    """

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._present = registry.counts()
        """Lines per resource as applying the lines one by one would leave them (order is
        irrelevant to outcomes, so a dict stands in for a scratch registry)."""
        self._last: dict[tuple[str, str], ControlCommand] = {}

    def feed(self, line: str) -> tuple[ParsedLine, Result]:
        """The outcome this line has when applied after the lines fed before it."""
        parsed = parse_line(line)
        if not isinstance(parsed, ControlCommand):
            return parsed, _not_applied(parsed)
        kind = _KIND[parsed.verb]
        if kind is None:
            return parsed, apply_command(self.registry, parsed)
        key = (kind, self.registry.key(parsed.argument))
        if parsed.verb in _REGISTERS:
            if key in self._present:
                return parsed, _RESULTS[(kind, "already")]
            self._present[key] = 1
            self._effective(key, parsed)
            return parsed, _RESULTS[(kind, "registered")]
        removed = self._present.pop(key, 0)
        if removed:
            self._effective(key, parsed)
        return parsed, _unregistered(kind, removed)

    def _effective(self, key: tuple[str, str], command: ControlCommand) -> None:
        # only commands that changed something count: a later duplicate register neither moves
        # the entry nor changes how its path is spelt, exactly as when applied one by one
        self._last.pop(key, None)
        self._last[key] = command

    def finish(self) -> Registry:
        """Apply the net effect to the registry given at construction and return it."""
        for (kind, _), command in self._last.items():
            if command.verb in _REGISTERS:
                self.registry.register(kind, command.argument)
            else:
                self.registry.unregister(kind, command.argument)
        self._last.clear()
        return self.registry


# A command an agent printed on its screen. Claude Code draws ``● `` (``⏺ `` in older releases)
# before the first line of a message and two spaces before the rest, so a command is the verb and
# its one argument standing alone on a line after that marker or a short indent (NBS's sidecar
# took ``\nbs-<verb> <word>`` the same way). Deeper indents are tool output (``⎿`` and its
# continuation rows), ``❯`` is the input box or a user echo, and ``<path>`` is documentation.
_SCREEN_COMMAND = re.compile(
    r"^(?:[⏺●]\s+|\s{0,4})\\nbs-(?P<verb>"
    + "|".join(re.escape(v.value) for v in Verb)
    + r")\s+(?P<arg>[^\s<]\S*)\s*$"
)


def scan_screen_lines(lines: Iterable[str]) -> list[str]:
    """The ``\\nbs-`` commands on a captured screen, in screen order, as ``\\nbs-<verb> <arg>``.

    Known verbs only; prose that mentions a command mid-sentence (or quotes it in backticks) is
    not one. The sidecar reports each line it returns to the control plane.
    """
    found: list[str] = []
    for line in lines:
        if PREFIX not in line:
            continue
        match = _SCREEN_COMMAND.match(line)  # \s matches no-break spaces too
        if match:
            found.append(f"{PREFIX}{match.group('verb')} {match.group('arg')}")
    return found
