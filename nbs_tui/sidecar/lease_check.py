"""One look at a server's lease by a process that is no watcher (a fleet API command, ``new``,
``service start``): does a live sidecar hold it, or must the service be started (and a dead
value cleared so the new service takes the lease at once)? The rules are
`nbs_tui.core.sidecar.lease_rules.lease_vacancy`; this module reads the value (one tmux round
trip), asks this host's process table, and remembers across commands when a value was first
seen (a small file in the XDG state directory), since no command lives a ttl.
"""

from __future__ import annotations

import contextlib
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.core.fleet.model import ServerAddress, server_key
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION, Vacancy, lease_vacancy, parse_lease
from nbs_tui.files.proc import pid_alive
from nbs_tui.housekeeping.logs import state_dir
from nbs_tui.sidecar.heartbeat import LeaseClient, lease_clock
from nbs_tui.tmux.commands import TmuxServerCommands


@dataclass(frozen=True, slots=True)
class LeaseLook:
    vacancy: Vacancy
    raw: str
    """The value read (to compare-and-set against when clearing it)."""

    def describe(self) -> str:
        value = parse_lease(self.raw)
        who = "" if value is None else value.describe()
        if self.vacancy is Vacancy.DEAD:
            return f"the lease of {who} was left by a process that is gone"
        if self.vacancy is Vacancy.EXPIRED:
            return f"the lease of {who} has not been renewed for its ttl"
        return "no sidecar holds the lease" if value is None else f"the lease is held by {who}"


def look_at_lease(commands: TmuxServerCommands, server: ServerAddress) -> LeaseLook:
    """The lease of ``server`` (of this machine) judged in one tmux round trip and no process;
    raises `TmuxError` when tmux does not answer."""
    raw = commands.display("", f"#{{{LEASE_OPTION}}}")
    now = lease_clock()
    path = _seen_path(server)
    seen = _read_seen(path)
    vacancy = lease_vacancy(raw, socket.gethostname(), pid_alive, seen, now)
    if raw and (seen is None or seen[0] != raw):
        _write_seen(path, raw, now)
    return LeaseLook(vacancy, raw)


def clear_vacant(commands: TmuxServerCommands, look: LeaseLook) -> bool:
    """Unset a dead or expired value, only if the option still holds exactly that value (a
    compare-and-set, as a takeover is: a holder that renewed meanwhile keeps its lease); True
    when the lease is free now."""
    if look.vacancy not in (Vacancy.DEAD, Vacancy.EXPIRED):
        return look.vacancy is Vacancy.FREE
    return LeaseClient(commands).compare_and_set(look.raw, None) == ""


def _seen_path(server: ServerAddress) -> Path:
    return state_dir() / f"lease-seen-{server_key(server)}"


def _read_seen(path: Path) -> tuple[str, float] | None:
    try:
        when, _, raw = path.read_text(encoding="utf-8").partition(" ")
        return raw, float(when)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _write_seen(path: Path, raw: str, now: float) -> None:
    """Remembered atomically (a rename); a command that cannot write it judges by pid only."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        spare = path.with_name(f"{path.name}.{os.getpid()}")
        spare.write_text(f"{now!r} {raw}", encoding="utf-8")
        os.replace(spare, path)
