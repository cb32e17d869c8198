"""The one reader of files that others append to: forward by byte offset, complete lines only.

Used for control inboxes (:mod:`nbs_tui.files.inbox_reader`), the hook spool
(:mod:`nbs_tui.claude.spool`) and Claude Code transcripts (:mod:`nbs_tui.claude.transcript`);
what a line means is theirs to decide, through the ``make_line`` they pass.

- The reader keeps a byte offset and returns only complete lines written since the last call.
  It never writes, truncates or locks the file, so writers appending to it are never disturbed.
- A last line without its newline is held back until the newline arrives (a writer may be
  halfway through it).
- A line longer than ``max_line`` bytes is not kept: its first bytes and its length are
  remembered and it is returned as one over-long line, so memory stays bounded however large
  the line is.
- If the file is replaced (another inode at the path) the new file is read from its start; if
  it is deleted the reader waits for it to come back; if it shrinks (someone truncated an
  append-only file) the reader starts again at the beginning. Each is returned as a
  :class:`TailNotice`, in order among the lines.
- A FIFO or a device at the path is refused (a notice), never read: a plain ``open`` of a FIFO
  blocks forever and a device never ends.
- ``start_tail``: on the first read of a file larger than that, start that many bytes before
  its end and drop the line that was cut (for logs whose old records are stale anyway).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO, Generic, NamedTuple, TypeVar

from nbs_tui.files.registry_io import open_regular

CHUNK = 1 << 20
"""Bytes read from the file per system call."""
PREVIEW = 120
"""Bytes kept of a line longer than ``max_line``."""

DELETED = "deleted"
BACK = "back"
REPLACED = "replaced"
SHRANK = "shrank"
UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class TailNotice:
    """Something happened to the file itself, not to its lines."""

    kind: str
    """DELETED, BACK, REPLACED, SHRANK or UNREADABLE."""
    message: str

    @property
    def restarted(self) -> bool:
        """The reader started the file again from its beginning (a new or truncated file)."""
        return self.kind in (BACK, REPLACED, SHRANK)


class TailLine(NamedTuple):
    """One complete line as bytes (the default ``make_line``)."""

    number: int
    """1-based line number since the reader (re)started the file."""
    offset: int
    """Byte offset of the line's start."""
    raw: bytes
    """The line without its newline; only its first PREVIEW bytes when ``too_long``."""
    length: int
    """Length of the whole line in bytes (without newline)."""
    too_long: bool


T = TypeVar("T")
LineMaker = Callable[[int, int, bytes, int, bool], T]
"""``make_line(number, offset, raw, length, too_long)``: called once per complete line."""


