"""Edits the operator asks of the control files, done on the caller's thread.

An edit never rewrites the registry itself: registering or unregistering appends one command
line to the project's inbox (as an agent would), and the plane thread applies it like any other
inbox line, so the history shows it and the registry has one writer. The pause is a marker file.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import threading
import time
from collections.abc import Callable

from nbs_tui.core.control.control_commands import MAX_ARGUMENT, Verb
from nbs_tui.core.control.registry import Registry, normalise
from nbs_tui.files.control_events import ControlPlaneError, PlaneSnapshot
from nbs_tui.files.registry_io import open_regular, read_text

INBOX = "control-inbox"
REGISTRY = "control-registry"
PAUSE = "control-pause"
HANDLE = re.compile(r"^[A-Za-z0-9_@+-]+$")
"""An agent handle as it may appear in ``control-inbox-<handle>``."""


def inbox_path(root: str, channel: str) -> str:
    return os.path.join(root, ".nbs", INBOX + (f"-{channel}" if channel else ""))


def registry_path(root: str, channel: str) -> str:
    return os.path.join(root, ".nbs", REGISTRY + (f"-{channel}" if channel else ""))


def pause_path(root: str) -> str:
    return os.path.join(root, ".nbs", PAUSE)


def open_append(path: str) -> int:
    """An O_APPEND descriptor on a regular file (created if missing); never blocks on a FIFO."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_path(project: str | os.PathLike[str], path: str) -> tuple[str, str]:
    """The project's real root and ``path`` as it will be written (relative when inside the
    project). Raises ControlPlaneError with a reason a person can act on."""
    root = os.path.realpath(project)
    if not os.path.isdir(os.path.join(root, ".nbs")):
        raise ControlPlaneError(f"{root} has no .nbs/ folder")
    if not path or not path.strip():
        raise ControlPlaneError("no path given")
    if path != path.strip():
        raise ControlPlaneError("the path starts or ends with spaces")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        raise ControlPlaneError("the path contains a control character (newline, tab, ...)")
    if len(path) > MAX_ARGUMENT:
        raise ControlPlaneError(f"the path is longer than {MAX_ARGUMENT} characters")
    written = normalise(path)
    absolute = os.path.normpath(os.path.join(root, written))
    if absolute.startswith(root + os.sep):
        written = os.path.relpath(absolute, root)
    return root, written


def is_registered(snapshot: PlaneSnapshot, root: str, channel: str, kind: str, path: str) -> bool:
    """Whether the channel's registry lists the resource: as the plane last saw it, or as on
    disk for a project the plane does not know yet."""
    project = snapshot.project(root)
    key = os.path.normpath(os.path.join(root, path))
    if project is None:
        registry = Registry.from_text(root, read_text(registry_path(root, channel)) or "")
        return registry.contains(kind, path)
    for snap in project.channels:
        if snap.handle == channel:
            return any(e.kind == kind and e.absolute == key for e in snap.entries)
    return False


def append_command(
    root: str,
    channel: str,
    verb: Verb,
    path: str,
    lock: threading.Lock,
    on_written: Callable[[int], None] | None = None,
) -> tuple[str, int]:
    """Append ``<verb> <path>`` to the channel's inbox without disturbing an agent's unfinished
    line; the line written and its byte offset in the inbox. ``lock`` serialises our writers;
    ``on_written(offset)`` is called with it still held, right after the write."""
    if channel and not HANDLE.match(channel):
        raise ControlPlaneError(f"bad agent handle {channel!r}")
    line = f"{verb.value} {path}"
    inbox = inbox_path(root, channel)
    with lock:
        try:
            fd = open_append(inbox)
        except OSError as error:
            raise ControlPlaneError(f"cannot write {inbox}: {error.strerror}") from None
        try:
            data = (line + "\n").encode()
            deadline = time.monotonic() + 1.0
            while not ends_with_newline(inbox):
                if time.monotonic() >= deadline:
                    # the last line was left unfinished for a second: close it off first
                    data = b"\n" + data
                    break
                time.sleep(0.02)
            os.write(fd, data)
            end = os.lseek(fd, 0, os.SEEK_CUR)
        except OSError as error:
            raise ControlPlaneError(f"cannot write {inbox}: {error.strerror}") from None
        finally:
            os.close(fd)
        offset = end - len(line) - 1
        if on_written is not None:
            on_written(offset)
    return line, offset


def ends_with_newline(path: str) -> bool:
    try:
        with open_regular(path) as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return True
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"
    except OSError:
        return True


def write_pause(root: str, paused: bool) -> None:
    """Create or remove ``.nbs/control-pause``. Raises ControlPlaneError."""
    marker = pause_path(root)
    try:
        if paused:
            fd = open_append(marker)
            try:
                os.write(fd, f"paused by nbs-tui at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n".encode())
            finally:
                os.close(fd)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(marker)
    except OSError as error:
        raise ControlPlaneError(f"cannot {'create' if paused else 'remove'} {marker}: {error.strerror}") from None
