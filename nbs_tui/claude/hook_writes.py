"""The files each agent's Claude Code wrote, read from the hook spool (Claude Code's PostToolUse
hooks of Edit, Write, MultiEdit and NotebookEdit; `nbs_tui.core.review.written_files`).

`read_writes` is for a process that did not follow the spool (``nbs-tui diff``): it reads the
spool from its start, the lines that are not a write's passed over before JSON is parsed (the
dashboard's change column does the same once, before it reads its first worktree). What a
rotated spool held (``<spool>.<UTC time>``, past 64 MiB) is not read again: writes before the last
rotation are then forgotten, and such a file counts as the folder's. `WriteFollower` is for the
runtime, which already reads every hook event once (`nbs_tui.claude.watcher`): each event is
offered to it.

Only the writes of one tmux server are kept (the hook records ``$TMUX``'s socket): pane ids
repeat across servers. Paths are resolved (symbolic links) so they compare with git's root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from nbs_tui.claude.spool import HookEvent, SpoolReader
from nbs_tui.core.review.written_files import WrittenFiles, written_path

_A_WRITE = re.compile(rb'"tool_name"\s*:\s*"(?:Edit|Write|MultiEdit|NotebookEdit)"')
"""A spool line that may be a write, found in its bytes before any JSON is parsed (a PostToolUse
of another tool can carry megabytes of its output: never parsed here)."""


class WriteFollower:
    """Folds hook events into a `WrittenFiles` ledger for one tmux server's panes."""

    def __init__(self, tmux_socket: str) -> None:
        self.socket = os.path.realpath(tmux_socket)
        self.written = WrittenFiles()

    def ours(self, event: HookEvent) -> bool:
        """The event came from a pane of this server (pane ids repeat across servers)."""
        if event.pane_id is None:
            return False
        return not event.tmux_socket or os.path.realpath(event.tmux_socket) == self.socket

    def offer(self, event: HookEvent) -> str | None:
        """Record ``event`` if it is a write on this server by a pane; the pane when it was news."""
        if event.pane_id is None or not self.ours(event):
            return None
        path = written_path(event.event, event.fields)
        if path is None:
            return None
        return event.pane_id if self.written.add(event.pane_id, os.path.realpath(path), event.time) else None


def read_writes(spool: Path, tmux_socket: str) -> WrittenFiles:
    """Every write the spool holds for the server at ``tmux_socket`` (module docstring)."""
    follower = WriteFollower(tmux_socket)
    reader = SpoolReader(spool, from_start=True, keep=lambda raw: b"PostToolUse" in raw and _A_WRITE.search(raw) is not None)
    while True:
        before = reader.offset
        for event in reader.read():
            follower.offer(event)
        if reader.offset == before:
            return follower.written
