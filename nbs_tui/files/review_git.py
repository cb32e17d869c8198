"""Git for the review screen's actions: an agent's worktree merged into its base, or discarded.
(What it changed is read by `nbs_tui.files.git_changes`.)

git is run as ``git`` with fixed argument lists (never a shell line, never a path read as an
option), in the agent's folder, in `git_environment` (no optional locks, no prompt).

Merge never forces: ``git merge-tree --write-tree`` first tries the merge without touching any
tree or ref; a conflict is refused, naming the conflicting files, with nothing changed. A clean
merge then moves the base as git itself would: ``git merge`` in the checkout that has the base
(a fast-forward when possible, else a merge commit), or, where no checkout has it, the merge
commit written from that same tree and the branch moved with ``update-ref`` against its old
value (another writer in between makes it fail, not lose their commit).

Discard keeps everything it throws away: the worktree's files (tracked, changed and untracked;
not ignored ones) are written as a commit on top of the branch, and a backup ref under
``refs/nbs-tui/discarded/`` names it before the branch is reset to where it left the base.

Local folders only; every call blocks (run it off the UI thread).
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.files.git_changes import GitError, git_environment

GIT_TIMEOUT = 30.0
"""Seconds one git command may take (a huge repository's first status can take a few)."""
BACKUP_PREFIX = "refs/nbs-tui/discarded/"


@dataclass(frozen=True, slots=True)
class WorktreeFacts:
    root: Path
    branch: str
    """The checked-out branch ("" when HEAD is detached)."""
    base: str
    """The branch it is compared with, and merged into."""
    fork: str
    """The commit where the branch left the base (``git merge-base``)."""
    own_worktree: bool
    """A linked worktree (``git worktree add``, Claude Code's ``-w``) on a branch of its own."""


def git(folder: Path, *args: str, ok: Sequence[int] = (0,), env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``git -C folder ARGS`` (no shell); a return code outside ``ok`` raises `GitError`.
    Unlike `git_changes.run_git` it gives the return code and takes an environment (the
    discard's scratch index)."""
    argv = ["git", "-C", str(folder), *args]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=GIT_TIMEOUT, check=False, stdin=subprocess.DEVNULL,
            env={**git_environment(), **(env or {})},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitError(f"git {args[0]} in {folder}: {error}") from None
    result = subprocess.CompletedProcess(argv, done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"))
    if done.returncode not in ok:
        said = result.stderr.strip().splitlines()
        raise GitError(f"git {args[0]} in {folder}: {said[-1] if said else f'exit {done.returncode}'}")
    return result


def _line(folder: Path, *args: str) -> str:
    return git(folder, *args).stdout.strip()


def worktree_facts(folder: Path, base: str | None = None) -> WorktreeFacts:
    """The agent's worktree, its branch and the base branch it merges into: ``base`` (the branch
    remembered at its start, `nbs_tui.core.review.agent_base.AgentBase.branch`), else the branch
    checked out in the repository's main worktree (where ``-w`` branched from), else its own."""
    root = Path(_line(folder, "rev-parse", "--show-toplevel"))
    branch = git(root, "symbolic-ref", "--quiet", "--short", "HEAD", ok=(0, 1)).stdout.strip()
    linked = Path(_line(root, "rev-parse", "--path-format=absolute", "--git-dir")) != Path(
        _line(root, "rev-parse", "--path-format=absolute", "--git-common-dir")
    )
    if base is None:
        main_branch = checked_out_branches(root).get(_main_worktree(root), "")
        base = main_branch or branch or "HEAD"
    fork = git(root, "merge-base", base, "HEAD", ok=(0, 1)).stdout.strip() or _line(root, "rev-parse", "HEAD")
    return WorktreeFacts(root, branch, base, fork, own_worktree=linked and bool(branch) and branch != base)


def _main_worktree(root: Path) -> Path:
    first = git(root, "worktree", "list", "--porcelain").stdout.split("\n", 1)[0]
    return Path(first.removeprefix("worktree "))


def checked_out_branches(root: Path) -> dict[Path, str]:
    """Each worktree of the repository and the branch it has checked out ("" detached)."""
    found: dict[Path, str] = {}
    where: Path | None = None
    for line in git(root, "worktree", "list", "--porcelain").stdout.splitlines():
        if line.startswith("worktree "):
            where = Path(line.removeprefix("worktree "))
            found[where] = ""
        elif line.startswith("branch refs/heads/") and where is not None:
            found[where] = line.removeprefix("branch refs/heads/")
    return found


# -- merge --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MergeResult:
    merged: bool
    said: str
    """What happened, or why nothing did (naming the conflicting files)."""
    conflicts: tuple[str, ...] = ()
    commit: str = ""
    """The base's new tip."""


def merge_into_base(facts: WorktreeFacts) -> MergeResult:
    """Merge the agent's branch into its base (module docstring); nothing changes on a refusal."""
    root, branch, base = facts.root, facts.branch, facts.base
    if not facts.own_worktree:
        return MergeResult(False, f"{root} is not a worktree with a branch of its own")
    if dirty := _dirty(root, untracked=True):
        return MergeResult(False, f"the agent's worktree has uncommitted changes ({_some(dirty)}): they would not be merged")
    base_tip = _line(root, "rev-parse", "--verify", f"refs/heads/{base}^{{commit}}")
    tip = _line(root, "rev-parse", "HEAD")
    if _is_ancestor(root, tip, base_tip):
        return MergeResult(False, f"nothing to merge: {base} already has {branch}'s commits")
    tried = git(root, "merge-tree", "--write-tree", "--name-only", "--no-messages", base_tip, tip, ok=(0, 1))
    tree, *conflicted = [line for line in tried.stdout.splitlines() if line]
    if tried.returncode == 1:
        files = tuple(dict.fromkeys(conflicted))
        return MergeResult(False, f"{branch} conflicts with {base} in {', '.join(files)}: nothing merged", conflicts=files)
    fast_forward = _is_ancestor(root, base_tip, tip)
    message = f"Merge branch '{branch}' into {base} (nbs-tui review)"
    checkout = next((where for where, name in checked_out_branches(root).items() if name == base), None)
    if checkout is not None:
        if dirty := _dirty(checkout, untracked=False):
            return MergeResult(False, f"{base}'s checkout at {checkout} has uncommitted changes ({_some(dirty)}): nothing merged")
        git(checkout, "merge", "--no-edit", "-m", message, tip)
    else:
        new = tip if fast_forward else _line(root, "commit-tree", tree, "-p", base_tip, "-p", tip, "-m", message)
        git(root, "update-ref", "-m", "nbs-tui review: merge", f"refs/heads/{base}", new, base_tip)
    head = _line(root, "rev-parse", f"refs/heads/{base}")
    how = "fast-forward" if fast_forward else "merge commit"
    return MergeResult(True, f"merged {branch} into {base} ({how}, now {head[:12]})", commit=head)


def _is_ancestor(root: Path, older: str, newer: str) -> bool:
    return git(root, "merge-base", "--is-ancestor", older, newer, ok=(0, 1)).returncode == 0


def _dirty(root: Path, *, untracked: bool) -> list[str]:
    args = ["status", "--porcelain", "-z"] + ([] if untracked else ["--untracked-files=no"])
    return [entry[3:] for entry in git(root, *args).stdout.split("\0") if len(entry) > 3]


def _some(paths: Sequence[str]) -> str:
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


# -- discard ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DiscardResult:
    backup_ref: str
    said: str


def discard_worktree(facts: WorktreeFacts, stamp: str) -> DiscardResult:
    """Back the worktree up under ``refs/nbs-tui/discarded/BRANCH/STAMP``, then reset the
    branch to its fork point and remove its untracked files (ignored ones stay)."""
    root, branch = facts.root, facts.branch
    if not facts.own_worktree:
        raise GitError(f"{root} is not a worktree with a branch of its own: nothing discarded")
    head = _line(root, "rev-parse", "HEAD")
    snapshot = _snapshot(root, head, f"nbs-tui: {branch}'s worktree as it was before the discard")
    ref = f"{BACKUP_PREFIX}{branch}/{stamp}"
    git(root, "update-ref", "-m", "nbs-tui review: backup before discard", ref, snapshot, "0" * 40)  # created, never moved
    git(root, "reset", "--quiet", "--hard", facts.fork)
    git(root, "clean", "--quiet", "-d", "--force")
    return DiscardResult(ref, f"discarded {branch}'s work (back to {facts.fork[:12]}); kept as {ref}")


def _snapshot(root: Path, head: str, message: str) -> str:
    """A commit of the worktree's files as they are (through a scratch index: the agent's own
    index is not touched), on top of ``head``; ``head`` itself when nothing differs."""
    with tempfile.TemporaryDirectory(prefix="nbs-review-") as scratch:
        env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
        git(root, "read-tree", head, env=env)
        git(root, "add", "--all", "--", ".", env=env)
        tree = git(root, "write-tree", env=env).stdout.strip()
    if tree == _line(root, "rev-parse", f"{head}^{{tree}}"):
        return head
    return _line(root, "commit-tree", tree, "-p", head, "-m", message)
