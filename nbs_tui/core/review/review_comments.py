"""The operator's comments on an agent's diff, and the one prompt that carries them back.

A comment is on one line (``path:12``) or on a whole hunk (``path:12-30``, its changed lines);
either way it names ``file:line`` first, so the agent finds the place. "Send comments" types
`comments_prompt` into the agent once, as one prompt (through the holder's delivery), and the
comments are cleared only when it went through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nbs_tui.core.review.unified_diff import Hunk, LineKind

PROMPT_HEAD = "Review comments on your changes (file:line, then the comment):"


@dataclass(frozen=True, slots=True)
class ReviewComment:
    path: str
    line: int
    """The agent's line (a removed line: the base's)."""
    text: str
    end_line: int | None = None
    """The hunk's last changed line, for a comment on a whole hunk."""

    @property
    def place(self) -> str:
        """``path:line``, or ``path:first-last`` for a hunk."""
        if self.end_line is not None and self.end_line != self.line:
            return f"{self.path}:{self.line}-{self.end_line}"
        return f"{self.path}:{self.line}"


def hunk_comment(path: str, hunk: Hunk, text: str) -> ReviewComment:
    """A comment on the whole hunk: from its first to its last changed line."""
    changed = [line.line for line in hunk.lines if line.kind is not LineKind.CONTEXT] or [hunk.first_line]
    return ReviewComment(path, changed[0], text, end_line=changed[-1])


def comments_prompt(comments: Sequence[ReviewComment]) -> str:
    """One prompt holding every comment, numbered, each ``file:line: text``, in file and line
    order, on one line: the holder's delivery checks the input box for the whole text, and a
    multi-line paste under Claude Code's chip size shows there as its first line only (2.1.332).
    A comment's own newlines become spaces."""
    ordered = sorted(comments, key=lambda c: (c.path, c.line))
    items = [f"[{n}] {comment.place}: {' '.join(comment.text.split())}" for n, comment in enumerate(ordered, 1)]
    return " ".join([PROMPT_HEAD, *items])
