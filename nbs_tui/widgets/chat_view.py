"""The chat view: the messages of one nbs-chat file, decoded, with unread counts per reader.

Usage::

    view = ChatView(id="chat")
    view.show_chat("/project/.nbs/chat/team.chat")   # reads in a thread worker
    view.update_from(summary)                       # a ChatSummary from a SnapshotChanged:
                                                    # re-reads only when the chat changed

Reading never moves a cursor (it only reads ``<chat>.cursors``). Only the newest
``SHOWN_MESSAGES`` are kept; when the chat only grew (NBS writers append to its body) just the
new messages are decoded and appended to the log, anything else (an archive split, an edit,
another chat) is shown afresh.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import RichLog

from nbs_tui.core.control.chat import (
    ChatFile,
    ChatMessage,
    ChatSummary,
    ChatTail,
    tail_of,
    unread_count,
)
from nbs_tui.core.screen.text import printable
from nbs_tui.files.chat_io import read_chat_tail, read_cursors

SHOWN_MESSAGES = 500
APPENDED_BEFORE_REDRAW = SHOWN_MESSAGES
"""Messages appended to the log since it was last drawn whole before it is drawn whole again
(so it holds at most twice SHOWN_MESSAGES)."""


class ChatView(RichLog):
    """Messages of the chosen chat, newest at the bottom."""

    DEFAULT_CSS = """
    ChatView {
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $text-muted;
        border-subtitle-color: $text-muted;
    }
    """

    @dataclass
    class Loaded(Message):
        """A chat was read and shown (``error`` is set when it could not be read)."""

        path: str
        total: int
        error: str = ""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes, wrap=True, markup=False, highlight=False, max_lines=5000)
        self.path: str | None = None
        self.chat: ChatTail | None = None
        """What is shown: the newest SHOWN_MESSAGES messages and what is known of the whole chat."""
        self._appended = 0
        self._seen: tuple[object, ...] | None = None
        self.reader: Callable[[str], tuple[ChatFile, dict[str, int]] | None] | None = None
        """Reads another host's chat there (None back: a chat of this machine, read here)."""
        self.border_title = "chat"
        self.write(Text("Highlight a chat in the registry to read it here.", style="dim"))

    def show_chat(self, path: str | None) -> None:
        """Show this chat (None: nothing). Reads on a worker thread."""
        if path == self.path and self.chat is not None:
            return
        self.path = path
        self._seen = None
        if path is None:
            self.chat = None
            self.clear()
            self.border_title = "chat"
            return
        self.border_title = os.path.basename(path)
        self._load(path)

    def update_from(self, summary: ChatSummary | None) -> None:
        """Re-read the chat if its summary (count, newest message, readers) changed."""
        if summary is None or summary.path != self.path:
            return
        key = (summary.total, summary.newest, summary.readers, summary.error)
        if key != self._seen:
            self._seen = key
            self._load(summary.path)

    @work(thread=True, exclusive=True, group="chat-view")
    def _load(self, path: str) -> None:
        before = self.chat
        grew: int | None = None
        try:
            got = self.reader(path) if self.reader is not None else None
            if got is not None:  # another host's chat, read there whole
                chat, cursors = got
                tail: ChatTail | None = tail_of(chat, SHOWN_MESSAGES)
            else:
                tail, grew = read_chat_tail(path, SHOWN_MESSAGES, before)
                cursors = read_cursors(path)
            error = ""
        except OSError as problem:
            tail, cursors, error = None, {}, problem.strerror or str(problem)
        self.app.call_from_thread(self._show, path, tail, cursors, error, before, grew)

    def _show(
        self,
        path: str,
        chat: ChatTail | None,
        cursors: dict[str, int],
        error: str,
        before: ChatTail | None = None,
        grew: int | None = None,
    ) -> None:
        if path != self.path:
            return
        shown = self.chat
        self.chat = chat
        if chat is None:
            self.clear()
            self.write(Text(f"cannot read {path}: {error}", style="red"))
            self.post_message(self.Loaded(path, 0, error))
            return
        total = chat.total
        self.border_subtitle = _subtitle(chat, cursors)
        if (
            grew is not None
            and before is shown  # read from what the log shows (not from a read overtaken since)
            and before is not None
            and before.total > 0  # not the "(no messages yet)" line
            and grew <= len(chat.messages)
            and self._appended + grew <= APPENDED_BEFORE_REDRAW
        ):
            self._appended += grew
            for message in chat.messages[len(chat.messages) - grew :]:
                self.write(_line(message))
            self.post_message(self.Loaded(path, total))
            return
        self.clear()
        self._appended = 0
        if chat.archive:
            self.write(Text("ARCHIVE (read only history)", style="bold yellow"))
        start = total - len(chat.messages)
        if start:
            self.write(Text(f"… {start} older messages not shown", style="dim"))
        for message in chat.messages:
            self.write(_line(message))
        if total == 0:
            self.write(Text("(no messages yet)", style="dim"))
        self.post_message(self.Loaded(path, total))


def _subtitle(chat: ChatTail, cursors: dict[str, int]) -> str:
    """Total, unread per reader, and what is wrong with the file."""
    total = chat.total
    readers = "  ".join(f"{handle} {unread_count(total, cursor)} unread" for handle, cursor in cursors.items())
    flags = []
    if chat.archive:
        flags.append("archive")
    if not chat.consistent:
        flags.append(f"file-length {chat.file_length} ≠ {chat.size} bytes")
    if not chat.valid_header:
        flags.append("not an nbs-chat file")
    if chat.undecodable:
        flags.append(f"{chat.undecodable} undecodable line{'s' if chat.undecodable > 1 else ''}")
    return f"{total} messages" + (f"  {readers}" if readers else "") + (f"  [{', '.join(flags)}]" if flags else "")


def _line(message: ChatMessage) -> Text:
    line = Text()
    stamp = time.strftime("%m-%d %H:%M", time.localtime(message.timestamp)) if message.timestamp else "--"
    line.append(f"{stamp} ", style="dim")
    line.append(f"{printable(message.handle)}: ", style="bold cyan")
    line.append(printable(message.text, multiline=True))
    return line
