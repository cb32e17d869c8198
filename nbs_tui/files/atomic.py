"""The one way nbs-tui replaces a file: readers see the old file or the new one, never a mix.

Every file nbs-tui writes whole goes through `write_atomic`: the registries (``.nbs/``), chats
(nbs-chat's protocol), the config file (the theme saved back) and Claude Code's settings (hooks
installed). The new content is written to a temporary file in the same folder, flushed and
fsync'd, given the old file's mode, renamed over the file (``os.replace``: atomic on POSIX), and
then the folder is fsync'd so the rename itself survives a crash. A crash at any moment leaves
the old or the new file on disk, plus at worst a temporary file (`stale_temp_files`). A file
that is a symlink (a settings file kept in a dotfiles repository) is written where it points,
and stays a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

NEW_FILE_MODE = 0o644
"""The mode of a file that did not exist (an existing file keeps its own)."""

_TEMP_PREFIX = "."
_TEMP_SUFFIX = ".tmp"


def write_atomic(
    path: str | os.PathLike[str],
    data: str | bytes,
    *,
    new_mode: int = NEW_FILE_MODE,
    make_parents: bool = False,
    temp_name: str | None = None,
    before_replace: Callable[[str], None] | None = None,
) -> None:
    """Replace ``path`` with ``data`` (a str is written as UTF-8, lone surrogates as the bytes
    they stand for, so text read with ``surrogateescape`` goes back byte for byte).

    ``new_mode``: the mode when the file does not exist yet. ``make_parents``: create missing
    folders first. ``temp_name``: the temporary file's name in the file's folder, for a protocol
    that names it (nbs-chat's ``<chat>.tmp``, written under its writers' lock); by default a
    unique hidden name. ``before_replace`` is a test hook, called with the temporary file's path
    once it is written and synced, just before the rename (a test can crash the process there).

    Raises OSError (a read-only folder, a full disk...); the old file is then untouched and the
    temporary file removed.
    """
    content = data.encode("utf-8", errors="surrogateescape") if isinstance(data, str) else data
    target = os.fspath(path)
    if os.path.islink(target):
        target = os.path.realpath(target)
    folder = os.path.dirname(os.path.abspath(target))
    if make_parents:
        os.makedirs(folder, exist_ok=True)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = new_mode
    if temp_name is None:
        fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX + os.path.basename(target) + ".", suffix=_TEMP_SUFFIX, dir=folder)
    else:
        temp = os.path.join(folder, temp_name)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
            size = os.fstat(handle.fileno()).st_size
            if size != len(content):  # a file system that took less than it said
                raise OSError(errno.EIO, f"{temp} is {size} bytes, not {len(content)}")
            os.fchmod(handle.fileno(), mode)
        if before_replace is not None:
            before_replace(temp)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):  # not every file system syncs a folder
        folder_fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(folder_fd)
        finally:
            os.close(folder_fd)


def stale_temp_files(path: str | os.PathLike[str]) -> list[Path]:
    """Temporary files `write_atomic` left behind for ``path`` (after a crash), oldest name first."""
    target = Path(path)
    prefix = _TEMP_PREFIX + target.name + "."
    try:
        return sorted(
            target.parent / name
            for name in os.listdir(target.parent)
            if name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)
        )
    except OSError:
        return []
