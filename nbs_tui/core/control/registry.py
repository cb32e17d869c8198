"""The resource registry: ``.nbs/control-registry`` (or ``control-registry-<handle>``).

One ``type:path`` per line (``chat:``, ``bus:``, ``hub:``). Line order matters to NBS tools (the
first ``chat:`` and the first ``bus:`` line are the ones they use), so registering appends and
unregistering removes lines in place; nothing is ever sorted. Lines this module does not
understand (a hand edit, a future type) are kept verbatim: the dashboard never loses data.

Paths are compared by their absolute normal form against the project folder, so ``./x``, ``x``
and ``/project/x`` are one entry; the text written is the path as given, normalised
(``./.nbs//chat/x.chat`` becomes ``.nbs/chat/x.chat``). Symlinks are not resolved.

Reading and seeding from the folder are :mod:`nbs_tui.files.registry_io`, the write :mod:`nbs_tui.files.atomic`;
this module only edits the lines, so it stays pure.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

KINDS: tuple[str, ...] = ("chat", "bus", "hub")
_LINE = re.compile(r"^([a-z][a-z0-9_-]*):(.+)$")


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
    """A registry held in memory, edited by commands, written back with
    :func:`nbs_tui.files.atomic.write_atomic`.

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

    def seed(self, found: Iterable[tuple[str, str]]) -> list[str]:
        """Add what the sidecar seeded at start (``found``: what
        :func:`nbs_tui.files.registry_io.seed_entries` lists); the lines added."""
        added = []
        for kind, path in found:
            if self.register(kind, path):
                added.append(f"{kind}:{path}")
        return added

    def to_text(self) -> str:
        return "".join(line + "\n" for line in self._lines)
