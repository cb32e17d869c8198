"""Shared pieces of the fault tests: panes that time their own writes, a real dashboard or
service process to stop, starve or kill, and bounded waits."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import libtmux
import pyte

REPO = Path(__file__).resolve().parents[2]
GAPWRITER = Path(__file__).with_name("gapwriter.py")
MAX_PAUSE = 0.5
"""The longest a pane may be kept from writing (s), whatever happens to its watchers."""


def wait_for(condition: Callable[[], object], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Writers:
    """Panes of one session, each running `gapwriter.py` at ``rate`` bytes a second."""

    server: libtmux.Server
    reports: list[Path]

    @classmethod
    def start(cls, server: libtmux.Server, folder: Path, panes: int = 4, rate: int = 20000,
              session: str = "solo") -> Writers:
        reports = [folder / f"writer-{i}.report" for i in range(panes)]
        for i, report in enumerate(reports):
            command = f"{sys.executable} {GAPWRITER} {report} {rate}"
            if i == 0:
                server.cmd("new-session", "-d", "-s", session, "-x", "120", "-y", "40", command)
            else:
                server.cmd("new-window", "-d", "-t", session, command)
        writers = cls(server, reports)
        wait_for(lambda: all(r.exists() for r in reports), 20, "the writers' first reports")
        return writers

    def reset(self) -> None:
        """Forget the maxima so far (each writer starts again from its next report)."""
        for report in self.reports:
            report.unlink(missing_ok=True)
        wait_for(lambda: all(r.exists() for r in self.reports), 10, "the writers' reports after a reset")

    def lines(self) -> list[int]:
        return [int(r.read_text().split()[2]) for r in self.reports]

    def worst(self) -> tuple[float, float]:
        """(longest write blocked on the terminal, longest gap between writes) over all panes."""
        rows = [[float(x) for x in r.read_text().split()[:2]] for r in self.reports]
        return max(row[0] for row in rows), max(row[1] for row in rows)

    def settle(self) -> tuple[float, float]:
        """The maxima once every writer has written again after now (a pane still blocked
        would not have: its report would lag; the wait then says so)."""
        before = self.lines()
        wait_for(lambda: all(now > was + 20 for now, was in zip(self.lines(), before, strict=True)), 20,
                 "every writer writing again")
        return self.worst()


def control_clients(server: libtmux.Server) -> list[tuple[int, str]]:
    """(pid, flags) of the server's control-mode clients."""
    out = server.cmd("list-clients", "-F", "#{client_pid} #{client_control_mode} #{client_flags}").stdout
    return [(int(f[0]), f[2]) for f in (line.split() for line in out) if len(f) == 3 and f[1] == "1"]


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE", "NO_COLOR")}
    env.update(  # the log file, the action log and the hook spool in one folder, as by default
        HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".local" / "state"),
        TERM="xterm-256color", LANG=env.get("LANG", "C.UTF-8"),
    )
    env.update(extra)
    return env


ENTER_SCREEN = b"\x1b[?1049h"
"""What Textual writes when it enters its application mode (the alternate screen)."""


class PtyProcess:
    """The nbs-tui CLI in a pty of 160x48, its output drained by a thread as a terminal would."""

    def __init__(self, argv: list[str], env: dict[str, str], terminal: bool = False) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
        self.master = master
        self.tail: deque[bytes] = deque(maxlen=64)
        self._terminal_lock = threading.Lock()
        self.terminal: pyte.Screen | None = pyte.Screen(160, 48) if terminal else None
        """With ``terminal``: what a 160x48 terminal shows after everything the app wrote."""
        self._stream = pyte.ByteStream(self.terminal) if self.terminal is not None else None
        self.screens_entered = 0
        """How often the app entered its alternate screen (Textual's application mode)."""
        self._carry = b""
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self._reader = threading.Thread(target=self._read, name="pty-drain", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:
                return
            if not data:
                return
            self.tail.append(data)
            seen = self._carry + data
            self.screens_entered += seen.count(ENTER_SCREEN)
            self._carry = seen[-(len(ENTER_SCREEN) - 1) :]
            if self._stream is not None:
                with self._terminal_lock:
                    self._stream.feed(data)

    def terminal_rows(self) -> list[list[tuple[str, str, str, bool, bool]]]:
        """The terminal's cells now, row by row: (character, fg, bg, bold, reverse)."""
        assert self.terminal is not None, "started without terminal=True"
        with self._terminal_lock:
            screen = self.terminal
            return [
                [(c.data, c.fg, c.bg, c.bold, c.reverse) for c in (screen.buffer[y][x] for x in range(screen.columns))]
                for y in range(screen.lines)
            ]

    def terminal_text(self) -> list[str]:
        return ["".join(cell[0] for cell in row) for row in self.terminal_rows()]

    def output(self) -> str:
        return b"".join(self.tail).decode("utf-8", "replace")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> None:
        if self.proc.poll() is None and process_stopped(self.proc.pid):
            # Textual takes any SIGCONT for a return from Ctrl+Z and enters its application
            # mode again (new input and writer threads): a quit typed before that was done
            # left threads running, and the process never exited (1 close in 4 under load,
            # when this sent SIGCONT to a dashboard that was not stopped). So only a stopped
            # one gets it, and "q" waits until it is back.
            entered = self.screens_entered
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGCONT)
            with contextlib.suppress(AssertionError):  # one that does not come back is killed below
                wait_for(lambda: self.screens_entered > entered or self.proc.poll() is not None, 10, "back")
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self.type(b"q")
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(5)
        with contextlib.suppress(OSError):
            os.close(self.master)


@contextlib.contextmanager
def dashboard(
    server: libtmux.Server, home: Path, *args: str, terminal: bool = False, **env: str
) -> Iterator[PtyProcess]:
    """The real dashboard (``nbs-tui -L SOCKET``) on ``server``, quit at the end."""
    argv = [sys.executable, "-m", "nbs_tui", "-L", str(server.socket_name), *args]
    app = PtyProcess(argv, cli_env(home, **env), terminal=terminal)
    try:
        yield app
    finally:
        app.close()


def process_stopped(pid: int) -> bool:
    """Whether the process is stopped (SIGSTOP, SIGTSTP); False when it is gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("T", "t")


def descendants(pid: int) -> list[int]:
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        kids = [child for child, ppid in parent.items() if ppid == current]
        found += kids
        todo += kids
    return found


@contextlib.contextmanager
def stopped(*pids: int) -> Iterator[None]:
    """SIGSTOP these processes (and only these) for the block; SIGCONT them after."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def starve(pids: list[int], seconds: float, runs: float = 0.005, every: float = 0.5) -> None:
    """Let the processes run ``runs`` s out of every ``every`` s for ``seconds`` (a process
    starved of CPU by a busier one, made repeatable): a reader that drains a little now and
    then, the pattern that made tmux block panes in the probe."""
    end = time.monotonic() + seconds
    with stopped(*pids):
        while time.monotonic() < end:
            time.sleep(every - runs)
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
            time.sleep(runs)
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
