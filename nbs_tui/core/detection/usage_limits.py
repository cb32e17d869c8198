"""Usage limits: read Claude Code's limit message, when it resets, and when to resume whom.

Claude Code words the limit differently by version and by which limit was hit:

* 2.1.1xx-2.1.2xx: ``⎿  You've hit your session limit · resets 12:50am (America/Los_Angeles)``
  (``5-hour``, ``weekly``, ``Opus weekly``; a date for weekly ones: ``resets Aug 3 at 12am``),
  then a menu "What do you want to do?" whose first option waits for the reset;
* older: ``Claude usage limit reached. Your limit will reset at 9am (America/Chicago).``, and
  the oldest ``Claude AI usage limit reached|1750000000`` (the reset as unix seconds);
* 2.1.3xx: the same first line, then ``Usage limit reached · set to continue automatically at
  9:17am`` and a footer ``Continuing automatically at 9:17am · Esc to cancel``: it resumes by
  itself, so nbs-tui must not send a second continue.

Pure: `reset_instant` takes the zone rules from the caller (``zoneinfo`` reads files), and
`ResumePlanner` takes the wall clock as an argument.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, tzinfo

from nbs_tui.core.fleet.model import PaneId, UsageLimit

_HIT = re.compile(
    r"(?:You've|You have) (?:hit|reached) your (?:(?P<kind>[\w-]+(?: [\w-]+)?) )?limit\b"
    r"(?:\s*[·∙•|-]\s*resets?\s+(?:at\s+)?(?P<resets>[^·∙•]+?))?\s*\.?\s*$",
    re.IGNORECASE,
)
_REACHED = re.compile(
    r"(?:Claude(?: AI)? )?(?P<kind>[\w-]+(?: [\w-]+)?)? ?limit reached\b"
    r"(?:\|(?P<epoch>\d{9,11})"
    r"|\.?\s*Your limit will reset at\s+(?P<resets>[^.]+?)\.?"
    r"|\s*[·∙•]\s*(?:limit )?resets?\s+(?:at\s+)?(?P<resets2>[^·∙•]+?))?\s*(?:[·∙•].*)?$",
    re.IGNORECASE,
)
_AUTO = re.compile(
    r"(?:continue|continuing) automatically at\s+(?P<resets>[^·∙•]+?)\s*(?:[·∙•].*)?$", re.IGNORECASE
)
_AUTO_FOOTER = re.compile(r"Continuing (?:automatically\b|shortly\b).*Esc (?:or type )?to cancel", re.IGNORECASE)
_WAIT_OPTION = re.compile(r"wait for (?:the )?limit|until (?:the )?limit resets", re.IGNORECASE)
_TIME = re.compile(
    r"^(?:(?P<mon>[A-Za-z]{3,9})\.?\s+(?P<day>\d{1,2})(?:st|nd|rd|th)?,?\s+(?:at\s+)?)?"
    r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<ampm>[ap]\.?m\.?)?"
    r"\s*(?:\((?P<tz>[A-Za-z_+\-/0-9]+)\))?\s*$",
    re.IGNORECASE,
)
_MONTHS = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
)}
_KIND_WORDS = re.compile(r"^(?:session|5-hour|five-hour|weekly|daily|monthly|usage|opus|sonnet|opus weekly|sonnet weekly|opus 5-hour)$", re.I)


def _parse_time(text: str) -> dict[str, object]:
    """The parts of a reset such as ``9:17am (UTC)`` or ``Aug 3 at 12am (Asia/Tokyo)``."""
    m = _TIME.match(text.strip())
    if not m:
        return {}
    hour = int(m.group("h"))
    minute = int(m.group("m") or 0)
    ampm = (m.group("ampm") or "").lower().replace(".", "")
    if ampm:
        if not 1 <= hour <= 12:
            return {}
        hour = hour % 12 + (12 if ampm == "pm" else 0)
    elif m.group("m") is None or hour > 23:
        return {}  # a bare number is not a time of day
    if minute > 59:
        return {}
    parts: dict[str, object] = {"hour": hour, "minute": minute, "tz": m.group("tz")}
    if m.group("mon"):
        month = _MONTHS.get(m.group("mon")[:3].lower())
        if month is None:
            return {}
        parts.update(month=month, day=int(m.group("day")))
    return parts


def parse_limit_line(line: str) -> UsageLimit | None:
    """A `UsageLimit` when ``line`` is one of Claude Code's limit messages, else None."""
    text = line.strip().lstrip("⎿●⏺⚠ \u00a0").strip()
    if "limit" not in text.lower():
        return None
    m = _HIT.match(text)  # at the start: an answer that quotes the message is not the message
    if m:
        kind = m.group("kind") or "usage"
        resets = (m.group("resets") or "").strip()
    else:
        m = _REACHED.search(text)
        if m is None or not re.match(r"^(?:Claude(?: AI)? )?(?:[\w-]+ ){0,2}limit reached", text, re.I):
            return None
        kind = (m.group("kind") or "usage").strip()
        if not _KIND_WORDS.match(kind):
            kind = "usage"
        if m.group("epoch"):
            return UsageLimit(kind.lower(), text, epoch=float(m.group("epoch")))
        resets = (m.group("resets") or m.group("resets2") or "").strip()
    auto = _AUTO.search(text)
    if auto and not resets:
        resets = auto.group("resets").strip()
    parts = _parse_time(resets) if resets else {}
    return UsageLimit(
        kind.lower(),
        text,
        resets,
        auto_resume=auto is not None,
        **parts,  # type: ignore[arg-type]
    )


