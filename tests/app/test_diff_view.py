"""The review's diff widget on its own (Pilot, no tmux): hunk by hunk, the layout as the width
allows, comments under their lines and skipped by the cursor, a binary file, a cut diff."""

from __future__ import annotations

from textual.app import App, ComposeResult

from nbs_tui.core.review.review_comments import ReviewComment
from nbs_tui.core.review.unified_diff import parse_file_diff
from nbs_tui.widgets.diff_view import SPLIT_MIN_WIDTH, DiffView
from tests.app.helpers import widget_text

DIFF = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n" + "".join(
    f"@@ -{10 * h + 1},3 +{10 * h + 1},3 @@ def f{h}():\n x = {h}\n-y = 1\n+y = 2\n z = 3\n" for h in range(3)
)


class Holder(App[None]):
    def compose(self) -> ComposeResult:
        yield DiffView(id="diff")


async def test_hunks_layouts_and_comments() -> None:
    app = Holder()
    async with app.run_test(size=(SPLIT_MIN_WIDTH + 20, 30)) as pilot:
        view = app.query_one(DiffView)
        view.show(parse_file_diff("m.py", DIFF), [ReviewComment("m.py", 12, "why 2?")])
        await pilot.pause()
        assert view.split  # wide: side by side
        assert view.current is not None and view.current.line is not None and view.current.line.text == "y = 2"
        shown = widget_text(view)
        assert "✎ m.py:12: why 2?" in shown and "def f0():" in shown
        assert [view.hunk_step(1), view.current.hunk] == [True, 1]
        assert [view.hunk_step(1), view.hunk_step(1), view.current.hunk] == [True, False, 2]
        assert [view.hunk_step(-1), view.current.hunk] == [True, 1]
        view.move(1)  # x = 1
        view.move(1)  # y = 1 / y = 2, side by side in one row
        assert view.current.left is not None and view.current.right is not None
        view.move(1)  # the comment's row is skipped
        assert view.current.comment is None and view.current.line is not None and view.current.line.text == "z = 3"
        assert view.cycle_layout() == "unified" and not view.split
        assert "y = 1" in widget_text(view) and "y = 2" in widget_text(view)
        assert view.cycle_layout() == "side by side"
        await pilot.resize_terminal(80, 30)
        await pilot.pause()
        assert view.split  # chosen: kept at any width
        view.cycle_layout()
        await pilot.pause()
        assert not view.split  # auto, narrow: unified


async def test_binary_and_cut_diffs_say_so() -> None:
    app = Holder()
    async with app.run_test(size=(100, 20)) as pilot:
        view = app.query_one(DiffView)
        view.show(parse_file_diff("b.png", "diff --git a/b.png b/b.png\nBinary files a/b.png and b/b.png differ\n"), [])
        await pilot.pause()
        assert "Binary file" in widget_text(view)
        long = "@@ -0,0 +1,50 @@\n" + "".join(f"+{n}\n" for n in range(50))
        view.show(parse_file_diff("c.txt", long, max_lines=10), [])
        await pilot.pause()
        view.move(100)
        await pilot.pause()
        assert "40 more lines of this diff not shown" in widget_text(view)
