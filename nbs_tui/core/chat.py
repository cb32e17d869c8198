"""nbs-chat files: read and decode, cursors and unread counts, create, post under NBS's lock.

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
only ever read here: a dashboard must never move a reader's cursor.

Plain file IO only: this is core and stays pure.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import fcntl
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from nbs_tui.core.registry import open_regular

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


def archives_of(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Archive files split off this chat: ``<base>-YYYYMMDD-HHMMSS-archive.chat``, oldest first."""
    chat = Path(path)
    base = chat.name[: -len(".chat")] if chat.name.endswith(".chat") else chat.name
    pattern = re.compile(re.escape(base) + r"-\d{8}-\d{6}" + re.escape(ARCHIVE_SUFFIX) + "$")
    try:
        names = os.listdir(chat.parent)
    except OSError:
        return ()
    return tuple(str(chat.parent / name) for name in sorted(names) if pattern.match(name))


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


def read_chat(
    path: str | os.PathLike[str],
    retries: int = 20,
    delay: float = 0.01,
    sleep: Callable[[float], None] = time.sleep,
) -> ChatFile:
    """Read a chat as NBS readers do: retry while the size disagrees with ``file-length``.

    Each attempt opens the path anew and reads it whole from one descriptor, so a writer's
    rename-replace in between is harmless (the open file stays the old, complete one).
    Raises OSError when the file cannot be read at all.
    """
    target = os.fspath(path)
    chat = ChatFile(target)
    for attempt in range(retries + 1):
        try:
            with open_regular(target) as handle:
                data = handle.read(MAX_CHAT_BYTES + 1)
            if len(data) > MAX_CHAT_BYTES:
                raise OSError(errno.EFBIG, f"larger than {MAX_CHAT_BYTES >> 20} MiB", target)
        except FileNotFoundError:
            if attempt >= 2:
                raise
            sleep(delay)
            continue
        chat = parse_chat(target, data)
        if chat.consistent:
            return chat
        sleep(delay)
    return chat