def find_limit(lines: Sequence[str], footer: Sequence[str] = ()) -> UsageLimit | None:
    """The limit these rows (the current turn, bottom last) and the footer below the input box
    report, merged: the most precise reset any of them gives, and whether Claude Code says it
    will continue by itself (its footer says so while the automatic continue is armed)."""
    found: list[UsageLimit] = []
    for line in lines:
        limit = parse_limit_line(line)
        if limit is not None:
            found.append(limit)
    footer_limits = [lim for line in footer if (lim := parse_limit_line(line)) is not None]
    if not found and not footer_limits:
        return None
    best = max(found + footer_limits, key=_precision)
    kinds = [lim.kind for lim in found + footer_limits if lim.kind not in ("usage",)]
    auto_armed = any(_AUTO_FOOTER.search(line) for line in footer)
    # 2.1.3xx: the footer is the live word (Esc takes the automatic continue away)
    auto = auto_armed if footer else any(lim.auto_resume for lim in found)
    return replace(best, kind=kinds[0] if kinds else best.kind, auto_resume=auto)


def _precision(limit: UsageLimit) -> tuple[int, int, int, int]:
    return (
        limit.epoch is not None,
        limit.hour is not None,
        limit.tz is not None,
        limit.month is not None,
    )


def is_wait_option(label: str) -> bool:
    """The usage-limit menu's "Stop and wait for limit to reset" option."""
    return bool(_WAIT_OPTION.search(label))


def reset_instant(limit: UsageLimit, seen_at: float, zone: tzinfo) -> float | None:
    """When the limit resets (unix seconds), read at wall time ``seen_at`` in ``zone`` (the
    zone the screen names, or the local one). A time without a date is the occurrence nearest
    ``seen_at`` (a session limit resets within hours: 9:17am seen at 9:20am has just passed,
    1am seen at 11pm is tomorrow's); a date without a year is the nearest such date."""
    if limit.epoch is not None:
        return limit.epoch
    if limit.hour is None:
        return None
    seen = datetime.fromtimestamp(seen_at, zone)
    if limit.month is not None and limit.day is not None:
        candidates = []
        for year in (seen.year - 1, seen.year, seen.year + 1):
            try:
                candidates.append(datetime(year, limit.month, limit.day, limit.hour, limit.minute, tzinfo=zone))
            except ValueError:
                continue
        if not candidates:
            return None
        return min(candidates, key=lambda d: abs(d.timestamp() - seen_at)).timestamp()
    day = seen.replace(hour=limit.hour, minute=limit.minute, second=0, microsecond=0)
    candidates = [day + timedelta(days=k) for k in (-1, 0, 1)]
    return min(candidates, key=lambda d: abs(d.timestamp() - seen_at)).timestamp()


