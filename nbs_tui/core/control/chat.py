"""nbs-chat files, pure: decode, cursors and unread counts, render, append (no file I/O here).

Format (from NBS's chat_file.c): a six-line header ::

    === nbs-chat ===
    last-writer: <handle>
    last-write: %Y-%m-%dT%H:%M:%S%z
    file-length: <bytes of the whole file, this line included>
    participants: a(N), b(M)
    ---

then one base64 message per line. Decoded, a message is ``handle|EPOCH: text`` (current),
``handle|EPOCH|SIG: text`` (older; the signature is ignored) or ``handle: text`` (oldest;
time 0). Writers hold an fcntl record lock on ``<chat>.lock``, write ``<chat>.tmp``, check its
size against ``file-length`` and rename it over the chat; readers that see a length mismatch
retry. Cursors (``<chat>.cursors``: ``handle=N``, the index of the last message delivered) are
only ever read: a dashboard must never move a reader's cursor.

Reading, locking and writing the files is :mod:`nbs_tui.files.chat_io`; this module only turns
bytes into values and values into bytes, so it stays pure.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import time
import zlib
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

MAGIC = "=== nbs-chat ==="
MAX_CHAT_BYTES = 256 * 1024 * 1024
"""Largest chat read whole; NBS archives long before (2,000 messages)."""
ARCHIVE_SUFFIX = "-archive.chat"
_HANDLE = re.compile(r"^[A-Za-z0-9_.@+-]{1,63}$")


class ChatError(Exception):
    """A chat could not be created or written; the message says why, for a person."""


@dataclass(frozen=True, slots=True)
class ChatMessage:
    index: int
    """0-based position among the decodable messages (the index cursors count)."""
    handle: str
    timestamp: int
    """Unix seconds; 0 for the oldest form, which has no time."""
    text: str
    form: str
    """``current`` (handle|EPOCH), ``signed`` (handle|EPOCH|SIG) or ``legacy`` (handle)."""

    @property
    def mentions(self) -> tuple[str, ...]:
        return tuple(re.findall(r"@([A-Za-z0-9_.-]+)[!?]?", self.text))


@dataclass(frozen=True, slots=True)
class ChatFile:
    path: str
    last_writer: str = ""
    last_write: str = ""
    file_length: int | None = None
    participants: tuple[tuple[str, int], ...] = ()
    messages: tuple[ChatMessage, ...] = ()
    undecodable: int = 0
    """Lines after the header that were not a valid message (skipped, as NBS does)."""
    size: int = 0
    consistent: bool = True
    """False when the size never matched ``file-length`` within the retries (a writer broke
    the protocol, or the file was edited by hand)."""
    valid_header: bool = True

    @property
    def archive(self) -> bool:
        return is_archive(self.path)

    @property
    def newest(self) -> ChatMessage | None:
        return self.messages[-1] if self.messages else None


@dataclass(frozen=True, slots=True)
class ReaderState:
    handle: str
    cursor: int
    unread: int


@dataclass(frozen=True, slots=True)
class ChatSummary:
    """What a dashboard shows for one chat: counts, readers, the newest message."""

    path: str
    exists: bool
    archive: bool
    total: int = 0
    readers: tuple[ReaderState, ...] = ()
    newest: ChatMessage | None = None
    consistent: bool = True
    error: str = ""
    archives: tuple[str, ...] = field(default=())

    def age(self, now: float | None = None) -> float | None:
        """Seconds since the newest message, or None when it has no time."""
        if self.newest is None or self.newest.timestamp <= 0:
            return None
        return max(0.0, (time.time() if now is None else now) - self.newest.timestamp)


def is_archive(path: str | os.PathLike[str]) -> bool:
    return os.fspath(path).endswith(ARCHIVE_SUFFIX)


def decode_message(line: str, index: int) -> ChatMessage | None:
    """One base64 line to a message, or None when it is not one (NBS skips those)."""
    try:
        raw = base64.b64decode(line.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None
    text = raw.decode("utf-8", errors="replace")
    colon = text.find(": ")
    if colon <= 0:
        return None
    prefix, body = text[:colon], text[colon + 2 :]
    if "|" in prefix:
        handle, _, rest = prefix.partition("|")
        parts = rest.split("|")
        form = "signed" if len(parts) > 1 else "current"
        try:
            stamp = int(parts[0])
        except ValueError:
            stamp = 0
        timestamp = stamp if stamp > 0 else 0
    else:
        handle, timestamp, form = prefix, 0, "legacy"
    if not handle:
        return None
    return ChatMessage(index, handle, timestamp, body, form)


def encode_message(handle: str, text: str, epoch: int) -> str:
    return base64.b64encode(f"{handle}|{epoch}: {text}".encode()).decode("ascii")


def _parse_participants(text: str) -> tuple[tuple[str, int], ...]:
    result = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        match = re.match(r"^(.*?)\((\d+)\)$", item)
        if match:
            result.append((match.group(1), int(match.group(2))))
        else:
            result.append((item, 0))
    return tuple(result)


def parse_chat(path: str, data: bytes) -> ChatFile:
    """Decode a chat file's bytes (no retries; see :func:`read_chat`)."""
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    header: dict[str, str] = {}
    in_header = False
    body_start: int | None = None
    for number, line in enumerate(lines):
        line = line.rstrip("\r")
        if not in_header and line == MAGIC:
            in_header = True
            continue
        if in_header:
            if line == "---":
                body_start = number + 1
                break
            key, sep, value = line.partition(": ")
            if sep:
                header[key] = value
            elif line.endswith(":"):
                header[line[:-1]] = ""
    messages: list[ChatMessage] = []
    bad = 0
    if body_start is not None:
        for line in lines[body_start:]:
            line = line.strip()
            if not line:
                continue
            message = decode_message(line, len(messages))
            if message is None:
                bad += 1
            else:
                messages.append(message)
    length: int | None
    try:
        length = int(header["file-length"])
    except (KeyError, ValueError):
        length = None
    return ChatFile(
        path=path,
        last_writer=header.get("last-writer", ""),
        last_write=header.get("last-write", ""),
        file_length=length,
        participants=_parse_participants(header.get("participants", "")),
        messages=tuple(messages),
        undecodable=bad,
        size=len(data),
        consistent=length is None or length == len(data),
        valid_header=body_start is not None,
    )


