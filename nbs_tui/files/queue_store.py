"""The work queue on disk: ``$XDG_STATE_HOME/nbs-tui/queue-<key>.jsonl``, one file per tmux server.

The key is the fleet memory's (`nbs_tui.core.fleet.fleet_memory.store_key`: ``default``,
``L-work``, ``S-_tmp_sock``). The file is forward-only JSON lines (`nbs_tui.core.queue.records`):

* **Appended atomically.** Each record is one ``write`` of one whole line on a descriptor opened
  with ``O_APPEND``, then ``fsync``, under an exclusive ``flock`` on the file that every writer
  takes (the CLI adding, the holder's feeder, a dashboard cancelling): two writers never
  interleave, and a task id is given under the lock (`QueueStore.add`), so two adds at once get
  two ids. Readers take no lock: they read complete lines only.
* **Never rewritten.** Nothing truncates, renames or edits the file. A last line without its
  newline (a writer killed inside its ``write``, a full disk) is *torn*: readers skip it and
  report it once; the next append first ends it with a newline (in the same ``write``), so it
  stays in the file, readable by a person, skipped (and reported) as a bad line.
* **Read incrementally.** `QueueStore.refresh` reads only the bytes appended since the last
  read and folds their records into its `nbs_tui.core.queue.task_states.QueueState`; a file that got
  shorter or was replaced (another inode) is read again from the start.

A line that is not a record is skipped and reported (`report`: a line for the problems screen
and the log) with its line number; one written by a newer nbs-tui is skipped the same way.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from nbs_tui.core.fleet.fleet_memory import store_key
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.queue.records import (
    MAX_LINE,
    Record,
    RecordError,
    TaskAdded,
    parse_line,
    record_line,
)
from nbs_tui.core.queue.task_states import QueueState, Task
from nbs_tui.housekeeping.logs import state_dir

FILE_MODE = 0o600
"""The queue holds prompts: the user's own."""


def queue_path(host: str, server: ServerAddress, state: Path | None = None) -> Path:
    return (state or state_dir()) / f"queue-{store_key(host, server)}.jsonl"


class QueueStore:
    """One server's queue file (module docstring). Not shared between threads."""

    def __init__(self, path: Path, report: Callable[[str], None] | None = None) -> None:
        self.path = path
        self._report = report or (lambda _message: None)
        self._queue = QueueState()
        self._offset = 0
        """Bytes of the file read and folded (always at the end of a complete line)."""
        self._line = 0
        self._identity: tuple[int, int] | None = None
        self._torn_reported: int | None = None
        self.problems: list[str] = []
        """Every problem reported, in order (bad lines, a torn end)."""

    @classmethod
    def for_server(
        cls,
        host: str,
        server: ServerAddress,
        state: Path | None = None,
        report: Callable[[str], None] | None = None,
    ) -> QueueStore:
        return cls(queue_path(host, server, state), report)

    # -- reading ------------------------------------------------------------------------------

    @property
    def queue(self) -> QueueState:
        """The queue as last read (`refresh` reads what was appended since)."""
        return self._queue

    def refresh(self) -> QueueState:
        """Fold the records appended since the last read; the queue as the file has it now."""
        try:
            with open(self.path, "rb") as handle:
                self._read_from(handle)
        except FileNotFoundError:
            if self._offset:
                self._restart()
        except OSError as error:
            self._problem(
                f"cannot read {self.path} ({error.strerror or error}): the queue shown may be old"
            )
        return self._queue

    def _restart(self) -> None:
        self._queue = QueueState()
        self._offset = 0
        self._line = 0
        self._torn_reported = None

    def _read_from(self, handle: BinaryIO) -> None:
        fd = handle.fileno()
        info = os.fstat(fd)
        identity = (info.st_dev, info.st_ino)
        if identity != self._identity or info.st_size < self._offset:
            if self._identity is not None:
                self._problem(f"{self.path} was replaced or cut short: read again from its start")
            self._restart()
            self._identity = identity
        if info.st_size == self._offset:
            return
        chunk = os.pread(fd, info.st_size - self._offset, self._offset)
        end = chunk.rfind(b"\n") + 1
        for raw in chunk[:end].split(b"\n")[:-1]:
            self._line += 1
            self._fold_line(raw)
        self._offset += end
        rest = chunk[end:]
        if rest and self._torn_reported != self._offset:
            self._torn_reported = self._offset
            self._problem(
                f"{self.path} line {self._line + 1} is torn ({len(rest)} bytes without an end, a writer "
                "killed mid-write): skipped, kept as it is"
            )

    def _fold_line(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            record = parse_line(raw)
        except RecordError as error:
            self._problem(f"{self.path} line {self._line}: not a queue record ({error}): skipped")
            return
        self._queue.apply(record)

    def _problem(self, message: str) -> None:
        self.problems.append(message)
        self._report(message)

    # -- writing ------------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[int]:
        """The file open for appending, under the writers' exclusive lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield fd
        finally:
            os.close(fd)  # releases the lock

    def append(self, record: Record) -> None:
        """Append one record (module docstring). Raises OSError when it could not be written whole
        (then the queue is as before: a partial line is torn and skipped by every reader)."""
        with self._locked() as fd:
            self._write(fd, record)
        self.refresh()

    def append_checked(self, decide: Callable[[QueueState], Record | None]) -> Record | None:
        """Under the writers' lock, read the queue to its end and append what ``decide`` returns for
        it (nothing for None): a compare-and-append, so a decision is made on the latest queue."""
        with self._locked() as fd:
            self.refresh()
            record = decide(self._queue)
            if record is not None:
                self._write(fd, record)
        self.refresh()
        return record

    def add(self, make: Callable[[str], TaskAdded]) -> Task:
        """Add a task: ``make`` gets the new id (one more than the highest, given under the lock)."""
        record = self.append_checked(lambda queue: make(str(queue.last_id() + 1)))
        assert isinstance(record, TaskAdded)
        task = self._queue.get(record.task)
        assert task is not None
        return task

    def _write(self, fd: int, record: Record) -> None:
        line = record_line(record)
        if len(line) > MAX_LINE:
            raise OSError(errno.EFBIG, f"a queue record of {len(line)} bytes (at most {MAX_LINE})")
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # end a torn last line first, in the same write: it stays, skipped
        written = os.write(fd, line)
        if written != len(line):  # a full disk: the rest never comes; readers see a torn line
            raise OSError(
                errno.ENOSPC,
                f"wrote {written} of {len(line)} bytes of a queue record to {self.path}",
            )
        os.fsync(fd)