def countdown(seconds: float) -> str:
    """``2h05m``, ``4m30s``, ``12s``: a short time left, for the fleet list and details."""
    s = max(0, int(seconds))
    if s >= 86400:
        return f"{s // 86400}d{(s % 86400) // 3600:02d}h"
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


# --- resuming the fleet ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResumeConfig:
    """``limit_resume`` in the settings: off unless the operator opts in."""

    enabled: bool = False
    message: str = "continue"
    """What is typed into a limited agent's input box after its reset."""
    margin: float = 60.0
    """Seconds after the announced reset before the first resume (clocks and the API differ)."""
    stagger: float = 30.0
    """Seconds between two resumes, so the fleet does not fire at once."""
    max_attempts: int = 3
    """Resumes that were not delivered (refused, failed) before nbs-tui stops trying."""


@dataclass(frozen=True, slots=True)
class LimitEvent:
    """One step for the action log: ``limited``, ``held``, ``resume`` (due), ``cleared``."""

    pane_id: PaneId
    kind: str
    message: str
    reset_at: float | None = None


@dataclass(slots=True)
class _Pane:
    limit: UsageLimit
    reset_at: float | None
    seen_at: float
    resumed: int = 0
    """Resumes delivered or under way for this reset."""
    attempts: int = 0
    last_resume: float | None = None
    told: str = ""
    """The last hold reason logged (each is logged once)."""


ZoneLookup = Callable[[str | None], tzinfo]


