"""Git run as git, to learn what an agent changed: the worktree's root, its changes against a
base (`read_folder_changes`), one file's unified diff for the review (`file_diff`), the commits
since the base, and the base itself when nbs-tui did not remember one (`fallback_base`).

Every command is git with a fixed argument list (no shell, paths after ``--``), run in the
worktree with ``GIT_OPTIONAL_LOCKS=0`` so a look never takes the index lock the agent's own git
needs. nbs-tui never computes a diff: the counts are git's (``--numstat``). The one count made
here is an untracked file's, which git has no diff for: all its lines are added ones, a binary
file (a NUL in its first 8,000 bytes, git's own test) has none; counts are kept per (size,
mtime) so a file that did not change is not read again.

Large output is cut, not refused: a file's diff stops at ``max_bytes`` and says it was cut.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.core.review.agent_base import AgentBase
from nbs_tui.core.review.agent_changes import (
    AgentChanges,
    FileChange,
    FolderChanges,
    attribute,
    combine,
    not_in_git,
)
from nbs_tui.core.review.git_output import parse_binary_diff, parse_diff, parse_status

GIT = "git"
GIT_TIMEOUT = 30.0
"""Seconds before a git command is given up (a repository on a hung network mount)."""
DIFF_MAX_BYTES = 4 * 1024 * 1024
"""A file's diff is cut after this much (a generated file, a minified bundle)."""
BINARY_PROBE = 8000
"""git decides a file is binary by a NUL in its first 8,000 bytes (xdiff's buffer_is_binary)."""
_CHUNK = 1 << 20


class GitError(Exception):
    """A git command failed; the message is git's own (its stderr) with the command."""


def git_environment() -> dict[str, str]:
    """This process's environment for git: no optional locks (a status never blocks the agent's
    commit), the C locale (messages read the same everywhere), never a prompt or a pager."""
    env = dict(os.environ)
    env.update(
        {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"}
    )
    return env


def run_git(folder: str | Path, args: Sequence[str], *, ok: Iterable[int] = (0,)) -> bytes:
    """``git -C folder ARGS``'s stdout; raises `GitError` on another exit code or a timeout."""
    command = [GIT, "-C", str(folder), *args]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            env=git_environment(),
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitError(f"git {' '.join(args[:2])}: {error}") from error
    if done.returncode not in set(ok):
        reason = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.returncode}"
        raise GitError(f"git {' '.join(args[:2])} in {folder}: {reason}")
    return done.stdout


def worktree_root(folder: str | Path) -> str | None:
    """The root of the worktree ``folder`` is in, or None when it is in no git repository (or
    is no folder at all)."""
    if not Path(folder).is_dir():
        return None
    try:
        out = run_git(folder, ["rev-parse", "--show-toplevel"])
    except GitError:
        return None
    root = out.decode("utf-8", "surrogateescape").strip()
    return root or None


def head_commit(root: str | Path) -> str | None:
    """HEAD's commit, None in a repository with no commit yet."""
    try:
        out = run_git(root, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], ok=(0, 1))
    except GitError:
        return None
    return out.decode().strip() or None


def current_branch(root: str | Path) -> str | None:
    """The branch checked out, None when HEAD is detached."""
    out = run_git(root, ["symbolic-ref", "--quiet", "--short", "HEAD"], ok=(0, 1))
    return out.decode("utf-8", "surrogateescape").strip() or None


def start_base(folder: str | Path) -> AgentBase | None:
    """Where ``folder``'s worktree stands now (HEAD's commit and branch), remembered as an
    agent's base when it starts there; None outside git or before the first commit."""
    if worktree_root(folder) is None:
        return None
    commit = head_commit(folder)
    if commit is None:
        return None
    try:
        branch = current_branch(folder)
    except GitError:
        branch = None
    return AgentBase(commit, branch)


