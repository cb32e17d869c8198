"""Git's machine-readable output, read. Every reader takes the bytes git printed with ``-z``
(paths NUL-terminated, never quoted, so any file name survives) and returns plain values.

- `parse_status`: ``git status --porcelain=v2 -z --branch --untracked-files=all``: the branch,
  HEAD, the untracked files, the conflicted ones, and which paths have staged or unstaged changes.
- `parse_diff`: ``git diff --raw --numstat -z -M BASE``: each changed path's status letter (the
  raw records) joined to its lines added and removed (the numstat records), in git's order.
- `parse_binary_diff`: whether a unified diff is git's "Binary files ... differ" line.

Formats: git-status(1) "Porcelain Format Version 2" and git-diff(1) "Raw output format" / "Other
diff formats" (--numstat). Both were checked on git 2.39.
"""

from __future__ import annotations

from dataclasses import dataclass

STATUS_LETTERS = {
    "A": "added",
    "C": "copied",
    "D": "deleted",
    "M": "modified",
    "R": "renamed",
    "T": "typechange",
    "U": "conflicted",
    "X": "unknown",
}
"""git's raw status letter -> the status word nbs-tui shows (``R100`` and ``C75`` carry a score)."""


class GitOutputError(ValueError):
    """Git printed something these readers do not understand: a bug here or a git we never met."""


@dataclass(frozen=True, slots=True)
class StatusReport:
    """One ``git status --porcelain=v2 -z --branch --untracked-files=all``."""

    head: str | None
    """HEAD's commit, None before the first commit (``(initial)``)."""
    branch: str | None
    """The branch checked out, None when HEAD is detached."""
    upstream: str | None
    untracked: tuple[str, ...]
    conflicted: tuple[str, ...]
    staged: frozenset[str]
    """Paths whose index differs from HEAD (X of XY is not ``.``)."""
    unstaged: frozenset[str]
    """Paths whose worktree differs from the index (Y of XY is not ``.``)."""


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One path of ``git diff --raw --numstat``: its status and its counts."""

    path: str
    status: str
    """A word of `STATUS_LETTERS`."""
    added: int | None
    """Lines added; None for a binary file (numstat's ``-``)."""
    removed: int | None
    old_path: str | None = None
    """The path it came from, for a rename or a copy."""


def _fields(output: bytes) -> list[str]:
    """NUL-separated fields, decoded the way git wrote them (UTF-8 names, anything else kept by
    surrogate escape so a path read here names the same file when handed back to git)."""
    text = output.decode("utf-8", "surrogateescape")
    if text.endswith("\0"):
        text = text[:-1]
    return text.split("\0") if text else []


def parse_status(output: bytes) -> StatusReport:
    """``git status --porcelain=v2 -z --branch --untracked-files=all``'s output, read."""
    head: str | None = None
    branch: str | None = None
    upstream: str | None = None
    untracked: list[str] = []
    conflicted: list[str] = []
    staged: set[str] = set()
    unstaged: set[str] = set()
    fields = iter(_fields(output))
    for record in fields:
        kind, _, rest = record.partition(" ")
        if kind == "#":
            key, _, value = rest.partition(" ")
            if key == "branch.oid":
                head = None if value == "(initial)" else value
            elif key == "branch.head":
                branch = None if value == "(detached)" else value
            elif key == "branch.upstream":
                upstream = value
        elif kind == "?":
            untracked.append(rest)
        elif kind == "!":
            continue
        elif kind in ("1", "2"):
            # 1 XY sub mH mI mW hH hI path; 2 adds a score before the path, and its origin path
            # follows as the next NUL-separated field.
            words = rest.split(" ", 8 if kind == "2" else 7)
            if len(words) < 8:
                raise GitOutputError(f"git status: short record {record!r}")
            xy, path = words[0], words[-1]
            if kind == "2":
                next(fields, None)
            if xy[0] != ".":
                staged.add(path)
            if xy[1] != ".":
                unstaged.add(path)
        elif kind == "u":
            words = rest.split(" ", 9)
            if len(words) < 10:
                raise GitOutputError(f"git status: short record {record!r}")
            conflicted.append(words[-1])
        else:
            raise GitOutputError(f"git status: unknown record {record!r}")
    return StatusReport(
        head=head,
        branch=branch,
        upstream=upstream,
        untracked=tuple(untracked),
        conflicted=tuple(conflicted),
        staged=frozenset(staged),
        unstaged=frozenset(unstaged),
    )


def _count(text: str) -> int | None:
    if text == "-":
        return None
    try:
        return int(text)
    except ValueError as error:
        raise GitOutputError(f"git diff --numstat: {text!r} is not a count") from error


def parse_diff(output: bytes) -> tuple[DiffEntry, ...]:
    """``git diff --raw --numstat -z [-M] ...``'s output: the raw records (``:`` first, a status
    letter, then one path or two for a rename or copy) come first, then the numstat records in the
    same order (``added<TAB>removed<TAB>path``, or with an empty path followed by the two paths of
    a rename). Joined by position, checked by path."""
    raws: list[tuple[str, str, str | None]] = []
    counts: list[tuple[int | None, int | None, str]] = []
    fields = iter(_fields(output))
    for record in fields:
        if record.startswith(":"):
            letters = record.rsplit(" ", 1)[-1]
            letter = letters[:1]
            if letter not in STATUS_LETTERS:
                raise GitOutputError(f"git diff --raw: unknown status {letters!r}")
            first = next(fields, None)
            if first is None:
                raise GitOutputError(f"git diff --raw: no path after {record!r}")
            if letter in ("R", "C"):
                second = next(fields, None)
                if second is None:
                    raise GitOutputError(f"git diff --raw: one path for {letters!r}")
                raws.append((second, STATUS_LETTERS[letter], first))
            else:
                raws.append((first, STATUS_LETTERS[letter], None))
            continue
        parts = record.split("\t", 2)
        if len(parts) != 3:
            raise GitOutputError(f"git diff --numstat: bad record {record!r}")
        added, removed, path = _count(parts[0]), _count(parts[1]), parts[2]
        if path == "":
            next(fields, None)  # the rename's origin; the raw record already has it
            path = next(fields, "")
        counts.append((added, removed, path))
    if len(counts) != len(raws):
        raise GitOutputError(f"git diff: {len(raws)} raw records but {len(counts)} numstat records")
    entries: list[DiffEntry] = []
    for (path, status, old_path), (added, removed, counted) in zip(raws, counts, strict=True):
        if counted != path:
            raise GitOutputError(f"git diff: raw {path!r} and numstat {counted!r} out of step")
        entries.append(DiffEntry(path, status, added, removed, old_path))
    return tuple(entries)


def parse_binary_diff(diff_text: str) -> bool:
    """Whether a ``git diff`` of one file says only that the binary files differ."""
    return any(
        line.startswith("Binary files ") and line.endswith(" differ")
        for line in diff_text.splitlines()[:6]
    )
