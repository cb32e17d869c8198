"""The start gate across processes: one lock file per local tmux server, shared by every
nbs-tui process on this machine (the dashboard, its service, ``--headless``, a second
dashboard).

`nbs_tui.tmux.control.StartGate` keeps one process's control clients from starting while
another of its clients closes (tmux 3.2-3.6b crash when a client still identifying itself is
sent a ``%client-detached``). Two processes have the same race between them: two loops of
start-and-close on one server, each in its own process, crashed tmux 3.3a in every run of 600
cycles. So a start also holds this file shared (``flock(LOCK_SH)``: starts may overlap) until
its client has identified, and a close holds it exclusive (``LOCK_EX``) while it detaches.

Every wait is bounded (`nbs_tui.tmux.control.GATE_WAIT`): a process stuck inside the gate makes
the others wait that long, then go on as before the gate existed (with a warning in the log),
never hang; until a hold succeeds again they wait only `STUCK_WAIT`, so a stopped tmux server or
process costs each later start or close a moment, not the whole wait. A process drops its own
starts' holds once they are `GATE_WAIT` old, as its in-process gate stops counting them. Servers
over ssh have no file: their other clients are on their host.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import stat
import tempfile
import time
from pathlib import Path

from nbs_tui.housekeeping.logs import runtime_dir

log = logging.getLogger(__name__)

POLL = 0.002
"""Seconds between tries of a lock another process holds (a start or close takes a few ms)."""
STUCK_WAIT = 0.05
"""Seconds a hold waits at most after one gave up, until one succeeds again."""


def gate_folder() -> Path | None:
    """Our private folder for gate files (``$XDG_RUNTIME_DIR/nbs-tui``, else ``/tmp/nbs-tui-UID``),
    made on first use; None when it cannot be made ours (then there is no machine-wide gate)."""
    runtime = runtime_dir()
    folder = runtime / "nbs-tui" if runtime is not None else Path(tempfile.gettempdir()) / f"nbs-tui-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(folder)
    except OSError as error:
        log.warning("no machine-wide control-client gate: cannot make %s: %s", folder, error)
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():  # someone else's, or a link
        log.warning("no machine-wide control-client gate: %s is not a folder of ours", folder)
        return None
    return folder


def gate_path(socket: str | os.PathLike[str]) -> Path | None:
    """The gate file of the tmux server listening at ``socket`` (named after its real path)."""
    folder = gate_folder()
    if folder is None:
        return None
    digest = hashlib.sha256(os.path.realpath(socket).encode()).hexdigest()[:24]
    return folder / f"start-gate-{digest}"


class GateFile:
    """Shared holds for starts, exclusive holds for closes, on one file (see the module)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stuck = False
        """The last hold gave up waiting, and none has succeeded since."""

    def hold(self, *, shared: bool, wait: float) -> int | None:
        """Lock the file and return the descriptor that holds it (`release` ends the hold);
        None when that took longer than ``wait`` seconds or the file cannot be opened."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            log.warning("control-client gate %s: %s", self.path, error)
            return None
        mode = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
        deadline = time.monotonic() + (min(wait, STUCK_WAIT) if self.stuck else wait)
        while True:
            try:
                fcntl.flock(fd, mode)
                self.stuck = False
                return fd
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    if not self.stuck:
                        what = "starting" if not shared else "closing"
                        log.warning("a control client still %s after %.1f s: going on without the gate", what, wait)
                    self.stuck = True
                    return None
                time.sleep(POLL)
            except OSError as error:
                os.close(fd)
                log.warning("control-client gate %s: %s", self.path, error)
                return None

    @staticmethod
    def release(fd: int | None) -> None:
        """End a hold (closing the descriptor drops its lock)."""
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
