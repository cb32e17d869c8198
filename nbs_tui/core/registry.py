"""The resource registry: ``.nbs/control-registry`` (or ``control-registry-<handle>``).

One ``type:path`` per line (``chat:``, ``bus:``, ``hub:``). Line order matters to NBS tools (the
first ``chat:`` and the first ``bus:`` line are the ones they use), so registering appends and
unregistering removes lines in place; nothing is ever sorted. Lines this module does not
understand (a hand edit, a future type) are kept verbatim: the dashboard never loses data.

Paths are compared by their absolute normal form against the project folder, so ``./x``, ``x``
and ``/project/x`` are one entry; the text written is the path as given, normalised
(``./.nbs//chat/x.chat`` becomes ``.nbs/chat/x.chat``). Symlinks are not resolved.

Every write replaces the whole file atomically (temporary file in the same folder, fsync,
``os.replace``, fsync of the folder), so a crash at any moment leaves the old or the new
registry on disk, never a torn one. Plain file IO only: this is core and stays pure.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

KINDS: tuple[str, ...] = ("chat", "bus", "hub")
_LINE = re.compile(r"^([a-z][a-z0-9_-]*):(.+)$")
_TEMP_PREFIX = "."
_TEMP_SUFFIX = ".tmp"


@dataclass(frozen=True, slots=True)
class RegistryEntry:
    """One registered resource, in file order."""

    kind: str
    path: str
    """As written in the file."""
    absolute: str
    """The path resolved against the project folder: what NBS tools open."""

    @property
    def line(self) -> str:
        return f"{self.kind}:{self.path}"


def normalise(path: str) -> str:
    """The written form of a path: ``~`` expanded, ``.``/``..``/double slashes folded."""
    text = os.path.expanduser(path.strip())
    folded = os.path.normpath(text)
    return folded


class Registry:
    """A registry held in memory, edited by commands, written back with :func:`write_atomic`.

    Not thread-safe: the control plane owns one per (project, channel) on its own thread.
    """

    def __init__(self, root: str | os.PathLike[str], lines: Iterable[str] = ()) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self._lines: list[str] = []
        self._keys: list[tuple[str, str] | None] = []
        self._count: dict[tuple[str, str], int] = {}
        """How many lines name each (kind, absolute path): O(1) duplicate checks."""
        self._key_cache: dict[str, str] = {}
        for line in lines:
            self._append(line)

    # -- reading -----------------------------------------------------------------------------

    @classmethod
    def from_text(cls, root: str | os.PathLike[str], text: str) -> Registry:
        return cls(root, (line.rstrip("\r") for line in text.splitlines() if line.strip()))

    def copy(self) -> Registry:
        return Registry(self.root, self._lines)

    def normalise(self, path: str) -> str:
        return normalise(path)

    def key(self, path: str) -> str:
        """Absolute normal form, the identity of a path in this project."""
        cached = self._key_cache.get(path)
        if cached is None:
            cached = os.path.normpath(os.path.join(self.root, normalise(path)))
            if len(self._key_cache) > 4096:
                self._key_cache.clear()
            self._key_cache[path] = cached
        return cached

    def _parse(self, line: str) -> tuple[str, str] | None:
        match = _LINE.match(line.strip())
        if not match:
            return None
        return match.group(1), self.key(match.group(2))

    def _append(self, line: str, parsed: tuple[str, str] | None = None) -> None:
        if parsed is None:
            parsed = self._parse(line)
        self._lines.append(line)
        self._keys.append(parsed)
        if parsed is not None:
            self._count[parsed] = self._count.get(parsed, 0) + 1

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(self._lines)

    def entries(self) -> tuple[RegistryEntry, ...]:
        result = []
        for line, parsed in zip(self._lines, self._keys, strict=True):
            if parsed is not None:
                kind, absolute = parsed
                result.append(RegistryEntry(kind, line.strip().split(":", 1)[1], absolute))
        return tuple(result)

    def unparsed_lines(self) -> tuple[str, ...]:
        """Lines kept verbatim because they are not ``type:path``."""
        return tuple(line for line, parsed in zip(self._lines, self._keys, strict=True) if parsed is None)

    def counts(self) -> dict[tuple[str, str], int]:
        """How many lines name each (kind, absolute path): a copy."""
        return dict(self._count)

    def contains(self, kind: str, path: str) -> bool:
        return (kind, self.key(path)) in self._count

    def first(self, kind: str) -> RegistryEntry | None:
        """The entry NBS tools use for this type (the first line of it)."""
        for entry in self.entries():
            if entry.kind == kind:
                return entry
        return None

    # -- editing -----------------------------------------------------------------------------

    def register(self, kind: str, path: str) -> bool:
        """Append ``kind:path`` unless the same resource is already listed; True if added."""
        key = (kind, self.key(path))
        if key in self._count:
            return False
        self._append(f"{kind}:{normalise(path)}", key)
        return True

    def unregister(self, kind: str, path: str) -> int:
        """Remove every line naming this resource (any spelling); how many were removed."""
        wanted = (kind, self.key(path))
        removed = self._count.pop(wanted, 0)
        for _ in range(removed):
            index = self._keys.index(wanted)
            del self._keys[index]
            del self._lines[index]
        return removed

    def seed(self) -> list[str]:
        """Add what the sidecar seeded at start (see :func:`seed_entries`); the lines added."""
        added = []
        for kind, path in seed_entries(self.root):
            if self.register(kind, path):
                added.append(f"{kind}:{path}")
        return added

    def to_text(self) -> str:
        return "".join(line + "\n" for line in self._lines)


def seed_entries(project: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """Every ``.nbs/chat/*.chat`` except ``*-archive.chat`` (sorted), then ``.nbs/events``.

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


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a file for reading only if it is a regular file.

    A FIFO put where a control file belongs would block a plain ``open`` forever, and a device
    could be read without end; both are refused with an OSError that says why.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_text(path: str | os.PathLike[str]) -> str | None:
    """A control file's text, or None when it does not exist. Undecodable bytes survive a
    round trip (surrogateescape), so writing the registry back never changes a hand edit.
    Raises OSError for a file that is not regular or is larger than MAX_CONTROL_FILE."""
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_CONTROL_FILE + 1)
    except FileNotFoundError:
        return None
    if len(data) > MAX_CONTROL_FILE:
        raise OSError(errno.EFBIG, f"larger than {MAX_CONTROL_FILE >> 20} MiB", os.fspath(path))
    return data.decode("utf-8", errors="surrogateescape")


def write_atomic(
    path: str | os.PathLike[str],
    text: str,
    *,
    before_replace: Callable[[str], None] | None = None,
) -> None:
    """Replace ``path`` with ``text`` so that readers see the old or the new file, never a mix.

    ``before_replace`` is a test hook called with the temporary file's name after it is
    written and synced, just before the rename (a test can crash the process there).
    Raises OSError (e.g. PermissionError on a read-only ``.nbs/``); the old file is untouched.
    """
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = 0o644
    fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX + os.path.basename(target) + ".", suffix=_TEMP_SUFFIX, dir=folder)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8", errors="surrogateescape"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        if before_replace is not None:
            before_replace(temp)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def stale_temp_files(path: str | os.PathLike[str]) -> list[Path]:
    """Temporary files :func:`write_atomic` left behind for ``path`` (after a crash)."""
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
