"""Forward-only reading of an append-only control inbox.

The reader keeps a byte offset and returns only complete lines written since the last call.
It never writes, truncates or locks the file, so agents appending to it are never disturbed.

- A last line without its newline is held back until the newline arrives (an agent may be
  halfway through writing it).
- A line longer than ``max_line`` bytes (say a 10 MB run of junk) is not kept: the reader
  remembers its first bytes and its length and reports it as one over-long line, so memory
  stays bounded however large the line is.
- If the file is replaced (another inode at the path) the new file is read from its start; if
  it is deleted the reader waits for it to come back; if it shrinks (someone truncated a
  forward-only file) the reader starts again at the beginning. Each is reported as a notice.
"""

from __future__ import annotations

import os

from nbs_tui.core.inbox import DEFAULT_MAX_LINE, InboxItem, InboxLine, InboxNotice
from nbs_tui.files.registry_io import open_regular

CHUNK = 1 << 20
_PREVIEW = 120


class ForwardReader:
    """Reads new complete lines of one file, forward only. Not thread-safe; one owner."""

    def __init__(self, path: str | os.PathLike[str], max_line: int = DEFAULT_MAX_LINE) -> None:
        self.path = os.fspath(path)
        self.max_line = max_line
        self._restart(None)
        self._missing_reported = False
        self._unreadable_reported = False

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

    def read_new(self, limit: int | None = None) -> list[InboxItem]:
        """Every complete line appended since the last call (at most about ``limit`` bytes
        of file are read when given, so a huge backlog can be taken in slices)."""
        items: list[InboxItem] = []
        try:
            handle = open_regular(self.path)
        except FileNotFoundError:
            if self._identity is not None and not self._missing_reported:
                items.append(InboxNotice(f"{self.path} was deleted; waiting for it to come back"))
                self._missing_reported = True
            return items
        except OSError as error:
            if not self._unreadable_reported:
                items.append(InboxNotice(f"cannot read {self.path}: {error.strerror or error}"))
                self._unreadable_reported = True
            return items
        with handle:
            info = os.fstat(handle.fileno())
            identity = (info.st_dev, info.st_ino)
            if self._identity is None:
                self._restart(identity)
            elif self._missing_reported:
                # it was gone and is back: a new file, even if the inode is reused
                items.append(InboxNotice(f"{self.path} is back; reading it from the start"))
                self._restart(identity)
            elif identity != self._identity:
                items.append(InboxNotice(f"{self.path} was replaced by a new file; reading it from the start"))
                self._restart(identity)
            elif info.st_size < self._position:
                items.append(
                    InboxNotice(
                        f"{self.path} shrank from {self._position} to {info.st_size} bytes "
                        "(it should only grow); reading it again from the start"
                    )
                )
                self._restart(identity)
            self._missing_reported = False
            self._unreadable_reported = False
            if info.st_size == self._position:
                return items
            handle.seek(self._position)
            budget = limit if limit is not None else -1
            while budget != 0:
                chunk = handle.read(CHUNK if budget < 0 else min(CHUNK, budget))
                if not chunk:
                    break
                if budget > 0:
                    budget = max(0, budget - len(chunk))
                self._feed(chunk, items)
        return items

    def _feed(self, chunk: bytes, items: list[InboxItem]) -> None:
        parts = chunk.split(b"\n")
        tail = parts.pop()  # the bytes after the chunk's last newline (a line still open)
        first = 0
        if parts and (self._pending_length or self._skipping):
            self._add_piece(parts[0])  # completes the line held back from earlier chunks
            self._position += 1
            self._emit(items)
            first = 1
        # the fast path: whole lines inside this chunk
        number, start, limit, append = self._line_number, self._line_start, self.max_line, items.append
        for index in range(first, len(parts)):
            part = parts[index]
            length = len(part)
            number += 1
            too_long = length > limit
            raw = part[:_PREVIEW] if too_long else part
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            try:
                text = raw.decode("utf-8")
                valid = True
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                valid = too_long  # a cut preview may end mid-character; judge only whole lines
            append(InboxLine(number, start, text, valid, length, too_long))
            start += length + 1
        if len(parts) > first:
            self._line_number, self._line_start, self._position = number, start, start
        if tail:
            self._add_piece(tail)

    def _add_piece(self, piece: bytes) -> None:
        """Add bytes of a line whose newline has not been read yet (bounded by max_line)."""
        size = len(piece)
        if self._skipping:
            self._pending_length += size
        elif self._pending_length + size > self.max_line:
            room = max(0, _PREVIEW - len(self._pending))
            self._pending += piece[:room]
            self._pending_length += size
            self._skipping = True
        else:
            self._pending += piece
            self._pending_length += size
        self._position += size

    def _emit(self, items: list[InboxItem]) -> None:
        raw = bytes(self._pending)
        length, too_long = self._pending_length, self._skipping
        self._pending = bytearray()
        self._pending_length = 0
        self._skipping = False
        self._emit_raw(raw, length, too_long, items)

    def _emit_raw(self, raw: bytes, length: int, too_long: bool, items: list[InboxItem]) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        self._line_number += 1
        try:
            text = raw.decode("utf-8")
            valid = True
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            valid = too_long  # a cut preview may end mid-character; judge only whole lines
        items.append(
            InboxLine(
                number=self._line_number,
                offset=self._line_start,
                text=text,
                valid_utf8=valid,
                length=length,
                too_long=too_long,
            )
        )
        self._line_start = self._position
