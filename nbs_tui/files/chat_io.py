"""nbs-chat files on disk: read with NBS's retry rule, create and post under NBS's lock.

The format and every decision about it (decode, unread counts, the header a post writes) live
in :mod:`nbs_tui.core.control.chat`; this module only opens, locks, reads and replaces files.

Writers hold an fcntl record lock on ``<chat>.lock``, write ``<chat>.tmp``, check its size
against ``file-length`` and rename it over the chat; readers that see a length mismatch retry.
Cursors (``<chat>.cursors``) are only ever read: a dashboard must never move a reader's cursor.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from nbs_tui.core.control.chat import (
    MAGIC,
    MAX_CHAT_BYTES,
    ChatError,
    ChatFile,
    ChatMessage,
    ChatSummary,
    ChatTail,
    append_message,
    archive_pattern,
    empty_chat,
    header_of,
    is_archive,
    parse_chat,
    parse_cursors,
    summary_of_tail,
    tail_chat,
    validate_handle,
)
from nbs_tui.files.atomic import write_atomic
from nbs_tui.files.registry_io import open_regular, read_at_most


def archives_of(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """Archive files split off this chat: ``<base>-YYYYMMDD-HHMMSS-archive.chat``, oldest first."""
    chat = Path(path)
    pattern = archive_pattern(chat.name)
    try:
        names = os.listdir(chat.parent)
    except OSError:
        return ()
    return tuple(str(chat.parent / name) for name in sorted(names) if pattern.match(name))


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
    data = read_settled(target, retries, delay, sleep)
    return ChatFile(target) if data is None else parse_chat(target, data)


def read_chat_tail(
    path: str | os.PathLike[str],
    keep: int,
    before: ChatTail | None = None,
    retries: int = 20,
    delay: float = 0.01,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[ChatTail, int | None]:
    """`read_chat`, keeping only the newest ``keep`` messages and decoding only those appended
    since ``before`` when the chat only grew (see `tail_chat`: how many, or None when read
    afresh). Raises OSError when the file cannot be read at all."""
    target = os.fspath(path)
    data = read_settled(target, retries, delay, sleep)
    return (ChatTail(target), None) if data is None else tail_chat(target, data, keep, before)


def read_settled(
    target: str, retries: int = 20, delay: float = 0.01, sleep: Callable[[float], None] = time.sleep
) -> bytes | None:
    """The chat's bytes once their size agrees with ``file-length`` (a writer mid-append
    disagrees; the last try's otherwise; None when it vanished between tries). Raises OSError
    when it cannot be read at all."""
    data: bytes | None = None
    for attempt in range(retries + 1):
        try:
            with open_regular(target) as handle:
                data = read_at_most(handle, MAX_CHAT_BYTES)
            if len(data) > MAX_CHAT_BYTES:
                raise OSError(errno.EFBIG, f"larger than {MAX_CHAT_BYTES >> 20} MiB", target)
        except FileNotFoundError:
            if attempt >= 2:
                raise
            sleep(delay)
            continue
        header, _ = header_of(data)
        try:
            if int(header["file-length"]) == len(data):
                return data
        except (KeyError, ValueError):
            return data  # no length to check (not a chat, or an old one): as it is
        sleep(delay)
    return data


def read_cursors(path: str | os.PathLike[str]) -> dict[str, int]:
    """``<chat>.cursors`` as handle -> index of the last delivered message (read only)."""
    try:
        with open_regular(os.fspath(path) + ".cursors") as handle:
            text = handle.read(1 << 20).decode("utf-8", errors="replace")
    except OSError:
        return {}
    return parse_cursors(text)


def summarise(path: str | os.PathLike[str]) -> ChatSummary:
    """Everything a dashboard shows about one chat; never raises."""
    return summarise_from(path, None)[0]


def summarise_from(
    path: str | os.PathLike[str], before: ChatTail | None, sleep: Callable[[float], None] = time.sleep
) -> tuple[ChatSummary, ChatTail | None]:
    """`summarise`, decoding only the messages appended since the read ``before`` (see
    `ChatTail`), and the read to pass next time; never raises."""
    target = os.fspath(path)
    archive = is_archive(target)
    if "\x00" in target:
        return ChatSummary(target, exists=False, archive=archive, error="path contains a NUL byte"), None
    if not os.path.exists(target):
        return ChatSummary(target, exists=False, archive=archive, error="missing"), None
    try:
        data = read_settled(target, 5, 0.01, sleep)
    except OSError as error:
        return ChatSummary(target, exists=True, archive=archive, error=error.strerror or str(error)), None
    if data is None:
        return ChatSummary(target, exists=False, archive=archive, error="missing"), None
    tail, _ = tail_chat(target, data, 1, before)
    return summary_of_tail(tail, read_cursors(target), () if archive else archives_of(target)), tail


def is_chat_file(path: str | os.PathLike[str]) -> bool:
    try:
        with open_regular(path) as handle:
            return handle.read(len(MAGIC) + 1).rstrip(b"\r\n") == MAGIC.encode()
    except OSError:
        return False


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


def _write_checked(path: str, content: bytes, before_replace: Callable[[str], None] | None = None) -> None:
    """NBS's write (the module docstring): ``<chat>.tmp``, its size checked, renamed over the chat
    (`nbs_tui.files.atomic.write_atomic`, which keeps the chat's mode; a new chat is 0600).
    Call it holding the chat's lock."""
    try:
        write_atomic(
            path, content, new_mode=0o600, temp_name=os.path.basename(path) + ".tmp", before_replace=before_replace
        )
    except OSError as error:
        raise ChatError(f"cannot write {path}: {error.strerror or error}") from None


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
        _write_checked(target, empty_chat(time.time() if now is None else now))


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
    validate_handle(handle)  # refused before the lock file is made
    if not text.strip():
        raise ChatError("empty message")
    moment = time.time() if now is None else now
    with chat_lock(target, timeout=lock_timeout):
        try:
            with open_regular(target) as source:
                data = source.read()
        except OSError as error:
            raise ChatError(f"cannot read {target}: {error.strerror or error}") from None
        content, message = append_message(target, data, handle, text, moment)
        _write_checked(target, content, before_replace)
        return message
