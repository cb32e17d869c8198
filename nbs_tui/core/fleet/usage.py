"""Usage per account and per agent, from what Claude Code hands its status line (issue 37).

A `StatusSample` is one line of the usage spool (`nbs_tui.claude.status_recorder` writes it):
the account (``CLAUDE_CONFIG_DIR``), the pane, the session, and Claude Code's own figures:
``rate_limits.five_hour`` / ``seven_day`` (``used_percentage``, ``resets_at``; subscription auth
only), ``cost.total_cost_usd`` and the session's tokens (``context_window.total_input_tokens`` +
``total_output_tokens``). Cost and tokens are per session and only grow.

`UsageBook` folds samples into per-account figures: the two windows as last reported, the burn
rate (percentage points of the 5-hour window per hour, over the last `BURN_SPAN` seconds of the
current window), the projected time the window reaches 100 %, the cost of the account's
sessions, and per agent its cost, tokens and share of the account's burn (its cost over the
burn span against the account's). A usage-limit screen or a 429 (already read by the detector)
is `limit_seen`: that window is at 100 % until its reset.

Pure: the samples come in as parsed JSON; time is passed in.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nbs_tui.core.fleet.accounts import Account, Budget, account_for, kind_of

BURN_SPAN = 3600.0
RATE_SPAN = 600.0
"""Seconds over which an agent's own burn rate (USD per hour) is measured, for the burn alarm."""
"""Seconds of history the burn rate and the burn share are measured over."""
DAY = 86400.0
_KEEP = 512
"""Samples kept per account (the burn span's; older ones fall off)."""


@dataclass(frozen=True, slots=True)
class Window:
    """One rate-limit window as Claude Code reports it (its own field names)."""

    used_percentage: float
    resets_at: float | None

    def as_json(self) -> dict[str, Any]:
        return {"used_percentage": self.used_percentage, "resets_at": self.resets_at}


@dataclass(frozen=True, slots=True)
class StatusSample:
    time: float
    config_dir: str
    pane: str
    session_id: str
    five_hour: Window | None = None
    seven_day: Window | None = None
    cost_usd: float = 0.0
    tokens: int = 0
    model: str = ""
    from_limit_screen: bool = False
    """A usage-limit screen's record (`limit_record`): a window, no session."""


def _window(value: Any) -> Window | None:
    if not isinstance(value, Mapping):
        return None
    used = value.get("used_percentage")
    if isinstance(used, bool) or not isinstance(used, int | float):
        return None
    reset = value.get("resets_at")
    return Window(float(used), float(reset) if isinstance(reset, int | float) and not isinstance(reset, bool) else None)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def sample_from_line(line: Mapping[str, Any]) -> StatusSample | None:
    """One usage-spool line (``nbs_pane``, ``nbs_time``, ``nbs_config_dir``, ``payload``) as a
    sample; None when it is not one (a torn or foreign line)."""
    payload = line.get("payload")
    config_dir = line.get("nbs_config_dir")
    if not isinstance(payload, Mapping) or not isinstance(config_dir, str) or not config_dir:
        return None
    limits = payload.get("rate_limits")
    limits = limits if isinstance(limits, Mapping) else {}
    cost = payload.get("cost")
    tokens = payload.get("context_window")
    tokens = tokens if isinstance(tokens, Mapping) else {}
    model = payload.get("model")
    return StatusSample(
        time=_number(line.get("nbs_time")),
        config_dir=config_dir.rstrip("/") or "/",
        pane=str(line.get("nbs_pane") or ""),
        session_id=str(payload.get("session_id") or ""),
        five_hour=_window(limits.get("five_hour")),
        seven_day=_window(limits.get("seven_day")),
        cost_usd=_number(cost.get("total_cost_usd")) if isinstance(cost, Mapping) else 0.0,
        tokens=int(_number(tokens.get("total_input_tokens")) + _number(tokens.get("total_output_tokens"))),
        model=str(model.get("id") or "") if isinstance(model, Mapping) else "",
        from_limit_screen=line.get("nbs_source") == "limit-screen",
    )


