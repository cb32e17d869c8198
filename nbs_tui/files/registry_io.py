"""The registry's files: read a control file safely, list what to seed. Writes replace the whole
file with `nbs_tui.files.atomic.write_atomic` (a crash at any moment leaves the old or the new
registry on disk, never a torn one). A FIFO or a device where a control file belongs is refused
rather than read (a plain ``open`` of a FIFO blocks forever). The registry's lines themselves
are :mod:`nbs_tui.core.control.registry`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO


def seed_entries(project: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """What the sidecar seeded a registry with: every ``.nbs/chat/*.chat`` except
    ``*-archive.chat`` (sorted), then ``.nbs/events``.

    Paths are relative to the project, as the seed's bash sidecar wrote them.
    """
    root = Path(project)
    found: list[tuple[str, str]] = []
    chat_dir = root / ".nbs" / "chat"
    try:
        names = sorted(os.listdir(chat_dir))
    except OSError:
        names = []
    for name in names:
        if name.startswith(".") or not name.endswith(".chat") or name.endswith("-archive.chat"):
            continue
        try:
            if not stat.S_ISREG(os.stat(chat_dir / name).st_mode):
                continue
        except OSError:
            continue
        found.append(("chat", f".nbs/chat/{name}"))
    if (root / ".nbs" / "events").is_dir():
        found.append(("bus", ".nbs/events"))
    return found


MAX_CONTROL_FILE = 64 * 1024 * 1024
"""Largest registry read whole (a registry is a few lines; anything bigger is not one)."""


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, for a message a person reads."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a file for reading only if it is a regular file.

    A FIFO put where a control file belongs would block a plain ``open`` forever, and a device
    could be read without end; both are refused with an OSError that says why.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"not a regular file ({file_kind(info.st_mode)})", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_at_most(handle: BinaryIO, limit: int) -> bytes:
    """The file's bytes, one more than ``limit`` when it is larger (the caller refuses it).
    Not ``handle.read(limit + 1)``: a buffered read of n asks the allocator for n bytes first,
    so every read of a small file with a 64 or 256 MiB cap mapped and unmapped that much
    (8x slower here) and raised glibc's mmap threshold, which left later large buffers
    fragmenting the heap."""
    size = os.fstat(handle.fileno()).st_size
    return handle.read(min(size, limit) + 1)


def read_text(path: str | os.PathLike[str]) -> str | None:
    """A control file's text, or None when it does not exist. Undecodable bytes survive a
    round trip (surrogateescape), so writing the registry back never changes a hand edit.
    Raises OSError for a file that is not regular or is larger than MAX_CONTROL_FILE."""
    try:
        with open_regular(path) as handle:
            data = read_at_most(handle, MAX_CONTROL_FILE)
    except FileNotFoundError:
        return None
    if len(data) > MAX_CONTROL_FILE:
        raise OSError(errno.EFBIG, f"larger than {MAX_CONTROL_FILE >> 20} MiB", os.fspath(path))
    return data.decode("utf-8", errors="surrogateescape")
