"""Publish an NBS bus event into a project's ``.nbs/events/`` (the format: `nbs_tui.core.control.nbs_events`).

Atomic as NBS's own ``bus_publish``: the event is written whole to a temporary file in the same
folder, synced, then renamed to its ``.event`` name, so a reader never sees half of one. The
temporary name starts with ``.`` and ends in ``.tmp``: NBS lists only names ending in ``.event``.
Like ``bus_publish`` it makes ``processed/`` if missing (NBS's readers move acknowledged events
there); unlike it, nbs-tui never makes ``.nbs/events/`` itself: a project without one gets no
events (`events_dir` says whether it has one).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from nbs_tui.core.control.nbs_events import BusEvent, event_file_name, event_text
from nbs_tui.files.atomic import write_atomic  # the one atomic writer

_names = threading.Lock()


def events_dir(project: str | os.PathLike[str]) -> Path | None:
    """``<project>/.nbs/events`` when it is a folder, else None (no bus there)."""
    path = Path(project) / ".nbs" / "events"
    return path if path.is_dir() else None


def publish(
    folder: str | os.PathLike[str],
    event: BusEvent,
    *,
    clock: Callable[[], float] = time.time,
    pid: int | None = None,
    before_replace: Callable[[str], None] | None = None,
) -> Path:
    """Write ``event`` into the events folder ``folder``; returns the event file's path.

    Raises `nbs_tui.core.control.nbs_events.EventError` for an event NBS could not read, OSError when the
    folder is missing or not writable (nothing is left behind). ``before_replace`` is called with
    the temporary file's name just before the rename (tests look at the folder then)."""
    events = Path(folder)
    if not events.is_dir():
        raise FileNotFoundError(2, "no NBS events folder", str(events))
    now = clock()
    text = event_text(event, now)
    (events / "processed").mkdir(exist_ok=True)
    with _names:  # two events of one process in one microsecond get two names
        stamp = int(now * 1_000_000)
        path = events / event_file_name(event, stamp, os.getpid() if pid is None else pid)
        while path.exists() or (events / "processed" / path.name).exists():
            stamp += 1
            path = events / event_file_name(event, stamp, os.getpid() if pid is None else pid)
        write_atomic(path, text, before_replace=before_replace)
    return path
