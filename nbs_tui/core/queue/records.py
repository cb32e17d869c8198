"""The queue's records: one JSON object a line, forward-only (docs/queue.md).

Every change to the queue is a record appended to the server's queue file; nothing is ever
rewritten, so the file is the queue's whole history and the queue is what its records fold into
(`nbs_tui.core.queue.task_states.QueueState`). Each record has ``v`` (the format, 1), ``kind``, ``at``
(the writer's wall time, for people and ages) and, but for the queue-wide ones, ``task``.

Who writes what: ``added``, ``cancelled``, ``moved``, ``paused``, ``resumed`` by any process (the
CLI, a dashboard, MCP); everything else by the lease holder's feeder only (the one actor).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, ClassVar

FORMAT = 1
"""The ``v`` every record carries; a higher one was written by a newer nbs-tui."""


class RecordError(ValueError):
    """A line that is not a queue record nbs-tui can read; the message says why."""


@dataclass(frozen=True, slots=True)
class TaskAdded:
    """A task joins the queue. Exactly one of ``text`` and ``worker`` is set."""

    KIND: ClassVar[str] = "added"
    task: str
    at: float
    text: str = ""
    """The prompt typed into the agent (or given to a new one)."""
    worker: str = ""
    """An NBS worker's name: the task is ``.nbs/workers/NAME.md`` in ``folder``, started as
    ``nbs-tui new --worker NAME`` starts one."""
    folder: str = ""
    """Absolute; agents whose folder is this or below it may take the task ("" any)."""
    agents: str = ""
    """A glob on window or worker names ("" any)."""
    start: bool = False
    """The feeder may start a new agent in ``folder`` for it (also when the folder has a
    ``max_concurrent`` in the config)."""
    after: str = ""
    """Another task's id: this one waits until that one is done."""
    priority: int = 0
    """Higher goes first; equal ones by age."""


@dataclass(frozen=True, slots=True)
class TaskCancelled:
    KIND: ClassVar[str] = "cancelled"
    task: str
    at: float


@dataclass(frozen=True, slots=True)
class TaskMoved:
    """The operator reordered: the task's ``priority`` and its place among equals (``rank``, in
    place of its age: a rank between two tasks' puts it between them)."""

    KIND: ClassVar[str] = "moved"
    task: str
    at: float
    priority: int = 0
    rank: float = 0.0


@dataclass(frozen=True, slots=True)
class QueuePaused:
    """The feeder hands nothing out until resumed (tasks already out go on)."""

    KIND: ClassVar[str] = "paused"
    at: float


@dataclass(frozen=True, slots=True)
class QueueResumed:
    KIND: ClassVar[str] = "resumed"
    at: float


@dataclass(frozen=True, slots=True)
class TaskHanding:
    """The in-flight mark, written (and synced) *before* the feeder types the task into ``pane``
    or starts an agent for it: a holder killed after this record and before its outcome leaves
    the task ``handing``, and the next holder decides from the pane whether the prompt went in
    (docs/queue.md, "Handing")."""

    KIND: ClassVar[str] = "handing"
    task: str
    at: float
    pane: str = ""
    """The pane typed into; "" when a new agent is being started."""
    window: str = ""
    """The new agent's window name, when starting one (how the next holder finds it)."""
    token: str = ""
    """The lease token of the holder that writes it."""
    mark: str = ""
    """This hand-out's own name (unique): its outcome names it, so an outcome that comes late
    (a holder that lost the lease writing after the next one decided) never settles another."""
    transcript: str = ""
    """The agent's transcript when typing into one (its prompt is looked for there), "" unknown."""
    offset: int = 0
    """The transcript's size then: the prompt, if it went in, is after it."""


@dataclass(frozen=True, slots=True)
class TaskHanded:
    """The prompt reached the agent in ``pane`` (submitted, or given to the new agent)."""

    KIND: ClassVar[str] = "handed"
    task: str
    at: float
    mark: str = ""
    pane: str = ""
    session_id: str = ""
    by: str = ""
    """The lease token of the holder that wrote it (another than the hand-out's: it settled a
    hand-out a killed holder left)."""


@dataclass(frozen=True, slots=True)
class TaskUnhanded:
    """The hand-out did not happen (refused, or the next holder found the prompt never went in):
    the task is queued again, with no attempt spent."""

    KIND: ClassVar[str] = "unhanded"
    task: str
    at: float
    mark: str = ""
    reason: str = ""
    by: str = ""


