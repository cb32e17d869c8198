"""A forward-only reader of the hook spool, one :class:`HookEvent` per complete line.

The reader (:class:`~nbs_tui.files.tail.TailReader`) keeps a byte offset and never re-reads what
it has passed; a last line without its newline is held back until it is complete; a line that
is not JSON is reported (counted and kept as the last error), never fatal. When the spool is
replaced or truncated the reader starts the new file from its beginning.

Rotation (:func:`rotate`) never loses history: a full spool is moved to a name of its own,
``<spool>.<UTC time>`` (``-1``, ``-2``... appended if that exists), never over an earlier one, and
the lines a hook appended between the size check and the move are still read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbs_tui.core.screen.text import loads_json
from nbs_tui.files.tail import UNREADABLE, TailLine, TailNotice, TailReader

MAX_READ = 4 * 1024 * 1024
"""Bytes read per call at most, so one huge backlog cannot stall the caller."""

START_TAIL = 1024 * 1024
"""At start, read only this much of an existing spool's end: older events are stale anyway."""

MAX_LINE = 32 * 1024 * 1024
"""Longest hook record kept (a tool's whole output can be in one); longer ones are bad lines."""

ROTATE_AT = 64 * 1024 * 1024
"""A spool this large is moved to ``<spool>.<UTC time>`` once read to its end (never overwriting)."""


@dataclass(frozen=True, slots=True)
class HookEvent:
    """One hook call as the hook script recorded it. ``fields`` is the hook's stdin JSON."""

    event: str
    """``hook_event_name``: SessionStart, Stop, PermissionRequest, ..."""
    pane_id: str | None
    """``$TMUX_PANE`` of the hook (the agent's pane), or None outside tmux."""
    tmux_socket: str | None
    """The tmux server socket path from ``$TMUX``, to tell servers with the same pane ids apart."""
    session_id: str | None
    time: float
    """When the hook ran (its own clock; falls back to ``received``)."""
    received: float
    """When nbs-tui read the line."""
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def transcript_path(self) -> str | None:
        value = self.fields.get("transcript_path")
        return value if isinstance(value, str) and value else None

    @property
    def cwd(self) -> str | None:
        value = self.fields.get("cwd")
        return value if isinstance(value, str) and value else None

    def text(self, key: str) -> str | None:
        value = self.fields.get(key)
        return value if isinstance(value, str) else None


def parse_line(line: bytes, received: float) -> HookEvent:
    """Decode one spool line (raises ValueError when it is not a record the hook writes)."""
    record = loads_json(line)
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    payload = record.get("payload")
    if not isinstance(payload, dict):
        raise ValueError("no payload object")
    event = payload.get("hook_event_name")
    if not isinstance(event, str) or not event:
        raise ValueError("payload has no hook_event_name")
    pane = record.get("nbs_pane")
    sock = record.get("nbs_tmux")
    stamp = record.get("nbs_time")
    session = payload.get("session_id")
    return HookEvent(
        event=event,
        pane_id=pane if isinstance(pane, str) and pane else None,
        tmux_socket=sock if isinstance(sock, str) and sock else None,
        session_id=session if isinstance(session, str) and session else None,
        time=_instant(stamp, received),
        received=received,
        fields=payload,
    )


def _instant(stamp: object, fallback: float) -> float:
    """The hook's own time when it is one (a positive finite number), else ``fallback``."""
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return fallback
    try:
        value = float(stamp)
    except OverflowError:  # an int beyond any float
        return fallback
    return value if 0 < value < float("inf") else fallback


class SpoolReader:
    """Read new complete lines of one spool file; not thread-safe (one owner calls :meth:`read`).

    The reading (offsets, partial lines, replaced or truncated spools, FIFOs refused) is
    :class:`~nbs_tui.files.tail.TailReader`'s; this class turns lines into events."""

    def __init__(
        self,
        path: Path,
        *,
        from_start: bool = False,
        clock: Callable[[], float] = time.time,
        keep: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.path = path
        self._clock = clock
        self._keep = keep
        """A cheap test of a raw line before its JSON is parsed (a reader after one kind of event)."""
        self._tail: TailReader[TailLine] = TailReader(
            path, TailLine, max_line=MAX_LINE, start_tail=None if from_start else START_TAIL
        )
        self.bad_lines = 0
        self.last_error: str | None = None

    @property
    def offset(self) -> int:
        """Bytes consumed so far (complete lines only)."""
        return self._tail.offset

    def read(self) -> list[HookEvent]:
        """Events from the lines completed since the last call; [] when there is nothing new."""
        return self._events(self._tail.read(MAX_READ))

    def read_moved(self, moved: Path) -> list[HookEvent]:
        """The spool this reader follows was moved to ``moved``: return the lines written to it
        after the last read (a hook may append between the size check and the move), then
        follow the new spool at ``path`` from its beginning."""
        return self._events(self._tail.read_moved(moved))

    def _events(self, items: list[TailLine | TailNotice]) -> list[HookEvent]:
        now = self._clock()
        events: list[HookEvent] = []
        for item in items:
            if isinstance(item, TailNotice):
                if item.kind == UNREADABLE:
                    self.last_error = item.message
                continue  # a new or truncated spool is simply read from its start
            if item.too_long:
                self.bad_lines += 1
                self.last_error = f"bad spool line at byte {item.offset}: longer than {MAX_LINE:,} bytes"
                continue
            if not item.raw.strip() or (self._keep is not None and not self._keep(item.raw)):
                continue
            try:
                events.append(parse_line(item.raw, now))
            except (ValueError, TypeError) as error:
                self.bad_lines += 1
                self.last_error = f"bad spool line at byte {item.offset}: {error}"
        return events


def archive_name(path: Path, now: float) -> Path:
    """``<spool>.<UTC time>`` for a spool moved aside at ``now`` (the caller adds ``-N`` on clashes)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    return path.with_name(f"{path.name}.{stamp}")


def rotate(
    path: Path, reader: SpoolReader, max_bytes: int = ROTATE_AT, *, now: float | None = None
) -> tuple[Path, list[HookEvent]] | None:
    """Move a spool past ``max_bytes`` aside once ``reader`` has read all of it.

    The spool gets a name no earlier rotation holds (``<spool>.<UTC time>``, then ``-1``,
    ``-2``...): it is hard-linked there, which fails rather than replace an existing file, and
    only then unlinked from the spool's name, so a hook appending meanwhile writes into the
    archive, never into nothing. Hooks create a fresh spool on their next append. Returns the
    archive and the events appended after the reader's last read (None: nothing rotated); the
    reader then follows the new spool from its beginning.
    """
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    if size < max_bytes or reader.offset < size:
        return None
    base = archive_name(path, time.time() if now is None else now)
    for n in range(10_000):
        target = base if n == 0 else base.with_name(f"{base.name}-{n}")
        try:
            os.link(path, target)
        except FileExistsError:
            continue
        except OSError as error:
            reader.last_error = f"cannot rotate {path}: {error.strerror}"
            return None
        break
    else:
        reader.last_error = f"cannot rotate {path}: no free archive name"
        return None
    try:
        os.unlink(path)
    except OSError as error:
        reader.last_error = f"cannot rotate {path}: {error.strerror}"
        return None
    return target, reader.read_moved(target)
