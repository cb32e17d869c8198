"""The sidecar lease kept in the tmux server (design: docs/lease.md; rules: `nbs_tui.core.sidecar.lease_rules`).

`LeaseClient` reads and compare-and-sets the server option with plain ``tmux`` commands:
``if-shell -F '#{==:#{@nbs_sidecar},EXPECTED}' 'set-option -s @nbs_sidecar NEW' ; display -p``.
tmux runs one client's command line to the end before it reads another client's, and
``if-shell -F`` runs its command inline, so the test and the set are one step; the value read
back in the same line says who won. It works the same over ssh (``tmux`` run on the far host).

`LeaseHeartbeat` owns one thread. Every ttl/4 it either renews (compare-and-set from its own
last value to the same with ``seq + 1``) or, as a watcher, reads the value and takes it when it is
free or has not changed for a whole ttl on this process's clock. Callbacks run on that thread
and must not block: ``on_acquired(lease)``, ``on_lost(why)``, ``on_holder_changed(value)``,
``on_problem(message)`` (a foreign value, tmux failing), ``on_server_gone(message)`` and, for a
watcher that does not contend, ``on_vacant()`` (nobody holds it: start someone who will).
The one thing never to do: act (type, press keys) on the strength of `holding` alone; ask
`may_act()`, which is False once the last successful renewal is older than ttl/2, and fence the
typing itself on the token (`fenced`).
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.lease_rules import (
    DEFAULT_TTL,
    LEASE_OPTION,
    RENEW_FRACTION,
    ForeignLease,
    Lease,
    LeaseObserver,
    LeaseValue,
    cas_format,
    fence_format,
    may_act,
    new_lease,
    parse_lease,
    renew_due,
    too_old,
)
from nbs_tui.tmux.commands import Guard, TmuxServerCommands, command_line
from nbs_tui.tmux.port import TmuxCommandError, TmuxError, TmuxUnavailable

log = logging.getLogger(__name__)

_READ = ("display-message", "-p", f"#{{{LEASE_OPTION}}}")
_VALUE = f"#{{{LEASE_OPTION}}}"


def lease_clock() -> float:
    """Seconds on a clock that keeps counting through a suspend (a laptop lid closed)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    if boottime is not None:
        return time.clock_gettime(boottime)
    return time.monotonic()


def tmux_too_old(commands: TmuxServerCommands | None = None) -> str | None:
    """The one-line reason the server's tmux cannot carry the lease, or None. It asks the tmux
    that runs the server (``commands``: through its runner, over ssh the far host's; else this
    machine's)."""
    try:
        return too_old((commands or TmuxServerCommands.for_server(ServerAddress())).version())
    except TmuxError as error:
        return f"tmux -V failed ({error}): viewer only"


class LeaseClient:
    """The lease option's three operations, each one tmux command line."""

    def __init__(self, commands: TmuxServerCommands) -> None:
        self.commands = commands

    def read(self) -> str:
        return self.commands.display("", _VALUE)

    def compare_and_set(self, expected: str, new: str | None) -> str:
        """Set the option to ``new`` (None: unset) only if it equals ``expected``; the value after."""
        setting = ("set-option", "-su", LEASE_OPTION) if new is None else ("set-option", "-s", LEASE_OPTION, new)
        out = self.commands.run_many([("if-shell", "-F", cas_format(expected), command_line([setting])), _READ])
        return out.text.rstrip("\n")

    def fenced(self, token: str, commands: Sequence[Sequence[str]]) -> bool:
        """Run ``commands`` only while the lease carries ``token``; True if they ran.

        The check and the commands are one step inside tmux, so a holder that lost the lease
        while it was stalled can never type into a pane the new holder now owns.
        """
        return self.commands.run_guarded(fence(token), commands)


def fence(token: str) -> Guard:
    """Commands guarded by it run only while the lease carries ``token`` (`LeaseClient.fenced`)."""
    return Guard(fence_format(token))


Callback = Callable[[str], None]


