"""Claude Code's session-status files and the mapping from a tmux pane to its Claude process.

Claude Code (seen on 2.1.197 and 2.1.332) keeps ``<config>/sessions/<pid>.json`` while it runs:
``status`` idle | busy | waiting (with ``waitingFor``), ``sessionId``, ``cwd``, ``version``,
``statusUpdatedAt`` (ms), ``procStart`` (the process start time from ``/proc/<pid>/stat``, to
tell a reused pid from ours). ``<config>`` is ``$CLAUDE_CONFIG_DIR`` or ``$HOME/.claude`` *of the
agent's process*, which is why a pane's Claude process is found first (a walk of ``/proc``
below the pane's pid) and its environment asked where its files are.
"""

from __future__ import annotations

import errno
import os
import select
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbs_tui.core.fleet.process_tree import descendants
from nbs_tui.core.screen.text import loads_json
from nbs_tui.files.proc import PROC, has_children_files, tree


@dataclass(frozen=True, slots=True)
class SessionStatus:
    """One session-status file as read."""

    pid: int
    status: str
    """``idle``, ``busy`` or ``waiting`` (anything else is kept as read)."""
    waiting_for: str | None
    session_id: str | None
    cwd: str | None
    version: str | None
    updated_at: float
    """Seconds since the epoch of the last status change (``statusUpdatedAt``, else the file's mtime)."""
    proc_start: str | None
    name: str | None
    path: Path


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def read_status_file(path: Path) -> SessionStatus | None:
    """Parse one ``<pid>.json``; None when it is missing, half-written or not a status file."""
    try:
        raw = path.read_bytes()
        mtime = path.stat().st_mtime
        data = loads_json(raw)  # (a RecursionError too is a ValueError there)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    if not isinstance(pid, int):
        try:
            pid = int(path.stem)
        except ValueError:
            return None
    stamp = data.get("statusUpdatedAt") or data.get("updatedAt")
    updated = float(stamp) / 1000.0 if isinstance(stamp, int | float) and stamp > 0 else mtime
    proc_start = data.get("procStart")
    return SessionStatus(
        pid=pid,
        status=_text(data, "status") or "unknown",
        waiting_for=_text(data, "waitingFor"),
        session_id=_text(data, "sessionId"),
        cwd=_text(data, "cwd"),
        version=_text(data, "version"),
        updated_at=updated,
        proc_start=str(proc_start) if proc_start is not None else None,
        name=_text(data, "name"),
        path=path,
    )


# -- /proc ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProcInfo:
    pid: int
    ppid: int
    start: str
    """Field 22 of ``/proc/<pid>/stat``: clock ticks after boot, unique with the pid."""
    comm: str


def proc_info(pid: int, proc: Path = PROC) -> ProcInfo | None:
    try:  # a string path and a plain read: pathlib was most of a pane's walk (issue 35)
        with open(f"{proc}/{pid}/stat", "rb") as fh:
            raw = fh.read().decode()
    except (OSError, ValueError):
        return None
    # comm sits in parentheses and may itself hold spaces or parentheses: split at the last ')'.
    head, _, rest = raw.rpartition(")")
    fields = rest.split()
    if len(fields) < 20:
        return None
    comm = head.partition("(")[2]
    try:
        return ProcInfo(pid=pid, ppid=int(fields[1]), start=fields[19], comm=comm)
    except ValueError:
        return None


def process_table(proc: Path = PROC) -> dict[int, ProcInfo]:
    """Every process we can see, by pid (one pass over ``/proc``)."""
    table: dict[int, ProcInfo] = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return table
    for name in entries:
        if name.isdigit():
            info = proc_info(int(name), proc)
            if info is not None:
                table[info.pid] = info
    return table


def subtree_table(root: int, proc: Path = PROC, limit: int = 256) -> dict[int, ProcInfo] | None:
    """``root`` and the processes below it (at most ``limit``), walked through each task's
    ``children`` file (`nbs_tui.files.proc.tree`): a few reads for a pane's tree instead of
    every process of the machine. None when this kernel has no ``children`` files (use
    `process_table`); empty when ``root`` is gone."""
    if not has_children_files(proc):
        return None
    table: dict[int, ProcInfo] = {}
    for pid in tree(root, proc, limit):
        info = proc_info(pid, proc)
        if info is not None:  # ended meanwhile: its children (if any) are walked all the same
            table[pid] = info
    return table


