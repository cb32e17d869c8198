"""Which agent wrote which file, from Claude Code's own hooks: a PostToolUse of Edit, Write,
MultiEdit or NotebookEdit names the file in its ``tool_input`` (``file_path``; NotebookEdit's is
``notebook_path``). The hook records which tmux pane ran it (``$TMUX_PANE``), so the writer is
known without asking Claude Code anything. A Bash command's writes name no file: they stay
unexplained, the folder's (`nbs_tui.core.review.agent_changes.attribute`).

`WrittenFiles` is the ledger: per pane of one tmux server, each file its agent wrote (an absolute
path) and when it last did. Pure: the hook spool is read by `nbs_tui.claude.hook_writes`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from nbs_tui.core.review.agent_changes import relative_to_root

WRITE_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
"""Claude Code's tools that write a file they name."""


def written_path(event: str, fields: Mapping[str, Any]) -> str | None:
    """The file a hook event says was written (absolute, normalised), or None when it is not a
    finished write of a named file. A relative path is taken from the hook's ``cwd``."""
    if event != "PostToolUse" or fields.get("tool_name") not in WRITE_TOOLS:
        return None
    tool_input = fields.get("tool_input")
    if not isinstance(tool_input, Mapping):
        return None
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not isinstance(path, str) or not path:
        return None
    if not os.path.isabs(path):
        cwd = fields.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            return None
        path = os.path.join(cwd, path)
    return os.path.normpath(path)


class WrittenFiles:
    """Per pane, the files its Claude Code wrote and when (module docstring). One owner thread."""

    def __init__(self) -> None:
        self._by_pane: dict[str, dict[str, float]] = {}

    def add(self, pane_id: str, path: str, at: float) -> bool:
        """Record a write; True when it is news (a file this pane had not written, or a later write)."""
        files = self._by_pane.setdefault(pane_id, {})
        if files.get(path, float("-inf")) >= at:
            return False
        files[path] = at
        return True

    def forget(self, pane_id: str) -> None:
        self._by_pane.pop(pane_id, None)

    def panes(self) -> frozenset[str]:
        return frozenset(self._by_pane)

    def files_of(self, pane_id: str) -> frozenset[str]:
        return frozenset(self._by_pane.get(pane_id, ()))

    def writes_of(self, pane_id: str) -> dict[str, float]:
        """The pane's files and when it last wrote each."""
        return dict(self._by_pane.get(pane_id, {}))

    def writers_under(self, root: str) -> dict[str, str]:
        """Each file under the worktree ``root`` that some pane wrote (named as git names it) ->
        the pane that wrote it last."""
        latest: dict[str, tuple[float, str]] = {}
        for pane_id, files in self._by_pane.items():
            for path, at in files.items():
                name = relative_to_root(path, root)
                if name is not None and (name not in latest or latest[name][0] < at):
                    latest[name] = (at, pane_id)
        return {name: pane_id for name, (_at, pane_id) in latest.items()}