def parse_cursors(text: str) -> dict[str, int]:
    """A ``<chat>.cursors`` file's text as handle -> index of the last delivered message."""
    cursors: dict[str, int] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key:
            continue
        try:
            cursors[key] = int(value.strip())
        except ValueError:
            continue
    return cursors


def unread_count(total: int, cursor: int | None) -> int:
    """NBS's rule: unread = total - cursor - 1 (no cursor: everything is unread)."""
    position = -1 if cursor is None else cursor
    return max(0, total - position - 1)


def summary_of(chat: ChatFile, cursors: Mapping[str, int], archives: tuple[str, ...] = ()) -> ChatSummary:
    """What a dashboard shows about a chat that was read: counts, readers, newest, problems."""
    return _summary(
        chat.path, len(chat.messages), chat.newest, chat.valid_header, chat.file_length, chat.size, cursors, archives
    )


def _summary(
    path: str,
    total: int,
    newest: ChatMessage | None,
    valid_header: bool,
    file_length: int | None,
    size: int,
    cursors: Mapping[str, int],
    archives: tuple[str, ...],
) -> ChatSummary:
    consistent = file_length is None or file_length == size
    readers = tuple(ReaderState(handle, cursor, unread_count(total, cursor)) for handle, cursor in cursors.items())
    problem = "" if valid_header else "not an nbs-chat file"
    if not consistent and not problem:
        problem = f"file-length {file_length} but {size} bytes"
    archive = is_archive(path)
    return ChatSummary(
        path,
        exists=True,
        archive=archive,
        total=total,
        readers=readers,
        newest=newest,
        consistent=consistent,
        error=problem,
        archives=() if archive else archives,
    )


def header_of(data: bytes) -> tuple[dict[str, str], int | None]:
    """A chat's header fields and the byte offset where its body starts (None: no header),
    read line by line exactly as :func:`parse_chat` reads them."""
    header: dict[str, str] = {}
    in_header = False
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        stop = len(data) if end < 0 else end
        line = data[start:stop].decode("utf-8", errors="replace").rstrip("\r")
        start = stop + 1
        if not in_header:
            in_header = line == MAGIC
            continue
        if line == "---":
            return header, min(start, len(data))
        key, sep, value = line.partition(": ")
        if sep:
            header[key] = value
        elif line.endswith(":"):
            header[line[:-1]] = ""
    return header, None