def limit_record(config_dir: str, pane: str, kind: str, resets_at: float | None, now: float) -> bytes:
    """A usage-spool line for a usage-limit screen seen in ``pane``: the window it names
    (``weekly`` kinds: ``seven_day``, else ``five_hour``) at 100 % until ``resets_at``, in the
    recorder's own format (``nbs_source`` says where it came from)."""
    window = "seven_day" if "week" in kind.lower() else "five_hour"
    payload = {"rate_limits": {window: {"used_percentage": 100, "resets_at": resets_at}}}
    line = {"nbs_pane": pane, "nbs_time": now, "nbs_config_dir": config_dir, "nbs_source": "limit-screen", "payload": payload}
    return (json.dumps(line, separators=(",", ":")) + "\n").encode()


@dataclass(frozen=True, slots=True)
class AgentUsage:
    session_id: str
    pane: str
    cost_usd: float
    tokens: int
    burn_share: float | None
    """The agent's part (0..1) of its account's cost over the burn span; None when nothing was spent."""
    cost_usd_today: float
    """What the session spent in the last 24 hours (the per-agent daily cap's figure)."""
    last_seen: float
    usd_per_hour: float = 0.0
    """Its burn lately: cost over the last `RATE_SPAN` seconds, per hour."""
    tokens_lately: int = 0
    """Tokens over the last `RATE_SPAN` seconds."""

    def as_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "pane": self.pane,
            "cost_usd": round(self.cost_usd, 6),
            "tokens": self.tokens,
            "burn_share": None if self.burn_share is None else round(self.burn_share, 4),
        }


@dataclass(frozen=True, slots=True)
class AccountUsage:
    account: Account
    kind: str
    five_hour: Window | None
    seven_day: Window | None
    cost_usd: float
    burn_percent_per_hour: float | None
    """Percentage points of the 5-hour window spent per hour, lately; None without two samples."""
    limit_at: float | None
    """When the 5-hour window reaches 100 % at the burn rate (before its reset), else None."""
    agents: tuple[AgentUsage, ...]
    updated_at: float | None

    def as_json(self) -> dict[str, Any]:
        """The issue's document for one account, in Claude Code's own field names."""
        return {
            "name": self.account.name,
            "kind": self.kind,
            "config_dir": self.account.config_dir,
            "five_hour": _window_json(self.five_hour, self.burn_percent_per_hour, self.limit_at),
            "seven_day": self.seven_day.as_json() if self.seven_day is not None else None,
            "cost_usd": round(self.cost_usd, 6),
            "agents": [agent.as_json() for agent in self.agents],
        }

    def headroom(self, budget: Budget) -> float:
        """Percentage points left before the nearer of the account's caps (100 when uncapped)."""
        five_cap, seven_cap = budget.caps_of(self.account)
        room = 100.0
        for window, cap in ((self.five_hour, five_cap), (self.seven_day, seven_cap)):
            used = window.used_percentage if window is not None else 0.0
            room = min(room, (cap if cap is not None else 100.0) - used)
        return room


def _window_json(window: Window | None, burn: float | None, limit_at: float | None) -> dict[str, Any] | None:
    if window is None:
        return None
    return {**window.as_json(), "burn_percent_per_hour": None if burn is None else round(burn, 2), "limit_at": limit_at}


@dataclass
class _Session:
    pane: str
    cost: float = 0.0
    tokens: int = 0
    last_seen: float = 0.0
    history: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=_KEEP))
    """(time, cost) samples for the burn span and the day."""
    token_history: deque[tuple[float, float]] = field(default_factory=lambda: deque(maxlen=_KEEP))


@dataclass
class _Account:
    five_hour: Window | None = None
    seven_day: Window | None = None
    five_at: float = 0.0
    seven_at: float = 0.0
    updated_at: float | None = None
    subscription: bool = False
    burn: deque[tuple[float, float, float | None]] = field(default_factory=lambda: deque(maxlen=_KEEP))
    """(time, 5-hour used %, its resets_at)."""
    sessions: dict[str, _Session] = field(default_factory=dict)


