"""The review screen's actions on one agent: read its changes, send it the operator's comments,
merge its branch into the base, discard its work. No Textual: the dashboard calls these from a
thread worker (every one blocks on git or on the holder's delivery) and shows what they say.

Each action is one line in the action log (``review-comments``, ``merge``, ``discard``), done
or refused, with the reason. Comments go to the agent through the holder's delivery (`Deliver`:
typed once, whole, under the sidecar's rules, which refuse while the agent works or waits on a
dialog); merge and discard only for an agent idle in a worktree of its own
(`nbs_tui.core.review.review_rules`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from nbs_tui.core.fleet.model import AgentState, PaneId, PaneInfo
from nbs_tui.core.review.review_comments import ReviewComment, comments_prompt
from nbs_tui.core.review.review_rules import send_refusal, worktree_refusal
from nbs_tui.core.review.unified_diff import ParsedDiff, parse_file_diff
from nbs_tui.files.review_git import (
    ChangedFile,
    GitError,
    WorktreeFacts,
    changed_files,
    discard_worktree,
    file_diff_text,
    merge_into_base,
    worktree_facts,
)
from nbs_tui.operator.action_log import ActionLog, ActionRecord, Outcome

WHY = "review"


@dataclass(frozen=True, slots=True)
class Said:
    """What an action did, or why it did nothing, for the operator."""

    ok: bool
    text: str


Deliver = Callable[[PaneInfo, str], Said]
"""Types a prompt into the agent's pane once, whole, and submits it, under the sidecar's rules
(the holder's in-process delivery); says whether it went through and why not."""


@dataclass(frozen=True, slots=True)
class ReviewLoad:
    """An agent's worktree as the review opened it."""

    pane: PaneInfo
    facts: WorktreeFacts | None
    """None: the folder is not in git (then ``message`` says so)."""
    files: tuple[ChangedFile, ...]
    message: str = ""

    @property
    def own_worktree(self) -> bool:
        return self.facts is not None and self.facts.own_worktree


class ReviewActions:
    """One per dashboard (see the module docstring)."""

    def __init__(
        self, log: ActionLog, deliver: Deliver, state_of: Callable[[PaneId], AgentState | None],
        *, wall: Callable[[], float] = time.time,
    ) -> None:  # fmt: skip
        self._log = log
        self._deliver = deliver
        self._state_of = state_of
        self._wall = wall

    def load(self, pane: PaneInfo) -> ReviewLoad:
        folder = Path(pane.current_path)
        if not pane.current_path or not folder.is_dir():
            return ReviewLoad(pane, None, (), f"{pane.current_path or 'its folder'} is not a folder on this machine")
        try:
            facts = worktree_facts(folder)
        except GitError:
            return ReviewLoad(pane, None, (), f"{folder} is not in a git repository: nothing to review")
        try:
            return ReviewLoad(pane, facts, tuple(changed_files(facts)))
        except GitError as error:
            return ReviewLoad(pane, facts, (), str(error))

    def file_diff(self, load: ReviewLoad, changed: ChangedFile) -> ParsedDiff:
        if load.facts is None:
            return ParsedDiff(changed.path, ())
        return parse_file_diff(changed.path, file_diff_text(load.facts, changed))

    def send_comments(self, pane: PaneInfo, comments: Sequence[ReviewComment]) -> Said:
        """The comments as one prompt, typed once; refused while the agent is not idle."""
        if not comments:
            return Said(False, "no comments to send")
        prompt = comments_prompt(comments)
        why_not = send_refusal(self._state_of(pane.pane_id))
        said = Said(False, f"not sent: {why_not}") if why_not else self._deliver(pane, prompt)
        self._record(pane, "review-comments", prompt, said)
        return said

    def merge(self, load: ReviewLoad) -> Said:
        refused = self._worktree_refusal(load, "merge")
        facts = load.facts
        if refused is not None or facts is None:
            said = Said(False, refused or "not in git")
        else:
            try:
                result = merge_into_base(facts)
                said = Said(result.merged, result.said)
            except GitError as error:
                said = Said(False, f"not merged: {error}")
        what = f"merge {facts.branch} into {facts.base}" if facts else "merge"
        self._record(load.pane, "merge", what, said)
        return said

    def discard(self, load: ReviewLoad) -> Said:
        refused = self._worktree_refusal(load, "discard")
        facts = load.facts
        if refused is not None or facts is None:
            said = Said(False, refused or "not in git")
        else:
            stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(self._wall()))
            try:
                said = Said(True, discard_worktree(facts, stamp).said)
            except GitError as error:
                said = Said(False, f"not discarded: {error}")
        what = f"discard {facts.branch}" if facts else "discard"
        self._record(load.pane, "discard", what, said)
        return said

    def _worktree_refusal(self, load: ReviewLoad, action: str) -> str | None:
        return worktree_refusal(self._state_of(load.pane.pane_id), load.own_worktree, action)

    def _record(self, pane: PaneInfo, action: str, sent: str, said: Said) -> None:
        outcome = Outcome.SENT if said.ok else Outcome.SKIPPED
        self._log.append(ActionRecord(self._wall(), action, pane.pane_id, pane.target, sent, WHY, outcome, said.text))
