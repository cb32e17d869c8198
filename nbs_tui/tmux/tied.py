"""Child processes that die with us: a control client must not outlive the nbs-tui that
started it.

Why: a ``tmux -C`` client whose owner is SIGKILLed while tmux still has output queued for
it is kept by the server until that output is written (``server_client_check_exit`` waits
for ``control_all_done``, tmux 3.3a to 3.5a), which never happens: the client stays, and
the server refuses new clients until it is killed. Killing the client process is what
frees it (the server drops a client whose socket closes), so the kernel does that for us:
each client runs under ``setpriv --pdeathsig KILL`` (Linux; ``PR_SET_PDEATHSIG``).

The kernel sends that signal when the *thread* that forked the child ends, not the
process. The children are therefore all forked on one thread kept for the life of the
process (`_Forker`), whatever thread asks. Without setpriv (not Linux, or util-linux
missing) children are started plainly, as before.
"""

from __future__ import annotations

import errno
import logging
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

log = logging.getLogger(__name__)

_PREFIX: list[str] | None = None
_PREFIX_LOCK = threading.Lock()


def tie_prefix() -> list[str]:
    """The argv prefix that makes a child die with this process ([] where there is none)."""
    global _PREFIX
    with _PREFIX_LOCK:
        if _PREFIX is None:
            _PREFIX = _probe_prefix()
        return _PREFIX


def _probe_prefix() -> list[str]:
    if not sys.platform.startswith("linux"):
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        log.warning("setpriv not found: a killed nbs-tui may leave tmux control clients behind")
        return []
    prefix = [setpriv, "--pdeathsig", "KILL", "--"]
    try:  # util-linux before 2.33 has no --pdeathsig
        ok = subprocess.run([*prefix, "true"], capture_output=True, timeout=5, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        ok = False
    if not ok:
        log.warning("%s has no --pdeathsig: a killed nbs-tui may leave tmux control clients behind", setpriv)
        return []
    return prefix


class _Forker:
    """One daemon thread, started on first use and never ended, that runs every `Popen`."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[list[str], dict[str, Any], Future[subprocess.Popen[bytes]]]]
        self._requests = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, argv: list[str], kwargs: dict[str, Any]) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="nbs-forker", daemon=True)
                self._thread.start()
        done: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put((argv, kwargs, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            argv, kwargs, done = self._requests.get()
            try:
                done.set_result(subprocess.Popen(argv, **kwargs))
            except BaseException as exc:  # handed to the caller, who raises it
                done.set_exception(exc)


_FORKER = _Forker()


def popen_tied(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(argv, **kwargs)` whose child is SIGKILLed if this process dies.
    The child's pid is the command's own (setpriv execs it)."""
    prefix = tie_prefix()
    if not prefix:
        return subprocess.Popen(list(argv), **kwargs)
    if shutil.which(argv[0]) is None:  # as Popen would say it, not as setpriv's exit 127
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", argv[0])
    return _FORKER.popen([*prefix, *argv], kwargs)