def read_cursors(path: str | os.PathLike[str]) -> dict[str, int]:
    """``<chat>.cursors`` as handle -> index of the last delivered message (read only)."""
    cursors: dict[str, int] = {}
    try:
        with open_regular(os.fspath(path) + ".cursors") as handle:
            text = handle.read(1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return cursors
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


def summarise(path: str | os.PathLike[str]) -> ChatSummary:
    """Everything a dashboard shows about one chat; never raises."""
    target = os.fspath(path)
    archive = is_archive(target)
    if "\x00" in target:
        return ChatSummary(target, exists=False, archive=archive, error="path contains a NUL byte")
    if not os.path.exists(target):
        return ChatSummary(target, exists=False, archive=archive, error="missing")
    try:
        chat = read_chat(target, retries=5)
    except OSError as error:
        return ChatSummary(target, exists=True, archive=archive, error=error.strerror or str(error))
    total = len(chat.messages)
    readers = tuple(
        ReaderState(handle, cursor, unread_count(total, cursor)) for handle, cursor in read_cursors(target).items()
    )
    problem = "" if chat.valid_header else "not an nbs-chat file"
    if not chat.consistent and not problem:
        problem = f"file-length {chat.file_length} but {chat.size} bytes"
    return ChatSummary(
        target,
        exists=True,
        archive=archive,
        total=total,
        readers=readers,
        newest=chat.newest,
        consistent=chat.consistent,
        error=problem,
        archives=() if archive else archives_of(target),
    )


def is_chat_file(path: str | os.PathLike[str]) -> bool:
    try:
        with open_regular(path) as handle:
            return handle.read(len(MAGIC) + 1).rstrip(b"\r\n") == MAGIC.encode()
    except OSError:
        return False


# -- writing --------------------------------------------------------------------------------

_process_locks: dict[str, threading.Lock] = {}
_process_locks_guard = threading.Lock()


def _thread_lock(path: str) -> threading.Lock:
    # fcntl record locks are per process: threads of one process need their own lock too.
    with _process_locks_guard:
        return _process_locks.setdefault(os.path.abspath(path), threading.Lock())


@contextlib.contextmanager
def chat_lock(path: str | os.PathLike[str], timeout: float = 10.0, poll: float = 0.02) -> Iterator[None]:
    """Hold NBS's write lock on a chat: an fcntl write lock on ``<chat>.lock`` (mode 0600).

    NBS blocks forever (F_SETLKW); a dashboard must not, so this polls for ``timeout`` seconds
    and raises ChatError if another writer still holds the lock.
    """
    target = os.fspath(path)
    inner = _thread_lock(target)
    if not inner.acquire(timeout=timeout):
        raise ChatError(f"timed out waiting for another nbs-tui writer of {target}")
    try:
        try:
            fd = os.open(target + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise ChatError(f"cannot open {target}.lock: {error.strerror}") from None
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() >= deadline:
                        raise ChatError(
                            f"{target} is locked by another writer for more than {timeout:g}s"
                        ) from None
                    time.sleep(poll)
            try:
                yield
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        inner.release()


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


def _write_checked(path: str, content: bytes, before_replace: Callable[[str], None] | None = None) -> None:
    temp = path + ".tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        size = os.stat(temp).st_size
        if size != len(content):
            raise ChatError(f"{temp} is {size} bytes, expected {len(content)}")
        if before_replace is not None:
            before_replace(temp)
        os.replace(temp, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise ChatError(f"cannot write {path}: {error.strerror or error}") from None


def validate_handle(handle: str) -> None:
    if not _HANDLE.match(handle):
        raise ChatError(f"bad handle {handle!r}: use letters, digits and . _ - @ + (at most 63)")


def create_chat(path: str | os.PathLike[str], now: float | None = None) -> None:
    """Create an empty chat exactly as ``nbs-chat create`` does; refuses an existing file."""
    target = os.fspath(path)
    if not target.endswith(".chat"):
        raise ChatError(f"{target}: a chat file name ends in .chat")
    folder = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(folder):
        raise ChatError(f"folder {folder} does not exist")
    with chat_lock(target):
        if os.path.exists(target):
            raise ChatError(f"{target} already exists")
        _write_checked(target, _render("system", _timestamp(time.time() if now is None else now), {}, []))


def post_message(
    path: str | os.PathLike[str],
    handle: str,
    text: str,
    now: float | None = None,
    lock_timeout: float = 10.0,
    before_replace: Callable[[str], None] | None = None,
) -> ChatMessage:
    """Append a message as ``handle`` under NBS's protocol; returns the message as written.

    Blocks (up to ``lock_timeout``) while another writer holds the lock: call it from a
    worker thread, never from the UI's event loop. Cursors are not touched.
    """
    target = os.fspath(path)
    validate_handle(handle)
    if not text.strip():
        raise ChatError("empty message")
    moment = time.time() if now is None else now
    with chat_lock(target, timeout=lock_timeout):
        try:
            with open_regular(target) as source:
                data = source.read()
        except OSError as error:
            raise ChatError(f"cannot read {target}: {error.strerror or error}") from None
        current = parse_chat(target, data)
        if not current.valid_header:
            raise ChatError(f"{target} is not an nbs-chat file; not writing to it")
        body = _body_lines(data)
        epoch = int(moment)
        encoded = encode_message(handle, text, epoch)
        body.append(encoded)
        counts = dict(current.participants)
        counts[handle] = counts.get(handle, 0) + 1
        _write_checked(target, _render(handle, _timestamp(moment), counts, body), before_replace)
        return ChatMessage(len(current.messages), handle, epoch, text, "current")


def _body_lines(data: bytes) -> list[str]:
    """The raw message lines after the header, kept byte for byte (even undecodable ones)."""
    text = data.decode("utf-8", errors="surrogateescape")
    lines = text.split("\n")
    try:
        start = lines.index("---", lines.index(MAGIC)) + 1
    except ValueError:
        return []
    return [line for line in lines[start:] if line.strip()]
