"""What one agent changed, as the review screen, the fleet list's change column and ``nbs-tui
diff --json`` show it: its folder's files against the base it started from, each with its status,
its lines added and removed, and who wrote it.

Who wrote a file (``by``) comes from Claude Code's own hooks (PostToolUse of Edit, Write,
MultiEdit and NotebookEdit name a ``file_path``): an agent's files are those its hooks name. A
change no hook explains (a Bash command's, the operator's) is the folder's: ``by`` is None. Where
an agent has its folder to itself, every change in it is listed (the folder's too); where several
agents share one folder, each sees only its own (`attribute`).

The document ``nbs-tui diff --json`` prints (fixed; scripts read it)::

    {"target", "folder", "repository", "branch", "base",
     "files": [{"path", "status", "added", "removed", "by"}]}

``repository`` is the worktree's root folder, or ``false`` outside git (then ``message`` says so
and ``files`` is empty); ``path`` is relative to that root; ``added``/``removed`` are null for a
binary file; an untracked file counts all its lines as added.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nbs_tui.core.review.git_output import DiffEntry, StatusReport

UNTRACKED = "untracked"
"""The status of a file git does not track yet (every other status is `git_output.STATUS_LETTERS`'s)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One changed file of a worktree, against the agent's base."""

    path: str
    """Relative to the worktree's root, as git names it (``/``-separated)."""
    status: str
    """``added``, ``modified``, ``deleted``, ``renamed``, ``copied``, ``typechange``,
    ``conflicted`` or ``untracked``."""
    added: int | None
    """Lines added; None for a binary file."""
    removed: int | None
    by: str | None = None
    """The agent whose Claude Code wrote it (its target), None when no hook explains it."""
    old_path: str | None = None
    """Where a renamed or copied file came from (shown by the review, not in the JSON)."""
    staged: bool = False
    """Some of it is in the index and not yet committed."""
    unstaged: bool = False
    """Some of it is in the worktree only (an untracked file is unstaged)."""

    @property
    def binary(self) -> bool:
        return self.added is None

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "added": self.added,
            "removed": self.removed,
            "by": self.by,
        }


@dataclass(frozen=True, slots=True)
class FolderChanges:
    """A worktree's changes against a base, before anyone is named: what git says."""

    root: str
    """The worktree's root folder (absolute)."""
    branch: str | None
    """The branch checked out; None when HEAD is detached."""
    head: str | None
    base: str | None
    """The commit the changes are counted from; None when there is none (a repository with no
    commit: every file is then new)."""
    files: tuple[FileChange, ...]


@dataclass(frozen=True, slots=True)
class ChangeCount:
    """What the fleet list's change column shows of an agent: files changed, lines +/-."""

    files: int
    added: int
    removed: int

    def text(self) -> str:
        """``3 +12 -4``; empty for an agent with no change (the column stays quiet)."""
        return f"{self.files} +{self.added} -{self.removed}" if self.files else ""


@dataclass(frozen=True, slots=True)
class AgentChanges:
    """One agent's changes: its folder's, cut down to its own files when it shares the folder."""

    target: str
    folder: str
    """The agent's working folder, as the fleet knows it (may be below the worktree's root)."""
    repository: str | None
    """The worktree's root folder; None when the folder is not in git."""
    branch: str | None
    base: str | None
    files: tuple[FileChange, ...]
    message: str | None = None
    """Why there is nothing to show (outside git, no such folder); None when there are changes
    or none."""

    @property
    def added(self) -> int:
        """Lines added over every file (binary files count none)."""
        return sum(change.added or 0 for change in self.files)

    @property
    def removed(self) -> int:
        return sum(change.removed or 0 for change in self.files)

    def count(self) -> ChangeCount:
        return ChangeCount(len(self.files), self.added, self.removed)

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "target": self.target,
            "folder": self.folder,
            "repository": self.repository if self.repository is not None else False,
            "branch": self.branch,
            "base": self.base,
            "files": [change.as_json() for change in self.files],
        }
        if self.message is not None:
            document["message"] = self.message
        return document


def not_in_git(target: str, folder: str, message: str | None = None) -> AgentChanges:
    """The changes of an agent whose folder is outside any git repository: none, and why."""
    return AgentChanges(
        target=target,
        folder=folder,
        repository=None,
        branch=None,
        base=None,
        files=(),
        message=message or f"{folder} is not in a git repository: nothing to compare",
    )


def relative_to_root(file_path: str, root: str) -> str | None:
    """A hook's absolute ``file_path`` as git names it under ``root`` (``/``-separated), or None
    when it lies outside the worktree. Pure path arithmetic: symlinks are the caller's to resolve."""
    path = os.path.normpath(file_path)
    base = os.path.normpath(root)
    if not os.path.isabs(path):
        path = os.path.normpath(os.path.join(base, path))
    if path == base or not path.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return os.path.relpath(path, base).replace(os.sep, "/")


def attribute(
    folder: FolderChanges,
    *,
    target: str,
    agent_folder: str,
    written: Mapping[str, str],
    shared: bool,
) -> AgentChanges:
    """``folder``'s changes as agent ``target`` sees them.

    ``written``: each path (relative to the root) that some agent's hook wrote -> that agent's
    target, the latest writer when several did. ``shared``: other agents work in the same
    worktree: then only ``target``'s own files are listed; alone, every change is, the ones no
    hook explains with ``by`` None."""
    files: list[FileChange] = []
    for change in folder.files:
        writer = written.get(change.path)
        if writer is None and change.old_path is not None:
            writer = written.get(change.old_path)
        if shared and writer != target:
            continue
        files.append(replace(change, by=writer))
    return AgentChanges(
        target=target,
        folder=agent_folder,
        repository=folder.root,
        branch=folder.branch,
        base=folder.base,
        files=tuple(files),
    )


def combine(
    root: str,
    status: StatusReport,
    diff: Sequence[DiffEntry],
    untracked_lines: Mapping[str, int | None],
    base: str | None,
) -> FolderChanges:
    """A worktree's changes from git's two reports: ``diff`` (the base against the worktree: the
    commits since the base, staged and unstaged, with git's counts) and ``status`` (the branch,
    what is staged or not, the untracked files). ``untracked_lines``: each untracked file's line
    count (None: binary), every line an added one. Sorted by path."""
    conflicted = set(status.conflicted)
    files: list[FileChange] = []
    for entry in diff:
        files.append(
            FileChange(
                path=entry.path,
                status="conflicted" if entry.path in conflicted else entry.status,
                added=entry.added,
                removed=entry.removed,
                old_path=entry.old_path,
                staged=entry.path in status.staged or entry.old_path in status.staged,
                unstaged=entry.path in status.unstaged or entry.path in conflicted,
            )
        )
    for path in status.untracked:
        lines = untracked_lines.get(path, 0)
        files.append(
            FileChange(
                path=path,
                status=UNTRACKED,
                added=lines,
                removed=None if lines is None else 0,
                unstaged=True,
            )
        )
    files.sort(key=lambda change: change.path)
    return FolderChanges(
        root=root, branch=status.branch, head=status.head, base=base, files=tuple(files)
    )
