"""One file's ``git diff`` output read into hunks of numbered lines, for the review screen.

git computes the diff (``git diff`` with fixed arguments, `nbs_tui.files.review_git`); this
only reads its text: the ``@@ -a,b +c,d @@`` headers give each line its old and new number, so
a comment can name ``file:line`` and the screen can pair the two sides. A binary file (``Binary
files ... differ``) has no hunks; a diff longer than the screen should hold is cut at
`MAX_DIFF_LINES` and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

MAX_DIFF_LINES = 20_000
"""Lines of one file's diff read at most: a generated file's 200,000-line diff would take
seconds to lay out and nobody reads it line by line; the rest is said, not shown."""

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


class LineKind(StrEnum):
    CONTEXT = " "
    ADDED = "+"
    REMOVED = "-"


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: LineKind
    text: str
    old: int | None
    """Its number in the base's file (None for an added line)."""
    new: int | None
    """Its number in the agent's file (None for a removed line)."""

    @property
    def line(self) -> int:
        """The number a comment names: the agent's line, or for a removed one the base's."""
        return self.new if self.new is not None else self.old or 0


@dataclass(frozen=True, slots=True)
class Hunk:
    header: str
    """The ``@@ ... @@`` line as git wrote it (with the function name git found, if any)."""
    old_start: int
    new_start: int
    lines: tuple[DiffLine, ...]

    @property
    def first_line(self) -> int:
        """The line a comment on the whole hunk names: its first changed line."""
        changed = next((line for line in self.lines if line.kind is not LineKind.CONTEXT), None)
        return (changed or self.lines[0]).line if self.lines else self.new_start

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines if line.kind is LineKind.ADDED)

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines if line.kind is LineKind.REMOVED)


@dataclass(frozen=True, slots=True)
class ParsedDiff:
    path: str
    hunks: tuple[Hunk, ...]
    binary: bool = False
    cut: int = 0
    """Lines of the diff left unread past `MAX_DIFF_LINES` (0: all of it read)."""

    @property
    def line_count(self) -> int:
        return sum(len(hunk.lines) for hunk in self.hunks)


def parse_file_diff(path: str, text: str, *, max_lines: int = MAX_DIFF_LINES) -> ParsedDiff:
    """``git diff -- PATH``'s output (one file) as a `ParsedDiff`. Lines before the first hunk
    (``diff --git``, ``index``, ``---``/``+++``) are headers; ``\\ No newline at end of file``
    is dropped."""
    hunks: list[Hunk] = []
    header = ""
    old_start = new_start = 0
    lines: list[DiffLine] = []
    old = new = 0
    read = 0
    all_lines = text.split("\n")
    if all_lines and all_lines[-1] == "":
        all_lines.pop()
    binary = False
    for index, raw in enumerate(all_lines):
        match = _HUNK.match(raw)
        if match:
            if header:
                hunks.append(Hunk(header, old_start, new_start, tuple(lines)))
            header, lines = raw, []
            old_start = old = int(match.group(1))
            new_start = new = int(match.group(3))
            continue
        if not header:
            binary = binary or (raw.startswith("Binary files ") and raw.endswith(" differ"))
            continue
        if read >= max_lines:
            hunks.append(Hunk(header, old_start, new_start, tuple(lines)))
            return ParsedDiff(path, tuple(hunks), binary, cut=len(all_lines) - index)
        prefix, body = raw[:1], raw[1:]
        if prefix == "+":
            lines.append(DiffLine(LineKind.ADDED, body, None, new))
            new += 1
        elif prefix == "-":
            lines.append(DiffLine(LineKind.REMOVED, body, old, None))
            old += 1
        elif prefix == " " or raw == "":
            lines.append(DiffLine(LineKind.CONTEXT, body, old, new))
            old += 1
            new += 1
        else:
            continue  # "\ No newline at end of file"
        read += 1
    if header:
        hunks.append(Hunk(header, old_start, new_start, tuple(lines)))
    return ParsedDiff(path, tuple(hunks), binary)


Pair = tuple[DiffLine | None, DiffLine | None]
"""One row of the side-by-side view: the base's line on the left, the agent's on the right."""


def side_by_side(hunk: Hunk) -> list[Pair]:
    """The hunk's rows side by side: context on both sides; a run of removed lines beside the
    run of added lines that follows it, row for row, the shorter padded with None."""
    rows: list[Pair] = []
    removed: list[DiffLine] = []
    added: list[DiffLine] = []

    def flush() -> None:
        for index in range(max(len(removed), len(added))):
            rows.append((
                removed[index] if index < len(removed) else None,
                added[index] if index < len(added) else None,
            ))  # fmt: skip
        removed.clear()
        added.clear()

    for line in hunk.lines:
        if line.kind is LineKind.REMOVED:
            if added:
                flush()
            removed.append(line)
        elif line.kind is LineKind.ADDED:
            added.append(line)
        else:
            flush()
            rows.append((line, line))
    flush()
    return rows