@dataclass(frozen=True, slots=True)
class ChatTail:
    """The newest messages of a chat (at most the ``keep`` asked for, with their true indices)
    and everything :func:`parse_chat` reports about the whole file, as :func:`tail_chat`
    decodes it. ``counted``/``crc`` remember the whole lines read, so the next read decodes only
    what was appended: NBS writers replace the whole file, but its body only ever grows at the
    end (until an archive split or a hand edit), and when the body still starts with the bytes
    read last time (same length, same CRC) only the lines after them are decoded."""

    path: str
    last_writer: str = ""
    last_write: str = ""
    file_length: int | None = None
    participants: tuple[tuple[str, int], ...] = ()
    messages: tuple[ChatMessage, ...] = ()
    total: int = 0
    """Decodable messages in the whole chat (``len(parse_chat(...).messages)``)."""
    undecodable: int = 0
    size: int = 0
    consistent: bool = True
    valid_header: bool = True
    counted: int = -1
    """Bytes of the body read, up to just after its last newline (-1: nothing to go on)."""
    crc: int = 0
    unfinished: bool = False
    """A line after the last newline was counted (a writer not done yet): read afresh next time."""

    @property
    def archive(self) -> bool:
        return is_archive(self.path)

    @property
    def newest(self) -> ChatMessage | None:
        return self.messages[-1] if self.messages else None


def tail_of(chat: ChatFile, keep: int) -> ChatTail:
    """A chat decoded whole, cut to its newest ``keep`` messages (nothing to continue from)."""
    return ChatTail(
        chat.path, chat.last_writer, chat.last_write, chat.file_length, chat.participants,
        chat.messages[max(0, len(chat.messages) - keep) :], len(chat.messages), chat.undecodable,
        chat.size, chat.consistent, chat.valid_header,
    )


def summary_of_tail(tail: ChatTail, cursors: Mapping[str, int], archives: tuple[str, ...] = ()) -> ChatSummary:
    """`summary_of` for a chat read with :func:`tail_chat` (``keep=1`` is enough: a summary
    shows only the newest message, and counting on from the last read decodes only new lines)."""
    return _summary(tail.path, tail.total, tail.newest, tail.valid_header, tail.file_length, tail.size, cursors, archives)


def _is_message(line: str) -> bool:
    """Whether :func:`decode_message` would decode this stripped line (without building it)."""
    try:
        raw = base64.b64decode(line, validate=True)
    except (binascii.Error, ValueError):
        return False
    # ASCII ": " and "|" survive the UTF-8 decode unchanged, so bytes tell what the text would
    return raw.find(b": ") > 0 and not raw.startswith(b"|")


def _scan(text: str, first: int, keep: int) -> tuple[list[ChatMessage], int, int]:
    """The newest ``keep`` messages of these lines (indices from ``first``), how many
    messages there are and how many lines were undecodable; only the kept ones are built."""
    shown: deque[str] = deque(maxlen=max(keep, 0))
    total = bad = 0
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        if _is_message(line):
            total += 1
            if keep > 0:
                shown.append(line)
        else:
            bad += 1
    start = first + total - len(shown)
    messages = [decode_message(line, start + i) for i, line in enumerate(shown)]
    return [m for m in messages if m is not None], total, bad


def tail_chat(path: str, data: bytes, keep: int, before: ChatTail | None = None) -> tuple[ChatTail, int | None]:
    """The newest ``keep`` messages of ``parse_chat(path, data)`` and all it reports (total,
    undecodable lines, header, consistency), and how many messages were appended since
    ``before``: then only those were decoded. None when it was decoded afresh (another chat, an
    archive split, an edit, an unfinished line before)."""
    header, body_start = header_of(data)
    try:
        file_length: int | None = int(header["file-length"])
    except (KeyError, ValueError):
        file_length = None
    base = ChatTail(
        path, header.get("last-writer", ""), header.get("last-write", ""), file_length,
        _parse_participants(header.get("participants", "")), size=len(data),
        consistent=file_length is None or file_length == len(data),
    )
    if body_start is None:
        return replace(base, valid_header=False), None
    body = memoryview(data)[body_start:]
    newline = data.rfind(b"\n", body_start)
    cut = newline + 1 - body_start if newline >= 0 else 0
    kept: list[ChatMessage] = []
    total = bad = counted = crc = 0
    grew: int | None = None
    if (
        before is not None
        and before.path == path
        and not before.unfinished
        and 0 <= before.counted <= cut
        and zlib.crc32(body[: before.counted]) == before.crc
    ):
        kept, total, bad, counted, crc = list(before.messages), before.total, before.undecodable, before.counted, before.crc
        grew = 0
    fresh = body[counted:cut]
    new, count, wrong = _scan(bytes(fresh).decode("utf-8", errors="replace"), total, keep)
    crc = zlib.crc32(fresh, crc)
    rest, more, worse = _scan(bytes(body[cut:]).decode("utf-8", errors="replace"), total + count, keep)
    messages = kept + new + rest
    tail = replace(
        base,
        messages=tuple(messages[max(0, len(messages) - keep) :]),
        total=total + count + more,
        undecodable=bad + wrong + worse,
        counted=cut,
        crc=crc,
        unfinished=bool(more or worse),
    )
    return tail, None if grew is None else count + more