class LeaseHeartbeat:
    """Hold the lease (``contend=True``) or just watch it, on one thread (see the module doc)."""

    def __init__(
        self,
        commands: TmuxServerCommands,
        *,
        contend: bool = True,
        ttl: float = DEFAULT_TTL,
        host: str | None = None,
        pid: int | None = None,
        clock: Callable[[], float] = lease_clock,
        wall: Callable[[], float] = time.time,
        on_acquired: Callable[[Lease], None] | None = None,
        on_lost: Callback | None = None,
        on_holder_changed: Callable[[LeaseValue], None] | None = None,
        on_problem: Callback | None = None,
        on_server_gone: Callback | None = None,
        on_vacant: Callable[[], None] | None = None,
    ) -> None:
        self.client = LeaseClient(commands)
        self.contend = contend
        self.ttl = ttl
        self.host = host or socket.gethostname()
        self.pid = pid or os.getpid()
        self.token = secrets.token_hex(8)
        self.clock = clock
        self.wall = wall
        self.on_acquired = on_acquired
        self.on_lost = on_lost
        self.on_holder_changed = on_holder_changed
        self.on_problem = on_problem
        self.on_server_gone = on_server_gone
        self.on_vacant = on_vacant
        """Called (watching, not contending) at each look that finds the lease free or expired."""
        self.observer = LeaseObserver(ttl)
        self._lock = threading.Lock()
        self._mine: Lease | None = None
        self._last_sent: float | None = None
        self._holder_key: object = ()
        self._reported: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        self._version_checked = False

    # -- what other threads ask ----------------------------------------------------------------

    @property
    def lease(self) -> Lease | None:
        """This process's lease while it believes it holds it."""
        with self._lock:
            return self._mine

    @property
    def holding(self) -> bool:
        return self.lease is not None

    @property
    def holder(self) -> LeaseValue:
        """The value last seen in the option (this process's own lease when holding)."""
        with self._lock:
            return self._mine if self._mine is not None else self.observer.value

    def may_act(self) -> bool:
        with self._lock:
            return self._mine is not None and may_act(self._last_sent, self.clock(), self.ttl)

    # -- the thread ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="nbs-lease", daemon=True)
        self._thread.start()

    def stop(self, release: bool = True, timeout: float = 5.0) -> None:
        """Stop the thread; give the lease back at once when ``release`` (a clean exit)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        if release:
            self.release()

    def release(self) -> None:
        with self._lock:
            mine, self._mine = self._mine, None
        if mine is None:
            return
        try:
            self.client.compare_and_set(mine.render(), None)
        except (TmuxCommandError, TmuxUnavailable) as error:
            log.info("lease not released (it expires on its own): %s", error)

    def _run(self) -> None:
        period = self.ttl / RENEW_FRACTION
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as error:  # the heartbeat must outlive any one failure, or no one acts again
                log.exception("lease tick failed")
                if not self._failing:
                    self._failing = True
                    self._problem(f"sidecar lease: {type(error).__name__}: {error}")
            self._stop.wait(period)

    def tick(self) -> None:
        """One step: renew if holding, else look and take the lease if it is free or expired."""
        try:
            if not self._version_checked:
                self._check_version()
            if self.lease is not None:
                self._renew()
            else:
                self._watch()
            self._failing = False
        except TmuxUnavailable as error:
            self._lose(f"tmux server gone: {error}")
            if self.on_server_gone is not None:
                self.on_server_gone(str(error))
        except TmuxCommandError as error:
            # A slow or refusing tmux: keep trying; `may_act` lapses on its own meanwhile.
            if not self._failing:
                self._failing = True
                self._problem(f"sidecar lease: tmux failed: {error}")

    def _check_version(self) -> None:
        """Once, on this thread (over ssh it is a round trip): a tmux too old for the lease makes
        this process a viewer only, said in one line."""
        # TmuxUnavailable or TmuxCommandError (too many open files, say) go up: asked again at
        # the next tick, never taken for a tmux too old (that would make us a viewer for good)
        reason = too_old(self.client.commands.version())
        self._version_checked = True
        if reason is not None:
            self.contend = False
            self.on_vacant = None
            self._problem(reason)

    def _renew(self) -> None:
        mine = self.lease
        if mine is None:
            return
        now = self.clock()
        with self._lock:
            last = self._last_sent
        if last is not None and not renew_due(last, now, self.ttl):
            return
        new = mine.renewed()
        after = self.client.compare_and_set(mine.render(), new.render())
        self._seen(after)
        if after == new.render():
            with self._lock:
                if self._mine is mine:
                    self._mine, self._last_sent = new, now
            return
        self._lose(f"lease taken by {self._describe(parse_lease(after))}")

    def _watch(self) -> None:
        raw = self.client.read()
        self._seen(raw)
        now = self.clock()
        expected = self.observer.takeover_from(now)
        if expected is None:
            return
        if not self.contend:
            if self.on_vacant is not None:
                self.on_vacant()
            return
        lease = new_lease(self.host, self.pid, self.token, self.wall(), self.ttl)
        after = self.client.compare_and_set(expected, lease.render())
        if after != lease.render():
            self._seen(after)
            return
        if expected:
            self._problem(f"sidecar lease taken over from {self._describe(parse_lease(expected))} (expired)")
        with self._lock:
            self._mine, self._last_sent = lease, now
        self._seen(after)
        log.info("sidecar lease acquired: %s", lease.render())
        if self.on_acquired is not None:
            self.on_acquired(lease)

    def _lose(self, why: str) -> None:
        with self._lock:
            had, self._mine, self._last_sent = self._mine, None, None
        if had is not None:
            log.warning("sidecar lease lost: %s", why)
            if self.on_lost is not None:
                self.on_lost(why)

    def _seen(self, raw: str) -> None:
        self.observer.observe(raw, self.clock())
        value = self.observer.value
        if isinstance(value, ForeignLease) and value.raw not in self._reported:
            self._reported.add(value.raw)
            self._problem(
                f"sidecar lease option {LEASE_OPTION} holds a value nbs-tui did not write "
                f"({value.why}): {value.raw[:80]!r}; treated as held until it has not changed "
                f"for {self.ttl:g} s"
            )
        key = value.token if isinstance(value, Lease) else value
        if key != self._holder_key:
            self._holder_key = key
            if self.on_holder_changed is not None:
                self.on_holder_changed(value)

    def _problem(self, message: str) -> None:
        if self.on_problem is not None:
            self.on_problem(message)  # which logs it
        else:
            log.warning("%s", message)

    @staticmethod
    def _describe(value: LeaseValue) -> str:
        return "nobody" if value is None else value.describe()
