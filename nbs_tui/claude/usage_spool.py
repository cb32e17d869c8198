"""Reading the usage spool the status-line recorder appends to (`nbs_tui.claude.status_recorder`).

`UsageReader` follows the spool forward (`nbs_tui.files.tail.TailReader`: complete lines only,
never written to) and keeps a `UsageBook` up to date; a reader started on a big spool begins
`START_TAIL` bytes before its end (the burn span needs the last hour, the daily caps a day, and a
turn's line is about 2 KB). `usage_now` is the one-shot read of ``nbs-tui usage``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from nbs_tui.core.fleet.accounts import Account
from nbs_tui.core.fleet.usage import AccountUsage, UsageBook, sample_from_line
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
