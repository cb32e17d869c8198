"""Reading the usage spool the status-line recorder appends to (`nbs_tui.claude.status_recorder`).

`UsageReader` follows the spool forward (`nbs_tui.files.tail.TailReader`: complete lines only,
never written to) and keeps a `UsageBook` up to date; a reader started on a big spool begins
`START_TAIL` bytes before its end (the burn span needs the last hour, the daily caps a day, and a
turn's line is about 2 KB). `usage_now` is the one-shot read of ``nbs-tui usage``;
`resolve_account` holds every start to the caps, resolving ``--account NAME|auto`` (`account_config_dir`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from nbs_tui.claude.status_recorder import usage_spool_for
from nbs_tui.config import Settings
from nbs_tui.core.fleet.accounts import AUTO, Account
from nbs_tui.core.fleet.agent_spec import NewAgent, SpecError
from nbs_tui.core.fleet.budget_rules import cap_reason
from nbs_tui.core.fleet.host_spec import LOCAL
from nbs_tui.core.fleet.usage import AccountUsage, UsageBook, choose_account, sample_from_line
from nbs_tui.files.tail import TailLine, TailNotice, TailReader

START_TAIL = 16 << 20
MAX_LINE = 256 << 10


def has_oauth_login(config_dir: str) -> bool:
    """The account's folder holds Claude Code's OAuth login (a subscription)."""
    return os.path.isfile(os.path.join(config_dir, ".credentials.json"))


class UsageReader:
    """One owner reads; `book` holds what was read."""

    def __init__(self, path: Path, accounts: Sequence[Account] = (), home: str | None = None) -> None:
        self.path = path
        self.book = UsageBook(accounts, home if home is not None else os.environ.get("HOME", ""))
        self._tail: TailReader[TailLine] = TailReader(path, TailLine, max_line=MAX_LINE, start_tail=START_TAIL)
        self.bad_lines = 0

    def read(self) -> int:
        """Fold the lines written since the last call into the book; returns how many."""
        added = 0
        for item in self._tail.read():
            if isinstance(item, TailNotice) or item.too_long:
                continue
            try:
                sample = sample_from_line(json.loads(item.raw))
            except (ValueError, AttributeError):
                sample = None
            if sample is None:
                self.bad_lines += 1
                continue
            self.book.add(sample)
            added += 1
        return added

    def accounts(self, now: float) -> list[AccountUsage]:
        dirs = self.book.config_dirs()
        return self.book.all_accounts(now, {d: has_oauth_login(d) for d in dirs})


def append_line(path: Path, line: bytes) -> None:
    """Append one line to the usage spool in one ``write()`` on an ``O_APPEND`` descriptor, as
    the recorder does (mode 0600 when new; the folder must exist)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def usage_now(
    path: Path, accounts: Sequence[Account] = (), now: Callable[[], float] = time.time
) -> list[AccountUsage]:
    """Every account's usage as the spool tells it now (named accounts first, even unused)."""
    reader = UsageReader(path, accounts)
    reader.read()
    return reader.accounts(now())


def local_usage(settings: Settings, now: float | None = None) -> list[AccountUsage]:
    """This machine's accounts: the named ones first (even unused), then any found in the spool."""
    at = time.time() if now is None else now
    return usage_now(usage_spool_for(settings.hook_spool), settings.accounts, lambda: at)


def account_config_dir(name: str, settings: Settings, now: float | None = None) -> str:
    """The ``CLAUDE_CONFIG_DIR`` of ``--account NAME`` (an ``[accounts.NAME]``), or for ``auto``
    of the account with the most headroom under its caps; raises `SpecError` saying why not."""
    named = {account.name: account for account in settings.accounts}
    if name != AUTO:
        if name not in named:
            known = ", ".join(named) or "none: add [accounts.NAME] tables to the config"
            raise SpecError([f"--account {name!r} is not an account of the config (known: {known})"])
        usage = next(u for u in local_usage(settings, now) if u.account.name == name)
        why = cap_reason(usage, settings.budget, time.time() if now is None else now)
        if why is not None:  # no new start on an account at its cap
            raise SpecError([f"--account {name}: {why}; start under another account or --account auto"])
        return named[name].config_dir
    if not named:
        raise SpecError(["--account auto: the config names no accounts ([accounts.NAME] with config_dir)"])
    candidates = [usage for usage in local_usage(settings, now) if usage.account.named]
    chosen = choose_account(candidates, settings.budget)
    if chosen is None:
        raise SpecError(["--account auto: every account is at a cap: " + "; ".join(_at_cap(u, settings) for u in candidates)])
    return chosen.account.config_dir


def resolve_account(spec: NewAgent, settings: Settings, *, here: bool = True, now: float | None = None) -> NewAgent:
    """The account a new agent starts under, held to the caps (no new start on an account at
    one), for every way an agent is started (`nbs_tui.lifecycle.operations.Lifecycle.prepare`):
    ``spec.account`` (a name, or ``auto``: the most headroom) resolved to its ``config_dir``;
    none asked, the default account (``$CLAUDE_CONFIG_DIR``, else ~/.claude), refused while it
    is at a cap. ``here``: the agent starts on this machine; another host's accounts are that
    host's, and none may be asked for there. Raises `SpecError` saying why not."""
    if spec.config_dir is not None:
        return spec  # resolved already
    if not here or spec.host not in (None, LOCAL):
        if spec.account:
            where = spec.host or "another host"
            raise SpecError([f"--account works on this machine's accounts: start on {where} without it, or from there"])
        return spec
    if spec.account:
        return replace(spec, config_dir=account_config_dir(spec.account, settings, now))
    default = (os.environ.get("CLAUDE_CONFIG_DIR") or str(settings.claude_home)).rstrip("/") or "/"
    at = time.time() if now is None else now
    for usage in local_usage(settings, at):
        if usage.account.config_dir == default:
            why = cap_reason(usage, settings.budget, at)
            if why is not None:
                raise SpecError([f"{why} (the default account, {default}): start under another with --account NAME or auto"])
    return spec


def _at_cap(usage: AccountUsage, settings: Settings) -> str:
    five, seven = settings.budget.caps_of(usage.account)
    used_five = usage.five_hour.used_percentage if usage.five_hour else 0
    used_seven = usage.seven_day.used_percentage if usage.seven_day else 0
    return f"{usage.account.name} 5-hour {used_five:.0f}/{five or 100:.0f} %, 7-day {used_seven:.0f}/{seven or 100:.0f} %"
