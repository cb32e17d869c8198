"""NBS bus events (``.nbs/events/``) in NBS's own format, for ``worker-spawned`` and ``worker-died``.

As NBS's ``bus_publish`` (src/nbs-bus/bus.c) writes them: the file
``<unix µs>-<source>-<type>-<pid>.event``, and in it::

    source: parser-a3f1
    type: worker-spawned
    priority: normal
    timestamp: 2026-11-29T00:12:03Z
    dedup-key: parser-a3f1:worker-spawned
    payload: |
      Task file: .nbs/workers/parser-a3f1.md

NBS's readers take each field from the first line that starts with ``source: ``, ``type: ``,
``priority: `` or ``dedup-key: `` (lines of up to 511 bytes), so the fields come first and the
payload is a YAML literal block indented by two spaces, left out when empty. As ``nbs-worker``
does, the source is the worker's name, ``worker-spawned`` is ``normal`` and ``worker-died``
``high``. Source and type hold no whitespace and no ``/`` (they are part of a file name).
Pure: `nbs_tui.files.nbs_bus` writes the file.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

PRIORITIES = ("critical", "high", "normal", "low")
MAX_PAYLOAD = 16 * 1024
"""``BUS_MAX_PAYLOAD``: NBS's bus API takes no more."""
MAX_HANDLE = 128
_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class EventError(ValueError):
    """An event NBS could not read; the message says which field."""


@dataclass(frozen=True, slots=True)
class BusEvent:
    source: str
    type: str
    priority: str = "normal"
    payload: str = ""


def check_event(event: BusEvent) -> None:
    """Raise `EventError` unless NBS's readers take ``event`` as it is."""
    for what, value in (("source", event.source), ("type", event.type)):
        if not _WORD.match(value) or len(value) > MAX_HANDLE:
            raise EventError(f"bus event {what} {value!r} must be 1-{MAX_HANDLE} letters, digits, '.', '-' or '_'")
    if event.priority not in PRIORITIES:
        raise EventError(f"bus event priority {event.priority!r} is not one of {', '.join(PRIORITIES)}")
    if len(event.payload.encode("utf-8")) > MAX_PAYLOAD:
        raise EventError(f"bus event payload is larger than {MAX_PAYLOAD} bytes")


def event_file_name(event: BusEvent, time_us: int, pid: int) -> str:
    return f"{time_us}-{event.source}-{event.type}-{pid}.event"


def event_text(event: BusEvent, when: float) -> str:
    """The file's content; ``when`` is the publication time (seconds since the epoch)."""
    check_event(event)
    lines = [
        f"source: {event.source}",
        f"type: {event.type}",
        f"priority: {event.priority}",
        f"timestamp: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(when))}",
        f"dedup-key: {event.source}:{event.type}",
    ]
    payload = _CONTROL.sub(" ", event.payload.replace("\r\n", "\n")).strip("\n")
    if payload:
        lines.append("payload: |")
        lines.extend(f"  {line}".rstrip() for line in payload.split("\n"))
    return "\n".join(lines) + "\n"


def worker_spawned(worker: str, *, target: str, pane_id: str, session_id: str | None = None) -> BusEvent:
    """A worker's agent is up (its prompt, the task file, was submitted)."""
    lines = [
        f"Worker {worker} started by nbs-tui in tmux pane {pane_id} ({target})",
        f"Task file: .nbs/workers/{worker}.md",
    ]
    if session_id:
        lines.append(f"Claude Code session: {session_id}")
    return BusEvent(worker, "worker-spawned", "normal", "\n".join(lines))


def worker_died(worker: str, *, target: str, pane_id: str, why: str) -> BusEvent:
    """A worker's agent ended: its Claude Code process exited or its pane closed."""
    return BusEvent(worker, "worker-died", "high", f"Worker {worker} in tmux pane {pane_id} ({target}): {why}")
