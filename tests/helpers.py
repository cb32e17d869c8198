"""Helpers shared by several test folders: NBS chat files written the way NBS writes them.

Deliberately independent of ``nbs_tui.core.control.chat`` (the code under test): the header and its
self-counting ``file-length`` are built here by hand, from NBS's ``chat_file.c``.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path


def b64(text: str) -> str:
    """One chat message line: ``text`` (``handle|EPOCH: body``) base64-encoded."""
    return base64.b64encode(text.encode()).decode()


def nbs_chat_bytes(
    messages: Sequence[str], writer: str = "alice", participants: str = "alice(2), bob(1)"
) -> bytes:
    """A chat file built the way NBS's chat_file.c builds one (self-referential file-length)."""
    before = f"=== nbs-chat ===\nlast-writer: {writer}\nlast-write: 2026-02-13T10:00:00+0000\n"
    after = f"participants: {participants}\n---\n" + "".join(m + "\n" for m in messages)
    base = len(before) + len(after)
    n = base + 14 + len(str(base))
    if len(str(n)) != len(str(base)):
        n = base + 14 + len(str(n))
    data = f"{before}file-length: {n}\n{after}".encode()
    assert len(data) == n
    return data


def write_chat(path: Path, messages: Sequence[str] = ()) -> Path:
    """Write a chat holding ``messages`` (already encoded lines) at ``path``, making its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(nbs_chat_bytes(messages))
    return path