def fallback_base(root: str | Path) -> str | None:
    """The base of a worktree nbs-tui did not start (no base remembered): where HEAD left the
    branch it came from. The first that answers: the merge-base of HEAD with its upstream
    (``@{upstream}``), with the remote's default branch (``origin/HEAD``), with a local
    ``main`` or ``master`` (when HEAD is not that branch itself); else HEAD (only the changes
    not yet committed are then shown). None in a repository with no commit."""
    head = head_commit(root)
    if head is None:
        return None
    branch = current_branch(root)
    candidates = ["@{upstream}", "refs/remotes/origin/HEAD"]
    candidates += [name for name in ("main", "master") if name != branch]
    for ref in candidates:
        try:
            out = run_git(root, ["merge-base", "HEAD", ref], ok=(0, 1))
        except GitError:
            continue
        base = out.decode().strip()
        if base:
            return base
    return head


def empty_tree(root: str | Path) -> str:
    """The empty tree's name in this repository's hash (the base of a repository with no commit)."""
    return run_git(root, ["hash-object", "-t", "tree", "/dev/null"]).decode().strip()


@dataclass(frozen=True, slots=True)
class _Counted:
    size: int
    mtime_ns: int
    lines: int | None


class UntrackedCounter:
    """Untracked files' line counts, kept per path while the file's size and mtime stay the same
    (the change column asks again at every change in the folder)."""

    def __init__(self) -> None:
        self._known: dict[str, _Counted] = {}

    def count(self, root: str, paths: Iterable[str]) -> dict[str, int | None]:
        counts: dict[str, int | None] = {}
        for path in paths:
            full = os.path.join(root, path)
            try:
                info = os.lstat(full)
            except OSError:
                counts[path] = 0  # gone since git listed it
                continue
            known = self._known.get(full)
            if (
                known is not None
                and known.size == info.st_size
                and known.mtime_ns == info.st_mtime_ns
            ):
                counts[path] = known.lines
                continue
            lines = _count_lines(full, info)
            self._known[full] = _Counted(info.st_size, info.st_mtime_ns, lines)
            counts[path] = lines
        return counts

    def forget(self, root: str) -> None:
        """Drop the counts kept for files under ``root`` (its agent is gone)."""
        prefix = root.rstrip(os.sep) + os.sep
        for key in [key for key in self._known if key.startswith(prefix)]:
            del self._known[key]


def _count_lines(full: str, info: os.stat_result) -> int | None:
    """An untracked file's lines as git would count them once added: newlines, plus one for a
    last line without one; None for a binary file. A symbolic link is one line (its target)."""
    if stat.S_ISLNK(info.st_mode):
        return 1
    if not stat.S_ISREG(info.st_mode):
        return None  # a nested repository or a socket: no lines to show
    lines = 0
    last = b""
    try:
        with open(full, "rb") as fh:
            first = True
            while chunk := fh.read(_CHUNK):
                if first and b"\0" in chunk[:BINARY_PROBE]:
                    return None
                first = False
                lines += chunk.count(b"\n")
                last = chunk[-1:]
    except OSError:
        return 0
    return lines + (1 if last not in (b"", b"\n") else 0)


STATUS_ARGS = (
    "status",
    "--porcelain=v2",
    "-z",
    "--branch",
    "--untracked-files=all",
    "--ignore-submodules=dirty",
)
DIFF_ARGS = (
    "diff",
    "--raw",
    "--numstat",
    "-z",
    "--find-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
)


def read_folder_changes(
    root: str, base: str | None, counter: UntrackedCounter | None = None
) -> FolderChanges:
    """The worktree at ``root`` against ``base`` (a commit): everything committed, staged,
    unstaged since, and the untracked files. Two git commands and the untracked files' counts.
    ``base`` None: against HEAD, or the empty tree before the first commit."""
    status = parse_status(run_git(root, STATUS_ARGS))
    against = base or status.head or empty_tree(root)
    diff = parse_diff(run_git(root, [*DIFF_ARGS, against, "--"]))
    untracked = (counter or UntrackedCounter()).count(root, status.untracked)
    return combine(root, status, diff, untracked, base or status.head)