def archive_pattern(chat_name: str) -> re.Pattern[str]:
    """File names of archives split off the chat named ``chat_name``:
    ``<base>-YYYYMMDD-HHMMSS-archive.chat``."""
    base = chat_name[: -len(".chat")] if chat_name.endswith(".chat") else chat_name
    return re.compile(re.escape(base) + r"-\d{8}-\d{6}" + re.escape(ARCHIVE_SUFFIX) + "$")


# -- writing --------------------------------------------------------------------------------

def _timestamp(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(now))


def _with_file_length(before: str, after: str) -> str:
    """Insert ``file-length: N`` between two header parts so that N is the total size."""
    base = len(before.encode(errors="surrogateescape")) + len(after.encode(errors="surrogateescape"))
    candidate = base + 14 + len(str(base))
    if len(str(candidate)) != len(str(base)):
        candidate = base + 14 + len(str(candidate))
    return f"{before}file-length: {candidate}\n{after}"


def _render(last_writer: str, last_write: str, counts: dict[str, int], body_lines: list[str]) -> bytes:
    participants = ", ".join(f"{name}({count})" for name, count in counts.items())
    before = f"{MAGIC}\nlast-writer: {last_writer}\nlast-write: {last_write}\n"
    after = f"participants: {participants}\n---\n" + "".join(line + "\n" for line in body_lines)
    return _with_file_length(before, after).encode(errors="surrogateescape")


def render_chat(messages: Iterable[tuple[str, int, str]], last_writer: str, now: float) -> bytes:
    """A whole chat holding ``messages`` (handle, epoch, text), to seed a chat in one write.

    The bytes are what creating the chat and posting each message would leave, except that
    ``last-writer`` and ``last-write`` are given (a seeded history is older than its file).
    """
    counts: dict[str, int] = {}
    body = []
    for handle, epoch, text in messages:
        counts[handle] = counts.get(handle, 0) + 1
        body.append(encode_message(handle, text, epoch))
    return _render(last_writer, _timestamp(now), counts, body)


def validate_handle(handle: str) -> None:
    if not _HANDLE.match(handle):
        raise ChatError(f"bad handle {handle!r}: use letters, digits and . _ - @ + (at most 63)")


def empty_chat(now: float) -> bytes:
    """A new chat's bytes, exactly as ``nbs-chat create`` writes them."""
    return _render("system", _timestamp(now), {}, [])


def append_message(path: str, data: bytes, handle: str, text: str, now: float) -> tuple[bytes, ChatMessage]:
    """The chat ``data`` with one message from ``handle`` appended (header updated as NBS does),
    and the message as written. Raises ChatError for a bad handle, an empty message, or bytes
    that are not an nbs-chat file."""
    validate_handle(handle)
    if not text.strip():
        raise ChatError("empty message")
    current = parse_chat(path, data)
    if not current.valid_header:
        raise ChatError(f"{path} is not an nbs-chat file; not writing to it")
    body = _body_lines(data)
    epoch = int(now)
    body.append(encode_message(handle, text, epoch))
    counts = dict(current.participants)
    counts[handle] = counts.get(handle, 0) + 1
    message = ChatMessage(len(current.messages), handle, epoch, text, "current")
    return _render(handle, _timestamp(now), counts, body), message


def _body_lines(data: bytes) -> list[str]:
    """The raw message lines after the header, kept byte for byte (even undecodable ones)."""
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    try:
        start = lines.index("---", lines.index(MAGIC)) + 1
    except ValueError:
        return []
    return [line for line in lines[start:] if line.strip()]
