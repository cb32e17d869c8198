"""The review's pure model: a diff's numbered lines, side-by-side rows, the comments' prompt."""

from __future__ import annotations

from nbs_tui.core.fleet.model import AgentState
from nbs_tui.core.review.review_comments import ReviewComment, comments_prompt, hunk_comment
from nbs_tui.core.review.review_rules import send_refusal, worktree_refusal
from nbs_tui.core.review.unified_diff import LineKind, parse_file_diff, side_by_side

DIFF = """diff --git a/a.py b/a.py
index 1..2 100644
--- a/a.py
+++ b/a.py
@@ -1,4 +1,5 @@ def f():
 one
-two
+TWO
+two and a half
 three
\\ No newline at end of file
@@ -10,2 +11,2 @@
 ten
-eleven
"""


def test_lines_carry_old_and_new_numbers() -> None:
    diff = parse_file_diff("a.py", DIFF)
    first, second = diff.hunks
    assert first.header.endswith("def f():")
    assert [(x.kind, x.old, x.new) for x in first.lines] == [
        (LineKind.CONTEXT, 1, 1), (LineKind.REMOVED, 2, None), (LineKind.ADDED, None, 2),
        (LineKind.ADDED, None, 3), (LineKind.CONTEXT, 3, 4),
    ]  # fmt: skip
    assert (first.added, first.removed, first.first_line) == (2, 1, 2)
    assert [(x.old, x.new) for x in second.lines] == [(10, 11), (11, None)]
    assert second.lines[1].line == 11  # a removed line is named by the base's number


def test_binary_and_cut_diffs() -> None:
    assert parse_file_diff("b", "diff --git a/b b/b\nBinary files a/b and b/b differ\n").binary
    long = "@@ -0,0 +1,100 @@\n" + "".join(f"+{n}\n" for n in range(100))
    cut = parse_file_diff("c", long, max_lines=30)
    assert (cut.line_count, cut.cut) == (30, 70)


def test_side_by_side_pairs_removed_with_added() -> None:
    rows = side_by_side(parse_file_diff("a.py", DIFF).hunks[0])
    shown = [(a.text if a else None, b.text if b else None) for a, b in rows]
    assert shown == [("one", "one"), ("two", "TWO"), (None, "two and a half"), ("three", "three")]


def test_the_prompt_names_each_file_and_line_once_in_order() -> None:
    hunk = parse_file_diff("a.py", DIFF).hunks[0]
    prompt = comments_prompt([
        ReviewComment("b.py", 7, "why\nthis?"), hunk_comment("a.py", hunk, "split this hunk"), ReviewComment("a.py", 1, "ok"),
    ])  # fmt: skip
    assert "\n" not in prompt
    assert prompt.endswith("[1] a.py:1: ok [2] a.py:2-3: split this hunk [3] b.py:7: why this?")


def test_rules() -> None:
    assert send_refusal(AgentState.IDLE) is None
    assert send_refusal(AgentState.WORKING) == "it is working"
    assert "dialog" in (send_refusal(AgentState.DIALOG) or "")
    assert worktree_refusal(AgentState.IDLE, True, "merge") is None
    assert "worktree of its own" in (worktree_refusal(AgentState.IDLE, False, "merge") or "")
    assert "idle" in (worktree_refusal(AgentState.WORKING, True, "discard") or "")


def test_a_named_agents_box_is_read_whole_across_its_rows() -> None:
    """Claude Code 2.1.332 started with ``--name`` puts the name in the box's top rule: the
    box's wrapped rows are still its text (the holder's delivery checks the whole text)."""
    from nbs_tui.core.detection.detect import detect_text

    screen = "\n".join([
        "● Feature committed.",
        "",
        "──────────────────────────────────────────────────────────────────────── alpha ─",
        "❯ Review comments on your changes (file:line, then the comment): [1]",
        "  feature.py:1: name it for what it does [2] feature.py:2: return a named",
        "  constant",
        "────────────────────────────────────────────────────────────────────────────────",
        "  ⏵⏵ accept edits on (shift+tab to cycle)",
    ])  # fmt: skip
    assert detect_text(screen).input_text == (
        "Review comments on your changes (file:line, then the comment): [1]\n"
        "feature.py:1: name it for what it does [2] feature.py:2: return a named\n"
        "constant"
    )