class UsageBook:
    """Per-account and per-agent usage from status-line samples (module docstring)."""

    def __init__(self, accounts: Sequence[Account] = (), home: str = "") -> None:
        self.accounts = tuple(accounts)
        self.home = home
        self._by_dir: dict[str, _Account] = {}

    def add(self, sample: StatusSample) -> None:
        book = self._by_dir.setdefault(sample.config_dir, _Account())
        if book.updated_at is None or sample.time >= book.updated_at:
            book.updated_at = sample.time
        if sample.five_hour is not None or sample.seven_day is not None:
            book.subscription = True
        if sample.five_hour is not None and sample.time >= book.five_at:
            book.five_hour, book.five_at = sample.five_hour, sample.time
            book.burn.append((sample.time, sample.five_hour.used_percentage, sample.five_hour.resets_at))
        if sample.seven_day is not None and sample.time >= book.seven_at:
            book.seven_day, book.seven_at = sample.seven_day, sample.time
        if sample.from_limit_screen:
            return
        key = sample.session_id or f"pane {sample.pane}"
        session = book.sessions.get(key)
        if session is None:
            session = book.sessions[key] = _Session(sample.pane)
        if sample.time >= session.last_seen:
            session.pane = sample.pane or session.pane
            session.cost = max(session.cost, sample.cost_usd)
            session.tokens = max(session.tokens, sample.tokens)
            session.last_seen = sample.time
            session.history.append((sample.time, session.cost))
            session.token_history.append((sample.time, float(session.tokens)))

    def add_all(self, samples: Iterable[StatusSample]) -> None:
        for sample in samples:
            self.add(sample)

    def limit_seen(self, config_dir: str, claim: str, resets_at: float | None, now: float) -> None:
        """A usage-limit screen or a 429 for an agent of the account: that window is full."""
        book = self._by_dir.setdefault(config_dir.rstrip("/"), _Account())
        full = Window(100.0, resets_at)
        book.subscription = True
        if claim == "seven_day":
            book.seven_day, book.seven_at = full, now
        else:
            book.five_hour, book.five_at = full, now

    def config_dirs(self) -> list[str]:
        known = [account.config_dir for account in self.accounts]
        return known + sorted(d for d in self._by_dir if d not in known)

    def account(self, config_dir: str, now: float, has_oauth_login: bool = False) -> AccountUsage:
        account = account_for(config_dir, self.accounts, self.home)
        book = self._by_dir.get(account.config_dir, _Account())
        five = _current(book.five_hour, now)
        seven = _current(book.seven_day, now)
        burn = _burn_rate(book.burn, now)
        limit_at = None
        if five is not None and burn is not None and burn > 0:
            at = now + (100.0 - five.used_percentage) / burn * 3600.0
            limit_at = at if five.resets_at is None or at < five.resets_at else None
        spent = {key: _spent_since(s.history, now - BURN_SPAN) for key, s in book.sessions.items()}
        total = sum(spent.values())
        agents = tuple(
            sorted(
                (
                    AgentUsage(
                        session_id=key if not key.startswith("pane ") else "",
                        pane=s.pane,
                        cost_usd=s.cost,
                        tokens=s.tokens,
                        burn_share=spent[key] / total if total > 0 else None,
                        cost_usd_today=_spent_since(s.history, now - DAY),
                        last_seen=s.last_seen,
                        usd_per_hour=_spent_since(s.history, now - RATE_SPAN, fresh=False) * 3600.0 / RATE_SPAN,
                        tokens_lately=int(_spent_since(s.token_history, now - RATE_SPAN, fresh=False)),
                    )
                    for key, s in book.sessions.items()
                    if s.last_seen >= now - DAY
                ),
                key=lambda a: (-a.cost_usd, a.pane, a.session_id),
            )
        )
        return AccountUsage(
            account=account,
            kind=kind_of(account, has_oauth_login or book.subscription),
            five_hour=five,
            seven_day=seven,
            cost_usd=sum(s.cost for s in book.sessions.values() if s.last_seen >= now - DAY),
            burn_percent_per_hour=burn,
            limit_at=limit_at,
            agents=agents,
            updated_at=book.updated_at,
        )

    def all_accounts(self, now: float, oauth_logins: Mapping[str, bool] | None = None) -> list[AccountUsage]:
        logins = oauth_logins or {}
        return [self.account(d, now, logins.get(d, False)) for d in self.config_dirs()]


def _current(window: Window | None, now: float) -> Window | None:
    """A window whose reset has passed is empty again until Claude Code says otherwise."""
    if window is not None and window.resets_at is not None and window.resets_at <= now:
        return Window(0.0, None)
    return window


def _burn_rate(samples: Iterable[tuple[float, float, float | None]], now: float) -> float | None:
    """Percentage points per hour over the burn span, within the latest window only."""
    recent = [s for s in samples if s[0] >= now - BURN_SPAN]
    if not recent:
        return None
    reset = recent[-1][2]
    same = [s for s in recent if s[2] == reset]
    first, last = same[0], same[-1]
    if last[0] - first[0] <= 0:
        return None
    return (last[1] - first[1]) / (last[0] - first[0]) * 3600.0