@dataclass(frozen=True, slots=True)
class TaskNeeds:
    """The task's agent waits on the operator (a permission prompt, question, plan, dialog)."""

    KIND: ClassVar[str] = "needs"
    task: str
    at: float
    why: str = ""


@dataclass(frozen=True, slots=True)
class TaskRunning:
    """The task's agent is back at work after waiting on the operator."""

    KIND: ClassVar[str] = "running"
    task: str
    at: float


@dataclass(frozen=True, slots=True)
class TaskDone:
    """The agent worked on the task and is idle again; ``message`` its last assistant message."""

    KIND: ClassVar[str] = "done"
    task: str
    at: float
    message: str = ""


@dataclass(frozen=True, slots=True)
class TaskFailed:
    """The agent exited, errored or hit its limit. A first failure queues the task again (it is
    handed out once more); a second, or a ``final`` one (its ``after`` task will never be done),
    leaves it failed."""

    KIND: ClassVar[str] = "failed"
    task: str
    at: float
    reason: str = ""
    final: bool = False


Record = (
    TaskAdded
    | TaskCancelled
    | TaskMoved
    | QueuePaused
    | QueueResumed
    | TaskHanding
    | TaskHanded
    | TaskUnhanded
    | TaskNeeds
    | TaskRunning
    | TaskDone
    | TaskFailed
)

RECORD_TYPES: dict[str, type[Record]] = {
    cls.KIND: cls
    for cls in (
        TaskAdded,
        TaskCancelled,
        TaskMoved,
        QueuePaused,
        QueueResumed,
        TaskHanding,
        TaskHanded,
        TaskUnhanded,
        TaskNeeds,
        TaskRunning,
        TaskDone,
        TaskFailed,
    )
}

MAX_LINE = 1 << 20
"""A record line longer than this is not one (a task's text is at most `MAX_TEXT`)."""

MAX_TEXT = 256 * 1024
"""The longest task text (or message kept) nbs-tui accepts."""


def record_to_json(record: Record) -> dict[str, Any]:
    data: dict[str, Any] = {"v": FORMAT, "kind": record.KIND}
    for item in fields(record):
        data[item.name] = getattr(record, item.name)
    return data


def record_line(record: Record) -> bytes:
    """The record as one line of the file, newline included (no newline inside: JSON escapes)."""
    return (
        json.dumps(record_to_json(record), ensure_ascii=False, separators=(",", ":")) + "\n"
    ).encode("utf-8")


class NewerRecordError(RecordError):
    """Written by a newer nbs-tui (a higher ``v`` or a kind this one does not know)."""


def record_from_json(data: object) -> Record:
    """The record a line's JSON holds. Raises `NewerRecordError` for one a newer nbs-tui wrote,
    `RecordError` for anything else that is not a record."""
    if not isinstance(data, dict):
        raise RecordError("not a JSON object")
    version = data.get("v")
    if not isinstance(version, int) or isinstance(version, bool):
        raise RecordError("no format number (v)")
    if version > FORMAT:
        raise NewerRecordError(f"format {version}, this nbs-tui reads {FORMAT}")
    kind = data.get("kind")
    cls = RECORD_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise NewerRecordError(f"unknown kind {kind!r}")
    values: dict[str, Any] = {}
    for item in fields(cls):
        if item.name not in data:
            if item.name in ("task", "at"):
                raise RecordError(f"{kind} record without {item.name}")
            continue  # the default
        values[item.name] = _checked(cls.KIND, item.name, item.type, data[item.name])
    record = cls(**values)
    if isinstance(record, TaskAdded) and bool(record.text) == bool(record.worker):
        raise RecordError("added record needs exactly one of text and worker")
    return record


def _checked(kind: str, name: str, annotation: object, value: object) -> object:
    """``value`` if it has the field's type (ints taken for floats), else RecordError."""
    wanted = str(annotation)
    if wanted == "str" and isinstance(value, str):
        if len(value) > MAX_TEXT:
            raise RecordError(f"{kind}.{name} is longer than {MAX_TEXT} characters")
        return value
    if wanted == "bool" and isinstance(value, bool):
        return value
    if wanted == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if wanted == "float" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise RecordError(f"{kind}.{name} is not a {wanted}: {value!r:.40}")


def parse_line(line: bytes) -> Record:
    """One complete line of the file (without its newline) as a record; RecordError if not one."""
    if len(line) > MAX_LINE:
        raise RecordError(f"a line of {len(line)} bytes")
    try:
        data = json.loads(line.decode("utf-8"))
    except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise RecordError(f"not JSON ({error})") from None
    return record_from_json(data)