def config_dirs_of(pid: int, proc: Path = PROC) -> list[Path]:
    """Where the process keeps its Claude files: ``$CLAUDE_CONFIG_DIR``, else ``$HOME/.claude``."""
    try:
        raw = (proc / str(pid) / "environ").read_bytes()
    except OSError:
        return []
    env: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key in (b"CLAUDE_CONFIG_DIR", b"HOME"):
            env[key.decode()] = value.decode(errors="replace")
    dirs: list[Path] = []
    if env.get("CLAUDE_CONFIG_DIR"):
        dirs.append(Path(env["CLAUDE_CONFIG_DIR"]))
    if env.get("HOME"):
        dirs.append(Path(env["HOME"]) / ".claude")
    return dirs


@dataclass(frozen=True, slots=True)
class ClaudeProcess:
    """The Claude Code process found below a pane, with its status file."""

    pid: int
    start: str
    config_dir: Path
    status: SessionStatus | None


def find_claude_process(
    pane_pid: int,
    table: Mapping[int, ProcInfo],
    config_dirs: Iterable[Path],
    proc: Path = PROC,
    *,
    children: Mapping[int, list[int]] | None = None,
    env_cache: dict[tuple[int, str], list[Path]] | None = None,
) -> ClaudeProcess | None:
    """The first process at or below ``pane_pid`` that has a live session-status file.

    ``config_dirs`` are tried first (cheap); then each process's own environment says where
    its config lives. A status file whose ``procStart`` does not match the live process is a
    leftover of an earlier process with the same pid and is ignored.
    """
    preferred = list(config_dirs)
    for pid in descendants(pane_pid, table, children):
        info = table[pid]
        tried: set[Path] = set()
        for candidates in (preferred, None):
            if candidates is not None:
                dirs = candidates
            elif env_cache is not None:
                key = (pid, info.start)
                if key not in env_cache:
                    env_cache[key] = config_dirs_of(pid, proc)
                dirs = env_cache[key]
            else:
                dirs = config_dirs_of(pid, proc)
            for config in dirs:
                if config in tried:
                    continue
                tried.add(config)
                if not os.path.isfile(f"{config}/sessions/{pid}.json"):  # no Path made for each miss
                    continue
                path = config / "sessions" / f"{pid}.json"
                status = read_status_file(path)
                if status is None:
                    return ClaudeProcess(pid, info.start, config, None)
                if status.proc_start is not None and status.proc_start != info.start:
                    continue
                return ClaudeProcess(pid, info.start, config, status)
    return None


def is_alive(pid: int, start: str | None, proc: Path = PROC) -> bool:
    """The process still runs and is the same one (same start time) as when it was found."""
    info = proc_info(pid, proc)
    return info is not None and (start is None or info.start == start)


class ExitWatch:
    """Which of the processes found below panes have exited, for all of them in one ``poll``.

    Each process found is held by a pidfd (Linux 5.3+; readable once it exits, and never
    another process's even if its pid is reused), so a check costs one system call for the
    whole fleet instead of a read of ``/proc/<pid>/stat`` a process. Past ``limit`` pidfds, or
    where there are none, `alive` falls back to `is_alive`. Not thread-safe: one owner."""

    def __init__(self, limit: int = 512, proc: Path = PROC) -> None:
        self.limit = limit
        self.proc = proc
        self._fds: dict[tuple[int, str], int] = {}
        self._exited: set[tuple[int, str]] = set()
        self._usable = hasattr(os, "pidfd_open") and proc == PROC

    def refresh(self) -> None:
        """Take one look at every held process (call once per pass, before `alive`)."""
        if not self._fds:
            self._exited = set()
            return
        poller = select.poll()
        by_fd = {fd: key for key, fd in self._fds.items()}
        for fd in by_fd:
            poller.register(fd, select.POLLIN)
        self._exited = {by_fd[fd] for fd, _ in poller.poll(0)}

    def alive(self, pid: int, start: str) -> bool:
        """The process still runs and is the one found (same start time)."""
        key = (pid, start)
        if key in self._fds:
            return key not in self._exited
        if not self._usable or len(self._fds) >= self.limit:
            return is_alive(pid, start, self.proc)
        try:
            fd = os.pidfd_open(pid)
        except OSError as error:
            if error.errno == errno.ESRCH:
                return False
            self._usable = error.errno not in (errno.ENOSYS, errno.EPERM, errno.EINVAL)
            return is_alive(pid, start, self.proc)
        if not is_alive(pid, start, self.proc):  # the pid was reused before we held it
            os.close(fd)
            return False
        self._fds[key] = fd
        return True

    def keep(self, keys: set[tuple[int, str]]) -> None:
        """Let go of every process but these."""
        for key in [k for k in self._fds if k not in keys]:
            os.close(self._fds.pop(key))
            self._exited.discard(key)

    def close(self) -> None:
        self.keep(set())