class ResumePlanner:
    """Fleet-wide: which limited agents to resume, when, one at a time.

    Feed it every agent's detection each tick (`observe`); ask `due` for the one pane whose
    turn has come (at most one per ``stagger`` seconds, oldest reset first); report what became
    of the resume (`delivered`, `failed`). A pane is resumed at most once per reset: if it shows
    the same limit again afterwards the planner only logs it. Nothing is resumed where Claude
    Code resumes by itself, where the reset is unknown, or when the operator did not opt in.
    """

    def __init__(self, config: ResumeConfig, zones: ZoneLookup) -> None:
        self.config = config
        self.zones = zones
        self._panes: dict[PaneId, _Pane] = {}
        self._done: dict[PaneId, float | None] = {}
        """Per pane, the reset it was last resumed for (to never resume twice for one reset)."""
        self._last_fire = float("-inf")

    def observe(self, pane_id: PaneId, limit: UsageLimit | None, now: float) -> list[LimitEvent]:
        """The pane's current limit (None: not limited); returns what to log."""
        known = self._panes.get(pane_id)
        if limit is None:
            if known is None:
                return []
            del self._panes[pane_id]
            if known.resumed:
                self._done[pane_id] = known.reset_at
                return [LimitEvent(pane_id, "cleared", "limit gone after the resume", known.reset_at)]
            return [LimitEvent(pane_id, "cleared", "limit no longer on screen", known.reset_at)]
        if known is not None and known.limit.text == limit.text and known.limit.auto_resume == limit.auto_resume:
            return []
        if known is not None and known.limit.text == limit.text:
            known.limit = limit  # only the automatic continue changed (armed or cancelled)
            known.told = ""
            return []
        reset_at = reset_instant(limit, now, self.zones(limit.tz)) if limit.tz or limit.hour is not None or limit.epoch else None
        pane = _Pane(limit, reset_at, now)
        if known is not None and known.reset_at == reset_at:
            pane.resumed, pane.attempts = known.resumed, known.attempts
        elif self._done.get(pane_id) is not None and self._done.get(pane_id) == reset_at:
            pane.resumed = 1  # resumed for this very reset already, and limited again
        self._panes[pane_id] = pane
        when = f"; resets {limit.resets}" if limit.resets else ""
        return [LimitEvent(pane_id, "limited", f"{limit.kind} limit{when}", reset_at)]

    def forget(self, pane_id: PaneId) -> None:
        self._panes.pop(pane_id, None)
        self._done.pop(pane_id, None)

    def reset_at(self, pane_id: PaneId) -> float | None:
        pane = self._panes.get(pane_id)
        return pane.reset_at if pane is not None else None

    def limited(self) -> Mapping[PaneId, tuple[UsageLimit, float | None]]:
        return {p: (pane.limit, pane.reset_at) for p, pane in self._panes.items()}

    def _hold(self, pane: _Pane, now: float) -> str | None:
        """Why this pane is not resumed now (None: it may be)."""
        if pane.limit.auto_resume:
            return "Claude Code continues by itself at the reset: no continue sent"
        if not self.config.enabled:
            return "automatic resume is off (limit_resume)"
        if pane.reset_at is None:
            return "reset time unknown: not resumed"
        if pane.resumed:
            return "already resumed once for this reset: left alone"
        if pane.attempts >= self.config.max_attempts:
            return f"resume not delivered after {pane.attempts} attempts: left alone"
        if now < pane.reset_at + self.config.margin:
            return ""  # waiting for the reset: nothing new to say
        return None

    def due(self, now: float, ready: Iterable[PaneId] = ()) -> tuple[PaneId | None, list[LimitEvent]]:
        """The pane to resume now (at most one per ``stagger``), and hold reasons to log once.

        ``ready``: panes whose screen allows typing now (an empty input box under the limit);
        a pane still showing the limit menu waits for a choice and is skipped."""
        events: list[LimitEvent] = []
        ready_set = set(ready)
        candidates: list[tuple[float, PaneId]] = []
        for pane_id, pane in self._panes.items():
            why = self._hold(pane, now)
            if why is None and pane_id not in ready_set:
                why = "input box not free (a menu is open or text is typed): waiting"
            if why:
                if why != pane.told:
                    pane.told = why
                    events.append(LimitEvent(pane_id, "held", why, pane.reset_at))
                continue
            if why is None:
                assert pane.reset_at is not None
                candidates.append((pane.reset_at, pane_id))
        if not candidates or now - self._last_fire < self.config.stagger:
            return None, events
        _, pane_id = min(candidates)
        pane = self._panes[pane_id]
        pane.attempts += 1
        pane.resumed = 1
        pane.last_resume = now
        pane.told = ""
        self._last_fire = now
        events.append(LimitEvent(pane_id, "resume", f"reset passed: typing {self.config.message!r}", pane.reset_at))
        return pane_id, events

    def failed(self, pane_id: PaneId) -> None:
        """The resume was not delivered: the pane may be tried again (up to ``max_attempts``)."""
        pane = self._panes.get(pane_id)
        if pane is not None:
            pane.resumed = 0

    def next_resume(self, now: float) -> Mapping[PaneId, float]:
        """When each waiting pane is expected to be resumed (for the countdown), staggered."""
        if not self.config.enabled:
            return {}
        order = sorted(
            (pane.reset_at, pane_id)
            for pane_id, pane in self._panes.items()
            if pane.reset_at is not None and not pane.limit.auto_resume and not pane.resumed
        )
        out: dict[PaneId, float] = {}
        slot = max(now, self._last_fire + self.config.stagger)
        for reset_at, pane_id in order:
            slot = max(slot, reset_at + self.config.margin)
            out[pane_id] = slot
            slot += self.config.stagger
        return out


def limit_summary(limit: UsageLimit, reset_at: float | None, now: float) -> str:
    """``weekly limit · resets Aug 3 at 12am (Asia/Tokyo) · in 2h05m`` for the details panel."""
    parts = [f"{limit.kind} limit"]
    if limit.resets:
        parts.append(f"resets {limit.resets}")
    if reset_at is not None:
        parts.append(f"in {countdown(reset_at - now)}" if reset_at > now else "reset passed")
    if limit.auto_resume:
        parts.append("Claude Code continues by itself")
    return " · ".join(parts)


def resume_summary(limit: UsageLimit, resume_at: float | None, now: float) -> str:
    """What nbs-tui will do about a limited agent, for the details panel."""
    if limit.auto_resume:
        return "none: Claude Code continues by itself at the reset"
    if resume_at is None:
        return "none planned (limit_resume off, reset unknown, or already resumed)"
    if resume_at <= now:
        return "due now"
    return f"in {countdown(resume_at - now)}"