def _spent_since(history: Iterable[tuple[float, float]], since: float, *, fresh: bool = True) -> float:
    """Growth since ``since``: from the last sample before it. A session first seen after
    ``since`` counts from 0 when ``fresh`` (it began then), else from its first sample."""
    before: float | None = None
    first: float | None = None
    latest = 0.0
    for at, value in history:
        if at < since:
            before = value
        elif first is None:
            first = value
        latest = value
    base = before if before is not None else (0.0 if fresh else (first if first is not None else latest))
    return max(0.0, latest - base)


def usage_document(accounts: Sequence[AccountUsage]) -> dict[str, Any]:
    """``nbs-tui usage --json``: ``{"accounts": [...]}`` (issue 37)."""
    return {"accounts": [account.as_json() for account in accounts]}


def choose_account(candidates: Sequence[AccountUsage], budget: Budget) -> AccountUsage | None:
    """``--account auto``: the account with the most headroom under its caps; None when every
    one is at a cap (the caller says so). Ties go to the first in the config's order."""
    open_ = [usage for usage in candidates if usage.headroom(budget) > 0]
    if not open_:
        return None
    return max(open_, key=lambda usage: usage.headroom(budget))


# -- said in words: the CLI, the usage view and the phone layout share these --------------------


def duration_text(seconds: float) -> str:
    """``2h13m``, ``3d4h``, ``45s``: short, largest units first."""
    whole = max(0, int(seconds))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m"
    return f"{secs}s"


def window_text(label: str, window: Window | None, now: float, burn: float | None = None, limit_at: float | None = None) -> str:
    if window is None:
        return f"{label:<7} -- (no subscription figures yet)"
    parts = [f"{label:<7} {window.used_percentage:5.1f} %"]
    if window.resets_at is not None:
        parts.append(f"resets in {duration_text(window.resets_at - now)}")
    if burn is not None:
        parts.append(f"burn {burn:.1f} %/h")
    if limit_at is not None:
        parts.append(f"limit in {duration_text(limit_at - now)}")
    elif burn is not None and burn > 0:
        parts.append("resets before the limit")
    return " · ".join(parts)


def account_lines(usage: AccountUsage, now: float, top: int = 3) -> list[str]:
    """An account in a few lines: its windows, its cost and its top spenders."""
    account = usage.account
    lines = [
        f"{account.name} ({usage.kind}, {account.config_dir})",
        "  " + window_text("5-hour", usage.five_hour, now, usage.burn_percent_per_hour, usage.limit_at),
        "  " + window_text("7-day", usage.seven_day, now),
    ]
    agents = usage.agents
    spent = f"  cost ${usage.cost_usd:.2f} · {len(agents)} agent{'s' if len(agents) != 1 else ''}"
    spenders = [
        f"{agent.pane or agent.session_id[:8]} ${agent.cost_usd:.2f}"
        + (f" ({agent.burn_share * 100:.0f} % of the burn)" if agent.burn_share is not None else "")
        for agent in agents[:top]
    ]
    lines.append(spent + (" · top: " + ", ".join(spenders) if spenders else ""))
    return lines


def meter_text(accounts: Sequence[AccountUsage]) -> str:
    """The status bar's meter: each subscription account's 5-hour and 7-day use, else its cost."""
    parts = []
    for usage in accounts:
        if usage.five_hour is not None or usage.seven_day is not None:
            five = f"{usage.five_hour.used_percentage:.0f}" if usage.five_hour is not None else "-"
            seven = f"{usage.seven_day.used_percentage:.0f}" if usage.seven_day is not None else "-"
            parts.append(f"{usage.account.name} 5h {five}% 7d {seven}%")
        else:
            parts.append(f"{usage.account.name} ${usage.cost_usd:.2f}")
    return " · ".join(parts)


def meter_short(accounts: Sequence[AccountUsage]) -> str:
    """The meter when the bar is narrow: the fullest 5-hour window (``5h 85%``), else the cost."""
    windows = [u.five_hour.used_percentage for u in accounts if u.five_hour is not None]
    if windows:
        return f"5h {max(windows):.0f}%"
    cost = sum(u.cost_usd for u in accounts)
    return f"${cost:.2f}" if accounts else ""
