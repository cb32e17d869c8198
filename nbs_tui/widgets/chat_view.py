"""The chat view: the messages of one nbs-chat file, decoded, with unread counts per reader.

Usage::

    view = ChatView(id="chat")
    view.show_chat("/project/.nbs/chat/team.chat")   # reads in a thread worker
    view.update_from(summary)                       # a ChatSummary from a SnapshotChanged:
                                                    # re-reads only when the chat changed

Reading never moves a cursor (it only reads ``<chat>.cursors``).
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

from nbs_tui.core.chat import ChatFile, ChatSummary, unread_count
from nbs_tui.core.text import printable
from nbs_tui.files.chat_io import read_chat, read_cursors

SHOWN_MESSAGES = 500


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
        self.chat: ChatFile | None = None
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

    def reload(self) -> None:
        if self.path is not None:
            self._load(self.path)

    @work(thread=True, exclusive=True, group="chat-view")
    def _load(self, path: str) -> None:
        try:
            got = self.reader(path) if self.reader is not None else None
            if got is not None:  # another host's chat, read there
                chat, cursors = got
            else:
                chat = read_chat(path)
                cursors = read_cursors(path)
            error = ""
        except OSError as problem:
            chat, cursors, error = None, {}, problem.strerror or str(problem)
        self.app.call_from_thread(self._show, path, chat, cursors, error)

    def _show(self, path: str, chat: ChatFile | None, cursors: dict[str, int], error: str) -> None:
        if path != self.path:
            return
        self.chat = chat
        self.clear()
        if chat is None:
            self.write(Text(f"cannot read {path}: {error}", style="red"))
            self.post_message(self.Loaded(path, 0, error))
            return
        total = len(chat.messages)
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
        self.border_subtitle = f"{total} messages" + (f"  {readers}" if readers else "") + (
            f"  [{', '.join(flags)}]" if flags else ""
        )
        if chat.archive:
            self.write(Text("ARCHIVE (read only history)", style="bold yellow"))
        start = max(0, total - SHOWN_MESSAGES)
        if start:
            self.write(Text(f"… {start} older messages not shown", style="dim"))
        for message in chat.messages[start:]:
            line = Text()
            stamp = time.strftime("%m-%d %H:%M", time.localtime(message.timestamp)) if message.timestamp else "--"
            line.append(f"{stamp} ", style="dim")
            line.append(f"{printable(message.handle)}: ", style="bold cyan")
            line.append(printable(message.text, multiline=True))
            self.write(line)
        if total == 0:
            self.write(Text("(no messages yet)", style="dim"))
        self.post_message(self.Loaded(path, total))