def read_agent_changes(
    target: str,
    folder: str,
    base: str | None,
    *,
    written: Mapping[str, str] | None = None,
    shared: bool = False,
    counter: UntrackedCounter | None = None,
) -> AgentChanges:
    """One agent's changes (`nbs_tui.core.review.agent_changes.attribute`): its folder's
    worktree against ``base`` (None: `fallback_base`), cut to its own files when ``shared``.
    A folder outside git gives `not_in_git`; a git that fails raises `GitError`."""
    root = worktree_root(folder)
    if root is None:
        if not Path(folder).is_dir():
            return not_in_git(target, folder, f"{folder} is not a folder on this machine")
        return not_in_git(target, folder)
    if base is None:
        base = fallback_base(root)
    changes = read_folder_changes(root, base, counter)
    return attribute(
        changes, target=target, agent_folder=folder, written=written or {}, shared=shared
    )


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file's unified diff as git prints it, for the review screen."""

    path: str
    text: str
    binary: bool
    truncated: bool
    """Cut at the size limit: the rest was not read."""


def file_diff(
    root: str, base: str | None, change: FileChange, *, max_bytes: int = DIFF_MAX_BYTES
) -> FileDiff:
    """``change``'s unified diff against ``base``: ``git diff BASE -- PATH`` (with the origin of
    a rename), or for an untracked file ``git diff --no-index /dev/null PATH`` (every line
    added). Read up to ``max_bytes``, git stopped after that."""
    if change.status == "untracked":
        args = ["diff", "--no-index", "--no-color", "--no-ext-diff", "--", "/dev/null", change.path]
    else:
        against = base or head_commit(root) or empty_tree(root)
        paths = [change.path] if change.old_path is None else [change.old_path, change.path]
        args = ["diff", "--find-renames", "--no-color", "--no-ext-diff", against, "--", *paths]
    raw, truncated = _read_capped([GIT, "-C", root, *args], max_bytes)
    text = raw.decode("utf-8", "replace")
    return FileDiff(
        path=change.path, text=text, binary=parse_binary_diff(text), truncated=truncated
    )


def _read_capped(command: list[str], max_bytes: int) -> tuple[bytes, bool]:
    """A command's stdout up to ``max_bytes``; the command is stopped beyond that. Exit codes
    0 and 1 are answers (``--no-index`` exits 1 when the files differ)."""
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=git_environment(),
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        data = process.stdout.read(max_bytes + 1)
        truncated = len(data) > max_bytes
        if truncated:
            process.kill()
            process.wait()
            return data[:max_bytes], True
        error = process.stderr.read()
        code = process.wait(timeout=GIT_TIMEOUT)
    if code not in (0, 1):
        raise GitError(
            f"{' '.join(command[3:5])}: {error.decode('utf-8', 'replace').strip() or f'exit code {code}'}"
        )
    return data, False


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    subject: str


def commits_since(root: str, base: str | None, *, limit: int = 200) -> tuple[Commit, ...]:
    """The commits on HEAD since ``base``, newest first (at most ``limit``)."""
    if base is None or head_commit(root) is None:
        return ()
    out = run_git(
        root, ["log", "-z", f"--max-count={limit}", "--format=%H%x1f%s", f"{base}..HEAD", "--"]
    )
    commits: list[Commit] = []
    for record in out.decode("utf-8", "replace").split("\0"):
        sha, sep, subject = record.strip("\n").partition("\x1f")
        if sep:
            commits.append(Commit(sha, subject))
    return tuple(commits)


def has_commit(root: str | Path, commit: str) -> bool:
    """``commit`` is a commit of this repository (a remembered base may be from another one)."""
    try:
        run_git(root, ["cat-file", "-e", f"{commit}^{{commit}}"])
    except GitError:
        return False
    return True


def tracked_folders(root: str) -> frozenset[str]:
    """The worktree's root and every folder git tracks a file in at HEAD (absolute): what is
    watched for changes, so an ignored tree (``node_modules``, a build folder) costs no watch."""
    folders = {root}
    if head_commit(root) is None:
        return frozenset(folders)
    out = run_git(root, ["ls-tree", "-r", "-d", "-z", "--name-only", "HEAD"])
    for name in out.decode("utf-8", "surrogateescape").split("\0"):
        if name:
            folders.add(os.path.join(root, name))
    return frozenset(folders)