class TailReader(Generic[T]):
    """Reads new complete lines of one file, forward only. Not thread-safe; one owner."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        make_line: LineMaker[T],
        *,
        max_line: int,
        start_tail: int | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.max_line = max_line
        self._make_line = make_line
        self._start_tail = start_tail
        self._restart(None)
        self._missing_reported = False
        self._unreadable_reported = False
        self.size: int | None = None
        """The file's size at the last read that opened it (None: never opened)."""
        self.mtime: float = 0.0
        """The file's modification time at that read."""
        self.grew = False
        """The last read consumed new bytes (a partial line included)."""
        self.noticed = False
        """The last read returned a notice (lets a caller skip scanning a long list for one)."""
        self.skipped = 0
        """``start_tail`` left out the lines that start at or before this byte offset (0: none
        skipped), for a caller that wants to read them another way."""

    @property
    def offset(self) -> int:
        """Byte offset just after the last complete line returned."""
        return self._line_start

    @property
    def lines_read(self) -> int:
        return self._line_number

    @property
    def has_partial(self) -> bool:
        """A last line without newline is waiting."""
        return self._pending_length > 0

    def _restart(self, identity: tuple[int, int] | None) -> None:
        """Read from the top of the file with this (device, inode); None: not opened yet."""
        self._identity = identity
        self._position = 0
        """Bytes consumed from the file (complete lines plus the held-back partial line)."""
        self._line_start = 0
        self._pending = bytearray()
        self._pending_length = 0
        self._skipping = False
        self._line_number = 0
        self._dropping = False
        """Dropping bytes up to the first newline (start_tail began mid-line)."""

    def read(self, limit: int | None = None) -> list[T | TailNotice]:
        """Every complete line appended since the last call, with notices about the file (at
        most about ``limit`` bytes of file are read when given, so a huge backlog can be taken
        in slices)."""
        items: list[T | TailNotice] = []
        self.grew = False
        self.noticed = False
        try:
            handle = open_regular(self.path)
        except FileNotFoundError:
            if self._identity is not None and not self._missing_reported:
                self.noticed = True
                items.append(TailNotice(DELETED, f"{self.path} was deleted; waiting for it to come back"))
                self._missing_reported = True
            return items
        except OSError as error:
            if not self._unreadable_reported:
                self.noticed = True
                items.append(TailNotice(UNREADABLE, f"cannot read {self.path}: {error.strerror or error}"))
                self._unreadable_reported = True
            return items
        with handle:
            info = os.fstat(handle.fileno())
            identity = (info.st_dev, info.st_ino)
            if self._identity is None:
                self._restart(identity)
                self._start_near_end(info.st_size)
            elif self._missing_reported:
                # it was gone and is back: a new file, even if the inode is reused
                self.noticed = True
                items.append(TailNotice(BACK, f"{self.path} is back; reading it from the start"))
                self._restart(identity)
            elif identity != self._identity:
                self.noticed = True
                items.append(TailNotice(REPLACED, f"{self.path} was replaced by a new file; reading it from the start"))
                self._restart(identity)
            elif info.st_size < self._position:
                message = (
                    f"{self.path} shrank from {self._position} to {info.st_size} bytes "
                    "(it should only grow); reading it again from the start"
                )
                self.noticed = True
                items.append(TailNotice(SHRANK, message))
                self._restart(identity)
            self._missing_reported = False
            self._unreadable_reported = False
            self.size, self.mtime = info.st_size, info.st_mtime
            if info.st_size == self._position:
                return items
            handle.seek(self._position)
            self._read_from(handle, limit, items)
        return items

    def read_moved(self, moved: str | os.PathLike[str]) -> list[T | TailNotice]:
        """The file this reader follows was moved to ``moved`` (rotated): return what was
        written to it after the last read, its unfinished last line included (nobody writes to
        it any more), then follow the path again from the beginning of whatever file is there."""
        items: list[T | TailNotice] = []
        try:
            with open_regular(moved) as handle:
                info = os.fstat(handle.fileno())
                if self._identity in (None, (info.st_dev, info.st_ino)):
                    handle.seek(self._position)
                    self._read_from(handle, None, items)
                    if self._pending_length or self._skipping:
                        self._emit(items)
        except OSError as error:
            items.append(TailNotice(UNREADABLE, f"cannot read {os.fspath(moved)}: {error.strerror or error}"))
        self._restart(None)
        self._start_tail = None
        return items

    def _start_near_end(self, size: int) -> None:
        if self._start_tail is not None and size > self._start_tail:
            # Start one byte early and drop up to the first newline: a line that was cut is
            # dropped, a line that starts exactly at the cut is kept.
            self._position = self._line_start = size - self._start_tail - 1
            self._dropping = True
            self.skipped = self._position
        self._start_tail = None  # only the first file is started near its end

    def _read_from(self, handle: BinaryIO, limit: int | None, items: list[T | TailNotice]) -> None:
        read = handle.read
        budget = limit if limit is not None else -1
        while budget != 0:
            chunk = read(CHUNK if budget < 0 else min(CHUNK, budget))
            if not chunk:
                break
            self.grew = True
            if budget > 0:
                budget = max(0, budget - len(chunk))
            if self._dropping:
                cut = chunk.find(b"\n")
                if cut < 0:
                    self._position += len(chunk)
                    self._line_start = self._position
                    continue
                self._dropping = False
                self._position += cut + 1
                self._line_start = self._position
                chunk = chunk[cut + 1 :]
            self._feed(chunk, items)

    def _feed(self, chunk: bytes, items: list[T | TailNotice]) -> None:
        parts = chunk.split(b"\n")
        tail = parts.pop()  # the bytes after the chunk's last newline (a line still open)
        first = 0
        if parts and (self._pending_length or self._skipping):
            self._add_piece(parts[0])  # completes the line held back from earlier chunks
            self._position += 1
            self._emit(items)
            first = 1
        # the fast path: whole lines inside this chunk
        number, start, limit, append, make = self._line_number, self._line_start, self.max_line, items.append, self._make_line
        for index in range(first, len(parts)):
            part = parts[index]
            length = len(part)
            number += 1
            if length > limit:
                append(make(number, start, part[:PREVIEW], length, True))
            else:
                append(make(number, start, part, length, False))
            start += length + 1
        if len(parts) > first:
            self._line_number, self._line_start, self._position = number, start, start
        if tail:
            self._add_piece(tail)

    def _add_piece(self, piece: bytes) -> None:
        """Add bytes of a line whose newline has not been read yet (bounded by max_line)."""
        size = len(piece)
        if self._skipping:
            room = PREVIEW - len(self._pending)
            if room > 0:  # keep the preview whole however the line was split into reads
                self._pending += piece[:room]
            self._pending_length += size
        elif self._pending_length + size > self.max_line:
            room = max(0, PREVIEW - len(self._pending))
            self._pending += piece[:room]
            self._pending_length += size
            self._skipping = True
        else:
            self._pending += piece
            self._pending_length += size
        self._position += size

    def _emit(self, items: list[T | TailNotice]) -> None:
        """The held-back line is complete: hand it out."""
        length, too_long = self._pending_length, self._skipping
        raw = bytes(self._pending[:PREVIEW]) if too_long else bytes(self._pending)
        self._pending = bytearray()
        self._pending_length = 0
        self._skipping = False
        self._line_number += 1
        items.append(self._make_line(self._line_number, self._line_start, raw, length, too_long))
        self._line_start = self._position
