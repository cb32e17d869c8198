"""Accounts and budgets: the config file's ``[accounts.NAME]`` and ``[budget]`` tables.

An account is the Claude Code configuration an agent runs under: its ``CLAUDE_CONFIG_DIR`` (else
``~/.claude``) on a host, with its kind of auth: ``subscription`` (an OAuth login, whose 5-hour
and 7-day windows Claude Code reports to a status line) or ``api-key`` (cost only). An account
is named in the config, or found from an agent's environment and then named after its folder
(`account_for`).

Caps (issue 37): per account ``max_five_hour_percent`` and ``max_seven_day_percent`` beside its
``config_dir``; in ``[budget]`` the defaults for accounts not named, and
``agent_max_cost_usd_per_day`` and ``fleet_max_cost_usd_per_day``.

Pure: no file I/O (whether a folder holds ``.credentials.json`` is asked by the caller).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("subscription", "api-key", "auto")
"""``auto``: subscription when the folder holds Claude Code's OAuth login, else api-key."""
AUTO = "auto"
"""``nbs-tui new --account auto``: the account with the most headroom."""
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class AccountsError(ValueError):
    """An ``[accounts.NAME]`` or ``[budget]`` entry nbs-tui cannot use; the message names it."""


@dataclass(frozen=True, slots=True)
class Account:
    """One account: where its Claude Code configuration is, its auth and its caps."""

    name: str
    config_dir: str
    """An absolute path (``~`` is expanded by the caller before it gets here)."""
    kind: str = AUTO
    max_five_hour_percent: float | None = None
    max_seven_day_percent: float | None = None
    named: bool = True
    """False for an account found only from an agent's environment."""


@dataclass(frozen=True, slots=True)
class Budget:
    """The ``[budget]`` table: fleet-wide caps and the defaults for accounts not named."""

    max_five_hour_percent: float | None = None
    max_seven_day_percent: float | None = None
    agent_max_cost_usd_per_day: float | None = None
    fleet_max_cost_usd_per_day: float | None = None

    def caps_of(self, account: Account) -> tuple[float | None, float | None]:
        """The account's (5-hour, 7-day) caps: its own, else the budget's defaults."""
        five = account.max_five_hour_percent if account.max_five_hour_percent is not None else self.max_five_hour_percent
        seven = account.max_seven_day_percent if account.max_seven_day_percent is not None else self.max_seven_day_percent
        return five, seven


_ACCOUNT_KEYS = ("config_dir", "kind", "max_five_hour_percent", "max_seven_day_percent")
_BUDGET_KEYS = ("max_five_hour_percent", "max_seven_day_percent", "agent_max_cost_usd_per_day", "fleet_max_cost_usd_per_day")


def _number(where: str, key: str, value: Any, *, percent: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AccountsError(f"{where}: {key} must be a number, not {value!r}")
    number = float(value)
    if number <= 0 or (percent and number > 100):
        bound = "between 0 and 100" if percent else "above 0"
        raise AccountsError(f"{where}: {key} must be {bound}, not {value!r}")
    return number


def parse_accounts(table: Any, expand: Any = None) -> tuple[Account, ...]:
    """The ``[accounts]`` table as accounts, in the file's order; raises `AccountsError` naming
    the first bad entry. ``expand`` turns a ``config_dir`` as written into an absolute path (the
    caller's ``~`` expansion); without it the path must already be absolute."""
    if not isinstance(table, Mapping):
        raise AccountsError(f"[accounts] must be a table of [accounts.NAME] entries, not {type(table).__name__}")
    accounts: list[Account] = []
    seen_dirs: dict[str, str] = {}
    for name, entry in table.items():
        where = f"[accounts.{name}]"
        if not isinstance(name, str) or not _NAME.match(name) or name == AUTO:
            raise AccountsError(f"{where}: the name may hold letters, digits, '.', '-' and '_' (and is not 'auto')")
        if not isinstance(entry, Mapping):
            raise AccountsError(f"{where} must be a table with config_dir = \"...\"")
        unknown = sorted(set(entry) - set(_ACCOUNT_KEYS))
        if unknown:
            raise AccountsError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_ACCOUNT_KEYS)})")
        raw_dir = entry.get("config_dir")
        if not isinstance(raw_dir, str) or not raw_dir.strip():
            raise AccountsError(f"{where}: config_dir is missing (the account's CLAUDE_CONFIG_DIR, e.g. \"~/.claude-work\")")
        config_dir = str(expand(raw_dir)) if expand is not None else raw_dir
        if not posixpath.isabs(config_dir):
            raise AccountsError(f"{where}: config_dir {raw_dir!r} is not an absolute path")
        config_dir = posixpath.normpath(config_dir)
        if config_dir in seen_dirs:
            raise AccountsError(f"{where}: config_dir {raw_dir!r} is already account {seen_dirs[config_dir]!r}")
        seen_dirs[config_dir] = name
        kind = entry.get("kind", AUTO)
        if kind not in KINDS:
            raise AccountsError(f"{where}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
        five, seven = (
            _number(where, key, entry[key], percent=True) if key in entry else None
            for key in ("max_five_hour_percent", "max_seven_day_percent")
        )
        accounts.append(Account(name, config_dir, kind, five, seven))
    return tuple(accounts)


def parse_budget(table: Any) -> Budget:
    """The ``[budget]`` table; raises `AccountsError` naming the bad key."""
    if not isinstance(table, Mapping):
        raise AccountsError(f"[budget] must be a table, not {type(table).__name__}")
    unknown = sorted(set(table) - set(_BUDGET_KEYS))
    if unknown:
        raise AccountsError(f"[budget]: unknown key {unknown[0]!r} (known: {', '.join(_BUDGET_KEYS)})")
    return Budget(**{key: _number("[budget]", key, value, percent="percent" in key) for key, value in table.items()})


def account_for(config_dir: str, accounts: Sequence[Account], home: str = "") -> Account:
    """The account of an agent whose Claude Code configuration is ``config_dir``: the named one
    with that folder, else one found from the environment, named after the folder (``~/.claude``
    is ``default``, ``~/.claude-work`` is ``claude-work``)."""
    normal = posixpath.normpath(config_dir)
    for account in accounts:
        if account.config_dir == normal:
            return account
    return Account(name=found_name(normal, home), config_dir=normal, named=False)


def found_name(config_dir: str, home: str = "") -> str:
    """A name for an account nobody named: ``default`` for ``$HOME/.claude``, else the folder's
    last part without its leading dot."""
    if home and config_dir == posixpath.join(posixpath.normpath(home), ".claude"):
        return "default"
    base = posixpath.basename(config_dir.rstrip("/")).lstrip(".")
    return base or config_dir


def kind_of(account: Account, has_oauth_login: bool) -> str:
    """The account's kind of auth: as named, or (``auto``) from whether its folder holds an OAuth
    login (``.credentials.json``)."""
    if account.kind != AUTO:
        return account.kind
    return "subscription" if has_oauth_login else "api-key"
