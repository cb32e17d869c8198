"""The remembered fleet on disk: ``$XDG_STATE_HOME/nbs-tui/fleet-<key>.json``, one file per tmux server.

The key is the service's (``default``, ``L-work``, ``S-_tmp_sock``; ``H-<host>-...`` for another
host: `nbs_tui.core.fleet.fleet_memory.store_key`). The file is the JSON form of
`nbs_tui.core.fleet.fleet_memory.FleetMemory` with a ``schema`` number, pretty-printed for a person.

* Written only when the memory changed (`FleetStore.update` returns whether it wrote), never on a
  timer, and always whole and atomically (a temporary file in the same folder, fsync, rename,
  fsync of the folder): a crash leaves the old file or the new one.
* Read tolerantly: a file that is not valid JSON or not a memory is reported once and moved aside
  to ``fleet-<key>.json.corrupt-<UTC time>`` (never over an earlier one), and the store starts
  empty; nothing is lost. A file written by a newer nbs-tui (a newer ``schema``), or one that
  cannot be read (permissions), is reported and left exactly as it is: this store then writes
  nothing over it.
* Another process may write the same file (a dashboard holding the sidecar lease, then the
  service): `remember` reads the file again when it changed on disk since this store last saw it.

The caller is one thread (the sidecar's). Problems go to ``report`` (a line for the problems
screen and the log).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from nbs_tui.core.fleet.fleet_memory import (
    FleetMemory,
    MemoryFormatError,
    NewerSchemaError,
    RememberedWindow,
    ServerInstance,
    memory_from_json,
    memory_to_json,
    remember,
    store_key,
)
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.files.atomic import write_atomic  # the one atomic writer
from nbs_tui.housekeeping.logs import state_dir

MAX_FILE = 16 * 1024 * 1024
"""A memory file larger than this is not one (a fleet of 200 agents is ~200 KB)."""


def fleet_path(host: str, server: ServerAddress, state: Path | None = None) -> Path:
    return (state or state_dir()) / f"fleet-{store_key(host, server)}.json"


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


class FleetStore:
    """One server's memory file (module docstring)."""

    def __init__(self, path: Path, report: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._report = report or (lambda _message: None)
        self._memory: FleetMemory | None = None
        self._loaded = False
        self._seen: tuple[int, int, int] | None = None
        self.read_only = ""
        """Why this store writes nothing (a newer or unreadable file is left as it is); "" if it writes."""

    @classmethod
    def for_server(
        cls, host: str, server: ServerAddress, state: Path | None = None, report: Callable[[str], None] | None = None
    ) -> FleetStore:
        return cls(fleet_path(host, server, state), report)

    # -- reading ------------------------------------------------------------------------------

    def load(self) -> FleetMemory | None:
        """The memory in the file now (None: no file, or one that could not be used: reported)."""
        self._loaded = True
        self._memory = None
        self.read_only = ""
        self._seen = _stat_key(self.path)
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read(MAX_FILE + 1)
        except (FileNotFoundError, NotADirectoryError):
            return None  # no file (a write says what is wrong with the folder)
        except OSError as error:
            self._refuse(f"cannot read {self.path} ({error.strerror or error}): the fleet is not remembered until it can be")
            return None
        try:
            if len(raw) > MAX_FILE:
                raise MemoryFormatError(f"larger than {MAX_FILE >> 20} MiB")
            self._memory = memory_from_json(json.loads(raw.decode("utf-8")))
        except NewerSchemaError as error:
            self._refuse(f"{self.path} was written by a newer nbs-tui ({error}): left as it is, not updated")
        except (MemoryFormatError, ValueError) as error:  # UnicodeError and JSONDecodeError are ValueErrors
            self._set_aside(str(error))
        return self._memory

    def _refuse(self, why: str) -> None:
        self.read_only = why
        self._report(why)

    def _set_aside(self, why: str) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 0
        while aside.exists():
            n += 1
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
        try:
            os.rename(self.path, aside)
        except OSError as error:
            self._refuse(f"{self.path} is not a fleet memory ({why}) and cannot be moved aside ({error.strerror}): left as it is")
            return
        self._seen = None
        self._report(f"{self.path} is not a fleet memory ({why}): kept as {aside.name}, starting a new one")

    @property
    def memory(self) -> FleetMemory | None:
        """The memory as last read or written (read once on first use)."""
        if not self._loaded:
            self.load()
        return self._memory

    # -- writing ------------------------------------------------------------------------------

    def update(self, memory: FleetMemory) -> bool:
        """Write ``memory`` if it differs from the file's; True when it wrote."""
        if memory == self.memory or self.read_only:
            return False
        text = json.dumps(memory_to_json(memory), indent=1, ensure_ascii=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, text)
        except OSError as error:
            self._report(f"cannot write {self.path} ({error.strerror or error}): the fleet's last change is not remembered")
            return False
        self._memory = memory
        self._seen = _stat_key(self.path)
        return True

    def remember(
        self, host: str, server: ServerAddress, instance: ServerInstance | None, windows: Iterable[RememberedWindow]
    ) -> bool:
        """Fold what the server shows now into the memory (`nbs_tui.core.fleet.fleet_memory.remember`)
        and write it if that changed it; True when it wrote."""
        if not self._loaded or _stat_key(self.path) != self._seen:
            self.load()  # first use, or another process wrote the file since
        return self.update(remember(self._memory, host, server, instance, windows))
