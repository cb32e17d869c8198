"""Claude Code's own background sessions, listed now and then: ``claude agents --json``.

`BackgroundPoller` owns one thread, ``nbs-background-sessions``. Its first act (a little after the
start, off the first frame's path) is to ask the installed Claude Code, through the configured
``claude_command``, what it offers: ``agents --help`` and ``attach --help`` side by side (two
Claude Code starts, ~0.3 s). Where ``agents --json`` is missing (before 2.1.150), or Claude Code
cannot be run at all, the thread ends there: no row, no message, nothing run again. Where it is
there, it runs ``claude_command agents --json`` every `POLL_EVERY` seconds and when asked
(`poll_now`: after a session was opened), never per frame, and reports the background sessions
when they changed. A reply that cannot be read, a non-zero exit or a timeout is one problem line
(said once until it changes or a good reply comes), and the last list stays.

The version's answers are read by the pure `nbs_tui.core.fleet.background`; docs/lifecycle.md,
"Background sessions", has what was measured.
"""

from __future__ import annotations

import logging
import subprocess
import threading
from collections.abc import Callable, Sequence

from nbs_tui.core.fleet.agent_spec import SpecError, command_words
from nbs_tui.core.fleet.background import (
    NO_SUPPORT,
    BackgroundSession,
    BackgroundSupport,
    background_support,
    parse_agents_json,
)
from nbs_tui.lifecycle.host import claude_env, read_helps

log = logging.getLogger(__name__)

POLL_EVERY = 20.0
"""Seconds between two ``claude agents --json`` (each is a Claude Code start: ~0.2-0.3 s of CPU)."""
FIRST_AFTER = 2.0
"""Seconds after the start before the version is asked (the dashboard's first frame comes first)."""
RUN_TIMEOUT = 30.0
PROBLEM_SOURCE = "background sessions"

SessionsListener = Callable[[tuple[BackgroundSession, ...]], None]


def read_support(argv0: Sequence[str], timeout: float = RUN_TIMEOUT) -> BackgroundSupport:
    """What the installed Claude Code offers of background sessions (`NO_SUPPORT` when it cannot
    be run): ``agents --help`` and ``attach --help``, run side by side."""
    texts = read_helps(argv0, (("agents",), ("attach",)), timeout, with_stderr=True)
    if texts is None:
        return NO_SUPPORT
    return background_support(texts[0], texts[1])


class BackgroundPoller:
    """Lists Claude Code's background sessions now and then (module docstring)."""

    def __init__(
        self, claude_command: str, listener: SessionsListener, problem: Callable[[str, str], None], *,
        every: float = POLL_EVERY, first_after: float = FIRST_AFTER,
    ) -> None:  # fmt: skip
        self._claude_command = claude_command
        self._listener = listener
        self._problem = problem
        self._every = every
        self._first_after = first_after
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._detected = threading.Event()
        self.support: BackgroundSupport = NO_SUPPORT
        """What the installed version offers; known once `detected` is set."""
        self.sessions: tuple[BackgroundSession, ...] = ()
        """The last list reported."""
        self._said: str | None = None
        self._lock = threading.Lock()
        self._running: subprocess.Popen[str] | None = None
        """The ``agents --json`` under way: `stop` ends it rather than wait for it."""

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="nbs-background-sessions", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stopping.set()
            running = self._running
        if running is not None:
            running.kill()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(RUN_TIMEOUT + 5)  # at most a help run (`read_support`) is waited for

    def poll_now(self) -> None:
        """List again soon (an open, the operator asked); a no-op where nothing is listed."""
        self._wake.set()

    def wait_detected(self, timeout: float) -> bool:
        """Block until the version was asked (tests)."""
        return self._detected.wait(timeout)

    # -- the thread -------------------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            if self._stopping.wait(self._first_after):
                return
            try:
                argv0 = command_words(self._claude_command)
            except SpecError:
                return  # the config's check says so already
            self.support = read_support(argv0)
            self._detected.set()
            if not self.support.list_json:
                return  # this Claude Code has no background sessions: show nothing, say nothing
            while not self._stopping.is_set():
                self._wake.clear()
                self._poll(argv0)
                self._wake.wait(self._every)
        except Exception:  # a bug here must not pass silently, nor take the dashboard down
            log.exception("the background-session poller failed")
            self._problem(PROBLEM_SOURCE, "the background-session poller stopped on an error (see the log file)")
        finally:
            self._detected.set()

    def _poll(self, argv0: list[str]) -> None:
        try:
            with self._lock:
                if self._stopping.is_set():
                    return
                proc = self._running = subprocess.Popen(
                    [*argv0, "agents", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    stdin=subprocess.DEVNULL, env=claude_env(),
                )  # fmt: skip
        except OSError as error:
            self._say(f"claude agents --json could not run: {error}")
            return
        try:
            out, err = proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            self._say(f"claude agents --json did not answer in {RUN_TIMEOUT:g} s")
            return
        finally:
            with self._lock:
                self._running = None
        if self._stopping.is_set():
            return
        if proc.returncode != 0:
            words = " ".join((err or out).split())[:200] or "no output"
            self._say(f"claude agents --json exited {proc.returncode}: {words}")
            return
        reply = parse_agents_json(out)
        if reply.problem is not None:
            self._say(reply.problem)
            return
        self._said = None
        if reply.sessions != self.sessions:
            self.sessions = reply.sessions
            self._listener(reply.sessions)

    def _say(self, message: str) -> None:
        """One problem line per distinct trouble (every 20 s would bury the problems screen)."""
        if message != self._said:
            self._said = message
            self._problem(PROBLEM_SOURCE, message)
