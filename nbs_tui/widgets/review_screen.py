"""The review of one agent's changes: its files, each file's diff, the operator's comments, and
merge or discard for an agent in a worktree of its own.

The screen shows and asks; it never runs git nor types into a pane. What the operator wants
leaves as a message (`FileWanted`, `SendWanted`, `MergeWanted`, `DiscardWanted`), and the
dashboard's review part (`nbs_tui.dashboard.review.ReviewFlow`) does it off the UI thread and
calls back `show_diff` / `tell`. Merge and discard are asked first (`ConfirmScreen`), there and
on the phone alike.

Keys (`nbs_tui.dashboard.key_table`, scope ``review``): ``[``/``]`` the previous/next file,
j/k (arrows) a line, PgUp/PgDn a page, ``n``/``N`` the next/previous hunk, ``c`` a comment on the
line, ``C`` on the hunk, ``s`` sends the comments, ``r`` reads the changes again, ``u`` unified /
side by side, ``M`` merge,
``X`` discard, ``q``/Esc close. On a narrow screen (a phone) the files sit above a unified diff.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Protocol

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from nbs_tui.core.review.review_comments import ReviewComment, hunk_comment
from nbs_tui.core.review.unified_diff import ParsedDiff
from nbs_tui.dashboard.key_table import scope_bindings
from nbs_tui.widgets.diff_view import DiffView
from nbs_tui.widgets.footer import Footer

STATUS_MARK = {"added": "A", "modified": "M", "deleted": "D", "untracked": "?", "renamed": "R", "copied": "C", "typechange": "T"}


class ChangedFileLike(Protocol):
    """A changed file as the list shows it (the git port's and the diff model's both fit)."""

    @property
    def path(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def added(self) -> int | None: ...
    @property
    def removed(self) -> int | None: ...


def file_row(changed: ChangedFileLike) -> Text:
    mark = STATUS_MARK.get(changed.status, "?")
    counts = "bin" if changed.added is None else f"+{changed.added} -{changed.removed}"
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f"{mark} ", style="bold yellow" if mark == "?" else "bold")
    text.append(f"{counts:>9} ", style="dim")
    text.append(changed.path)
    return text


class ReviewScreen(Screen[None]):
    """One agent's review (module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = list(scope_bindings("review"))

    class FileWanted(Message):
        def __init__(self, screen: ReviewScreen, path: str) -> None:
            super().__init__()
            self.screen = screen
            self.path = path

    class SendWanted(Message):
        def __init__(self, screen: ReviewScreen, comments: tuple[ReviewComment, ...]) -> None:
            super().__init__()
            self.screen = screen
            self.comments = comments

    class ReloadWanted(Message):
        def __init__(self, screen: ReviewScreen) -> None:
            super().__init__()
            self.screen = screen

    class MergeWanted(Message):
        def __init__(self, screen: ReviewScreen) -> None:
            super().__init__()
            self.screen = screen

    class DiscardWanted(Message):
        def __init__(self, screen: ReviewScreen) -> None:
            super().__init__()
            self.screen = screen

    def __init__(self, target: str) -> None:
        super().__init__(id="review-screen")
        self.target = target
        self.files: list[ChangedFileLike] = []
        self.own_worktree = False
        self._heading = ""
        """The branch and its base (``agent → main``), once read."""
        self.comments: list[ReviewComment] = []
        self._title = Static(Text(f"Review: {target} (reading its changes…)", style="bold"), id="review-title")
        self.file_list = OptionList(id="review-files")
        self.diff_view = DiffView(id="review-diff")
        self.comment_input = Input(placeholder="comment (Enter keeps it, Esc drops it)", id="review-comment")
        self.said = Static("", id="review-said")
        self._commenting: ReviewComment | None = None
        """The place the comment being typed is on (its text still empty)."""

    def compose(self) -> ComposeResult:
        yield self._title
        with Horizontal(id="review-body"):
            yield self.file_list
            yield self.diff_view
        yield self.comment_input
        yield self.said
        yield Footer()

    def on_mount(self) -> None:
        self.comment_input.display = False
        self.set_focus(self.diff_view)

    # -- what the review part calls -------------------------------------------------------------

    def loaded(self, heading: str, files: Sequence[ChangedFileLike], *, own_worktree: bool, message: str = "") -> None:
        """The agent's changes were read: list them and ask for the first file's diff (read
        again: the same file stays chosen when it is still listed)."""
        keep = self.current_path
        self.files = list(files)
        self.own_worktree = own_worktree
        self._heading = heading
        self.file_list.clear_options()
        self.file_list.add_options([Option(file_row(f), id=f"f{i}") for i, f in enumerate(self.files)])
        self._show_title()
        if message:
            self.tell(message, ok=False)
        elif not self.files:
            self.tell("No changes against the base.", ok=True)
        if self.files:
            paths = [f.path for f in self.files]
            self.file_list.highlighted = paths.index(keep) if keep in paths else 0
        else:
            self.diff_view.show(ParsedDiff("", ()), ())

    def show_diff(self, diff: ParsedDiff) -> None:
        if self.current_path != diff.path:
            return  # the operator moved on meanwhile
        self.diff_view.show(diff, self._comments_on(diff.path))
        self._show_title()

    def tell(self, text: str, *, ok: bool) -> None:
        self.said.update(Text(text, style="green" if ok else "bold red"))

    def comments_sent(self) -> None:
        self.comments.clear()
        self.diff_view.set_comments(())
        self._show_title()

    # -- what is shown -----------------------------------------------------------------------

    @property
    def current_path(self) -> str | None:
        index = self.file_list.highlighted
        return self.files[index].path if index is not None and index < len(self.files) else None

    def _comments_on(self, path: str) -> list[ReviewComment]:
        return [comment for comment in self.comments if comment.path == path]

    def _show_title(self) -> None:
        heading = self._heading
        added = sum(f.added or 0 for f in self.files)
        removed = sum(f.removed or 0 for f in self.files)
        text = Text(f"Review: {self.target}", style="bold")
        if heading:
            text.append(f"  {heading}")
        text.append(f"  {len(self.files)} file(s) +{added} -{removed}", style="dim")
        if self.comments:
            text.append(f"  {len(self.comments)} comment(s): s sends", style="yellow")
        text.append(f"  [{self.diff_view.layout_name}]", style="dim")
        self._title.update(text)

    @on(OptionList.OptionHighlighted, "#review-files")
    def _file_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        path = self.current_path
        if path is not None:
            self.post_message(self.FileWanted(self, path))

    @on(OptionList.OptionSelected, "#review-files")
    def _file_chosen(self) -> None:
        self.set_focus(self.diff_view)

    # -- comments ------------------------------------------------------------------------------

    def _start_comment(self, comment: ReviewComment) -> None:
        self._commenting = comment
        self.comment_input.placeholder = f"comment on {comment.place} (Enter keeps it, Esc drops it)"
        self.comment_input.value = ""
        self.comment_input.display = True
        self.set_focus(self.comment_input)

    @on(Input.Submitted, "#review-comment")
    def _comment_typed(self, event: Input.Submitted) -> None:
        place, self._commenting = self._commenting, None
        self.comment_input.display = False
        self.set_focus(self.diff_view)
        if place is None or not event.value.strip():
            return
        self.comments.append(ReviewComment(place.path, place.line, event.value.strip(), place.end_line))
        self.diff_view.set_comments(self._comments_on(place.path))
        self._show_title()
        self.tell(f"comment on {place.place} kept ({len(self.comments)} to send: s)", ok=True)

    def _comment_dropped(self) -> bool:
        if not self.comment_input.display:
            return False
        self._commenting = None
        self.comment_input.display = False
        self.set_focus(self.diff_view)
        return True

    # -- the keys (scope "review") ---------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.comment_input.has_focus:  # typing a comment: the letters are the comment's
            return action == "close"
        return True

    def action_file(self, delta: int) -> None:
        if self.files:
            index = self.file_list.highlighted or 0
            self.file_list.highlighted = max(0, min(len(self.files) - 1, index + delta))

    def action_line(self, delta: int) -> None:
        self.diff_view.move(delta)

    def action_page(self, direction: int) -> None:
        self.diff_view.page(direction)

    def action_hunk(self, direction: int) -> None:
        if not self.diff_view.hunk_step(direction):
            self.tell("no further hunk in this file: ] for the next file", ok=True)

    def action_comment(self, whole_hunk: bool) -> None:
        path, row, hunk = self.current_path, self.diff_view.current, self.diff_view.current_hunk
        if path is None or row is None or hunk is None:
            self.tell("no line here to comment on", ok=False)
            return
        if whole_hunk or row.line is None:
            self._start_comment(hunk_comment(path, hunk, ""))
        else:
            self._start_comment(ReviewComment(path, row.line.line, ""))

    def action_send(self) -> None:
        if not self.comments:
            self.tell("no comments to send: c comments on a line, C on a hunk", ok=False)
            return
        self.tell(f"sending {len(self.comments)} comment(s)…", ok=True)
        self.post_message(self.SendWanted(self, tuple(self.comments)))

    def action_reload(self) -> None:
        self.tell("reading the changes again…", ok=True)
        self.post_message(self.ReloadWanted(self))

    def action_layout(self) -> None:
        self.tell(f"layout: {self.diff_view.cycle_layout()}", ok=True)
        self._show_title()

    def action_merge(self) -> None:
        self._ask("merge", self.MergeWanted(self))

    def action_discard(self) -> None:
        self._ask("discard", self.DiscardWanted(self))

    def _ask(self, action: str, wanted: Message) -> None:
        if not self.own_worktree:
            self.tell(f"{action} is only for an agent in a worktree of its own", ok=False)
            return
        from nbs_tui.widgets.confirm_screen import ConfirmScreen

        heading = self._heading
        if action == "merge":
            title, what = "Merge the agent's branch", "Merge it into the base (a fast-forward or a merge commit; never forced)?"
        else:
            title, what = "Discard the agent's work", "Reset its worktree to the base? Its work is kept under a backup ref first."

        def answered(yes: bool | None) -> None:
            if yes:
                self.tell(f"{action}…", ok=True)
                self.post_message(wanted)

        self.app.push_screen(ConfirmScreen(title, [f"{self.target}  {heading}".rstrip()], what), answered)

    def action_close(self) -> None:
        if not self._comment_dropped():
            self.dismiss(None)
