"""Write and read NBS chat files (``.nbs/chat/<name>.chat``) the way the NBS tools do.

The demo agents post to their project's chats so the dashboard's chat panel has something
real to show. The format (see /work/shared/notes/nbs-files.md and the NBS ``chat_file.c``):
a six-line header whose ``file-length`` counts the bytes of the whole file including its own
line, then one base64 line per message that decodes to ``handle|EPOCH: text``. Writers hold
an ``fcntl`` record lock on ``<chat>.lock`` and replace the chat by renaming a temp file, so
a reader never sees a half-written chat. Standard library only: the agent imports this.
"""

from __future__ import annotations

import base64
import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path

HEADER_MARK = "=== nbs-chat ==="


@dataclass(frozen=True, slots=True)
class ChatMessage:
    handle: str
    epoch: int
    text: str


@dataclass(frozen=True, slots=True)
class ChatFile:
    last_writer: str
    last_write: str
    file_length: int
    participants: tuple[tuple[str, int], ...]
    messages: tuple[ChatMessage, ...]


def _timestamp(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now))


def _with_file_length(head: str, rest: str) -> str:
    """Insert the self-counting ``file-length`` line between ``head`` and ``rest``."""
    base = len(head.encode()) + len(rest.encode())
    length = base + len("file-length: \n") + len(str(base))
    while len(f"file-length: {length}\n") + base != length:
        length = base + len(f"file-length: {length}\n")
    return f"{head}file-length: {length}\n{rest}"


def render_chat(
    messages: list[ChatMessage], last_writer: str, now: float, participants: list[tuple[str, int]] | None = None
) -> str:
    """The full text of a chat file holding ``messages``."""
    if participants is None:
        counts: dict[str, int] = {}
        for message in messages:
            counts[message.handle] = counts.get(message.handle, 0) + 1
        participants = list(counts.items())
    head = f"{HEADER_MARK}\nlast-writer: {last_writer}\nlast-write: {_timestamp(now)}\n"
    parts = ", ".join(f"{handle}({count})" for handle, count in participants)
    body = "".join(
        base64.b64encode(f"{m.handle}|{m.epoch}: {m.text}".encode()).decode("ascii") + "\n" for m in messages
    )
    return _with_file_length(head, f"participants: {parts}\n---\n{body}")


def decode_message(line: str) -> ChatMessage | None:
    """One message line in any of the three NBS generations, or None if it is not one."""
    try:
        raw = base64.b64decode(line.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    head, sep, text = raw.partition(": ")
    if not sep:
        return None
    handle, _, rest = head.partition("|")
    epoch_text = rest.partition("|")[0]
    epoch = int(epoch_text) if epoch_text.isdigit() else 0
    return ChatMessage(handle, epoch, text)


def parse_chat(text: str) -> ChatFile:
    """Parse a chat file's text; raises ValueError if it is not one."""
    lines = text.split("\n")
    if not lines or lines[0] != HEADER_MARK:
        raise ValueError("not an nbs-chat file: missing '=== nbs-chat ===' header")
    fields: dict[str, str] = {}
    index = 1
    while index < len(lines) and lines[index] != "---":
        key, _, value = lines[index].partition(": ")
        fields[key] = value
        index += 1
    if index >= len(lines):
        raise ValueError("not an nbs-chat file: no '---' after the header")
    participants: list[tuple[str, int]] = []
    for item in filter(None, (p.strip() for p in fields.get("participants", "").split(","))):
        name, _, count = item.partition("(")
        participants.append((name, int(count.rstrip(")") or 0)))
    messages = []
    for line in lines[index + 1 :]:
        if line.strip():
            message = decode_message(line)
            if message is None:
                raise ValueError(f"undecodable chat line: {line[:40]!r}")
            messages.append(message)
    return ChatFile(
        last_writer=fields.get("last-writer", ""),
        last_write=fields.get("last-write", ""),
        file_length=int(fields.get("file-length", "-1")),
        participants=tuple(participants),
        messages=tuple(messages),
    )


class _ChatLock:
    """The NBS writer lock: a blocking fcntl record lock on ``<chat>.lock`` (never flock)."""

    def __init__(self, chat: Path) -> None:
        self._path = chat.with_name(chat.name + ".lock")
        self._fd = -1

    def __enter__(self) -> _ChatLock:
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.lockf(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.lockf(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


def _replace(chat: Path, text: str) -> None:
    tmp = chat.with_name(chat.name + ".tmp")
    data = text.encode()
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if tmp.stat().st_size != len(data):
        raise OSError(f"short write to {tmp}")
    os.replace(tmp, chat)


def create_chat(chat: Path, now: float | None = None) -> None:
    """Create an empty chat (as ``nbs-chat create``) unless it exists."""
    chat.parent.mkdir(parents=True, exist_ok=True)
    with _ChatLock(chat):
        if not chat.exists():
            _replace(chat, render_chat([], "system", time.time() if now is None else now))


def post_message(chat: Path, handle: str, text: str, now: float | None = None) -> None:
    """Append one message under the writer lock; creates the chat if needed."""
    stamp = time.time() if now is None else now
    chat.parent.mkdir(parents=True, exist_ok=True)
    with _ChatLock(chat):
        if chat.exists():
            current = parse_chat(chat.read_text(encoding="utf-8"))
            messages = list(current.messages)
            counts = dict(current.participants)
        else:
            messages, counts = [], {}
        messages.append(ChatMessage(handle, int(stamp), text))
        counts[handle] = counts.get(handle, 0) + 1
        _replace(chat, render_chat(messages, handle, stamp, list(counts.items())))
